// SPDX-License-Identifier: MIT
/*
 * causeway correlate: options, then the correlator service
 * (correlator/correlator.h) with a snapshot hook that builds the graph and
 * writes it (edges.json, graph.dot); the graph and counters at the end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "graph/graph.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway correlate --kafka BROKERS [--group G] [-o "
		"DIR]\n"
		"                          [--kafka-config F] [--topic-prefix "
		"P]\n"
		"                          [--from-beginning] [--duration D]\n"
		"                          [--idle D] [--snapshot-every D] "
		"[--json]\n"
		"                          [--no-paths | --window-grace D "
		"--bin D\n"
		"                           --max-delay D]\n\n"
		"Consume the agents' records, pair the two ends of every "
		"connection\n"
		"(canonical 4-tuple + protocol + time overlap) and build the "
		"process\n"
		"graph.  From the agents' timing windows (causeway agent "
		"--window),\n"
		"infer the causal paths of each window (convolution).  "
		"Offsets are\n"
		"committed only after the records are applied and the "
		"snapshot or\n"
		"the window's paths holding them are written.\n\n"
		"  -k, --kafka B          bootstrap brokers (host:port,...)\n"
		"      --kafka-config F   librdkafka properties, key=value "
		"lines\n"
		"      --topic-prefix P   read P.conns and P.timing (default "
		"causeway)\n"
		"  -g, --group G          consumer group (default "
		"causeway-correlator)\n"
		"      --from-beginning   with no committed offset, start at "
		"the\n"
		"                         oldest record (default: the newest)\n"
		"  -o, --out DIR          write edges.json and graph.dot at "
		"every\n"
		"                         snapshot, paths.json (the newest "
		"window's\n"
		"                         causal paths) and paths.jsonl (one "
		"line\n"
		"                         per window)\n"
		"      --no-paths         do not read P.timing (no causal "
		"paths)\n"
		"      --window-grace D   a window is inferred D after a newer "
		"one\n"
		"                         shows up (default 2s), or at the "
		"end\n"
		"      --bin D            paths: signal bin width (default "
		"100us)\n"
		"      --max-delay D      paths: longest causal delay (default "
		"1s)\n"
		"      --snapshot-every D snapshot and commit period (default "
		"10s)\n"
		"  -d, --duration D       stop after D (default: at a signal)\n"
		"      --idle D           stop after D with no record\n"
		"  -j, --json             print the graph as JSON at the end\n"
		"      --min-share F      graph.dot: drop edges under F of "
		"bytes\n\n"
		"Examples:\n"
		"  causeway correlate --kafka kafka1:9092 -o /srv/causeway\n"
		"  causeway correlate --kafka 127.0.0.1:9092 --from-beginning "
		"--idle 5s\n"
		"  causeway correlate --kafka kafka1:9092 -o /srv/causeway "
		"--bin 1ms\n"
		"      # agents: causeway agent --kafka kafka1:9092 --window "
		"5s "
		"--window-every 1m\n");
}

/* The graph for the snapshot: the settings and the graph kept between. */
struct snapshot_ctx {
	const char *out;
	double min_share;
	struct cw_graph g;
};

/* Build the graph from every end seen and write it. */
static int write_graph(struct cw_correlator *c, bool final, void *arg)
{
	struct snapshot_ctx *s = arg;

	(void) final;
	cw_graph_release(&s->g);
	cw_graph_init(&s->g);
	if (cw_graph_build(&s->g, &c->pairing))
		return cw_error("out of memory while pairing");
	cw_graph_sort_edges(&s->g);
	if (s->out && cli_write_outputs(s->out, &s->g, NULL, NULL, NULL,
					&c->pairing.st, s->min_share))
		return -1;
	return 0;
}

/* The graph and counters at the end: JSON or a table on stdout. */
static void print_result(const struct cw_correlator *c,
			 const struct cw_graph *g, bool json)
{
	const struct cw_pairing_stats *st = &c->pairing.st;
	struct cw_jsonw w;

	if (json) {
		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_graph_json(g, &w);
		cli_stats_json(&w, NULL, st);
		cw_jsonw_obj_open(&w, "bad_records");
		cw_jsonw_u64(&w, "malformed",
			     c->errors.count[-CW_WIRE_EMALFORMED]);
		cw_jsonw_u64(&w, "unknown_version",
			     c->errors.count[-CW_WIRE_EVERSION]);
		cw_jsonw_u64(&w, "unknown_kind",
			     c->errors.count[-CW_WIRE_EKIND]);
		cw_jsonw_obj_close(&w);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		cli_print_table(g);
	}
	cw_wire_errors_report(&c->errors, "records");
	cw_info("%llu records applied, %llu ends (%llu paired, %llu unpaired), "
		"%llu bad records skipped",
		(unsigned long long)st->records, (unsigned long long)st->ends,
		(unsigned long long)st->paired,
		(unsigned long long)st->unpaired,
		(unsigned long long)cw_wire_errors_total(&c->errors));
	if (c->o.paths &&
	    (c->timing.records || c->windows_failed || c->timing.refused))
		cw_info("paths: %" PRIu64 " windows inferred (%" PRIu64
			" without paths) from %" PRIu64
			" timing records; %" PRIu64 " late records, %" PRIu64
			" without their end's fields, %" PRIu64
			" of slots too far from the clock",
			c->windows, c->windows_failed, c->timing.records,
			c->timing.late, c->no_conn, c->timing.refused);
}

struct correlate_args {
	struct cw_kafka_conf kc;
	struct cw_correlator_opts o;
	uint64_t duration, idle, every;
	double min_share;
	bool json;
};

/* One option into a; 0, or 2 (bad usage, told). */
static int parse_opt(int opt, struct correlate_args *a)
{
	switch (opt) {
	case 'k':
		a->kc.brokers = optarg;
		return 0;
	case 'K':
		a->kc.properties = optarg;
		return 0;
	case 'T':
		a->kc.topic_prefix = optarg;
		return 0;
	case 'g':
		a->kc.group = optarg;
		return 0;
	case 'B':
		a->kc.from_beginning = true;
		return 0;
	case 'o':
		a->o.out = optarg;
		return 0;
	case 'S':
		return cli_duration("--snapshot-every", optarg,
				    100 * NSEC_PER_MSEC, 86400 * NSEC_PER_SEC,
				    &a->every)
			       ? 2
			       : 0;
	case 'd':
		return cli_duration("--duration", optarg, NSEC_PER_MSEC,
				    365 * 86400 * NSEC_PER_SEC, &a->duration)
			       ? 2
			       : 0;
	case 'I':
		return cli_duration("--idle", optarg, NSEC_PER_MSEC,
				    86400 * NSEC_PER_SEC, &a->idle)
			       ? 2
			       : 0;
	case 'j':
		a->json = true;
		return 0;
	case 's':
		return cli_share(optarg, &a->min_share) ? 2 : 0;
	case 'P':
		a->o.paths = false;
		return 0;
	case 'G':
		return cli_duration("--window-grace", optarg, 0,
				    3600 * NSEC_PER_SEC, &a->o.grace_ns)
			       ? 2
			       : 0;
	case 'b':
		return cli_duration("--bin", optarg, NSEC_PER_USEC,
				    NSEC_PER_SEC, &a->o.po.bin_ns)
			       ? 2
			       : 0;
	case 'D':
		return cli_duration("--max-delay", optarg, NSEC_PER_MSEC,
				    60 * NSEC_PER_SEC, &a->o.po.max_delay_ns)
			       ? 2
			       : 0;
	}
	return 2;
}

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct correlate_args *a)
{
	static const struct option opts[] = {{"kafka", 1, 0, 'k'},
					     {"kafka-config", 1, 0, 'K'},
					     {"topic-prefix", 1, 0, 'T'},
					     {"group", 1, 0, 'g'},
					     {"from-beginning", 0, 0, 'B'},
					     {"out", 1, 0, 'o'},
					     {"snapshot-every", 1, 0, 'S'},
					     {"duration", 1, 0, 'd'},
					     {"idle", 1, 0, 'I'},
					     {"json", 0, 0, 'j'},
					     {"min-share", 1, 0, 's'},
					     {"no-paths", 0, 0, 'P'},
					     {"window-grace", 1, 0, 'G'},
					     {"bin", 1, 0, 'b'},
					     {"max-delay", 1, 0, 'D'},
					     {"help", 0, 0, 'h'},
					     {0}};
	int opt;

	memset(a, 0, sizeof(*a));
	a->every = 10 * NSEC_PER_SEC;
	a->o.paths = true;
	a->o.grace_ns = 2 * NSEC_PER_SEC;
	cw_paths_opts_default(&a->o.po);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "k:g:o:d:jh", opts, NULL)) !=
	       -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == '?' || opt == ':')
			return cli_bad_option("correlate", argv);
		if (parse_opt(opt, a))
			return 2;
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!a->kc.brokers) {
		cw_error("--kafka is needed (see 'causeway correlate --help')");
		return 2;
	}
	return -1;
}

int cmd_correlate(int argc, char **argv)
{
	static struct cw_correlator c; /* large: keep it off the stack */
	struct snapshot_ctx snap = {0};
	char topic[CW_KAFKA_TOPIC_MAX], timing[CW_KAFKA_TOPIC_MAX];
	struct cw_kafka_consumer *consumer = NULL;
	struct correlate_args a;
	const char *topics[2];
	int err;

	err = parse_args(argc, argv, &a);
	if (err >= 0)
		return err;
	if (a.o.out && (cw_mkdir_p(a.o.out) || cw_check_writable_dir(a.o.out)))
		return 1;
	cw_graph_init(&snap.g);
	cw_catch_signals();
	if (a.o.po.bin_ns * 2 > a.o.po.max_delay_ns) {
		cw_error("--max-delay must be at least two --bin widths");
		return 2;
	}
	err = 1;
	topics[0] = cw_kafka_topic(&a.kc, CW_WIRE_CONN, topic, sizeof(topic));
	topics[1] =
		cw_kafka_topic(&a.kc, CW_WIRE_TIMING, timing, sizeof(timing));
	if (cw_correlator_open(&c, &a.o, NULL, timing))
		goto out;
	consumer = cw_kafka_consumer_new(&a.kc, topics, a.o.paths ? 2 : 1);
	if (!consumer)
		goto out;
	c.consumer = consumer;
	c.snapshot = write_graph;
	c.snapshot_arg = &snap;
	snap.out = a.o.out;
	snap.min_share = a.min_share;
	cw_info("correlating %s%s%s from %s", topic, a.o.paths ? " and " : "",
		a.o.paths ? timing : "", a.kc.brokers);
	if (cw_correlator_run(&c, a.duration, a.idle, a.every))
		goto out;
	print_result(&c, &snap.g, a.json);
	err = 0;
out:
	cw_kafka_consumer_free(consumer);
	if (cw_correlator_close(&c) && !err)
		err = 1;
	cw_graph_release(&snap.g);
	return err;
}
