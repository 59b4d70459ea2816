// SPDX-License-Identifier: MIT
/*
 * causeway agent: the long-running host agent.  Every interval it writes the
 * connection ends that changed as JSON lines (cumulative counters, so a
 * consumer keeps the newest record per end and never double counts).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"

struct agent_out {
	FILE *fp;
	struct cw_jsonw w;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway agent [--interval I] [--duration D] [-o FILE]\n"
		"                      [--attach V] [--netns NS] [--host ID]\n\n"
		"Run the host agent: per-connection aggregates collected in the\n"
		"kernel, written every interval as JSON lines (one record per\n"
		"connection end that changed; counters are cumulative).\n\n"
		"  -i, --interval I   collection period (default 1s)\n"
		"  -d, --duration D   stop after D (default: at SIGINT/SIGTERM)\n"
		"  -o, --out FILE     append records to FILE (default stdout)\n"
		"  -a, --attach V     auto (default), fentry, kprobe, tracepoint\n"
		"  -n, --netns NS     watch one network namespace only\n"
		"      --host ID      host id in records (default: machine-id)\n"
		"      --msg-gap D    an idle gap of D also starts a new message\n"
		"      --no-udp       do not count UDP\n\n"
		"SIGINT and SIGTERM flush what is pending, detach and exit 0.\n\n"
		"Examples:\n"
		"  causeway agent --interval 5s -o /var/log/causeway.jsonl\n"
		"  causeway agent --netns web1 --duration 1m\n");
}

static int on_record(const struct cw_conn_record *r, void *arg)
{
	struct agent_out *o = arg;

	cw_conn_record_json(&o->w, r);
	cw_jsonw_end_line(&o->w);
	return ferror(o->fp) ? cw_error("unable to write records: %m") : 0;
}

int cmd_agent(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", 1, 0, 'i' }, { "duration", 1, 0, 'd' },
		{ "out", 1, 0, 'o' },	   { "attach", 1, 0, 'a' },
		{ "netns", 1, 0, 'n' },	   { "host", 1, 0, 'H' },
		{ "msg-gap", 1, 0, 'g' },  { "no-udp", 0, 0, 'U' },
		{ "help", 0, 0, 'h' },	   { 0 }
	};
	struct cw_agent_opts ao = { .sz = sizeof(ao) };
	uint64_t interval = NSEC_PER_SEC, duration = 0, start, next, now;
	struct agent_out o = { .fp = stdout };
	struct cw_agent_stats st;
	struct cw_agent *a = NULL;
	const char *out = NULL;
	int opt, err = 1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "i:d:o:a:n:h", opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'i':
			if (cli_duration("--interval", optarg,
					 10 * NSEC_PER_MSEC,
					 3600 * NSEC_PER_SEC, &interval))
				return 2;
			break;
		case 'd':
			if (cli_duration("--duration", optarg, NSEC_PER_MSEC,
					 365 * 86400 * NSEC_PER_SEC, &duration))
				return 2;
			break;
		case 'o':
			out = optarg;
			break;
		case 'a':
			if (cli_attach(optarg, &ao.attach))
				return 2;
			break;
		case 'n':
			if (cli_netns(optarg, &ao.netns))
				return 2;
			break;
		case 'H':
			if (!*optarg || strlen(optarg) >= CW_HOST_LEN) {
				cw_error("--host '%s': want 1 to %d characters",
					 optarg, CW_HOST_LEN - 1);
				return 2;
			}
			ao.host = optarg;
			break;
		case 'g':
			if (cli_duration("--msg-gap", optarg, NSEC_PER_USEC,
					 3600 * NSEC_PER_SEC, &ao.msg_gap_ns))
				return 2;
			break;
		case 'U':
			ao.no_udp = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("agent", argv);
		}
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (out) {
		o.fp = fopen(out, "a");
		if (!o.fp) {
			cw_error("unable to open '%s': %m", out);
			return 1;
		}
	}
	cw_jsonw_init(&o.w, o.fp);
	cw_catch_signals();
	if (cw_agent_open(&a, &ao))
		goto out;
	cw_info("agent on host %s with the %s hooks, every %llu ms",
		cw_agent_host(a), cw_attach_name(cw_agent_attach(a)),
		(unsigned long long)(interval / NSEC_PER_MSEC));
	start = cw_now_mono_ns();
	next = start + interval;
	while (!cw_stop) {
		now = cw_now_mono_ns();
		if (duration && now >= start + duration)
			break;
		if (now >= next) {
			if (cw_agent_collect(a, on_record, &o))
				goto out;
			fflush(o.fp);
			next += interval;
		}
		if (cw_agent_poll(a, 50))
			goto out;
	}
	/* Flush what is pending before detaching. */
	if (cw_agent_collect(a, on_record, &o))
		goto out;
	cw_agent_stats(a, &st);
	cw_info("stopped: %llu records in %llu collections; lost %llu close "
		"records, %llu storage failures, %llu UDP map full",
		(unsigned long long)st.records,
		(unsigned long long)st.collections,
		(unsigned long long)st.close_lost,
		(unsigned long long)st.storage_fail,
		(unsigned long long)st.udp_map_full);
	err = 0;
out:
	cw_agent_close(a);
	if (o.fp != stdout && fclose(o.fp) && !err)
		err = cw_error("unable to write '%s': %m", out);
	else if (o.fp == stdout && fflush(stdout) && !err)
		err = cw_error("unable to write records: %m");
	return err;
}
