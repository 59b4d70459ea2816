// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"

int cli_duration(const char *opt, const char *val, uint64_t min_ns,
		 uint64_t max_ns, uint64_t *out)
{
	char lo[32], hi[32];

	if (cw_parse_duration(val, NSEC_PER_SEC, out) || *out < min_ns ||
	    *out > max_ns)
		return cw_error("%s '%s': want a duration from %s to %s "
				"(e.g. 500ms, 10s, 2m)",
				opt, val,
				cw_fmt_duration(min_ns, lo, sizeof(lo)),
				cw_fmt_duration(max_ns, hi, sizeof(hi)));
	return 0;
}

int cli_netns(const char *val, uint32_t *out)
{
	char path[4096];
	struct stat st;
	uint64_t ino;

	if (!cw_parse_u64(val, 1, UINT32_MAX, &ino)) {
		*out = (uint32_t)ino;
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
	*out = (uint32_t)st.st_ino;
	return 0;
}

int cli_attach(const char *val, enum cw_attach *out)
{
	if (cw_attach_parse(val, out))
		return cw_error("--attach '%s': want auto, fentry, kprobe or "
				"tracepoint",
				val);
	return 0;
}

int cli_mode(const char *val, enum cw_agent_mode *out)
{
	if (!strcmp(val, "aggregate"))
		*out = CW_MODE_AGGREGATE;
	else if (!strcmp(val, "conn-only"))
		*out = CW_MODE_CONN_ONLY;
	else if (!strcmp(val, "per-event"))
		*out = CW_MODE_PER_EVENT;
	else
		return cw_error("--mode '%s': want aggregate, conn-only or "
				"per-event",
				val);
	return 0;
}

int cli_bad_option(const char *cmd, char **argv)
{
	const char *arg = argv[optind - 1];

	/* getopt_long leaves optopt 0 for an unknown long option, and sets
	 * it to the option's value when that option lacks its argument. */
	if (!optopt)
		cw_error("unknown option '%s' (see 'causeway %s --help')", arg,
			 cmd);
	else if (arg[0] == '-' && (arg[1] == '-' || arg[1] == optopt))
		cw_error("option '%s' needs a value (see 'causeway %s --help')",
			 arg, cmd);
	else
		cw_error("unknown option '-%c' (see 'causeway %s --help')",
			 optopt, cmd);
	return 2;
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts,
	       int (*opt)(void *ctx, int c, const char *arg), void *ctx,
	       void (*usage)(FILE *fp))
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':')
			return cli_bad_option(cmd, argv);
		if (opt(ctx, c, optarg))
			return 2;
	}
	return 0;
}

int cli_one_operand(int argc, char **argv, const char **input)
{
	if (input && optind < argc)
		*input = argv[optind++];
	if (optind < argc)
		return cw_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

int cli_watch_option(int opt, const char *arg, struct cli_watch *w)
{
	int err = 0;

	switch (opt) {
	case 'i':
		err = cli_duration("--interval", arg, 10 * NSEC_PER_MSEC,
				   3600 * NSEC_PER_SEC, &w->interval_ns);
		break;
	case 'd':
		err = cli_duration("--duration", arg, NSEC_PER_MSEC,
				   365 * 86400 * NSEC_PER_SEC, &w->duration_ns);
		break;
	case 'a':
		err = cli_attach(arg, &w->ao.attach);
		break;
	case 'n':
		err = cli_netns(arg, &w->ao.netns);
		break;
	case 'g':
		err = cli_duration("--msg-gap", arg, NSEC_PER_USEC,
				   3600 * NSEC_PER_SEC, &w->ao.msg_gap_ns);
		break;
	case 'U':
		w->ao.no_udp = true;
		break;
	case 'N':
		w->ao.no_nat = true;
		break;
	case CLI_OPT_HOOKS: {
		enum cw_hooks h;

		if (cw_hooks_parse(arg, &h))
			err = cw_error("--hooks '%s': want sampled or always",
				       arg);
		else
			w->ao.hooks = h;
		break;
	}
	default:
		return 0;
	}
	return err ? -1 : 1;
}

int cli_share(const char *arg, double *out)
{
	char *end;

	*out = strtod(arg, &end);
	if (*end || end == arg || *out < 0 || *out > 1)
		return cw_error("--min-share '%s': want a number from 0 to 1",
				arg);
	return 0;
}

int cli_otlp_url(const char *arg)
{
	if (strncmp(arg, "http://", 7))
		return cw_error("--otlp wants an http:// URL, not '%s'", arg);
	return 0;
}

int cli_agent_open(struct cw_agent **a, const struct cw_agent_opts *ao)
{
	if (!cw_agent_open(a, ao))
		return 0;
	/* The probe passed, the real programs did not: say what is missing. */
	if (errno == EPERM)
		cw_info("hint: the kernel refused the programs for lack of "
			"privilege: run as root, or with CAP_BPF, CAP_PERFMON, "
			"CAP_NET_ADMIN and enough RLIMIT_MEMLOCK");
	return -1;
}
