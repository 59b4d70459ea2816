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

#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"

#define DUMP_MAX_TOPICS 16

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

struct dump {
	struct cw_jsonw w;
	struct cw_wire_errors errs;
	uint64_t printed;
	uint64_t frame_errors; /* torn or CRC-damaged frames */
	uint64_t resyncs;      /* impossible lengths read past */
	uint64_t skipped;      /* bytes skipped by those */
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
	cw_wire_msg_json(&d->w, &m);
	cw_jsonw_end_line(&d->w);
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

/*
 * After an impossible length at `bad`: the first offset past it where a
 * whole frame's CRC holds, as the spool resyncs, into *next; 0, or -1
 * when there is none (or the stream cannot seek: a pipe's bytes are gone
 * once read).  Windows overlap by a largest frame, so a frame cut by one
 * window's end is whole in the next.
 */
static int resync(FILE *fp, uint64_t bad, uint64_t *next)
{
	const size_t frame = CW_WIRE_FRAME_MAX + CW_WIRE_FRAME_HDR;
	uint8_t *buf = malloc(2 * frame);
	uint64_t pos = bad + 1;
	uint32_t len;
	size_t n, at;
	int ret = -1;

	while (buf && !fseeko(fp, (off_t)pos, SEEK_SET)) {
		n = fread(buf, 1, 2 * frame, fp);
		at = cw_wire_frame_find(buf, n, 0, &len);
		if (at < n) {
			*next = pos + at;
			ret = fseeko(fp, (off_t)*next, SEEK_SET) ? -1 : 0;
			break;
		}
		if (n < 2 * frame)
			break;
		pos += n - frame;
	}
	free(buf);
	return ret;
}

/* An impossible length at `off`: resync past it; 0 to go on, or -1. */
static int bad_length(struct dump *d, struct cw_wire_reader *rd,
		      const char *where, uint64_t off)
{
	uint64_t next;

	if (fseeko(rd->fp, 0, SEEK_CUR))
		return cw_error("%s: impossible record length: the rest is "
				"unreadable (a pipe cannot be searched for "
				"the next record: give the file)",
				where);
	if (resync(rd->fp, off, &next))
		return cw_error("%s: impossible record length, and no "
				"readable record after it",
				where);
	cw_warn("%s: impossible record length: skipped %" PRIu64
		" bytes to the next record whose CRC holds",
		where, next - off);
	d->resyncs++;
	d->skipped += next - off;
	rd->offset = next;
	return 0;
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
		if (r == CW_WIRE_RBADLEN && !bad_length(d, &rd, where, off))
			continue;
		if (r == CW_WIRE_RTORN)
			cw_warn("%s: file ends inside a record (torn write): "
				"ignored",
				where);
		else if (r == CW_WIRE_RBADLEN)
			ret = -1;
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

/* How long --timeout waits for the group to hand out partitions at all. */
#define DUMP_JOIN_NS (30 * NSEC_PER_SEC)

static int dump_kafka(struct dump *d, struct cw_kafka_conf *conf,
		      const char *const *topics, int ntopics,
		      uint64_t timeout_ns)
{
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	char where[CW_KAFKA_TOPIC_MAX + 64];
	uint64_t now, start = cw_now_mono_ns(), last = start, rebalances,
		      seen = 0;
	bool member;
	int r, ret = 0;

	c = cw_kafka_consumer_new(conf, topics, ntopics);
	if (!c)
		return -1;
	while (!done(d)) {
		/* Joining the group (seconds on a busy broker) is not "no
		 * record came": the clock runs once partitions are held. */
		now = cw_now_mono_ns();
		member = cw_kafka_consumer_member(c, &rebalances);
		if (rebalances != seen) {
			seen = rebalances;
			last = now;
		}
		if (timeout_ns && member && now - last >= timeout_ns)
			break;
		if (timeout_ns && !seen &&
		    now - start >= timeout_ns + DUMP_JOIN_NS) {
			ret = cw_error(
				"kafka: no partitions assigned in %" PRIu64
				" s: is the broker reachable?",
				(uint64_t)((now - start) / NSEC_PER_SEC));
			break;
		}
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

struct dump_args {
	struct cw_kafka_conf conf;
	const char *topics[DUMP_MAX_TOPICS];
	char names[DUMP_MAX_TOPICS][CW_KAFKA_TOPIC_MAX];
	char group[64];
	int ntopics;
	uint64_t timeout_ns;
};

/* One option into a; 0, or 2 after a message. */
static int parse_opt(int c, struct dump_args *a, struct dump *d)
{
	switch (c) {
	case OPT_KAFKA:
		a->conf.brokers = optarg;
		return 0;
	case OPT_TOPIC:
		if (a->ntopics == DUMP_MAX_TOPICS) {
			cw_error("at most %d --topic options", DUMP_MAX_TOPICS);
			return 2;
		}
		a->topics[a->ntopics++] = optarg;
		return 0;
	case OPT_BEGIN:
		a->conf.from_beginning = true;
		return 0;
	case OPT_COUNT:
		if (cw_parse_u64(optarg, 1, UINT64_MAX, &d->count)) {
			cw_error("bad --count '%s' (want a number of records, "
				 "at least 1)",
				 optarg);
			return 2;
		}
		return 0;
	case OPT_TIMEOUT:
		if (cw_parse_duration(optarg, NSEC_PER_SEC, &a->timeout_ns) ||
		    !a->timeout_ns) {
			cw_error("bad --timeout '%s' (want a duration such as "
				 "5s or 500ms)",
				 optarg);
			return 2;
		}
		return 0;
	case OPT_GROUP:
		a->conf.group = optarg;
		return 0;
	case OPT_PROPS:
		a->conf.properties = optarg;
		return 0;
	case OPT_PREFIX:
		if (!*optarg || strlen(optarg) > 100) {
			cw_error("bad --topic-prefix '%s' (want 1 to 100 "
				 "characters)",
				 optarg);
			return 2;
		}
		a->conf.topic_prefix = optarg;
		return 0;
	}
	usage(stderr);
	return 2;
}

/* Short names (conns, meta, timing, samples): that topic under the prefix. */
static void resolve_topics(struct dump_args *a)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {{"conns", CW_WIRE_CONN},
		     {"meta", CW_WIRE_HOST},
		     {"timing", CW_WIRE_TIMING},
		     {"samples", CW_WIRE_SAMPLES}};
	size_t k;
	int i;

	for (i = 0; i < a->ntopics; i++)
		for (k = 0; k < CW_ARRAY_SIZE(kinds); k++)
			if (!strcmp(a->topics[i], kinds[k].name))
				a->topics[i] = cw_kafka_topic(
					&a->conf, kinds[k].kind, a->names[i],
					sizeof(a->names[i]));
	if (a->conf.brokers && !a->ntopics) {
		a->topics[0] = cw_kafka_topic(&a->conf, CW_WIRE_CONN,
					      a->names[0], sizeof(a->names[0]));
		a->ntopics = 1;
	}
	if (a->conf.brokers && !a->conf.group) {
		snprintf(a->group, sizeof(a->group),
			 "causeway-dump-%d-%" PRIu64, (int)getpid(),
			 cw_now_real_ns());
		a->conf.group = a->group;
	}
}

/* Options and files; 0, -1 after --help, or 2 after a message. */
static int parse_args(int argc, char **argv, struct dump_args *a,
		      struct dump *d)
{
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
	const struct cw_kafka_conf *conf = &a->conf;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (parse_opt(c, a, d))
			return 2;
	}
	if (!conf->brokers &&
	    (a->ntopics || conf->from_beginning || conf->group ||
	     conf->properties || a->timeout_ns || conf->topic_prefix)) {
		cw_error("--topic, --topic-prefix, --from-beginning, "
			 "--timeout, --group and --properties need --kafka");
		return 2;
	}
	if (conf->brokers && optind < argc) {
		cw_error("give either --kafka or files, not both");
		return 2;
	}
	if (!conf->brokers && optind == argc) {
		cw_error("nothing to dump: give files or --kafka");
		usage(stderr);
		return 2;
	}
	resolve_topics(a);
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	static struct dump_args a;
	static struct dump d;
	int i, ret = 0;

	memset(&a, 0, sizeof(a));
	memset(&d, 0, sizeof(d));
	ret = parse_args(argc, argv, &a, &d);
	if (ret)
		return ret < 0 ? 0 : ret;
	cw_catch_signals();
	cw_jsonw_init(&d.w, stdout);
	if (a.conf.brokers)
		ret = dump_kafka(&d, &a.conf, a.topics, a.ntopics,
				 a.timeout_ns);
	for (i = optind; !a.conf.brokers && i < argc && !done(&d); i++)
		if (dump_file(&d, argv[i]))
			ret = -1;
	if (fflush(stdout) || d.stdout_failed) {
		/* A closed pipe (dump | head) is not an error. */
		if (errno != EPIPE)
			ret = cw_error("unable to write the output: %s",
				       strerror(errno));
	}
	cw_wire_errors_report(&d.errs, "dump");
	if (d.frame_errors)
		cw_warn("dump: %" PRIu64 " damaged records (torn, failing "
			"their CRC or of an impossible length)",
			d.frame_errors);
	if (d.resyncs)
		cw_warn("dump: %" PRIu64 " resyncs past impossible lengths, "
			"%" PRIu64 " bytes skipped",
			d.resyncs, d.skipped);
	cw_debug("dump: %" PRIu64 " records printed", d.printed);
	if (ret)
		return 1;
	return cw_wire_errors_total(&d.errs) || d.frame_errors ? 1 : 0;
}
