// SPDX-License-Identifier: MIT
/*
 * causeway correlate: a Kafka consumer-group member that pairs the ends of
 * connections from every agent into the process graph.  Correlators scale
 * out by partition: records are keyed by the canonical 4-tuple, so both
 * ends of a connection reach the same member.
 *
 * It also reads the agents' timing windows and infers causal paths from
 * each window.  Timing records are keyed by the window's slot, so one
 * member gets all of a window (every connection through a node), pairs
 * the two ends of each connection from the records themselves, and writes
 * the window's paths beside the graph.  A window is complete when a newer
 * one has been seen and a grace period has passed, or at the end; its
 * records' offsets are committed only once its paths are written.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/live.h"
#include "paths/paths.h"

/* Windows held at once; past this the oldest is inferred as it is. */
#define MAX_PENDING_WINDOWS 8

/* Where one timing record came from, to commit past it when done. */
struct toff {
	int32_t partition;
	int64_t offset;
};

/* A window being collected: every end's records for one slot. */
struct twin {
	uint64_t slot;
	uint64_t start_ns, end_ns; /* earliest start, latest end seen */
	struct cw_timing_record *recs;
	size_t n, cap;
	struct toff *offs;
	size_t noffs, capoffs;
	uint64_t newer_mono; /* when a newer window was first seen; 0: not */
};

/* A partition of the timing topic: what can be committed. */
struct tpart {
	int32_t partition;
	int64_t max_seen; /* highest offset read */
	int64_t stored;	  /* commit point stored; -1: none */
};

struct correlate {
	struct cw_kafka_consumer *consumer;
	struct cw_pairing pairing;
	struct cw_wire_errors errors;
	uint64_t applied_since_commit;
	const char *out;
	double min_share;
	/* Timing windows and causal paths. */
	bool paths;
	char timing_topic[CW_KAFKA_TOPIC_MAX];
	struct twin wins[MAX_PENDING_WINDOWS + 1]; /* by slot, oldest first */
	size_t nwins;
	struct tpart *parts;
	size_t nparts;
	uint64_t grace_ns;
	uint64_t done_slot; /* the newest window inferred */
	struct cw_paths_opts po;
	FILE *jsonl; /* DIR/paths.jsonl, appended */
	uint64_t windows, windows_failed, timing_records, late, no_conn;
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

/* ---- timing windows ---------------------------------------------------- */

static struct tpart *tpart_get(struct correlate *c, int32_t partition)
{
	struct tpart *p;
	size_t i;

	for (i = 0; i < c->nparts; i++)
		if (c->parts[i].partition == partition)
			return &c->parts[i];
	p = realloc(c->parts, (c->nparts + 1) * sizeof(*p));
	if (!p)
		return NULL;
	c->parts = p;
	p = &c->parts[c->nparts++];
	*p = (struct tpart){
		.partition = partition, .max_seen = -1, .stored = -1};
	return p;
}

/*
 * Store each timing partition's commit point: its oldest record still in
 * a pending window, else past everything read.  Committed with the next
 * snapshot.
 */
static void store_timing_offsets(struct correlate *c)
{
	size_t i, w, k;

	for (i = 0; i < c->nparts; i++) {
		struct tpart *p = &c->parts[i];
		int64_t safe = p->max_seen + 1;

		for (w = 0; w < c->nwins; w++)
			for (k = 0; k < c->wins[w].noffs; k++)
				if (c->wins[w].offs[k].partition ==
					    p->partition &&
				    c->wins[w].offs[k].offset < safe)
					safe = c->wins[w].offs[k].offset;
		if (safe > p->stored && safe > 0 &&
		    !cw_kafka_offset_store(c->consumer, c->timing_topic,
					   p->partition, safe)) {
			p->stored = safe;
			c->applied_since_commit++;
		}
	}
}

static void twin_release(struct twin *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		free(w->recs[i].msgs);
	free(w->recs);
	free(w->offs);
	memset(w, 0, sizeof(*w));
}

/* One paths.jsonl line: the window, what was paired, then the paths. */
static int write_jsonl(struct correlate *c, const struct twin *w,
		       const struct cw_live_stats *st,
		       const struct cw_msgtrace *t, const struct cw_pathset *ps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	struct cw_jsonw j;

	if (!mem)
		return cw_error("out of memory");
	cw_pathset_print_json(mem, t, ps);
	if (fclose(mem) || len < 3 || buf[0] != '{') {
		free(buf);
		return cw_error("out of memory");
	}
	cw_jsonw_init(&j, c->jsonl);
	cw_jsonw_obj_open(&j, NULL);
	cw_jsonw_u64(&j, "slot_ns", w->slot);
	cw_jsonw_u64(&j, "window_start_ns", w->start_ns);
	cw_jsonw_u64(&j, "window_end_ns", w->end_ns);
	cw_jsonw_u64(&j, "records", st->records);
	cw_jsonw_u64(&j, "ends", st->ends);
	cw_jsonw_u64(&j, "paired", st->paired);
	cw_jsonw_u64(&j, "messages", st->messages);
	/* The rest of the object (newline included) is `paths --json`'s. */
	fputc(',', c->jsonl);
	fwrite(buf + 1, 1, len - 1, c->jsonl);
	free(buf);
	if (fflush(c->jsonl) || fdatasync(fileno(c->jsonl)) || ferror(c->jsonl))
		return cw_error("unable to write '%s/paths.jsonl': %s", c->out,
				strerror(errno));
	return 0;
}

/* Infer the paths of the oldest pending window and write them. */
static int window_done(struct correlate *c)
{
	struct twin *w = &c->wins[0];
	struct cw_live_stats st = {0};
	struct cw_msgtrace t;
	struct cw_pathset ps;
	struct cw_outfile of;
	char path[PATH_MAX];
	uint64_t t0 = cw_now_mono_ns();
	int err = 0;

	cw_msgtrace_init(&t);
	cw_pathset_init(&ps);
	if (cw_live_trace_windows(w->recs, w->n, true, &t, &st) ||
	    cw_paths_convolution(&t, &c->po, &ps)) {
		cw_warn("window %" PRIu64 ": no paths (%zu records, %zu "
			"messages)",
			w->slot, w->n, st.messages);
		c->windows_failed++;
		goto done;
	}
	c->no_conn += st.unknown;
	if (c->out) {
		snprintf(path, sizeof(path), "%s/paths.json", c->out);
		if (cw_outfile_open(&of, path)) {
			err = -1;
			goto done;
		}
		cw_pathset_print_json(of.fp, &t, &ps);
		if (cw_outfile_commit(&of) || write_jsonl(c, w, &st, &t, &ps)) {
			err = -1;
			goto done;
		}
	}
	c->windows++;
	cw_info("window %" PRIu64 " (%.1f s): %zu ends (%zu paired, %zu "
		"unpaired), %zu messages: %zu paths in %.0f ms",
		w->slot, (double)(w->end_ns - w->start_ns) / 1e9, st.ends,
		st.paired, st.unpaired, st.messages, ps.n_paths,
		(double)(cw_now_mono_ns() - t0) / 1e6);
done:
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
	if (err)
		return err; /* kept: its offsets are not committed */
	if (w->slot > c->done_slot)
		c->done_slot = w->slot;
	twin_release(w);
	memmove(&c->wins[0], &c->wins[1], --c->nwins * sizeof(c->wins[0]));
	store_timing_offsets(c);
	return 0;
}

/* Infer every window that is complete (all of them when `all`). */
static int windows_step(struct correlate *c, bool all)
{
	uint64_t now = cw_now_mono_ns();

	while (c->nwins && (all || c->nwins > MAX_PENDING_WINDOWS ||
			    (c->wins[0].newer_mono &&
			     now >= c->wins[0].newer_mono + c->grace_ns)))
		if (window_done(c))
			return -1;
	return 0;
}

/* Keep one timing record (taking its msgs) in its window. */
static int add_timing(struct correlate *c, struct cw_timing_record *t,
		      const struct cw_kafka_msg *m)
{
	struct twin *w = NULL;
	size_t i;

	for (i = 0; i < c->nwins; i++) {
		if (c->wins[i].slot == t->slot_ns) {
			w = &c->wins[i];
			break;
		}
		if (c->wins[i].slot > t->slot_ns)
			break;
	}
	if (!w && c->done_slot && t->slot_ns <= c->done_slot) {
		/* Its window was inferred already. */
		c->late++;
		free(t->msgs);
		return 0;
	}
	if (!w && c->nwins > MAX_PENDING_WINDOWS)
		return cw_error("more than %d timing windows pending",
				MAX_PENDING_WINDOWS + 1);
	if (!w) {
		memmove(&c->wins[i + 1], &c->wins[i],
			(c->nwins - i) * sizeof(c->wins[0]));
		c->nwins++;
		w = &c->wins[i];
		memset(w, 0, sizeof(*w));
		w->slot = t->slot_ns;
		w->start_ns = t->window_start_ns;
		cw_debug("timing window %" PRIu64 ": first record, from %s",
			 w->slot, t->host);
		/* A newer window exists already: this one is complete soon. */
		if (i + 1 < c->nwins)
			w->newer_mono = cw_now_mono_ns();
		/* Older windows now have a newer one. */
		while (i--)
			if (!c->wins[i].newer_mono)
				c->wins[i].newer_mono = cw_now_mono_ns();
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		struct cw_timing_record *r = realloc(w->recs, cap * sizeof(*r));

		if (!r)
			return cw_error("out of memory");
		w->recs = r;
		w->cap = cap;
	}
	if (w->noffs == w->capoffs) {
		size_t cap = w->capoffs ? w->capoffs * 2 : 64;
		struct toff *o = realloc(w->offs, cap * sizeof(*o));

		if (!o)
			return cw_error("out of memory");
		w->offs = o;
		w->capoffs = cap;
	}
	w->recs[w->n++] = *t;
	w->offs[w->noffs++] = (struct toff){m->partition, m->offset};
	if (t->window_start_ns < w->start_ns)
		w->start_ns = t->window_start_ns;
	if (t->window_start_ns + t->window_ns > w->end_ns)
		w->end_ns = t->window_start_ns + t->window_ns;
	c->timing_records++;
	return 0;
}

static void apply(struct correlate *c, struct cw_kafka_msg *m)
{
	static struct cw_wire_msg wm; /* large: keep it off the stack */
	char why[160], where[96];
	bool timing = c->paths && !strcmp(m->topic, c->timing_topic);
	struct tpart *p;
	int kind;

	if (timing) {
		p = tpart_get(c, m->partition);
		if (!p) {
			cw_error("out of memory");
			cw_kafka_msg_release(m);
			return;
		}
		if (m->offset > p->max_seen)
			p->max_seen = m->offset;
	}
	kind = cw_wire_decode(m->value, m->len, &wm, why, sizeof(why));
	if (timing) {
		/* Its offset is stored once its window is written. */
		if (kind < 0) {
			snprintf(where, sizeof(where), "%s [%d] offset %lld",
				 m->topic, m->partition, (long long)m->offset);
			cw_wire_errors_count(&c->errors, kind, where, why);
		} else if (kind == CW_WIRE_TIMING) {
			if (add_timing(c, &wm.timing, m))
				free(wm.timing.msgs);
			wm.kind = 0; /* the window owns the msgs now */
		}
		cw_wire_msg_release(&wm);
		cw_kafka_msg_release(m);
		return;
	}
	if (kind < 0) {

		snprintf(where, sizeof(where), "%s [%d] offset %lld", m->topic,
			 m->partition, (long long)m->offset);
		cw_wire_errors_count(&c->errors, kind, where, why);
	} else if (kind == CW_WIRE_CONN &&
		   cw_pairing_add(&c->pairing, &wm.conn)) {
		cw_error("out of memory");
		cw_wire_msg_release(&wm);
		cw_kafka_msg_release(m);
		return;
	}
	cw_wire_msg_release(&wm);
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
	if (c->paths)
		store_timing_offsets(c);
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
		if (c->paths && windows_step(c, false))
			return -1;
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
	/* The end: what is pending is as complete as it will get. */
	if (c->paths && windows_step(c, true))
		return -1;
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
					     {"no-paths", 0, 0, 'P'},
					     {"window-grace", 1, 0, 'G'},
					     {"bin", 1, 0, 'b'},
					     {"max-delay", 1, 0, 'D'},
					     {"help", 0, 0, 'h'},
					     {0}};
	uint64_t duration = 0, idle = 0, every = 10 * NSEC_PER_SEC;
	struct cw_kafka_conf kc = {0};
	static struct correlate c; /* large: keep it off the stack */
	char topic[CW_KAFKA_TOPIC_MAX];
	const char *topics[2];
	char path[PATH_MAX];
	struct cw_graph g;
	bool json = false;
	int opt, err = 1;

	memset(&c, 0, sizeof(c));
	c.paths = true;
	c.grace_ns = 2 * NSEC_PER_SEC;
	cw_paths_opts_default(&c.po);
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
		case 'P':
			c.paths = false;
			break;
		case 'G':
			if (cli_duration("--window-grace", optarg, 0,
					 3600 * NSEC_PER_SEC, &c.grace_ns))
				return 2;
			break;
		case 'b':
			if (cli_duration("--bin", optarg, NSEC_PER_USEC,
					 NSEC_PER_SEC, &c.po.bin_ns))
				return 2;
			break;
		case 'D':
			if (cli_duration("--max-delay", optarg, NSEC_PER_MSEC,
					 60 * NSEC_PER_SEC, &c.po.max_delay_ns))
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
	if (c.po.bin_ns * 2 > c.po.max_delay_ns) {
		cw_error("--max-delay must be at least two --bin widths");
		return 2;
	}
	topics[0] = cw_kafka_topic(&kc, CW_WIRE_CONN, topic, sizeof(topic));
	cw_kafka_topic(&kc, CW_WIRE_TIMING, c.timing_topic,
		       sizeof(c.timing_topic));
	topics[1] = c.timing_topic;
	if (c.paths && c.out) {
		snprintf(path, sizeof(path), "%s/paths.jsonl", c.out);
		c.jsonl = fopen(path, "a");
		if (!c.jsonl) {
			cw_error("unable to open '%s': %s", path,
				 strerror(errno));
			goto out;
		}
	}
	c.consumer = cw_kafka_consumer_new(&kc, topics, c.paths ? 2 : 1);
	if (!c.consumer)
		goto out;
	cw_info("correlating %s%s%s from %s", topic, c.paths ? " and " : "",
		c.paths ? c.timing_topic : "", kc.brokers);
	if (consume_loop(&c, &g, duration, idle, every))
		goto out;
	if (json) {
		struct cw_jsonw w;

		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_graph_json(&g, &w);
		cli_stats_json(&w, NULL, &c.pairing.st);
		cw_jsonw_obj_open(&w, "bad_records");
		cw_jsonw_u64(&w, "malformed",
			     c.errors.count[-CW_WIRE_EMALFORMED]);
		cw_jsonw_u64(&w, "unknown_version",
			     c.errors.count[-CW_WIRE_EVERSION]);
		cw_jsonw_u64(&w, "unknown_kind",
			     c.errors.count[-CW_WIRE_EKIND]);
		cw_jsonw_obj_close(&w);
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
	if (c.paths && (c.timing_records || c.windows_failed))
		cw_info("paths: %" PRIu64 " windows inferred (%" PRIu64
			" without paths) from %" PRIu64
			" timing records; %" PRIu64 " late records, %" PRIu64
			" without their end's fields",
			c.windows, c.windows_failed, c.timing_records, c.late,
			c.no_conn);
	err = 0;
out:
	cw_kafka_consumer_free(c.consumer);
	while (c.nwins)
		twin_release(&c.wins[--c.nwins]);
	free(c.parts);
	if (c.jsonl && fclose(c.jsonl) && !err)
		err = cw_error("unable to write paths.jsonl: %s",
			       strerror(errno));
	cw_graph_release(&g);
	cw_pairing_release(&c.pairing);
	return err;
}
