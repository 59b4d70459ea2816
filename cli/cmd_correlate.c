// SPDX-License-Identifier: MIT
/*
 * causeway correlate: options, then the correlator service
 * (correlator/correlator.h) with a snapshot hook that has the correlator
 * build the fleet graph (correlator/pipeline.h) and writes it (edges.json,
 * graph.dot); the graph and counters at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/graph_writer.h"
#include "cli/report.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

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

/* The snapshot hook's: the fleet graph and where it goes. */
struct snapshot_ctx {
	const char *out;
	double min_share;
	struct cw_fleet fleet;
	/* Files of snapshots before the last written off this thread; the
	 * graph then goes to the writer (given: it is empty, rebuild for
	 * the end). */
	struct cli_graph_writer *writer;
	bool given;
};

/*
 * Build the fleet graph (correlator/pipeline.h) and write it.  When
 * nothing it is made of moved since the last snapshot, the graph and its
 * files stand: a member that waits for records does not rewrite a large
 * graph every snapshot.
 */
static int write_graph(struct cw_correlator *c, bool final, void *arg)
{
	struct snapshot_ctx *s = arg;
	struct cw_fleet *f = &s->fleet;

	if (cw_fleet_read(f, c))
		return -1;
	if (!s->out && !final)
		return 0; /* no files: the graph is for the summary alone */
	if (!cw_fleet_moved(f, c) && !(final && s->given))
		return 0;
	/* The end's graph is written here, and kept for the summary. */
	if (final && s->writer && cli_graph_writer_drain(s->writer))
		return -1;
	if (cw_fleet_build(f, c))
		return -1;
	s->given = !final && s->writer;
	if (s->given)
		return cli_graph_writer_put(s->writer, &f->graph,
					    &c->pairing.st);
	if (s->out && cli_write_outputs(s->out, &f->graph, NULL, NULL, NULL,
					&c->pairing.st, s->min_share))
		return -1;
	return 0;
}

/* The graph and counters as one JSON object on stdout. */
static void print_json(const struct cw_correlator *c, const struct cw_graph *g)
{
	struct cw_jsonw w;

	cw_jsonw_init(&w, stdout);
	cw_jsonw_obj_open(&w, NULL);
	cw_graph_json(g, &w);
	cli_stats_json(&w, NULL, &c->pairing.st);
	cw_jsonw_obj_open(&w, "bad_records");
	cw_jsonw_u64(&w, "malformed", c->errors.count[-CW_WIRE_EMALFORMED]);
	cw_jsonw_u64(&w, "unknown_version", c->errors.count[-CW_WIRE_EVERSION]);
	cw_jsonw_u64(&w, "unknown_kind", c->errors.count[-CW_WIRE_EKIND]);
	cw_jsonw_obj_close(&w);
	if (c->o.kafka) {
		/* Loss and state counters beside the bad records. */
		cw_jsonw_obj_open(&w, "state");
		cw_jsonw_u64(&w, "lost_to_retention", c->sst.lost);
		cw_jsonw_u64(&w, "checkpoints", c->sst.checkpoints);
		cw_jsonw_u64(&w, "restored", c->sst.restored);
		cw_jsonw_u64(&w, "restored_ends", c->sst.restored_ends);
		cw_jsonw_u64(&w, "fresh", c->sst.fresh);
		cw_jsonw_u64(&w, "dropped", c->sst.dropped);
		cw_jsonw_u64(&w, "replayed", c->sst.replayed);
		cw_jsonw_obj_close(&w);
	}
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* What the time buckets did, over the partitions held at the end. */
static void print_buckets(const struct cw_correlator *c)
{
	struct cw_bucket_state t = c->pairing.bk.s;
	size_t i, live = cw_pairing_live_ends(&c->pairing);

	for (i = 0; i < c->nparts; i++) {
		const struct cw_pairing *p = &c->parts[i].pairing;

		t.gone_ends += p->bk.s.gone_ends;
		t.dormant += p->bk.s.dormant;
		t.late += p->bk.s.late;
		t.sealed_ns = p->bk.s.sealed_ns > t.sealed_ns
				      ? p->bk.s.sealed_ns
				      : t.sealed_ns;
		live += cw_pairing_live_ends(p);
	}
	cw_info("buckets: %zu live ends, %" PRIu64 " folded into their "
		"edges and freed (%" PRIu64 " kept dormant), %" PRIu64
		" late deltas; sealed up to %" PRIu64 "; %" PRIu64
		" edge records written",
		live, t.gone_ends, t.dormant, t.late, t.sealed_ns,
		c->edge_records);
}

/* The graph and counters at the end: JSON or a table on stdout. */
static void print_result(const struct cw_correlator *c,
			 const struct cw_graph *g, bool json)
{
	const struct cw_pairing_stats *st = &c->pairing.st;

	if (json) {
		print_json(c, g);
	} else {
		cli_print_table(g);
	}
	cw_wire_errors_report(&c->errors, "records");
	/* This run's records; the graph also holds what the restored
	 * checkpoints reflect (st->records in all). */
	cw_info("%llu records applied, %llu ends (%llu paired, %llu unpaired), "
		"%llu bad records skipped",
		(unsigned long long)c->applied, (unsigned long long)st->ends,
		(unsigned long long)st->paired,
		(unsigned long long)st->unpaired,
		(unsigned long long)cw_wire_errors_total(&c->errors));
	if (c->o.kafka)
		cw_info("state: %" PRIu64 " checkpoints (%" PRIu64
			" records), %" PRIu64 " partitions restored (%" PRIu64
			" ends, %.3f s), %" PRIu64 " started afresh, %" PRIu64
			" handed over or lost; %" PRIu64
			" records lost to retention, %" PRIu64
			" already applied skipped",
			c->sst.checkpoints, c->sst.chunks, c->sst.restored,
			c->sst.restored_ends, c->sst.restore_secs, c->sst.fresh,
			c->sst.dropped, c->sst.lost, c->sst.replayed);
	if (c->o.bucket_ns)
		print_buckets(c);
	if (c->o.paths &&
	    (c->timing.records || c->windows_failed || c->timing.refused))
		cw_info("paths: %" PRIu64 " windows inferred (%" PRIu64
			" without paths) from %" PRIu64
			" timing records; %" PRIu64 " late records, %" PRIu64
			" without their end's fields, %" PRIu64
			" of slots too far from the clock; %" PRIu64
			" pauses of a partition ahead",
			c->windows, c->windows_failed, c->timing.records,
			c->timing.late, c->no_conn, c->timing.refused,
			c->timing_pauses);
	if (c->trace_windows || c->traces_post_failed)
		cw_info("traces: %" PRIu64 " windows, %" PRIu64
			" spans built; %" PRIu64 " posted, %" PRIu64
			" posts failed",
			c->trace_windows, c->trace_spans, c->traces_posted,
			c->traces_post_failed);
}

struct correlate_args {
	struct cw_kafka_conf kc;
	struct cw_correlator_opts o;
	uint64_t duration, idle, every;
	double min_share;
	bool json;
	bool no_checkpoints;
};

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct correlate_args *a)
{
	const uint64_t day = 86400 * NSEC_PER_SEC;
	bool no_paths = false;
	const struct cli_opt t[] = {
		CLI_KAFKA(&a->kc),
		CLI_STR("group", 'g', &a->kc.group),
		CLI_FLAG("from-beginning", 0, &a->kc.from_beginning),
		CLI_STR("out", 'o', &a->o.out),
		CLI_CALL("otlp", 0, &a->o.otlp, cli_otlp_url),
		CLI_DUR("snapshot-every", 0, &a->every, 100 * NSEC_PER_MSEC,
			day),
		CLI_DUR("duration", 'd', &a->duration, NSEC_PER_MSEC,
			365 * day),
		CLI_DUR("idle", 0, &a->idle, NSEC_PER_MSEC, day),
		CLI_FLAG("json", 'j', &a->json),
		CLI_REAL("min-share", 0, &a->min_share, 0, 1),
		CLI_FLAG("no-paths", 0, &no_paths),
		CLI_FLAG("no-checkpoints", 0, &a->no_checkpoints),
		CLI_DUR("window-grace", 0, &a->o.grace_ns, 0,
			3600 * NSEC_PER_SEC),
		CLI_DUR("bin", 0, &a->o.po.bin_ns, NSEC_PER_USEC, NSEC_PER_SEC),
		CLI_DUR("max-delay", 0, &a->o.po.max_delay_ns, NSEC_PER_MSEC,
			60 * NSEC_PER_SEC),
		CLI_DUR("bucket", 0, &a->o.bucket_ns, 0, day),
		CLI_DUR("ttl", 0, &a->o.ttl_ns, NSEC_PER_SEC, 30 * day),
		CLI_DUR("lateness", 0, &a->o.lateness_ns, 0, day),
		CLI_DUR("view", 0, &a->o.view_ns, 0, 365 * day),
		{0}};
	int rc;

	memset(a, 0, sizeof(*a));
	a->every = 10 * NSEC_PER_SEC;
	a->o.grace_ns = 2 * NSEC_PER_SEC;
	/* Buckets on (--bucket 0 turns them off: every end kept). */
	a->o.bucket_ns = CW_BUCKET_WIDTH_NS;
	a->o.ttl_ns = CW_BUCKET_TTL_NS;
	a->o.lateness_ns = CW_BUCKET_LATENESS_NS;
	a->o.view_ns = CW_VIEW_NS;
	cw_paths_opts_default(&a->o.po);
	rc = cli_parse("correlate", t, argc, argv, help);
	a->o.paths = !no_paths;
	if (rc >= 0)
		return rc;
	if (cli_one_operand(argc, argv, NULL))
		return 2;
	if (!a->kc.brokers)
		return cw_error("--kafka is needed (see 'causeway correlate "
				"--help')"),
		       2;
	if (a->o.otlp && !a->o.paths)
		return cw_error("--otlp needs the timing topic: not with "
				"--no-paths"),
		       2;
	if (a->o.view_ns && a->o.view_ns < a->o.bucket_ns)
		return cw_error("--view is shorter than a bucket (--bucket): "
				"it would hold no sealed bucket (0 keeps all "
				"time)"),
		       2;
	return -1;
}

/* What the snapshot writer did, said, and the writer stopped (NULL: none);
 * 0, or -1 if a write failed. */
static int writer_stop(struct cli_graph_writer *w)
{
	uint64_t written, skipped, cpu;

	if (!w)
		return 0;
	cli_graph_writer_counts(w, &written, &skipped, &cpu);
	cw_info("snapshots: %" PRIu64 " graphs written off the consuming "
		"thread (%.3f s of CPU), %" PRIu64 " replaced by a newer one "
		"before their turn",
		written, (double)cpu / 1e9, skipped);
	return cli_graph_writer_stop(w);
}

int cmd_correlate(int argc, char **argv)
{
	static struct cw_correlator c; /* large: keep it off the stack */
	struct snapshot_ctx snap = {0};
	char topic[CW_KAFKA_TOPIC_MAX], timing[CW_KAFKA_TOPIC_MAX];
	char state[CW_KAFKA_TOPIC_MAX], edges[CW_KAFKA_TOPIC_MAX];
	struct cw_kafka_consumer *consumer = NULL;
	struct correlate_args a;
	const char *topics[2];
	int err;

	err = parse_args(argc, argv, &a);
	if (err >= 0)
		return err;
	if (a.o.out && (cw_mkdir_p(a.o.out) || cw_check_writable_dir(a.o.out)))
		return 1;
	cw_catch_signals();
	if (a.o.po.bin_ns * 2 > a.o.po.max_delay_ns) {
		cw_error("--max-delay must be at least two --bin widths");
		return 2;
	}
	err = 1;
	topics[0] = cw_kafka_topic(&a.kc, CW_WIRE_CONN, topic, sizeof(topic));
	topics[1] =
		cw_kafka_topic(&a.kc, CW_WIRE_TIMING, timing, sizeof(timing));
	if (!a.no_checkpoints) {
		a.o.kafka = &a.kc;
		a.o.group = a.kc.group ? a.kc.group : CW_KAFKA_GROUP;
		a.o.conns_topic = topic;
		a.o.state_topic = cw_kafka_topic(&a.kc, CW_WIRE_STATE, state,
						 sizeof(state));
		if (a.o.bucket_ns)
			a.o.edges_topic = cw_kafka_topic(&a.kc, CW_WIRE_EDGE,
							 edges, sizeof(edges));
	}
	cw_fleet_init(&snap.fleet, &a.kc, a.o.group, a.o.edges_topic);
	if (cw_correlator_open(&c, &a.o, NULL, timing))
		goto out;
	consumer = cw_kafka_consumer_new(&a.kc, topics, a.o.paths ? 2 : 1);
	if (!consumer)
		goto out;
	c.consumer = consumer;
	if (a.o.kafka)
		cw_kafka_consumer_hooks(consumer, cw_correlator_on_assign,
					cw_correlator_on_revoke, &c);
	c.snapshot = write_graph;
	c.snapshot_arg = &snap;
	snap.out = a.o.out;
	snap.min_share = a.min_share;
	if (snap.out && !(snap.writer = cli_graph_writer_start(snap.out,
							       snap.min_share)))
		goto out;
	cw_info("correlating %s%s%s from %s", topic, a.o.paths ? " and " : "",
		a.o.paths ? timing : "", a.kc.brokers);
	if (cw_correlator_run(&c, a.duration, a.idle, a.every))
		goto out;
	print_result(&c, &snap.fleet.graph, a.json);
	err = 0;
out:
	if (writer_stop(snap.writer) && !err)
		err = 1;
	cw_kafka_consumer_free(consumer);
	if (cw_correlator_close(&c) && !err)
		err = 1;
	cw_fleet_release(&snap.fleet);
	return err;
}
