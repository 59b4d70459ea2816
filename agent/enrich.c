// SPDX-License-Identifier: MIT
/*
 * Process labels from /proc, cached by (tgid, start time) so a reused pid
 * never inherits another process's command line.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/htab.h"
#include "common/util.h"

#define CACHE_MAX 16384

struct proc_key {
	uint32_t tgid;
	uint32_t pad;
	uint64_t start_ns;
};

static struct cw_htab cache;
static bool cache_ready;

/* The last run of 64 hex digits in a cgroup path is the container id. */
static void find_container(const char *path, char *out, size_t len)
{
	const char *p, *best = NULL;
	size_t run = 0;

	for (p = path;; p++) {
		if (*p && isxdigit((unsigned char)*p)) {
			run++;
			continue;
		}
		if (run == 64)
			best = p - 64;
		run = 0;
		if (!*p)
			break;
	}
	if (best && len > 64) {
		memcpy(out, best, 64);
		out[64] = 0;
	}
}

/* kubepods paths carry "pod<uid>", with '_' for '-' under systemd. */
static void find_pod(const char *path, char *out, size_t len)
{
	const char *p = strstr(path, "pod");
	size_t i;

	for (; p; p = strstr(p + 3, "pod")) {
		const char *u = p + 3;

		for (i = 0; i < 36 && (isxdigit((unsigned char)u[i]) ||
				       u[i] == '-' || u[i] == '_');
		     i++)
			;
		if (i == 36 && len > 36 && strstr(path, "kubepods")) {
			for (i = 0; i < 36; i++)
				out[i] = u[i] == '_' ? '-' : u[i];
			out[36] = 0;
			return;
		}
	}
}

void cw_parse_cgroup_path(const char *path, char *container, size_t clen,
			  char *pod, size_t plen)
{
	if (clen)
		container[0] = 0;
	if (plen)
		pod[0] = 0;
	find_container(path, container, clen);
	find_pod(path, pod, plen);
}

static void read_cmdline(struct cw_process *p)
{
	char path[64], buf[CW_CMDLINE_MAX];
	ssize_t n, i;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", p->tgid);
	n = cw_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
	snprintf(p->cmdline, sizeof(p->cmdline), "%s", buf);
}

static void read_cgroup(struct cw_process *p)
{
	char path[64], buf[4096], *line, *save = NULL, *cg;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", p->tgid);
	if (cw_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cg = strchr(line, ':');
		cg = cg ? strchr(cg + 1, ':') : NULL;
		if (!cg)
			continue;
		cw_parse_cgroup_path(cg + 1, p->container, sizeof(p->container),
				     p->pod, sizeof(p->pod));
		if (p->container[0])
			return;
	}
}

/* /proc/PID/stat field 22 is the start in clock ticks since boot. */
static bool same_process(const struct cw_process *p)
{
	char path[64], buf[1024], *s;
	unsigned long long start;
	long hz = sysconf(_SC_CLK_TCK);
	int i;

	snprintf(path, sizeof(path), "/proc/%u/stat", p->tgid);
	if (cw_read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	s = strrchr(buf, ')');
	if (!s || hz <= 0)
		return false;
	for (i = 0; i < 20 && s; i++)
		s = strchr(s + 1, ' ');
	if (!s || sscanf(s + 1, "%llu", &start) != 1)
		return false;
	return start == p->start_ns / (NSEC_PER_SEC / (uint64_t)hz);
}

int cw_enrich_process(struct cw_process *p)
{
	struct proc_key key = {p->tgid, 0, p->start_ns};
	struct cw_process *hit;
	bool created;

	if (!cache_ready) {
		cw_htab_init(&cache, sizeof(key), sizeof(*p));
		cache_ready = true;
	}
	hit = cw_htab_get(&cache, &key);
	if (hit) {
		uint64_t cg = p->cgroup_id;

		*p = *hit;
		if (cg)
			p->cgroup_id = cg;
		return 0;
	}
	if (!same_process(p))
		return -1; /* gone: keep what the kernel told us */
	read_cmdline(p);
	read_cgroup(p);
	if (cache.len >= CACHE_MAX)
		cw_htab_release(&cache);
	hit = cw_htab_upsert(&cache, &key, &created);
	if (hit)
		*hit = *p;
	return 0;
}

const char *cw_host_id(void)
{
	static char id[CW_HOST_LEN];
	size_t n;

	if (id[0])
		return id;
	if (cw_read_file("/etc/machine-id", id, sizeof(id)) > 0) {
		n = strcspn(id, " \n");
		id[n] = 0;
	}
	if (!id[0] && gethostname(id, sizeof(id) - 1))
		snprintf(id, sizeof(id), "unknown");
	return id;
}
