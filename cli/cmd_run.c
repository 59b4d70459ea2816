// SPDX-License-Identifier: MIT
/*
 * causeway run: agent and correlator in one process, no broker.  Watches
 * this host, pairs the two ends of local connections (across network
 * namespaces too) and prints process-to-process edges.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/live.h"
#include "paths/paths.h"
#include "graph/graph.h"
#include "viz/viz.h"

struct run_ctx {
	struct cw_pairing pairing;
	struct cw_outfile records; /* conns.jsonl: every record collected */
	struct cw_jsonw w;
	struct cw_outfile timing; /* timing.jsonl: message starts per window */
	struct cw_jsonw tw;
	uint64_t window_ns, window_every_ns, next_window;
	bool paths; /* keep windows for causal paths */
	struct cw_timing_record *windows;
	size_t nwindows, capwindows;
	int err;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway run [--duration D] [--interval I] [-o DIR] "
		"[--json]\n"
		"                    [--attach auto|fentry|kprobe|tracepoint]\n"
		"                    [--netns NS] [--msg-gap D] [--no-udp]\n"
		"                    [--no-nat] [--hooks always|sampled]\n\n"
		"Watch TCP and UDP traffic on this host from the kernel, with "
		"no\n"
		"change to the programs watched; pair the two ends of every "
		"local\n"
		"connection and print who talks to whom.\n\n"
		"  -d, --duration D   stop after D (default: at Ctrl-C)\n"
		"  -i, --interval I   collect aggregates every I (default 1s)\n"
		"  -o, --out DIR      write edges.json, graph.dot and "
		"conns.jsonl\n"
		"  -j, --json         print the graph as JSON instead of a "
		"table\n"
		"  -a, --attach V     hook variant (default auto: the "
		"cheapest\n"
		"                     this kernel allows; see 'causeway "
		"probe')\n"
		"  -n, --netns NS     watch one network namespace only "
		"(inode,\n"
		"                     name in /run/netns, or "
		"/proc/PID/ns/net)\n"
		"      --msg-gap D    an idle gap of D also starts a new "
		"message\n"
		"      --no-udp       do not count UDP\n"
		"      --no-nat       keep DNAT'ed (virtual) addresses: no "
		"conntrack lookups\n"
		"      --hooks H      always (default): a program on every "
		"send/recv\n"
		"                     counts calls and messages exactly, "
		"~100 ns a call;\n"
		"                     sampled: only inside timing windows, "
		"nothing\n"
		"                     outside (bytes are exact either way)\n"
		"  -w, --window D     record message start times in timing "
		"windows\n"
		"                     of D (into timing.jsonl with -o)\n"
		"      --window-every P  open a window at every wall-clock "
		"multiple\n"
		"                     of P (default: one window, from the "
		"start)\n"
		"  -p, --paths        infer causal paths from the timing "
		"windows\n"
		"                     (convolution); paths.json with -o\n"
		"      --min-share F  graph.dot: drop edges under F of all "
		"bytes\n"
		"                     (default 0.0)\n"
		"      --mode M       aggregate (default), conn-only or "
		"per-event\n"
		"                     (the last two exist for the "
		"benchmark)\n\n"
		"Needs root, or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN.\n\n"
		"Examples:\n"
		"  causeway run --duration 30s\n"
		"  causeway run -d 10s -o /tmp/cw && dot -Tsvg "
		"/tmp/cw/graph.dot > g.svg\n"
		"  causeway run --netns web1 --json\n");
}

static int on_record(const struct cw_conn_record *r, void *arg)
{
	struct run_ctx *rc = arg;

	if (cw_pairing_add(&rc->pairing, r))
		rc->err = cw_error("out of memory");
	if (rc->records.fp) {
		cw_conn_record_json(&rc->w, r);
		cw_jsonw_end_line(&rc->w);
	}
	return rc->err;
}

static int keep_window(struct run_ctx *rc, const struct cw_timing_record *t)
{
	struct cw_timing_record *w;

	if (rc->nwindows == rc->capwindows) {
		size_t cap = rc->capwindows ? rc->capwindows * 2 : 64;

		w = realloc(rc->windows, cap * sizeof(*w));
		if (!w)
			return cw_error("out of memory");
		rc->windows = w;
		rc->capwindows = cap;
	}
	w = &rc->windows[rc->nwindows];
	*w = *t;
	w->msgs = malloc((t->n ? t->n : 1) * sizeof(*t->msgs));
	if (!w->msgs)
		return cw_error("out of memory");
	memcpy(w->msgs, t->msgs, t->n * sizeof(*t->msgs));
	rc->nwindows++;
	return 0;
}

static void free_windows(struct run_ctx *rc)
{
	size_t i;

	for (i = 0; i < rc->nwindows; i++)
		free(rc->windows[i].msgs);
	free(rc->windows);
}

/* Causal paths from what the windows saw; text to stdout, JSON to DIR. */
static int infer_paths(struct run_ctx *rc, const char *out)
{
	struct cw_paths_opts po;
	struct cw_msgtrace t;
	struct cw_pathset ps;
	struct cw_outfile of;
	char path[PATH_MAX];
	int err = -1;

	cw_msgtrace_init(&t);
	cw_pathset_init(&ps);
	cw_paths_opts_default(&po);
	if (!rc->nwindows) {
		cw_warn("no message was seen in the timing windows: no paths");
		err = 0;
		goto out;
	}
	if (cw_live_trace(&rc->pairing, rc->windows, rc->nwindows, false, &t) ||
	    cw_paths_convolution(&t, &po, &ps))
		goto out;
	printf("\nCausal paths (convolution over %zu timing windows):\n",
	       rc->nwindows);
	cw_pathset_print_text(stdout, &t, &ps);
	if (out) {
		snprintf(path, sizeof(path), "%s/paths.json", out);
		if (cw_outfile_open(&of, path))
			goto out;
		cw_pathset_print_json(of.fp, &t, &ps);
		if (cw_outfile_commit(&of))
			goto out;
	}
	err = 0;
out:
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
	return err;
}

static int on_timing(const struct cw_timing_record *t, void *arg)
{
	struct run_ctx *rc = arg;

	if (rc->paths && keep_window(rc, t))
		return -1;
	if (rc->timing.fp) {
		cw_timing_record_json(&rc->tw, t);
		cw_jsonw_end_line(&rc->tw);
	}
	return 0;
}

/* Open a timing window at each wall-clock multiple of the period. */
static int schedule_windows(struct cw_agent *a, struct run_ctx *rc)
{
	uint64_t now = cw_now_real_ns();

	if (!rc->window_ns)
		return 0;
	if (cw_agent_window_done(a) &&
	    cw_agent_window_collect(a, on_timing, rc))
		return -1;
	if (now < rc->next_window)
		return 0;
	rc->next_window = cw_window_next(now, rc->window_every_ns);
	return cw_agent_window_open(a, rc->window_ns);
}

/* Collect every interval until the duration ends or a signal arrives. */
static int watch(struct cw_agent *a, struct run_ctx *rc, uint64_t duration,
		 uint64_t interval)
{
	uint64_t start = cw_now_mono_ns(), next = start + interval, now;

	while (!cw_stop) {
		now = cw_now_mono_ns();
		if (duration && now >= start + duration)
			break;
		if (schedule_windows(a, rc))
			return -1;
		if (now >= next) {
			if (cw_agent_collect(a, on_record, rc) || rc->err)
				return -1;
			next += interval;
			if (next < now)
				next = now + interval;
		}
		if (cw_agent_poll(a, 50))
			return -1;
	}
	if (rc->window_ns && cw_agent_window_collect(a, on_timing, rc))
		return -1;
	return cw_agent_collect(a, on_record, rc) || rc->err ? -1 : 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"duration", 1, 0, 'd'},     {"interval", 1, 0, 'i'},
		{"out", 1, 0, 'o'},	     {"json", 0, 0, 'j'},
		{"attach", 1, 0, 'a'},	     {"netns", 1, 0, 'n'},
		{"msg-gap", 1, 0, 'g'},	     {"no-udp", 0, 0, 'U'},
		{"no-nat", 0, 0, 'N'},	     {"mode", 1, 0, 'm'},
		{"min-share", 1, 0, 's'},    {"window", 1, 0, 'w'},
		{"window-every", 1, 0, 'W'}, {"paths", 0, 0, 'p'},
		{"help", 0, 0, 'h'},	     {"hooks", 1, 0, CLI_OPT_HOOKS},
		{0}};
	/* run is a short look at one host: exact messages by default. */
	struct cli_watch w = {.ao = {.sz = sizeof(w.ao),
				     .hooks = CW_HOOKS_ALWAYS},
			      .interval_ns = NSEC_PER_SEC};
	struct cw_agent_stats st;
	struct run_ctx rc = {0};
	struct cw_agent *a = NULL;
	const char *out = NULL;
	double min_share = 0;
	struct cw_graph g;
	bool json = false;
	char path[PATH_MAX];
	int opt, err = 1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:i:o:ja:n:w:ph", opts, NULL)) !=
	       -1) {
		switch (cli_watch_option(opt, optarg, &w)) {
		case -1:
			return 2;
		case 1:
			continue;
		}
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'm':
			if (cli_mode(optarg, &w.ao.mode))
				return 2;
			break;
		case 's':
			if (cli_share(optarg, &min_share))
				return 2;
			break;
		case 'w':
			if (cli_duration("--window", optarg, NSEC_PER_MSEC,
					 86400 * NSEC_PER_SEC, &rc.window_ns))
				return 2;
			break;
		case 'p':
			rc.paths = true;
			break;
		case 'W':
			if (cli_duration("--window-every", optarg,
					 NSEC_PER_MSEC, 86400 * NSEC_PER_SEC,
					 &rc.window_every_ns))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("run", argv);
		}
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s' (see 'causeway run --help')",
			 argv[optind]);
		return 2;
	}
	if (rc.window_every_ns && !rc.window_ns) {
		cw_error("--window-every needs --window");
		return 2;
	}
	if (rc.window_every_ns && rc.window_every_ns < rc.window_ns) {
		cw_error("--window-every must be at least --window");
		return 2;
	}
	if (rc.paths && !rc.window_ns)
		rc.window_ns = 365 * 86400 * NSEC_PER_SEC; /* the whole run */
	if (rc.window_ns && !rc.window_every_ns)
		rc.window_every_ns = 365 * 86400 * NSEC_PER_SEC;
	/* Refuse a bad output folder before spending a whole run. */
	if (out && (cw_mkdir_p(out) || cw_check_writable_dir(out)))
		return 1;

	cw_pairing_init(&rc.pairing);
	cw_graph_init(&g);
	cw_catch_signals();
	if (cw_agent_open(&a, &w.ao))
		goto out;
	if (out) {
		snprintf(path, sizeof(path), "%s/conns.jsonl", out);
		if (cw_outfile_open(&rc.records, path))
			goto out;
		cw_jsonw_init(&rc.w, rc.records.fp);
		if (rc.window_ns) {
			snprintf(path, sizeof(path), "%s/timing.jsonl", out);
			if (cw_outfile_open(&rc.timing, path))
				goto out;
			cw_jsonw_init(&rc.tw, rc.timing.fp);
		}
	}
	cw_info("watching with the %s hooks%s; Ctrl-C to stop",
		cw_attach_name(cw_agent_attach(a)),
		w.ao.netns ? " in one namespace" : "");
	if (watch(a, &rc, w.duration_ns, w.interval_ns))
		goto out;
	cw_agent_stats(a, &st);
	if (cw_pairing_build(&rc.pairing, &g)) {
		cw_error("out of memory while pairing");
		goto out;
	}
	cw_graph_sort_edges(&g);
	if (json) {
		struct cw_jsonw w;

		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_str(&w, "host", cw_agent_host(a));
		cw_jsonw_str(&w, "attach", cw_attach_name(cw_agent_attach(a)));
		cw_graph_json(&g, &w);
		cli_stats_json(&w, &st, &rc.pairing.st);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		cli_print_table(&g);
		if (w.ao.mode == CW_MODE_PER_EVENT)
			printf("per-event mode: %llu events, %llu bytes summed "
			       "in user space, %llu lost\n",
			       (unsigned long long)st.events,
			       (unsigned long long)cw_agent_event_bytes(a),
			       (unsigned long long)st.event_lost);
	}
	cw_info("%llu records, %llu connection ends (%llu paired, %llu "
		"unpaired); lost: %llu close records, %llu storage failures, "
		"%llu UDP map full",
		(unsigned long long)st.records,
		(unsigned long long)rc.pairing.st.ends,
		(unsigned long long)rc.pairing.st.paired,
		(unsigned long long)rc.pairing.st.unpaired,
		(unsigned long long)st.close_lost,
		(unsigned long long)st.storage_fail,
		(unsigned long long)st.udp_map_full);
	if (rc.paths && infer_paths(&rc, out))
		goto out;
	if (out && (cli_write_outputs(out, &g, cw_agent_host(a),
				      cw_attach_name(cw_agent_attach(a)), &st,
				      &rc.pairing.st, min_share) ||
		    cw_outfile_commit(&rc.records) ||
		    (rc.timing.fp && cw_outfile_commit(&rc.timing))))
		goto out;
	err = 0;
out:
	if (rc.records.fp)
		cw_outfile_abort(&rc.records);
	if (rc.timing.fp)
		cw_outfile_abort(&rc.timing);
	cw_agent_close(a);
	cw_graph_release(&g);
	cw_pairing_release(&rc.pairing);
	free_windows(&rc);
	return err;
}
