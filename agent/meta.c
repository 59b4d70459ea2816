// SPDX-License-Identifier: MIT
/*
 * Host and process metadata for <prefix>.meta: what placement weighs a
 * host's capacity and a process's size with.  Read from /proc at the
 * moment it is published.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/workload.h"
#include "common/log.h"
#include "common/util.h"

/* "MemTotal:  16303064 kB" */
static uint64_t mem_total(void)
{
	char buf[4096], *p;
	unsigned long long kb;

	if (cw_read_file("/proc/meminfo", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "MemTotal:");
	if (!p || sscanf(p + 9, "%llu", &kb) != 1)
		return 0;
	return (uint64_t)kb * 1024;
}

/*
 * The kernel's boot id; CAUSEWAY_TEST_BOOT_ID stands in for it so that a
 * test can make one host look rebooted (tests only: never set it on a real
 * host, the correlator would take its ends for another boot's).
 */
int cw_boot_id_read(char *buf, size_t len)
{
	const char *fake = getenv("CAUSEWAY_TEST_BOOT_ID");
	char raw[64];
	ssize_t n;

	buf[0] = 0;
	if (fake && *fake) {
		snprintf(buf, len, "%s", fake);
		return 0;
	}
	n = cw_read_file("/proc/sys/kernel/random/boot_id", raw, sizeof(raw));
	if (n <= 0)
		return cw_error("unable to read "
				"'/proc/sys/kernel/random/boot_id'");
	raw[strcspn(raw, "\n")] = 0;
	snprintf(buf, len, "%s", raw);
	return 0;
}

int cw_host_meta_read(struct cw_host_meta *hm, const char *host)
{
	struct utsname u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(hm, 0, sizeof(*hm));
	if (uname(&u))
		return cw_error("unable to read the kernel's name: %m");
	snprintf(hm->host, sizeof(hm->host), "%s", host);
	/* utsname fields are longer than ours: cut, never overrun. */
	snprintf(hm->hostname, sizeof(hm->hostname), "%.*s",
		 (int)sizeof(hm->hostname) - 1, u.nodename);
	snprintf(hm->kernel, sizeof(hm->kernel), "%.*s",
		 (int)sizeof(hm->kernel) - 1, u.release);
	hm->cpus = cpus > 0 ? (uint32_t)cpus : 0;
	hm->mem_bytes = mem_total();
	if (!hm->mem_bytes)
		return cw_error(
			"unable to read 'MemTotal' from '/proc/meminfo'");
	hm->time_ns = cw_now_real_ns();
	cw_boot_id_read(hm->boot_id, sizeof(hm->boot_id));
	return 0;
}

/*
 * /proc/PID/stat after the command's closing parenthesis: field 3 first;
 * 14 utime and 15 stime (ticks), 22 starttime (ticks since boot), 24 rss
 * (pages).
 */
static int parse_stat(const char *buf, unsigned long long *utime,
		      unsigned long long *stime, unsigned long long *start,
		      unsigned long long *rss)
{
	const char *s = strrchr(buf, ')');

	if (!s)
		return -1;
	if (sscanf(s + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu"
		   " %*d %*d %*d %*d %*d %*d %llu %*u %llu",
		   utime, stime, start, rss) != 4)
		return -1;
	return 0;
}

int cw_proc_meta_read(struct cw_proc_meta *pm, const char *host,
		      const struct cw_process *p)
{
	unsigned long long utime, stime, start, rss;
	long hz = sysconf(_SC_CLK_TCK);
	char path[64], buf[1024];
	struct cw_usage u;

	if (hz <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/stat", p->tgid);
	if (cw_read_file(path, buf, sizeof(buf)) <= 0 ||
	    parse_stat(buf, &utime, &stime, &start, &rss))
		return -1;
	/* The same pid, another process: its numbers are not p's. */
	if (start != p->start_ns / (NSEC_PER_SEC / (uint64_t)hz))
		return -1;
	/* The container's cgroup when it has one (every process of the
	 * container then reports the container), else the process. */
	if (cw_task_usage("/", p->tgid, &u))
		return -1;
	memset(pm, 0, sizeof(*pm));
	snprintf(pm->host, sizeof(pm->host), "%s", host);
	pm->proc = *p;
	pm->rss_bytes = u.rss_bytes;
	pm->cpu_ns = u.cpu_ns;
	pm->rss_hwm_bytes = u.rss_hwm_bytes;
	pm->source = u.from_cgroup ? CW_USAGE_CGROUP : CW_USAGE_PROC;
	pm->time_ns = cw_now_real_ns();
	return 0;
}

struct proc_key {
	uint32_t tgid;
	uint32_t pad;
	uint64_t start_ns;
};

void cw_meta_seen_init(struct cw_meta_seen *s, size_t max)
{
	cw_htab_init(&s->procs, sizeof(struct proc_key),
		     sizeof(struct cw_process));
	s->max = max;
}

void cw_meta_seen_release(struct cw_meta_seen *s)
{
	cw_htab_release(&s->procs);
}

int cw_meta_seen_add(struct cw_meta_seen *s, const struct cw_process *p)
{
	struct proc_key key = {p->tgid, 0, p->start_ns};
	struct cw_process *v;
	bool created = false;

	if (s->procs.len >= s->max && !cw_htab_get(&s->procs, &key)) {
		/* Forget all: long-lived processes are published again,
		 * which a consumer keeping the newest per process absorbs. */
		cw_htab_release(&s->procs);
		cw_htab_init(&s->procs, sizeof(key), sizeof(*p));
	}
	v = cw_htab_upsert(&s->procs, &key, &created);
	if (!v)
		return cw_error("out of memory for process metadata");
	/* The newest labels: a process may change its command line. */
	*v = *p;
	return created ? 1 : 0;
}

int cw_meta_seen_publish(struct cw_meta_seen *s, const char *host,
			 cw_proc_meta_fn fn, void *ctx)
{
	struct cw_proc_meta pm;
	size_t i;

	/* Backwards: a delete moves the last entry into the hole. */
	for (i = s->procs.len; i-- > 0;) {
		const struct cw_process *p = cw_htab_val(&s->procs, i);

		if (cw_proc_meta_read(&pm, host, p)) {
			struct proc_key key =
				*(struct proc_key *)cw_htab_key(&s->procs, i);

			cw_htab_delete(&s->procs, &key);
			continue;
		}
		if (fn(&pm, ctx))
			return -1;
	}
	return 0;
}
