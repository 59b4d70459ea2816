// SPDX-License-Identifier: MIT
/* The option handlers the commands share (cli/cli.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"
#include "graph/graph.h"

int cli_netns(const struct cw_opt *o, const char *val)
{
	char path[4096];
	struct stat st;
	uint64_t ino;

	if (!cw_parse_u64(val, 1, UINT32_MAX, &ino)) {
		*(uint32_t *)o->to = (uint32_t)ino;
		return 0;
	}
	if (strchr(val, '/'))
		snprintf(path, sizeof(path), "%s", val);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", val);
	if (stat(path, &st))
		return cw_error("--netns '%s': %s (want an inode number, a "
				"name in /run/netns or a path such as "
				"/proc/PID/ns/net)",
				val, strerror(errno));
	*(uint32_t *)o->to = (uint32_t)st.st_ino;
	return 0;
}

int cli_attach(const struct cw_opt *o, const char *val)
{
	if (cw_attach_parse(val, o->to))
		return cw_error("--attach '%s': want auto, fentry, kprobe or "
				"tracepoint",
				val);
	return 0;
}

int cli_hooks(const struct cw_opt *o, const char *val)
{
	enum cw_hooks h;

	if (cw_hooks_parse(val, &h))
		return cw_error("--hooks '%s': want sampled or always", val);
	*(int *)o->to = h;
	return 0;
}

int cli_group_by(const struct cw_opt *o, const char *arg)
{
	if (cw_group_by_parse(arg, o->to))
		return cw_error("--by '%s': want process, cmdline, container, "
				"host, pod or workload",
				arg);
	return 0;
}

int cli_otlp_url(const struct cw_opt *o, const char *arg)
{
	if (strncmp(arg, "http://", 7))
		return cw_error("--otlp wants an http:// URL, not '%s'", arg);
	*(const char **)o->to = arg;
	return 0;
}
