// SPDX-License-Identifier: MIT
/*
 * Process labels from /proc, cached by (tgid, start time) so a reused pid
 * never inherits another process's command line.  Each file is read here
 * and parsed by a function of a buffer (agent.h), which the fuzzers reach;
 * names leave as clean UTF-8 (common/utf8.h), whatever a process put in
 * its argv.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/workload.h"
#include "common/htab.h"
#include "common/utf8.h"
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

size_t cw_proc_parse_cmdline(const char *buf, size_t n, char *out, size_t size)
{
	char line[CW_PROC_CMDLINE_READ];
	size_t i;

	if (n > sizeof(line))
		n = sizeof(line);
	while (n > 0 && buf[n - 1] == 0)
		n--;
	/* argv is NUL-separated: one line, its words split by spaces. */
	for (i = 0; i < n; i++)
		line[i] = buf[i] ? buf[i] : ' ';
	return cw_utf8_clean(out, size, line, n);
}

void cw_proc_parse_cgroup(const char *buf, size_t n, char *container,
			  size_t clen, char *pod, size_t plen)
{
	char text[CW_PROC_CGROUP_READ], *line, *save = NULL, *cg;

	if (clen)
		container[0] = 0;
	if (plen)
		pod[0] = 0;
	if (n >= sizeof(text))
		n = sizeof(text) - 1;
	memcpy(text, buf, n);
	text[n] = 0;
	/* "hierarchy-id:controllers:path" per line; the first path that
	 * names a container wins (v1 and v2 lines name the same one). */
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cg = strchr(line, ':');
		cg = cg ? strchr(cg + 1, ':') : NULL;
		if (!cg)
			continue;
		cw_parse_cgroup_path(cg + 1, container, clen, pod, plen);
		if (clen && container[0])
			return;
	}
}

int cw_proc_parse_stat_start(const char *buf, size_t n, uint64_t *ticks)
{
	char text[CW_PROC_STAT_READ], *s, *end;
	unsigned long long v;
	int i;

	if (n >= sizeof(text))
		n = sizeof(text) - 1;
	memcpy(text, buf, n);
	text[n] = 0;
	/* The comm in parentheses may hold spaces and ')': the last ')'
	 * ends it, then field 3 onwards. */
	s = strrchr(text, ')');
	for (i = 0; i < 20 && s; i++)
		s = strchr(s + 1, ' ');
	if (!s || s[1] < '0' || s[1] > '9')
		return -1;
	errno = 0;
	v = strtoull(s + 1, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -1;
	*ticks = v;
	return 0;
}

static void read_cmdline(struct cw_process *p)
{
	char path[64], buf[CW_PROC_CMDLINE_READ + 1];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", p->tgid);
	n = cw_read_file(path, buf, sizeof(buf));
	if (n > 0)
		cw_proc_parse_cmdline(buf, (size_t)n, p->cmdline,
				      sizeof(p->cmdline));
}

static void read_cgroup(struct cw_process *p)
{
	char path[64], buf[CW_PROC_CGROUP_READ];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", p->tgid);
	n = cw_read_file(path, buf, sizeof(buf));
	if (n > 0)
		cw_proc_parse_cgroup(buf, (size_t)n, p->container,
				     sizeof(p->container), p->pod,
				     sizeof(p->pod));
}

/* /proc/PID/stat field 22 is the start in clock ticks since boot. */
static bool same_process(const struct cw_process *p)
{
	char path[64], buf[CW_PROC_STAT_READ];
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t start;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", p->tgid);
	n = cw_read_file(path, buf, sizeof(buf));
	if (n <= 0 || hz <= 0 ||
	    cw_proc_parse_stat_start(buf, (size_t)n, &start))
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
	cw_workload_fill(p);
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
