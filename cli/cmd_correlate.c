// SPDX-License-Identifier: MIT
/*
 * causeway correlate: options, then the correlator service
 * (correlator/correlator.h) with a snapshot hook that has the correlator
 * build the fleet graph (correlator/pipeline.h) and writes it (edges.json,
 * graph.dot); the graph and counters at the end.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/member.h"

static const char help[] =
	"usage: causeway correlate --kafka BROKERS [--group G] [-o DIR]\n"
	"                          [--kafka-config F] [--topic-prefix P]\n"
	"                          [--from-beginning] [--duration D]\n"
	"                          [--idle D] [--snapshot-every D] [--json]\n"
	"                          [--otlp URL]\n"
	"                          [--no-paths | --window-grace D --bin D\n"
	"                           --max-delay D]\n"
	"\n"
	"Consume the agents' records, pair the two ends of every connection\n"
	"(canonical 4-tuple + protocol + time overlap) and build the process\n"
	"graph.  From the agents' timing windows (causeway agent --window),\n"
	"infer the causal paths of each window (convolution).  Offsets are\n"
	"committed only after the records are applied and the snapshot or\n"
	"the window's paths holding them are written.\n"
	"\n"
	"  -k, --kafka B          bootstrap brokers (host:port,...)\n"
	"      --kafka-config F   librdkafka properties, key=value lines\n"
	"      --topic-prefix P   read P.conns and P.timing (default causeway)\n"
	"  -g, --group G          consumer group (default causeway-correlator)\n"
	"      --from-beginning   with no committed offset, start at the\n"
	"                         oldest record (default: the newest)\n"
	"  -o, --out DIR          write edges.json and graph.dot at every\n"
	"                         snapshot, paths.json (the newest window's\n"
	"                         causal paths) and paths.jsonl (one line\n"
	"                         per window); edges.json is the group's graph,\n"
	"                         every member's buckets in P.edges merged;\n"
	"                         traces.jsonl: each window's traces (agents\n"
	"                         with --traces), one OTLP/JSON export\n"
	"                         request a line\n"
	"      --otlp URL         POST each window's traces to an OTLP/HTTP\n"
	"                         endpoint (3 tries, then counted and skipped;\n"
	"                         a restart may post a window again)\n"
	"      --no-paths         do not read P.timing (no causal paths)\n"
	"      --no-checkpoints   keep no per-partition state in P.state: start\n"
	"                         from the group's committed offsets with\n"
	"                         nothing (a restart loses the graph)\n"
	"      --window-grace D   a window is inferred D after a newer one\n"
	"                         shows up (default 2s), or at the end\n"
	"      --bin D            paths: signal bin width (default 100us)\n"
	"      --max-delay D      paths: longest causal delay (default 1s)\n"
	"      --bucket D         edge totals per time bucket of D (e.g. 1m),\n"
	"                         ends freed once sealed, buckets to P.edges\n"
	"                         (default 1m; 0: keep every end, no buckets)\n"
	"      --ttl D            an end silent for D is folded into its edge\n"
	"                         and freed (default 15m)\n"
	"      --lateness D       a bucket is sealed once records D past its\n"
	"                         end arrive (default 30s)\n"
	"      --view D           the graph is the buckets of the last D (by the\n"
	"                         records' time; default 1h); older ones leave\n"
	"                         memory (0: all time, memory grows with\n"
	"                         every edge ever seen)\n"
	"      --snapshot-every D snapshot and commit period (default 10s)\n"
	"  -d, --duration D       stop after D (default: at a signal)\n"
	"      --idle D           stop after D with partitions but no record\n"
	"  -j, --json             print the graph as JSON at the end\n"
	"      --min-share F      graph.dot: drop edges under F of bytes\n"
	"\n"
	"Examples:\n"
	"  causeway correlate --kafka kafka1:9092 -o /srv/causeway\n"
	"  causeway correlate --kafka 127.0.0.1:9092 --from-beginning --idle 5s\n"
	"  causeway correlate --kafka kafka1:9092 -o /srv/causeway \\\n"
	"      --otlp http://otel-collector:4318/v1/traces\n"
	"  causeway correlate --kafka kafka1:9092 -o /srv/causeway --bin 1ms\n"
	"      # agents: causeway agent --kafka kafka1:9092 --window 5s --window-every 1m\n";

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct cw_member *m)
{
	const uint64_t day = 86400 * NSEC_PER_SEC;
	struct cw_correlator_opts *o = &m->o;
	bool no_paths = false;
	const struct cw_opt t[] = {
		CLI_KAFKA(&m->kc),
		CW_OPT_STR("group", 'g', &m->kc.group),
		CW_OPT_FLAG("from-beginning", 0, &m->kc.from_beginning),
		CW_OPT_STR("out", 'o', &o->out),
		CW_OPT_CALL("otlp", 0, &o->otlp, cli_otlp_url),
		CW_OPT_DUR("snapshot-every", 0, &m->every_ns, 100 * NSEC_PER_MSEC,
			day),
		CW_OPT_DUR("duration", 'd', &m->duration_ns, NSEC_PER_MSEC,
			365 * day),
		CW_OPT_DUR("idle", 0, &m->idle_ns, NSEC_PER_MSEC, day),
		CW_OPT_FLAG("json", 'j', &m->json),
		CW_OPT_REAL("min-share", 0, m->write_arg, 0, 1),
		CW_OPT_FLAG("no-paths", 0, &no_paths),
		CW_OPT_FLAG("no-checkpoints", 0, &m->no_checkpoints),
		CW_OPT_DUR("window-grace", 0, &o->grace_ns, 0,
			3600 * NSEC_PER_SEC),
		CW_OPT_DUR("bin", 0, &o->po.bin_ns, NSEC_PER_USEC, NSEC_PER_SEC),
		CW_OPT_DUR("max-delay", 0, &o->po.max_delay_ns, NSEC_PER_MSEC,
			60 * NSEC_PER_SEC),
		CW_OPT_DUR("bucket", 0, &o->bucket_ns, 0, day),
		CW_OPT_DUR("ttl", 0, &o->ttl_ns, NSEC_PER_SEC, 30 * day),
		CW_OPT_DUR("lateness", 0, &o->lateness_ns, 0, day),
		CW_OPT_DUR("view", 0, &o->view_ns, 0, 365 * day),
		{0}};
	int rc;

	cw_member_defaults(m);
	rc = cw_opts_parse("correlate", t, argc, argv, help);
	o->paths = !no_paths;
	if (rc >= 0)
		return rc;
	if (cw_opts_one_operand(argc, argv, NULL))
		return 2;
	if (!m->kc.brokers)
		return cw_error("--kafka is needed (see 'causeway correlate "
				"--help')"),
		       2;
	if (o->otlp && !o->paths)
		return cw_error("--otlp needs the timing topic: not with "
				"--no-paths"),
		       2;
	if (o->view_ns && o->view_ns < o->bucket_ns)
		return cw_error("--view is shorter than a bucket (--bucket): "
				"it would hold no sealed bucket (0 keeps all "
				"time)"),
		       2;
	return -1;
}

/* The snapshot writer's files: edges.json, graph.dot. */
static int write_files(const char *dir, const struct cw_graph *g,
		       const struct cw_pairing_stats *ps, void *arg)
{
	return cli_write_outputs(dir, g, NULL, NULL, NULL, ps,
				 *(const double *)arg);
}

int cmd_correlate(int argc, char **argv)
{
	double min_share = 0;
	struct cw_member m = {.every_ns = 10 * NSEC_PER_SEC,
			      .write = write_files,
			      .write_arg = &min_share};
	int err = parse_args(argc, argv, &m);

	if (err >= 0)
		return err;
	if (m.o.out && (cw_mkdir_p(m.o.out) || cw_check_writable_dir(m.o.out)))
		return 1;
	cw_catch_signals();
	if (m.o.po.bin_ns * 2 > m.o.po.max_delay_ns) {
		cw_error("--max-delay must be at least two --bin widths");
		return 2;
	}
	return cw_member_run(&m) ? 1 : 0;
}
