// SPDX-License-Identifier: MIT
/*
 * Where serve's records come from.  Files: record files and `causeway run`
 * output folders (their conns.jsonl and meta.jsonl), all read again into
 * a fresh state when any of them changes (size, time or inode), so a
 * rewritten or truncated file never double counts.  Kafka: a consumer of
 * its own group reads the conns, meta, timing and samples topics from the
 * beginning and feeds each record to what keeps its kind: connections and
 * the processes' resources to the model, the agents' host metadata,
 * timing windows (inferred into paths) and sample runs to the feed; one feed
 * per topic kind, so the correlator's edge buckets can be followed the same way
 * once it publishes them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "serve/serve_int.h"

#define BATCH 256

struct file_sig {
	uint64_t mtime_ns, size, ino;
	bool present;
};

struct serve_source {
	struct serve_model *model;
	struct serve_feed *feed;
	struct serve_windows *windows;
	bool skip_bad;
	uint64_t poll_ns, next_check;
	/* files */
	char **files;
	size_t nfiles;
	struct file_sig *sig;
	/* Kafka */
	struct cw_kafka_consumer *consumer;
	char prefix[CW_KAFKA_TOPIC_MAX]; /* of the topics: P.conns, ... */
	struct cw_conn_record batch[BATCH];
	size_t nbatch;
};

/*
 * A run folder stands for its conns.jsonl and meta.jsonl (the processes'
 * resources): two files into s->files.  0 or -1 (out of memory).
 */
static int expand(struct serve_source *s, const char *path)
{
	static const char *const parts[] = {"conns.jsonl", "meta.jsonl"};
	struct stat st;
	size_t i;

	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		s->files[s->nfiles] = strdup(path);
		return s->files[s->nfiles++] ? 0 : -1;
	}
	for (i = 0; i < CW_ARRAY_SIZE(parts); i++) {
		if (asprintf(&s->files[s->nfiles], "%s/%s", path, parts[i]) < 0)
			return -1;
		s->nfiles++;
	}
	if (stat(s->files[s->nfiles - 2], &st))
		cw_warn("'%s' has no conns.jsonl yet: its graph is empty until "
			"one is written there ('causeway run -o' writes it "
			"when it ends)",
			path);
	return 0;
}

static bool changed(struct serve_source *s)
{
	struct file_sig now;
	struct stat st;
	bool any = false;
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		memset(&now, 0, sizeof(now));
		if (!stat(s->files[i], &st)) {
			now.present = true;
			now.size = (uint64_t)st.st_size;
			now.ino = (uint64_t)st.st_ino;
			now.mtime_ns =
				(uint64_t)st.st_mtim.tv_sec * NSEC_PER_SEC +
				(uint64_t)st.st_mtim.tv_nsec;
		}
		if (memcmp(&now, &s->sig[i], sizeof(now)))
			any = true;
		s->sig[i] = now;
	}
	return any;
}

/*
 * Read the files that exist: a run folder whose conns.jsonl is not written
 * yet is empty until it is.
 */
static int reload(struct serve_source *s, bool first)
{
	char **present = calloc(s->nfiles + 1, sizeof(*present));
	size_t i, n = 0;
	int err;

	if (!present)
		return cw_error("out of memory");
	for (i = 0; i < s->nfiles; i++)
		if (s->sig[i].present)
			present[n++] = s->files[i];
	err = serve_model_load_files(s->model, present, n, s->skip_bad);
	free(present);
	if (!err)
		return 0;
	serve_model_note(s->model, 0, 0, 0,
			 "reading the inputs failed; the last good state is "
			 "kept (see the log)");
	/* Try again on the next change: the writer may be mid-way. */
	return first ? -1 : 0;
}

static int open_kafka(struct serve_source *s, const struct cw_serve_opts *o)
{
	struct cw_kafka_conf conf = {
		.brokers = o->brokers,
		.properties = o->kafka_properties,
		.topic_prefix = o->topic_prefix,
		.group = o->group ? o->group : "causeway-serve",
		.from_beginning = true,
	};
	static const int kinds[] = {CW_WIRE_CONN, CW_WIRE_HOST, CW_WIRE_TIMING,
				    CW_WIRE_SAMPLES};
	char topic[4][CW_KAFKA_TOPIC_MAX];
	const char *topics[4];
	size_t i;

	for (i = 0; i < 4; i++) {
		topics[i] = cw_kafka_topic(&conf, kinds[i], topic[i],
					   sizeof(topic[i]));
		if (!topics[i])
			return -1;
	}
	s->windows = serve_windows_new(s->feed);
	if (!s->windows)
		return -1;
	snprintf(s->prefix, sizeof(s->prefix), "%s",
		 conf.topic_prefix ? conf.topic_prefix : CW_KAFKA_PREFIX);
	s->consumer = cw_kafka_consumer_new(&conf, topics, 4);
	if (!s->consumer)
		return -1;
	cw_info("following '%s', '%s', '%s' and '%s' on %s", topics[0],
		topics[1], topics[2], topics[3], o->brokers);
	return 0;
}

struct serve_source *serve_source_new(const struct cw_serve_opts *o,
				      struct serve_model *m,
				      struct serve_feed *f)
{
	struct serve_source *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s)
		goto oom;
	s->model = m;
	s->feed = f;
	s->skip_bad = o->skip_bad;
	s->poll_ns = o->poll_ns ? o->poll_ns : NSEC_PER_SEC;
	if (o->brokers) {
		if (open_kafka(s, o))
			goto fail;
		return s;
	}
	s->files = calloc(2 * o->ninputs + 1, sizeof(*s->files));
	s->sig = calloc(2 * o->ninputs + 1, sizeof(*s->sig));
	if (!s->files || !s->sig)
		goto oom;
	for (i = 0; i < o->ninputs; i++)
		if (expand(s, o->inputs[i]))
			goto oom;
	changed(s);
	if (reload(s, true))
		goto fail;
	return s;
oom:
	cw_error("out of memory");
fail:
	serve_source_free(s);
	return NULL;
}

/* Hand the records gathered so far to the model. */
static int flush(struct serve_source *s)
{
	int err =
		s->nbatch ? serve_model_add(s->model, s->batch, s->nbatch) : 0;

	s->nbatch = 0;
	return err;
}

/*
 * Is a record of kind on the topic that carries its kind?  A connection
 * record on the meta, timing or samples topic is no agent's (a producer
 * misconfigured, or records put there by hand): counted, not applied,
 * as the correlator, which reads P.conns alone, never sees it.
 */
static bool on_its_topic(const struct serve_source *s,
			 const struct cw_kafka_msg *km, int kind)
{
	struct cw_kafka_conf conf = {.topic_prefix = s->prefix};
	char want[CW_KAFKA_TOPIC_MAX];

	return cw_kafka_topic(&conf, kind, want, sizeof(want)) &&
	       !strcmp(km->topic, want);
}

/*
 * One feed per kind of record: connections and the processes' resources
 * to the model (hosts' metadata too: their capacities), the rest to the
 * feed; P.edges buckets later.
 */
static void feed(struct serve_source *s, const struct cw_kafka_msg *km,
		 uint64_t *bad, uint64_t *other)
{
	static struct cw_wire_msg m; /* large: off the stack */
	char err[128];
	int kind = cw_wire_decode(km->value, km->len, &m, err, sizeof(err));

	if (kind < 0) {
		(*bad)++;
		return;
	}
	if (!on_its_topic(s, km, kind)) {
		(*other)++;
	} else if (kind == CW_WIRE_CONN) {
		s->batch[s->nbatch++] = m.conn;
	} else if (kind == CW_WIRE_HOST) {
		serve_feed_host(s->feed, &m.host);
		if (serve_model_add_meta(s->model, &m))
			(*bad)++; /* out of memory: said, and counted */
	} else if (kind == CW_WIRE_PROC || kind == CW_WIRE_DNS) {
		if (serve_model_add_meta(s->model, &m))
			(*bad)++;
	} else if (kind == CW_WIRE_TIMING) {
		serve_windows_add(s->windows, &m.timing, km->partition,
				  km->offset);
	} else if (kind == CW_WIRE_SAMPLES) {
		serve_feed_run(s->feed, m.samples.run, m.samples.seq);
		m.samples.run = NULL; /* the feed keeps it */
	} else {
		(*other)++;
	}
	cw_wire_msg_release(&m);
}

/* How far behind the consumer is, per partition, for /metrics. */
static void note_lag(struct serve_source *s)
{
	struct cw_kafka_lag lags[SERVE_FEED_LAGS];
	int n = cw_kafka_consumer_lag(s->consumer, lags, SERVE_FEED_LAGS);

	if (n >= 0)
		serve_feed_lags(s->feed, lags, (size_t)n);
}

static int poll_kafka(struct serve_source *s, int timeout_ms)
{
	uint64_t n = 0, bad = 0, other = 0;
	struct cw_kafka_msg km;
	int r = 0;

	while (s->nbatch < BATCH &&
	       (r = cw_kafka_consume(s->consumer, n ? 0 : timeout_ms, &km)) >
		       0) {
		n++;
		feed(s, &km, &bad, &other);
		/* Read from the beginning every start: no offsets to keep. */
		cw_kafka_msg_release(&km);
	}
	if (n)
		serve_model_note(s->model, n, bad, other, NULL);
	if (flush(s))
		return -1;
	serve_windows_step(s->windows);
	note_lag(s);
	return r < 0 ? cw_error("the Kafka consumer failed") : 0;
}

int serve_source_poll(struct serve_source *s, int timeout_ms)
{
	struct timespec ts = {.tv_nsec = (long)timeout_ms * 1000000L};
	uint64_t now;

	if (s->consumer)
		return poll_kafka(s, timeout_ms);
	nanosleep(&ts, NULL);
	now = cw_now_mono_ns();
	if (now < s->next_check)
		return 0;
	s->next_check = now + s->poll_ns;
	if (changed(s))
		return reload(s, false);
	return 0;
}

void serve_source_free(struct serve_source *s)
{
	size_t i;

	if (!s)
		return;
	if (s->consumer) {
		flush(s);
		cw_kafka_consumer_free(s->consumer);
	}
	serve_windows_free(s->windows);
	for (i = 0; i < s->nfiles; i++)
		free(s->files[i]);
	free(s->files);
	free(s->sig);
	free(s);
}
