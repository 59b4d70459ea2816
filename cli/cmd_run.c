// SPDX-License-Identifier: MIT
/*
 * causeway run: agent and correlator in one process, no broker.  Watches
 * this host, pairs the two ends of local connections (across network
 * namespaces too) and prints process-to-process edges.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/run.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "correlator/report.h"
#include "correlator/live.h"
#include "paths/paths.h"
#include "graph/graph.h"
#include "viz/viz.h"

struct run_opts {
	struct cli_watch w;
	struct cw_watch_opts wo;
	const char *out;
	double min_share;
	bool json;
	bool paths;
	const char *metrics; /* --metrics ADDR:PORT, or NULL */
	const char *traces;  /* --traces FILE: messages CSV, or NULL */
};

struct run_ctx {
	struct cw_pairing pairing;
	struct cw_outfile records; /* conns.jsonl: every record collected */
	struct cw_jsonw w;
	struct cw_outfile timing; /* timing.jsonl: message starts per window */
	struct cw_jsonw tw;
	struct cw_outfile meta; /* meta.jsonl: processes' resources */
	struct cw_jsonw mw;
	uint64_t meta_seq;
	bool paths; /* keep windows for causal paths */
	struct cw_timing_record *windows;
	size_t nwindows, capwindows;
	int err;
};

static const char help[] =
	"usage: causeway run [--duration D] [--interval I] [-o DIR] [--json]\n"
	"                    [--attach auto|fentry|kprobe|tracepoint]\n"
	"                    [--netns NS] [--msg-gap D] [--no-udp]\n"
	"                    [--no-nat] [--hooks always|sampled] [--metrics A:P]\n"
	"                    [--traces FILE]\n"
	"\n"
	"Watch TCP and UDP traffic on this host from the kernel, with no\n"
	"change to the programs watched; pair the two ends of every local\n"
	"connection and print who talks to whom.\n"
	"\n"
	"  -d, --duration D   stop after D (default: at Ctrl-C)\n"
	"  -i, --interval I   collect aggregates every I (default 1s)\n"
	"  -o, --out DIR      write edges.json, graph.dot, conns.jsonl and\n"
	"                     meta.jsonl (processes' CPU and memory)\n"
	"  -j, --json         print the graph as JSON instead of a table\n"
	"  -a, --attach V     hook variant (default auto: the cheapest\n"
	"                     this kernel allows; see 'causeway probe')\n"
	"  -n, --netns NS     watch one network namespace only (inode,\n"
	"                     name in /run/netns, or /proc/PID/ns/net)\n"
	"      --msg-gap D    an idle gap of D also starts a new message\n"
	"      --no-udp       do not count UDP\n"
	"      --no-nat       keep DNAT'ed (virtual) addresses: no conntrack lookups\n"
	"      --hooks H      always (default): a program on every send/recv\n"
	"                     counts calls and messages exactly, ~100 ns a call;\n"
	"                     sampled: only inside timing windows; outside,\n"
	"                     calls and messages are estimated from the\n"
	"                     bytes (exact either way)\n"
	"      --metrics A:P  the agent's counters for Prometheus at\n"
	"                     http://A:P/metrics (a bare PORT: 127.0.0.1)\n"
	"  -w, --window D     record message start times in timing windows\n"
	"                     of D (into timing.jsonl with -o)\n"
	"      --window-every P  open a window at every wall-clock multiple\n"
	"                     of P (default: one window, from the start)\n"
	"  -p, --paths        infer causal paths from the timing windows\n"
	"                     (convolution); paths.json with -o\n"
	"      --min-share F  graph.dot: drop edges under F of all bytes\n"
	"                     (default 0.0)\n"
	"      --runtime-root DIR  container runtime state for workload names\n"
	"                     (default $CAUSEWAY_RUNTIME_ROOT, else /)\n"
	"      --traces FILE  write every message (thread, role, the request\n"
	"                     its thread served) as the CSV that 'causeway\n"
	"                     traces' reads; in the --window windows if any\n"
	"      --mode M       aggregate (default), conn-only or per-event\n"
	"                     (the last two exist for the benchmark)\n"
	"\n"
	"Needs root, or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN.\n"
	"\n"
	"Examples:\n"
	"  causeway run --duration 30s\n"
	"  causeway run -d 10s -o /tmp/cw && dot -Tsvg /tmp/cw/graph.dot > g.svg\n"
	"  causeway run --netns web1 --json\n";

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

	if (CW_GROW(rc->windows, rc->capwindows, rc->nwindows + 1, 64))
		return cw_error("out of memory for timing windows");
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

static int on_meta(const struct cw_proc_meta *pm, void *arg)
{
	struct run_ctx *rc = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_PROC,
				.version = CW_WIRE_VERSION};

	m.proc = *pm;
	m.proc.seq = ++rc->meta_seq;
	cw_wire_msg_json(&rc->mw, &m);
	cw_jsonw_end_line(&rc->mw);
	return 0;
}

/* Cross-checks and defaults: 0, or -1 after a message. */
static int check_options(struct run_opts *ro)
{
	struct cw_watch_opts *wo = &ro->wo;

	if (wo->window_every_ns && !wo->window_ns)
		return cw_error("--window-every needs --window");
	if (wo->window_every_ns && wo->window_every_ns < wo->window_ns)
		return cw_error("--window-every must be at least --window");
	if (ro->paths && !wo->window_ns)
		wo->window_ns = 365 * 86400 * NSEC_PER_SEC; /* the whole run */
	if (wo->window_ns && !wo->window_every_ns)
		wo->window_every_ns = 365 * 86400 * NSEC_PER_SEC;
	wo->interval_ns = ro->w.interval_ns;
	wo->duration_ns = ro->w.duration_ns;
	return 0;
}

static const char *const modes[] = {"aggregate", "conn-only", "per-event",
				    NULL};

/* -1 to go on, else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct run_opts *ro)
{
	const uint64_t day = 86400 * NSEC_PER_SEC;
	const struct cli_opt t[] = {
		CLI_WATCH(&ro->w),
		CLI_STR("out", 'o', &ro->out),
		CLI_FLAG("json", 'j', &ro->json),
		CLI_ENUM("mode", 0, &ro->w.ao.mode, modes),
		CLI_REAL("min-share", 0, &ro->min_share, 0, 1),
		CLI_DUR("window", 'w', &ro->wo.window_ns, NSEC_PER_MSEC, day),
		CLI_DUR("window-every", 0, &ro->wo.window_every_ns,
			NSEC_PER_MSEC, day),
		CLI_FLAG("paths", 'p', &ro->paths),
		CLI_STR("runtime-root", 0, &ro->wo.runtime_root),
		CLI_STR("metrics", 0, &ro->metrics),
		CLI_STR("traces", 0, &ro->traces),
		{0}};
	int rc = cli_parse("run", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	if (optind < argc)
		return cw_error("unexpected argument '%s' (see 'causeway run "
				"--help')",
				argv[optind]),
		       2;
	return check_options(ro) ? 2 : -1;
}

/* DIR/conns.jsonl, DIR/meta.jsonl, and DIR/timing.jsonl with windows. */
static int open_outputs(struct run_ctx *rc, const struct run_opts *ro)
{
	char path[PATH_MAX];

	if (!ro->out)
		return 0;
	snprintf(path, sizeof(path), "%s/conns.jsonl", ro->out);
	if (cw_outfile_open(&rc->records, path))
		return -1;
	cw_jsonw_init(&rc->w, rc->records.fp);
	snprintf(path, sizeof(path), "%s/meta.jsonl", ro->out);
	if (cw_outfile_open(&rc->meta, path))
		return -1;
	cw_jsonw_init(&rc->mw, rc->meta.fp);
	if (!ro->wo.window_ns)
		return 0;
	snprintf(path, sizeof(path), "%s/timing.jsonl", ro->out);
	if (cw_outfile_open(&rc->timing, path))
		return -1;
	cw_jsonw_init(&rc->tw, rc->timing.fp);
	return 0;
}

/* The graph as JSON or as a table, and the counters to stderr. */
static void print_results(const struct run_opts *ro, struct cw_agent *a,
			  const struct cw_graph *g, const struct run_ctx *rc,
			  const struct cw_agent_stats *st)
{
	struct cw_jsonw w;

	if (ro->json) {
		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_str(&w, "host", cw_agent_host(a));
		cw_jsonw_str(&w, "attach", cw_attach_name(cw_agent_attach(a)));
		cw_graph_json(g, &w);
		cli_stats_json(&w, st, &rc->pairing.st);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		cw_graph_print_table(g);
		if (ro->w.ao.mode == CW_MODE_PER_EVENT)
			printf("per-event mode: %llu events, %llu bytes summed "
			       "in user space, %llu lost\n",
			       (unsigned long long)st->events,
			       (unsigned long long)cw_agent_event_bytes(a),
			       (unsigned long long)st->event_lost);
	}
	cw_info("%llu records, %llu connection ends (%llu paired, %llu "
		"unpaired); lost: %llu close records, %llu storage failures, "
		"%llu UDP map full",
		(unsigned long long)st->records,
		(unsigned long long)rc->pairing.st.ends,
		(unsigned long long)rc->pairing.st.paired,
		(unsigned long long)rc->pairing.st.unpaired,
		(unsigned long long)st->close_lost,
		(unsigned long long)st->storage_fail,
		(unsigned long long)st->udp_map_full);
}

/* --metrics: the agent's counters, posted after each collection. */
static struct cw_metrics_server *open_metrics(struct run_opts *ro,
					      struct cw_agent *a)
{
	ro->wo.metrics = cw_agent_metrics_board(cw_agent_host(a));
	if (!ro->wo.metrics)
		return NULL;
	return cw_metrics_server_start(ro->metrics, ro->wo.metrics);
}

/* Watch, pair, print and write: 0, or -1 after a message. */
static int run(struct run_opts *ro, struct run_ctx *rc, struct cw_graph *g)
{
	struct cw_metrics_server *ms = NULL;
	struct cw_msgs_trace *tr = NULL;
	struct cw_msgs_opts mo = {.sz = sizeof(mo), .netns = ro->w.ao.netns};
	struct cw_agent_stats st;
	struct cw_agent *a = NULL;
	int err = -1;

	if (cw_agent_open_hinted(&a, &ro->w.ao))
		goto out;
	if (ro->metrics && !(ms = open_metrics(ro, a)))
		goto out;
	/* As the agent does: no bounding set, no new privileges after this. */
	if (cw_drop_privileges(NULL))
		cw_warn("running with more privileges than needed");
	if (open_outputs(rc, ro))
		goto out;
	if (ro->traces &&
	    cw_msgs_trace_start(&tr, ro->traces, &mo, ro->wo.window_ns,
				ro->wo.window_every_ns))
		goto out;
	cw_info("watching with the %s hooks%s; Ctrl-C to stop",
		cw_attach_name(cw_agent_attach(a)),
		ro->w.ao.netns ? " in one namespace" : "");
	if (cw_agent_watch(a, &ro->wo, on_record, on_timing, rc))
		goto out;
	if (tr) {
		int terr = cw_msgs_trace_finish(tr); /* frees tr either way */

		tr = NULL;
		if (terr)
			goto out;
	}
	cw_agent_stats(a, &st);
	if (cw_pairing_graph(&rc->pairing, g)) {
		cw_error("out of memory while pairing");
		goto out;
	}
	cw_graph_sort_edges(g);
	print_results(ro, a, g, rc, &st);
	if (rc->paths && infer_paths(rc, ro->out))
		goto out;
	if (ro->out &&
	    (cli_write_outputs(ro->out, g, cw_agent_host(a),
			       cw_attach_name(cw_agent_attach(a)), &st,
			       &rc->pairing.st, ro->min_share) ||
	     cw_outfile_commit(&rc->records) || cw_outfile_commit(&rc->meta) ||
	     (rc->timing.fp && cw_outfile_commit(&rc->timing))))
		goto out;
	err = 0;
out:
	cw_msgs_trace_abort(tr);
	cw_metrics_server_stop(ms);
	cw_metrics_board_free(ro->wo.metrics);
	cw_agent_close(a);
	return err;
}

int cmd_run(int argc, char **argv)
{
	/* keep_caps: run drops its privileges itself, after attaching. */
	struct run_opts ro = {
		/* run is a short look at one host: exact messages by default */
		.w = {.ao = {.sz = sizeof(ro.w.ao),
			     .keep_caps = true,
			     .hooks = CW_HOOKS_ALWAYS},
		      .interval_ns = NSEC_PER_SEC},
		.wo = {.sz = sizeof(ro.wo)}};
	struct run_ctx rc = {0};
	struct cw_graph g;
	int err;

	err = parse_args(argc, argv, &ro);
	if (err >= 0)
		return err;
	rc.paths = ro.paths;
	/* Resources only go to DIR/meta.jsonl: the printed graph has none. */
	if (ro.out)
		ro.wo.on_meta = on_meta;
	/* Refuse a bad output folder before spending a whole run. */
	if (ro.out && (cw_mkdir_p(ro.out) || cw_check_writable_dir(ro.out)))
		return 1;
	cw_pairing_init(&rc.pairing);
	cw_graph_init(&g);
	cw_catch_signals();
	err = run(&ro, &rc, &g) ? 1 : 0;
	if (rc.records.fp)
		cw_outfile_abort(&rc.records);
	if (rc.timing.fp)
		cw_outfile_abort(&rc.timing);
	if (rc.meta.fp)
		cw_outfile_abort(&rc.meta);
	cw_graph_release(&g);
	cw_pairing_release(&rc.pairing);
	free_windows(&rc);
	return err;
}
