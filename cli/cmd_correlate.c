// SPDX-License-Identifier: MIT
/*
 * causeway correlate: a Kafka consumer-group member that pairs the ends of
 * connections from every agent into the process graph.  Correlators scale
 * out by partition: records are keyed by the canonical 4-tuple, so both
 * ends of a connection reach the same member.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"

struct correlate {
	struct cw_kafka_consumer *consumer;
	struct cw_pairing pairing;
	struct cw_wire_errors errors;
	uint64_t applied_since_commit;
	const char *out;
	double min_share;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway correlate --kafka BROKERS [--group G] [-o "
		"DIR]\n"
		"                          [--kafka-config F] [--topic-prefix "
		"P]\n"
		"                          [--from-beginning] [--duration D]\n"
		"                          [--idle D] [--snapshot-every D] "
		"[--json]\n\n"
		"Consume the agents' records, pair the two ends of every "
		"connection\n"
		"(canonical 4-tuple + protocol + time overlap) and build the "
		"process\n"
		"graph.  Offsets are committed only after the records are "
		"applied\n"
		"and the snapshot holding them is written.\n\n"
		"  -k, --kafka B          bootstrap brokers (host:port,...)\n"
		"      --kafka-config F   librdkafka properties, key=value "
		"lines\n"
		"      --topic-prefix P   read P.conns (default causeway)\n"
		"  -g, --group G          consumer group (default "
		"causeway-correlator)\n"
		"      --from-beginning   with no committed offset, start at "
		"the\n"
		"                         oldest record (default: the newest)\n"
		"  -o, --out DIR          write edges.json and graph.dot at "
		"every\n"
		"                         snapshot\n"
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
		"--idle 5s\n");
}

static void apply(struct correlate *c, struct cw_kafka_msg *m)
{
	struct cw_wire_msg wm;
	char why[160], where[96];
	int kind;

	kind = cw_wire_decode(m->value, m->len, &wm, why, sizeof(why));
	if (kind < 0) {
		snprintf(where, sizeof(where), "%s [%d] offset %lld", m->topic,
			 m->partition, (long long)m->offset);
		cw_wire_errors_count(&c->errors, kind, where, why);
	} else if (kind == CW_WIRE_CONN &&
		   cw_pairing_add(&c->pairing, &wm.conn)) {
		cw_error("out of memory");
		cw_kafka_msg_release(m);
		return;
	}
	/* Bad records are applied too: skipping them is their handling. */
	cw_kafka_msg_applied(c->consumer, m);
	c->applied_since_commit++;
}

/* Build the graph from every end seen; write it; then commit. */
static int snapshot(struct correlate *c, struct cw_graph *g, bool final)
{
	cw_graph_release(g);
	cw_graph_init(g);
	if (cw_pairing_build(&c->pairing, g))
		return cw_error("out of memory while pairing");
	cw_graph_sort_edges(g);
	if (c->out && cli_write_outputs(c->out, g, NULL, NULL, NULL,
					&c->pairing.st, c->min_share))
		return -1;
	if ((c->applied_since_commit || final) &&
	    cw_kafka_consumer_commit(c->consumer) && c->applied_since_commit)
		cw_warn("offset commit failed: records will be read again");
	c->applied_since_commit = 0;
	return 0;
}

static int consume_loop(struct correlate *c, struct cw_graph *g,
			uint64_t duration, uint64_t idle, uint64_t every)
{
	uint64_t start = cw_now_mono_ns(), last = start, snap = start + every;
	struct cw_kafka_msg m;
	int n;

	while (!cw_stop) {
		uint64_t now = cw_now_mono_ns();

		if (duration && now >= start + duration)
			break;
		if (idle && now >= last + idle)
			break;
		if (now >= snap) {
			if (snapshot(c, g, false))
				return -1;
			snap = now + every;
		}
		n = cw_kafka_consume(c->consumer, 200, &m);
		if (n < 0)
			return -1;
		if (n == 1) {
			apply(c, &m);
			last = cw_now_mono_ns();
		}
	}
	return snapshot(c, g, true);
}

int cmd_correlate(int argc, char **argv)
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
					     {"help", 0, 0, 'h'},
					     {0}};
	uint64_t duration = 0, idle = 0, every = 10 * NSEC_PER_SEC;
	struct cw_kafka_conf kc = {0};
	struct correlate c = {0};
	char topic[CW_KAFKA_TOPIC_MAX];
	const char *topics[1];
	struct cw_graph g;
	bool json = false;
	int opt, err = 1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "k:g:o:d:jh", opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'k':
			kc.brokers = optarg;
			break;
		case 'K':
			kc.properties = optarg;
			break;
		case 'T':
			kc.topic_prefix = optarg;
			break;
		case 'g':
			kc.group = optarg;
			break;
		case 'B':
			kc.from_beginning = true;
			break;
		case 'o':
			c.out = optarg;
			break;
		case 'S':
			if (cli_duration("--snapshot-every", optarg,
					 100 * NSEC_PER_MSEC,
					 86400 * NSEC_PER_SEC, &every))
				return 2;
			break;
		case 'd':
			if (cli_duration("--duration", optarg, NSEC_PER_MSEC,
					 365 * 86400 * NSEC_PER_SEC, &duration))
				return 2;
			break;
		case 'I':
			if (cli_duration("--idle", optarg, NSEC_PER_MSEC,
					 86400 * NSEC_PER_SEC, &idle))
				return 2;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			if (cli_share(optarg, &c.min_share))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("correlate", argv);
		}
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!kc.brokers) {
		cw_error("--kafka is needed (see 'causeway correlate --help')");
		return 2;
	}
	if (c.out && (cw_mkdir_p(c.out) || cw_check_writable_dir(c.out)))
		return 1;
	cw_pairing_init(&c.pairing);
	cw_graph_init(&g);
	cw_catch_signals();
	topics[0] = cw_kafka_topic(&kc, CW_WIRE_CONN, topic, sizeof(topic));
	c.consumer = cw_kafka_consumer_new(&kc, topics, 1);
	if (!c.consumer)
		goto out;
	cw_info("correlating %s from %s", topic, kc.brokers);
	if (consume_loop(&c, &g, duration, idle, every))
		goto out;
	if (json) {
		struct cw_jsonw w;

		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_graph_json(&g, &w);
		cli_stats_json(&w, NULL, &c.pairing.st);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		cli_print_table(&g);
	}
	cw_wire_errors_report(&c.errors, "records");
	cw_info("%llu records applied, %llu ends (%llu paired, %llu unpaired), "
		"%llu bad records skipped",
		(unsigned long long)c.pairing.st.records,
		(unsigned long long)c.pairing.st.ends,
		(unsigned long long)c.pairing.st.paired,
		(unsigned long long)c.pairing.st.unpaired,
		(unsigned long long)cw_wire_errors_total(&c.errors));
	err = 0;
out:
	cw_kafka_consumer_free(c.consumer);
	cw_graph_release(&g);
	cw_pairing_release(&c.pairing);
	return err;
}
