// SPDX-License-Identifier: MIT
/*
 * causeway dump: print wire records as JSON lines, from wire stream files
 * (what the agent writes, spool segments) or from a Kafka topic; the
 * reading is common/wire_dump.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire_dump.h"

#define DUMP_MAX_TOPICS 16

static const char help[] =
	"usage: causeway dump [FILE...]\n"
	"       causeway dump --kafka BROKERS [--topic T]... [--from-beginning]\n"
	"                     [--count N] [--timeout D] [--group G]\n"
	"                     [--kafka-config FILE]\n"
	"\n"
	"Print causeway wire records as JSON lines: from wire stream files (spool\n"
	"segments, 'simulate --format wire'; '-' is stdin), or from Kafka topics.\n"
	"Records that are malformed or of an unknown schema version are skipped\n"
	"and counted on stderr; the exit status is 1 if any was skipped.\n"
	"\n"
	"  --kafka BROKERS      bootstrap servers (host:port,...)\n"
	"  --topic T            topic to read (default causeway.conns); repeatable;\n"
	"                       conns, meta, timing, samples: that topic\n"
	"                       of the prefix\n"
	"  --topic-prefix P     prefix of the short names (default causeway)\n"
	"  --from-beginning     read topics from their start (default: new records)\n"
	"  --count N            stop after N records\n"
	"  --timeout D          stop when no record came for D (e.g. 5s)\n"
	"  --group G            consumer group (default: a new one; never committed)\n"
	"  --kafka-config FILE  librdkafka properties (key=value lines: TLS, SASL),\n"
	"                       as for every other command (--properties: the\n"
	"                       same, its older name)\n"
	"\n"
	"Examples:\n"
	"  causeway dump /var/lib/causeway/spool/seg-*.cww\n"
	"  causeway dump --kafka k1:9092 --from-beginning --timeout 5s\n"
	"  causeway dump --kafka k1:9092 --topic causeway.meta --count 10\n"
	"  causeway dump --kafka k1:9092 --topic samples --topic timing \\\n"
	"      --from-beginning --timeout 5s\n";

struct dump_args {
	struct cw_kafka_conf conf;
	const char *topics[DUMP_MAX_TOPICS];
	char names[DUMP_MAX_TOPICS][CW_KAFKA_TOPIC_MAX];
	char group[64];
	int ntopics;
	uint64_t timeout_ns;
};

/* --topic NAME, up to DUMP_MAX_TOPICS of them. */
static int topic_opt(const struct cw_opt *o, const char *arg)
{
	struct dump_args *a = o->to;

	if (a->ntopics == DUMP_MAX_TOPICS)
		return cw_error("at most %d --topic options", DUMP_MAX_TOPICS);
	a->topics[a->ntopics++] = arg;
	return 0;
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

/* Options and files; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct dump_args *a,
		      struct cw_dump *d)
{
	struct cw_kafka_conf *conf = &a->conf;
	const struct cw_opt t[] = {
		CW_OPT_STR("kafka", 0, &conf->brokers),
		CW_OPT_CALL("topic", 0, a, topic_opt),
		CW_OPT_FLAG("from-beginning", 0, &conf->from_beginning),
		CW_OPT_U64("count", 0, &d->count, 1, UINT64_MAX),
		CW_OPT_DUR("timeout", 0, &a->timeout_ns, 1, UINT64_MAX),
		CW_OPT_STR("group", 0, &conf->group),
		CW_OPT_STR("kafka-config", 0, &conf->properties),
		CW_OPT_STR("properties", 0, &conf->properties),
		{.name = "topic-prefix", .kind = CW_OPT_KSTR,
		 .to = &conf->topic_prefix, .max = 100},
		{0}};
	int rc = cw_opts_parse("dump", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	if (!conf->brokers &&
	    (a->ntopics || conf->from_beginning || conf->group ||
	     conf->properties || a->timeout_ns || conf->topic_prefix))
		return cw_error("--topic, --topic-prefix, --from-beginning, "
				"--timeout, --group and --kafka-config need "
				"--kafka"),
		       2;
	if (conf->brokers && optind < argc)
		return cw_error("give either --kafka or files, not both"), 2;
	if (!conf->brokers && optind == argc)
		return cw_error("nothing to dump: give files or --kafka (see "
				"'causeway dump --help')"),
		       2;
	resolve_topics(a);
	return -1;
}

int cmd_dump(int argc, char **argv)
{
	static struct dump_args a;
	static struct cw_dump d;
	int i, ret;

	memset(&a, 0, sizeof(a));
	memset(&d, 0, sizeof(d));
	ret = parse_args(argc, argv, &a, &d);
	if (ret >= 0)
		return ret;
	ret = 0;
	cw_catch_signals();
	cw_dump_start(&d);
	if (a.conf.brokers)
		ret = cw_dump_kafka(&d, &a.conf, a.topics, a.ntopics,
				    a.timeout_ns);
	for (i = optind; !a.conf.brokers && i < argc && !cw_dump_done(&d); i++)
		if (cw_dump_file(&d, argv[i]))
			ret = -1;
	return cw_dump_finish(&d, ret);
}
