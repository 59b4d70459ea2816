// SPDX-License-Identifier: MIT
/*
 * causeway dump: print wire records as JSON lines, from wire stream files
 * (what the agent writes, spool segments) or from a Kafka topic.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "samples/samples.h"
#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"

#define DUMP_MAX_TOPICS 16

struct dump {
	struct cw_jsonw w;
	struct cw_wire_errors errs;
	uint64_t printed;
	uint64_t frame_errors; /* torn or CRC-damaged frames */
	uint64_t count;	       /* stop after this many; 0: no limit */
	bool stdout_failed;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway dump [FILE...]\n"
		"       causeway dump --kafka BROKERS [--topic T]... "
		"[--from-beginning]\n"
		"                     [--count N] [--timeout D] [--group G] "
		"[--properties FILE]\n"
		"\n"
		"Print causeway wire records as JSON lines: from wire stream "
		"files (spool\n"
		"segments, agent output; '-' is stdin), or from Kafka topics.  "
		"Records that\n"
		"are malformed or of an unknown schema version are skipped and "
		"counted on\n"
		"stderr; the exit status is 1 if any was skipped.\n"
		"\n"
		"  --kafka BROKERS      bootstrap servers (host:port,...)\n"
		"  --topic T            topic to read (default "
		"causeway.conns); "
		"repeatable;\n"
		"                       conns, meta, timing, samples: that "
		"topic\n"
		"                       of the prefix\n"
		"  --topic-prefix P     prefix of the short names (default "
		"causeway)\n"
		"  --from-beginning     read topics from their start (default: "
		"new records)\n"
		"  --count N            stop after N records\n"
		"  --timeout D          stop when no record came for D "
		"(e.g. 5s)\n"
		"  --group G            consumer group (default: a new one; "
		"never committed)\n"
		"  --properties FILE    librdkafka properties (key=value "
		"lines: "
		"TLS, SASL)\n"
		"\n"
		"Examples:\n"
		"  causeway dump /var/lib/causeway/spool/seg-*.cww\n"
		"  causeway dump --kafka k1:9092 --from-beginning --timeout "
		"5s\n"
		"  causeway dump --kafka k1:9092 --topic causeway.meta --count "
		"10\n"
		"  causeway dump --kafka k1:9092 --topic samples --topic "
		"timing \\\n"
		"      --from-beginning --timeout 5s\n");
}

/* A sample run: the fields of `causeway samples export --format json`. */
static void print_samples(struct cw_jsonw *w, const struct cw_wire_samples *s)
{
	const struct cw_sample_run *run = s->run;
	uint32_t i;
	int f;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "samples");
	cw_jsonw_str(w, "host", run->host);
	cw_jsonw_u64(w, "seq", s->seq);
	cw_jsonw_str(w, "dev", run->dev);
	cw_jsonw_u64(w, "start_ns", run->start_real_ns);
	cw_jsonw_u64(w, "interval_ns", run->interval_ns);
	cw_jsonw_u64(w, "samples", run->samples);
	cw_jsonw_u64(w, "nbins", run->nbins);
	cw_jsonw_u64(w, "link_speed_bps", run->link_speed_bps);
	cw_jsonw_u64(w, "ncpus", run->ncpus);
	cw_jsonw_bool(w, "interrupted", !!(run->flags & CW_RUN_INTERRUPTED));
	cw_jsonw_bool(w, "regions", !!(run->flags & CW_RUN_REGIONS));
	cw_jsonw_u64(w, "past_end", run->past_end);
	cw_jsonw_u64(w, "seq_map_full", run->seq_map_full);
	cw_jsonw_obj_open(w, "totals");
	for (f = 0; f < CW_SF_FLOWS_FIRST; f++)
		cw_jsonw_u64(w, cw_sample_field_names[f],
			     cw_sample_run_total(run, f));
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_open(w, "bins");
	for (i = 0; i < run->nbins; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_u64(w, "bin", i);
		for (f = 0; f < CW_SF_MAX; f++)
			cw_jsonw_u64(w, cw_sample_field_names[f],
				     run->bins[i].v[f]);
		cw_jsonw_u64(w, "flows_saturated", run->bins[i].saturated);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

static void print_msg(struct cw_jsonw *w, const struct cw_wire_msg *m)
{
	switch (m->kind) {
	case CW_WIRE_TIMING:
		cw_timing_window_json(w, &m->timing);
		break;
	case CW_WIRE_SAMPLES:
		print_samples(w, &m->samples);
		break;
	case CW_WIRE_CONN:
		cw_conn_record_json(w, &m->conn);
		break;
	case CW_WIRE_HOST:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "host");
		cw_jsonw_str(w, "host", m->host.host);
		cw_jsonw_u64(w, "seq", m->host.seq);
		cw_jsonw_str(w, "hostname", m->host.hostname);
		cw_jsonw_str(w, "kernel", m->host.kernel);
		cw_jsonw_str(w, "agent_version", m->host.agent_version);
		cw_jsonw_u64(w, "cpus", m->host.cpus);
		cw_jsonw_u64(w, "mem_bytes", m->host.mem_bytes);
		cw_jsonw_u64(w, "time_ns", m->host.time_ns);
		cw_jsonw_obj_close(w);
		break;
	case CW_WIRE_PROC:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "process");
		cw_jsonw_str(w, "host", m->proc.host);
		cw_jsonw_u64(w, "seq", m->proc.seq);
		cw_process_json(w, 0, &m->proc.proc);
		cw_jsonw_u64(w, "rss_bytes", m->proc.rss_bytes);
		cw_jsonw_u64(w, "cpu_ns", m->proc.cpu_ns);
		cw_jsonw_u64(w, "time_ns", m->proc.time_ns);
		cw_jsonw_obj_close(w);
		break;
	}
	cw_jsonw_end_line(w);
}

/* One record: print it or count why not.  false when output failed. */
static bool dump_one(struct dump *d, const uint8_t *buf, size_t len,
		     const char *where)
{
	static struct cw_wire_msg m; /* large: keep it off the stack */
	char err[256];
	int kind = cw_wire_decode(buf, len, &m, err, sizeof(err));

	if (kind < 0) {
		cw_wire_errors_count(&d->errs, kind, where, err);
		return true;
	}
	print_msg(&d->w, &m);
	cw_wire_msg_release(&m);
	d->printed++;
	if (ferror(stdout)) {
		d->stdout_failed = true;
		return false;
	}
	return true;
}

static bool done(const struct dump *d)
{
	return d->stdout_failed || cw_stop ||
	       (d->count && d->printed >= d->count);
}

/* 0 when the file was read to its end, -1 when it could not be. */
static int dump_file(struct dump *d, const char *path)
{
	struct cw_wire_reader rd;
	const uint8_t *p;
	char err[160], where[PATH_MAX + 32];
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	FILE *fp = strcmp(path, "-") ? fopen(path, "r") : stdin;
	uint64_t off;
	size_t n;
	int r, ret = 0;

	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err))) {
		ret = cw_error("'%s': %s", name, err);
		goto out;
	}
	while (!done(d)) {
		off = rd.offset;
		r = cw_wire_reader_next(&rd, &p, &n);
		if (r == 0)
			break;
		snprintf(where, sizeof(where), "'%s' offset %" PRIu64, name,
			 off);
		if (r == 1) {
			dump_one(d, p, n, where);
			continue;
		}
		d->frame_errors++;
		if (r == CW_WIRE_RCRC) {
			cw_warn("%s: record fails its CRC check: skipped",
				where);
			continue;
		}
		if (r == CW_WIRE_RTORN)
			cw_warn("%s: file ends inside a record (torn write): "
				"ignored",
				where);
		else if (r == CW_WIRE_RBADLEN)
			ret = cw_error("%s: impossible record length: the rest "
				       "is unreadable",
				       where);
		else
			ret = cw_error("unable to read '%s': %s", name,
				       strerror(errno));
		break;
	}
out:
	cw_wire_reader_release(&rd);
	if (fp != stdin)
		fclose(fp);
	return ret;
}

static int dump_kafka(struct dump *d, struct cw_kafka_conf *conf,
		      const char *const *topics, int ntopics,
		      uint64_t timeout_ns)
{
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	char where[CW_KAFKA_TOPIC_MAX + 64];
	uint64_t last = cw_now_mono_ns();
	int r, ret = 0;

	c = cw_kafka_consumer_new(conf, topics, ntopics);
	if (!c)
		return -1;
	while (!done(d)) {
		if (timeout_ns && cw_now_mono_ns() - last >= timeout_ns)
			break;
		r = cw_kafka_consume(c, 200, &m);
		if (r < 0) {
			ret = -1;
			break;
		}
		if (r == 0)
			continue;
		last = cw_now_mono_ns();
		snprintf(where, sizeof(where), "%s[%d] offset %" PRId64,
			 m.topic, m.partition, m.offset);
		dump_one(d, m.value, m.len, where);
		/* dump only reads: nothing is marked applied or committed. */
		cw_kafka_msg_release(&m);
	}
	cw_kafka_consumer_free(c);
	return ret;
}

int cmd_dump(int argc, char **argv)
{
	enum {
		OPT_KAFKA = 256,
		OPT_TOPIC,
		OPT_BEGIN,
		OPT_COUNT,
		OPT_TIMEOUT,
		OPT_GROUP,
		OPT_PROPS,
		OPT_PREFIX
	};
	static const struct option opts[] = {
		{"kafka", required_argument, NULL, OPT_KAFKA},
		{"topic", required_argument, NULL, OPT_TOPIC},
		{"from-beginning", no_argument, NULL, OPT_BEGIN},
		{"count", required_argument, NULL, OPT_COUNT},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"group", required_argument, NULL, OPT_GROUP},
		{"properties", required_argument, NULL, OPT_PROPS},
		{"topic-prefix", required_argument, NULL, OPT_PREFIX},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static char names[DUMP_MAX_TOPICS][CW_KAFKA_TOPIC_MAX];
	const char *topics[DUMP_MAX_TOPICS];
	struct cw_kafka_conf conf = {0};
	static struct dump d;
	char group[64];
	uint64_t timeout_ns = 0;
	int ntopics = 0, c, i, ret = 0;

	memset(&d, 0, sizeof(d));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_KAFKA:
			conf.brokers = optarg;
			break;
		case OPT_TOPIC:
			if (ntopics == DUMP_MAX_TOPICS) {
				cw_error("at most %d --topic options",
					 DUMP_MAX_TOPICS);
				return 2;
			}
			topics[ntopics++] = optarg;
			break;
		case OPT_BEGIN:
			conf.from_beginning = true;
			break;
		case OPT_COUNT:
			if (cw_parse_u64(optarg, 1, UINT64_MAX, &d.count)) {
				cw_error("bad --count '%s' (want a number of "
					 "records, at least 1)",
					 optarg);
				return 2;
			}
			break;
		case OPT_TIMEOUT:
			if (cw_parse_duration(optarg, NSEC_PER_SEC,
					      &timeout_ns) ||
			    !timeout_ns) {
				cw_error("bad --timeout '%s' (want a duration "
					 "such as 5s or 500ms)",
					 optarg);
				return 2;
			}
			break;
		case OPT_GROUP:
			conf.group = optarg;
			break;
		case OPT_PROPS:
			conf.properties = optarg;
			break;
		case OPT_PREFIX:
			if (!*optarg || strlen(optarg) > 100) {
				cw_error("bad --topic-prefix '%s' (want 1 to "
					 "100 characters)",
					 optarg);
				return 2;
			}
			conf.topic_prefix = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!conf.brokers &&
	    (ntopics || conf.from_beginning || conf.group || conf.properties ||
	     timeout_ns || conf.topic_prefix)) {
		cw_error("--topic, --topic-prefix, --from-beginning, "
			 "--timeout, --group and --properties need --kafka");
		return 2;
	}
	/* Short names: the topic of that kind under the prefix. */
	for (i = 0; i < ntopics; i++) {
		static const struct {
			const char *name;
			int kind;
		} kinds[] = {{"conns", CW_WIRE_CONN},
			     {"meta", CW_WIRE_HOST},
			     {"timing", CW_WIRE_TIMING},
			     {"samples", CW_WIRE_SAMPLES}};
		size_t k;

		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(topics[i], kinds[k].name))
				topics[i] = cw_kafka_topic(&conf, kinds[k].kind,
							   names[i],
							   sizeof(names[i]));
	}
	if (conf.brokers && optind < argc) {
		cw_error("give either --kafka or files, not both");
		return 2;
	}
	if (!conf.brokers && optind == argc) {
		cw_error("nothing to dump: give files or --kafka");
		usage(stderr);
		return 2;
	}
	cw_catch_signals();
	cw_jsonw_init(&d.w, stdout);
	if (conf.brokers) {
		if (!ntopics)
			topics[ntopics++] =
				cw_kafka_topic(&conf, CW_WIRE_CONN, names[0],
					       sizeof(names[0]));
		if (!conf.group) {
			snprintf(group, sizeof(group),
				 "causeway-dump-%d-%" PRIu64, (int)getpid(),
				 cw_now_real_ns());
			conf.group = group;
		}
		ret = dump_kafka(&d, &conf, topics, ntopics, timeout_ns);
	} else {
		for (i = optind; i < argc && !done(&d); i++)
			if (dump_file(&d, argv[i]))
				ret = -1;
	}
	if (fflush(stdout) || d.stdout_failed) {
		/* A closed pipe (dump | head) is not an error. */
		if (errno != EPIPE)
			ret = cw_error("unable to write the output: %s",
				       strerror(errno));
	}
	cw_wire_errors_report(&d.errs, "dump");
	if (d.frame_errors)
		cw_warn("dump: %" PRIu64 " damaged records (torn or failing "
			"their CRC)",
			d.frame_errors);
	cw_debug("dump: %" PRIu64 " records printed", d.printed);
	if (ret)
		return 1;
	return cw_wire_errors_total(&d.errs) || d.frame_errors ? 1 : 0;
}
