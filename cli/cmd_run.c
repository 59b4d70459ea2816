// SPDX-License-Identifier: MIT
/*
 * causeway run: agent and correlator in one process, no broker.  Watches
 * this host, pairs the two ends of local connections (across network
 * namespaces too) and prints process-to-process edges.
 */
#include <stdio.h>

#include "agent/agent.h"
#include "agent/dns.h"
#include "agent/run.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "correlator/report.h"
#include "correlator/local.h"
#include "graph/graph.h"

struct run_opts {
	struct cli_watch w;
	struct cw_watch_opts wo;
	const char *out;
	double min_share;
	bool json;
	bool paths;
	const char *metrics; /* --metrics ADDR:PORT, or NULL */
	const char *traces;  /* --traces FILE: messages CSV, or NULL */
	bool dns;	     /* --dns: external peers named */
};

static const char help[] =
	"usage: causeway run [--duration D] [--interval I] [-o DIR] [--json]\n"
	"                    [--attach auto|fentry|kprobe|tracepoint]\n"
	"                    [--netns NS] [--msg-gap D] [--no-udp]\n"
	"                    [--no-nat] [--hooks always|sampled] [--metrics A:P]\n"
	"                    [--traces FILE] [--dns] [--window D]\n"
	"                    [--window-every P] [--paths] [--min-share F]\n"
	"                    [--runtime-root DIR] [--mode M]\n"
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
	"      --dns          name external peers from the DNS answers the\n"
	"                     host receives (dns_name, labels; off by default)\n"
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
	"  causeway run --netns web1 -d 10s --json\n";

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
	const struct cw_opt t[] = {
		CLI_WATCH(&ro->w),
		CW_OPT_STR("out", 'o', &ro->out),
		CW_OPT_FLAG("json", 'j', &ro->json),
		CW_OPT_ENUM("mode", 0, &ro->w.ao.mode, modes),
		CW_OPT_REAL("min-share", 0, &ro->min_share, 0, 1),
		CW_OPT_DUR("window", 'w', &ro->wo.window_ns, NSEC_PER_MSEC, day),
		CW_OPT_DUR("window-every", 0, &ro->wo.window_every_ns,
			NSEC_PER_MSEC, day),
		CW_OPT_FLAG("paths", 'p', &ro->paths),
		CW_OPT_STR("runtime-root", 0, &ro->wo.runtime_root),
		CW_OPT_STR("metrics", 0, &ro->metrics),
		CW_OPT_STR("traces", 0, &ro->traces),
		CW_OPT_FLAG("dns", 0, &ro->dns),
		{0}};
	int rc = cw_opts_parse("run", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	if (optind < argc)
		return cw_error("unexpected argument '%s' (see 'causeway run "
				"--help')",
				argv[optind]),
		       2;
	return check_options(ro) ? 2 : -1;
}

/* The graph as JSON or as a table, and the counters to stderr. */
static void print_results(const struct run_opts *ro, struct cw_agent *a,
			  const struct cw_graph *g, const struct cw_local *rc,
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

/* --dns: the capture, attached before the privileges go. */
static int open_dns(struct run_opts *ro, struct cw_agent *a)
{
	struct cw_dns_opts o = {.sz = sizeof(o), .host = cw_agent_host(a)};

	ro->wo.on_dns = cw_local_on_dns;
	return cw_dns_open(&ro->wo.dns, &o);
}

/* Watch, pair, print and write: 0, or -1 after a message. */
/*
 * The line tests and scripts wait for, said once the agent watches: its
 * first timing window open, so a workload started on it is inside.
 */
static char ready_line[96];

static void say_ready(void *ctx)
{
	(void)ctx;
	cw_info("%s", ready_line);
}

static int run(struct run_opts *ro, struct cw_local *rc, struct cw_graph *g)
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
	if (ro->dns && open_dns(ro, a))
		goto out;
	/* As the agent does: no bounding set, no new privileges after this. */
	if (cw_drop_privileges(NULL))
		cw_warn("running with more privileges than needed");
	if (cw_local_open(rc, ro->out, ro->wo.window_ns))
		goto out;
	if (ro->traces &&
	    cw_msgs_trace_start(&tr, ro->traces, &mo, ro->wo.window_ns,
				ro->wo.window_every_ns))
		goto out;
	snprintf(ready_line, sizeof(ready_line),
		 "watching with the %s hooks%s; Ctrl-C to stop",
		 cw_attach_name(cw_agent_attach(a)),
		 ro->w.ao.netns ? " in one namespace" : "");
	ro->wo.on_ready = say_ready;
	if (cw_agent_watch(a, &ro->wo, cw_local_on_record, cw_local_on_timing,
			   rc))
		goto out;
	if (tr) {
		int terr = cw_msgs_trace_finish(tr); /* frees tr either way */

		tr = NULL;
		if (terr)
			goto out;
	}
	cw_agent_stats(a, &st);
	cw_dns_report(ro->wo.dns);
	if (cw_local_graph(rc, g))
		goto out;
	print_results(ro, a, g, rc, &st);
	if (rc->paths && cw_local_paths(rc, ro->out))
		goto out;
	if (ro->out &&
	    (cli_write_outputs(ro->out, g, cw_agent_host(a),
			       cw_attach_name(cw_agent_attach(a)), &st,
			       &rc->pairing.st, ro->min_share) ||
	     cw_local_commit(rc)))
		goto out;
	err = 0;
out:
	cw_msgs_trace_abort(tr);
	cw_metrics_server_stop(ms);
	cw_metrics_board_free(ro->wo.metrics);
	cw_dns_close(ro->wo.dns);
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
	struct cw_local rc;
	struct cw_graph g;
	int err;

	err = parse_args(argc, argv, &ro);
	if (err >= 0)
		return err;
	/* Resources only go to DIR/meta.jsonl: the printed graph has none. */
	if (ro.out)
		ro.wo.on_meta = cw_local_on_meta;
	/* Refuse a bad output folder before spending a whole run. */
	if (ro.out && (cw_mkdir_p(ro.out) || cw_check_writable_dir(ro.out)))
		return 1;
	cw_local_init(&rc, ro.paths);
	cw_graph_init(&g);
	cw_catch_signals();
	err = run(&ro, &rc, &g) ? 1 : 0;
	cw_graph_release(&g);
	cw_local_release(&rc);
	return err;
}
