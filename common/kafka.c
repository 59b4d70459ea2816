// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "common/kafka.h"
#include "common/kafka_impl.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#define REPLAY_BATCH	1000
#define REPLAY_RETRY_MS 1000

#define LOG_REPEAT_MS 30000 /* the same librdkafka complaint, at most */

const char *cw_kafka_topic(const struct cw_kafka_conf *conf, int kind,
			   char *buf, size_t len)
{
	const char *prefix = conf && conf->topic_prefix ? conf->topic_prefix
							: CW_KAFKA_PREFIX;

	const char *what;

	switch (kind) {
	case CW_WIRE_CONN:
		what = "conns";
		break;
	case CW_WIRE_TIMING:
	case CW_WIRE_MSGS: /* a window's messages, beside its timing */
		what = "timing";
		break;
	case CW_WIRE_SAMPLES:
		what = "samples";
		break;
	case CW_WIRE_STATE:
		what = "state";
		break;
	case CW_WIRE_EDGE:
	case CW_WIRE_EDGES: /* a set's edges in one record */
		what = "edges";
		break;
	default:
		what = "meta";
		break;
	}
	snprintf(buf, len, "%s.%s", prefix, what);
	return buf;
}

int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char err[256];

	if (rd_kafka_conf_set(conf, key, val, err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK)
		return cw_error("kafka setting '%s=%s': %s", key, val, err);
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* librdkafka properties: "key=value" lines, '#' comments, blank lines. */
int kafka_conf_load_file(rd_kafka_conf_t *conf, const char *path)
{
	char line[4096], err[256];
	FILE *fp = fopen(path, "r");
	int lineno = 0, ret = 0;
	char *s, *eq;

	if (!fp)
		return cw_error("unable to open kafka properties '%s': %s",
				path, strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			ret = cw_error("kafka properties '%s' line %d: line "
				       "too long",
				       path, lineno);
			break;
		}
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq || eq == s) {
			ret = cw_error(
				"kafka properties '%s' line %d: expected "
				"'key=value', got '%s'",
				path, lineno, s);
			break;
		}
		*eq = 0;
		if (rd_kafka_conf_set(conf, trim(s), trim(eq + 1), err,
				      sizeof(err)) != RD_KAFKA_CONF_OK) {
			ret = cw_error("kafka properties '%s' line %d: %s",
				       path, lineno, err);
			break;
		}
	}
	if (!ret && ferror(fp))
		ret = cw_error("unable to read kafka properties '%s': %s", path,
			       strerror(errno));
	fclose(fp);
	return ret;
}

int cw_kafka_properties_check(const char *path)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	int r = kafka_conf_load_file(conf, path);

	rd_kafka_conf_destroy(conf);
	return r;
}

uint64_t kafka_now_ms(void)
{
	return cw_now_mono_ns() / NSEC_PER_MSEC;
}

/*
 * librdkafka's errors (level 3 and worse: TLS handshakes, SASL
 * authentication, bad settings) are shown without -v, each facility at
 * most once per LOG_REPEAT_MS so a long outage does not flood the log;
 * the rest (reconnects, state changes) is for -v only.
 */
void kafka_on_log(const rd_kafka_t *rk, int level, const char *fac,
		  const char *buf)
{
	static struct {
		char fac[16];
		uint64_t last_ms;
	} seen[16];
	static unsigned int next;
	uint64_t now = kafka_now_ms();
	unsigned int i;

	(void)rk;
	if (level > 3) {
		cw_debug("kafka: %s: %s", fac, buf);
		return;
	}
	for (i = 0; i < CW_ARRAY_SIZE(seen); i++)
		if (!strncmp(seen[i].fac, fac, sizeof(seen[i].fac) - 1))
			break;
	if (i < CW_ARRAY_SIZE(seen) && seen[i].last_ms &&
	    now - seen[i].last_ms < LOG_REPEAT_MS) {
		cw_debug("kafka: %s: %s", fac, buf);
		return;
	}
	if (i == CW_ARRAY_SIZE(seen)) {
		i = next++ % CW_ARRAY_SIZE(seen);
		snprintf(seen[i].fac, sizeof(seen[i].fac), "%s", fac);
	}
	seen[i].last_ms = now;
	cw_log(CW_LOG_WARN, "kafka: %s: %s", fac, buf);
}

enum cw_kafka_err_class cw_kafka_err_class(int err)
{
	switch (err) {
	case RD_KAFKA_RESP_ERR_NO_ERROR:
		return CW_KAFKA_OK;
	case RD_KAFKA_RESP_ERR__FATAL:
		return CW_KAFKA_FATAL;
	/* The record itself, or what we may do, is refused: no retry
	 * changes that. */
	case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_INVALID_MSG:
	case RD_KAFKA_RESP_ERR_INVALID_RECORD:
	case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
	case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
	case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
	case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
	case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
	case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
	case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
	case RD_KAFKA_RESP_ERR_UNSUPPORTED_COMPRESSION_TYPE:
	case RD_KAFKA_RESP_ERR__INVALID_ARG:
	case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
		return CW_KAFKA_PERMANENT;
	default:
		/* Timeouts, transport, leadership, purges at shutdown, and
		 * whatever is not known to be permanent: the record is kept. */
		return CW_KAFKA_RETRIABLE;
	}
}

/*
 * Settings every client shares.  Each client then sets its defaults, loads
 * the properties file (so TLS, SASL and tuning can be set there, overriding
 * defaults) and last sets what correctness needs.
 */
rd_kafka_conf_t *kafka_conf_common(const struct cw_kafka_conf *c)
{
	rd_kafka_conf_t *conf;

	if (!c->brokers || !*c->brokers) {
		cw_error("no kafka brokers given");
		return NULL;
	}
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(conf, kafka_on_log);
	if (kafka_conf_set(conf, "bootstrap.servers", c->brokers) ||
	    kafka_conf_set(conf, "client.id", "causeway")) {
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	return conf;
}

/* Producer. */

struct cw_kafka_producer {
	rd_kafka_t *rk;
	rd_kafka_topic_t *topics[CW_WIRE_KIND_MAX + 1];
	struct cw_kafka_conf conf; /* to make the client again after a fatal */
	volatile int fatal;	   /* set by the error callback */
	int logged_lost[8];	   /* error codes whose loss was logged */
	struct cw_spool *spool;
	struct cw_kafka_producer_stats st;
	uint64_t replay_in_flight;
	uint64_t next_replay_ms;
	bool replay_ok; /* the last replayed record was delivered */
	bool outage_logged;
	bool purge; /* a record went to the spool: the queue follows it */
};

static int spool_record(struct cw_kafka_producer *p, const void *buf,
			size_t len)
{
	if (p->spool && !cw_spool_append(p->spool, buf, len)) {
		p->st.spooled++;
		return 0;
	}
	p->st.lost++;
	return -1;
}

/* A record refused for good: counted, each reason logged once. */
static void lost_for_good(struct cw_kafka_producer *p,
			  const rd_kafka_message_t *m)
{
	size_t i;

	p->st.lost++;
	p->st.lost_permanent++;
	for (i = 0; i < CW_ARRAY_SIZE(p->logged_lost); i++) {
		if (p->logged_lost[i] == m->err)
			return;
		if (!p->logged_lost[i])
			break;
	}
	if (i < CW_ARRAY_SIZE(p->logged_lost))
		p->logged_lost[i] = m->err;
	cw_warn("kafka: record to '%s' lost: %s (permanent: not retried; "
		"further ones are counted)",
		rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
			void *opaque)
{
	struct cw_kafka_producer *p = opaque;
	struct cw_spool_token *tok = m->_private; /* from the spool, or NULL */
	int cls = cw_kafka_err_class(m->err);

	(void)rk;
	p->st.in_flight--;
	if (tok)
		p->replay_in_flight--;
	if (cls == CW_KAFKA_OK) {
		p->st.delivered++;
		if (tok) {
			cw_spool_done(p->spool, tok);
			p->replay_ok = true;
		}
		free(tok);
		if (p->outage_logged) {
			cw_info("kafka: delivering again");
			p->outage_logged = false;
		}
		return;
	}
	p->st.failed++;
	if (cls == CW_KAFKA_PERMANENT) {
		lost_for_good(p, m);
		if (tok)
			cw_spool_done(p->spool, tok);
		free(tok);
		return;
	}
	if (!p->outage_logged) {
		cw_warn("kafka: delivery to '%s' failed: %s%s",
			rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err),
			p->spool ? " (spooling until brokers return)" : "");
		p->outage_logged = true;
	}
	/* Brokers are likely away: probe with one record, after a pause. */
	p->replay_ok = false;
	p->purge = true;
	p->next_replay_ms = kafka_now_ms() + REPLAY_RETRY_MS;
	if (tok)
		cw_spool_retry(p->spool, tok); /* still there: no copy */
	else
		spool_record(p, m->payload, m->len);
	free(tok);
}

void kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct cw_kafka_producer *p = opaque;

	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[256];

		rd_kafka_fatal_error(rk, buf, sizeof(buf));
		cw_error("kafka: fatal: %s", buf);
		if (p && rd_kafka_type(rk) == RD_KAFKA_PRODUCER)
			p->fatal = 1; /* the next poll makes a new producer */
		return;
	}
	/* Outages are reported by delivery; this one says why, once. */
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
		cw_warn("kafka: %s", reason);
	else
		cw_debug("kafka: %s: %s", rd_kafka_err2name(err), reason);
}

/* The librdkafka client and its topics, from p->conf. */
static int producer_connect(struct cw_kafka_producer *p)
{
	const struct cw_kafka_conf *c = &p->conf;
	char timeout[32], err[512], topic[CW_KAFKA_TOPIC_MAX];
	rd_kafka_conf_t *conf;
	int k;

	snprintf(timeout, sizeof(timeout), "%d",
		 c->message_timeout_ms > 0 ? c->message_timeout_ms : 30000);
	conf = kafka_conf_common(c);
	if (!conf)
		return -1;
	if (kafka_conf_set(conf, "compression.type",
			   c->compression ? c->compression
					  : CW_KAFKA_COMPRESSION) ||
	    kafka_conf_set(conf, "message.timeout.ms", timeout) ||
	    (c->properties && kafka_conf_load_file(conf, c->properties)) ||
	    /* Last: no properties file turns it off (acks=all, retries
	     * that neither lose nor reorder). */
	    kafka_conf_set(conf, "enable.idempotence", "true")) {
		rd_kafka_conf_destroy(conf);
		return -1;
	}
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, kafka_on_error);
	rd_kafka_conf_set_opaque(conf, p);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!p->rk) {
		rd_kafka_conf_destroy(conf);
		return cw_error("unable to create kafka producer: %s", err);
	}
	for (k = CW_WIRE_CONN; k <= CW_WIRE_KIND_MAX; k++) {
		cw_kafka_topic(c, k, topic, sizeof(topic));
		p->topics[k] = rd_kafka_topic_new(p->rk, topic, NULL);
		if (!p->topics[k])
			return cw_error(
				"kafka topic '%s': %s", topic,
				rd_kafka_err2str(rd_kafka_last_error()));
	}
	return 0;
}

/*
 * Flush for up to `flush_ms`, then purge what is left: its delivery
 * reports (purged: retriable) put fresh records in the spool and leave
 * replayed ones there.  Then destroy the client.
 */
static void producer_disconnect(struct cw_kafka_producer *p, int flush_ms)
{
	int k;

	if (!p->rk)
		return;
	rd_kafka_flush(p->rk, flush_ms);
	rd_kafka_purge(p->rk,
		       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_flush(p->rk, 1000);
	rd_kafka_poll(p->rk, 0);
	for (k = 0; k <= CW_WIRE_KIND_MAX; k++) {
		if (p->topics[k])
			rd_kafka_topic_destroy(p->topics[k]);
		p->topics[k] = NULL;
	}
	rd_kafka_destroy(p->rk);
	p->rk = NULL;
	if (p->spool)
		cw_spool_sync(p->spool);
}

/*
 * A fatal error (the idempotent producer lost its guarantees: fenced, out
 * of sequence) leaves the client unusable: its records go back (to the
 * spool, or counted lost without one) and a new client takes over.
 */
static void producer_recreate(struct cw_kafka_producer *p)
{
	p->fatal = 0;
	producer_disconnect(p, 0);
	p->st.in_flight = p->replay_in_flight = 0;
	p->st.recreated++;
	if (producer_connect(p)) {
		cw_error("kafka: unable to make a new producer after a fatal "
			 "error: records go to the spool");
		return;
	}
	cw_warn("kafka: made a new producer after a fatal error");
}

struct cw_kafka_producer *cw_kafka_producer_new(const struct cw_kafka_conf *c)
{
	struct cw_kafka_producer *p;

	p = calloc(1, sizeof(*p));
	if (!p) {
		cw_error("out of memory");
		return NULL;
	}
	p->conf = *c;
	p->spool = c->spool;
	p->replay_ok = true;
	if (producer_connect(p)) {
		cw_kafka_producer_free(p);
		return NULL;
	}
	return p;
}

/* Hand one record to librdkafka: 0, 1 if its queue is full, or -1. */
static int enqueue(struct cw_kafka_producer *p, int kind, const char *key,
		   const void *value, size_t len, struct cw_spool_token *tok)
{
	rd_kafka_resp_err_t err;

	if (!p->rk)
		return cw_error("kafka: no producer (see the error above)");
	if (kind == CW_WIRE_DNS) /* names go with the metadata, fresh or
				  * replayed from the spool */
		kind = CW_WIRE_HOST;
	if (kind < CW_WIRE_CONN || kind > CW_WIRE_KIND_MAX)
		return cw_error("kafka: no topic for record kind %d", kind);
	err = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(p->topics[kind]),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
				RD_KAFKA_V_VALUE((void *)value, len),
				RD_KAFKA_V_OPAQUE(tok), RD_KAFKA_V_END);
	if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
		return 1;
	if (err)
		return cw_error("kafka: unable to produce: %s",
				rd_kafka_err2str(err));
	p->st.produced++;
	p->st.in_flight++;
	if (tok)
		p->replay_in_flight++;
	return 0;
}

static bool spooling(const struct cw_kafka_producer *p)
{
	return p->spool && (p->replay_in_flight || !cw_spool_empty(p->spool));
}

int cw_kafka_produce(struct cw_kafka_producer *p, int kind, const char *key,
		     const void *value, size_t len)
{
	int tries, r = 1;

	if (spooling(p))
		return spool_record(p, value, len);
	for (tries = 0; tries < QUEUE_FULL_TRIES; tries++) {
		r = enqueue(p, kind, key, value, len, NULL);
		if (r <= 0)
			break;
		p->st.queue_full++;
		rd_kafka_poll(p->rk, 50);
	}
	if (r == 0)
		return 0;
	if (!p->spool)
		return cw_error("kafka: record dropped: %s",
				r > 0 ? "producer queue full" : "not queued");
	return spool_record(p, value, len);
}

int cw_kafka_produce_conn(struct cw_kafka_producer *p,
			  const struct cw_conn_record *r)
{
	char key[CW_WIRE_KEY_MAX];
	uint8_t *buf;
	size_t len;
	int ret;

	if (cw_wire_conn_key(r, key, sizeof(key)) < 0 ||
	    cw_wire_encode_conn(r, &buf, &len))
		return cw_error("unable to encode a connection record");
	ret = cw_kafka_produce(p, CW_WIRE_CONN, key, buf, len);
	free(buf);
	return ret;
}

int cw_kafka_produce_timing(struct cw_kafka_producer *p,
			    const struct cw_timing_record *t)
{
	char key[32];
	uint8_t *buf;
	size_t len;
	int ret;

	snprintf(key, sizeof(key), "%" PRIu64, t->slot_ns);
	if (cw_wire_encode_timing(t, &buf, &len))
		return cw_error("unable to encode the timing window of socket "
				"%" PRIu64 " (%zu messages)",
				t->cookie, t->n);
	ret = cw_kafka_produce(p, CW_WIRE_TIMING, key, buf, len);
	free(buf);
	return ret;
}

int cw_kafka_produce_samples(struct cw_kafka_producer *p,
			     const struct cw_sample_run *run, uint64_t seq)
{
	struct cw_wire_msg *m = malloc(sizeof(*m)); /* only for the key */
	char key[CW_WIRE_ANYKEY_MAX];
	uint8_t *buf;
	size_t len;
	int ret, n;

	if (!m)
		return cw_error("out of memory");
	m->kind = CW_WIRE_SAMPLES;
	m->samples.run = (struct cw_sample_run *)run;
	n = cw_wire_key(m, key, sizeof(key));
	free(m);
	if (n < 0 || cw_wire_encode_samples(run, seq, &buf, &len))
		return cw_error("unable to encode a sample run");
	if (len > CW_KAFKA_VALUE_MAX) {
		free(buf);
		return cw_error("kafka: sample run of %zu bytes is over the "
				"%d-byte record limit: kept in the store only",
				len, CW_KAFKA_VALUE_MAX);
	}
	ret = cw_kafka_produce(p, CW_WIRE_SAMPLES, key, buf, len);
	free(buf);
	return ret;
}

/* Spool replay: the topic and key come back from the record itself. */
static int replay_one(const uint8_t *buf, size_t len,
		      const struct cw_spool_token *tok, void *arg)
{
	struct cw_kafka_producer *p = arg;
	char key[CW_WIRE_ANYKEY_MAX], err[128];
	struct cw_spool_token *t;
	struct cw_wire_msg *m;
	int kind, r;

	/* Probe with one record until one gets through. */
	if (p->replay_in_flight >= (p->replay_ok ? REPLAY_BATCH : 1))
		return 1;
	m = malloc(sizeof(*m));
	if (!m)
		return 1;
	kind = cw_wire_decode(buf, len, m, err, sizeof(err));
	if (kind < 0) {
		free(m);
		cw_warn("kafka: dropping an unreadable spooled record: %s",
			err);
		p->st.lost++;
		return CW_SPOOL_DROP;
	}
	if (cw_wire_key(m, key, sizeof(key)) < 0)
		key[0] = 0;
	cw_wire_msg_release(m);
	free(m);
	if (kind == CW_WIRE_MSGS) /* the producer's topic for them */
		kind = CW_WIRE_TIMING;
	/* The token rides in the message until its delivery report. */
	t = malloc(sizeof(*t));
	if (!t)
		return 1;
	*t = *tok;
	r = enqueue(p, kind, key[0] ? key : NULL, buf, len, t);
	if (r == 0)
		p->st.replayed++;
	else
		free(t);
	return r;
}

int cw_kafka_producer_poll(struct cw_kafka_producer *p, int timeout_ms)
{
	int n = p->rk ? rd_kafka_poll(p->rk, timeout_ms) : 0;

	if (p->fatal || !p->rk)
		producer_recreate(p);
	if (!p->spool)
		return n;
	/* Records queued or in flight behind one that went to the spool
	 * follow it there (their purge reports spool them), so that a link
	 * back before they time out does not send them ahead of it: an
	 * end's records reach the brokers in the order they were made.  (An
	 * in-flight one the brokers took anyway comes twice, as any record
	 * whose acknowledgement was lost.) */
	if (p->purge && p->rk) {
		p->purge = false;
		rd_kafka_purge(p->rk,
			       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		n += rd_kafka_poll(p->rk, 0);
	}
	/* What the reports confirmed, on disk before more goes out. */
	cw_spool_sync(p->spool);
	if (p->rk && cw_spool_has_unsent(p->spool) &&
	    p->replay_in_flight < (p->replay_ok ? REPLAY_BATCH : 1) &&
	    kafka_now_ms() >= p->next_replay_ms &&
	    cw_spool_replay(p->spool, replay_one, p) < 0)
		p->next_replay_ms = kafka_now_ms() + REPLAY_RETRY_MS;
	return n;
}

int cw_kafka_producer_flush(struct cw_kafka_producer *p, int timeout_ms)
{
	uint64_t end = kafka_now_ms() + (uint64_t)timeout_ms;

	do {
		cw_kafka_producer_poll(p, 10);
		if (!p->st.in_flight &&
		    !(p->spool && !cw_spool_empty(p->spool)))
			return 0;
	} while (kafka_now_ms() < end);
	return -1;
}

void cw_kafka_producer_get_stats(const struct cw_kafka_producer *p,
				 struct cw_kafka_producer_stats *st)
{
	*st = p->st;
}

void cw_kafka_producer_free(struct cw_kafka_producer *p)
{
	if (!p)
		return;
	producer_disconnect(p, FREE_FLUSH_MS);
	if (p->st.in_flight)
		cw_warn("kafka: %" PRIu64 " records never reported",
			p->st.in_flight);
	free(p);
}

/* Embedded broker. */

static rd_kafka_t *mock_rk;
static rd_kafka_mock_cluster_t *mock;

int cw_kafka_mock_start(int brokers, char *bootstrap, size_t len)
{
	rd_kafka_conf_t *conf;
	char err[256];

	if (mock)
		return cw_error("the embedded kafka broker is already running");
	if (brokers < 1 || brokers > 32)
		return cw_error("embedded kafka: %d brokers (want 1 to 32)",
				brokers);
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(conf, kafka_on_log);
	mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!mock_rk) {
		rd_kafka_conf_destroy(conf);
		return cw_error("embedded kafka: %s", err);
	}
	mock = rd_kafka_mock_cluster_new(mock_rk, brokers);
	if (!mock) {
		rd_kafka_destroy(mock_rk);
		mock_rk = NULL;
		return cw_error("embedded kafka: unable to start the brokers");
	}
	if ((size_t)snprintf(bootstrap, len, "%s",
			     rd_kafka_mock_cluster_bootstraps(mock)) >= len) {
		cw_kafka_mock_stop();
		return cw_error("embedded kafka: bootstrap string too long");
	}
	return 0;
}

static int mock_check(rd_kafka_resp_err_t err, const char *what)
{
	if (!mock)
		return cw_error("the embedded kafka broker is not running");
	if (err)
		return cw_error("embedded kafka: %s: %s", what,
				rd_kafka_err2str(err));
	return 0;
}

int cw_kafka_mock_topic_create(const char *topic, int partitions)
{
	if (!mock)
		return mock_check(0, NULL);
	return mock_check(
		rd_kafka_mock_topic_create(mock, topic, partitions, 1), topic);
}

int cw_kafka_mock_broker_down(int id)
{
	if (!mock)
		return mock_check(0, NULL);
	return mock_check(rd_kafka_mock_broker_set_down(mock, id), "down");
}

int cw_kafka_mock_broker_up(int id)
{
	if (!mock)
		return mock_check(0, NULL);
	return mock_check(rd_kafka_mock_broker_set_up(mock, id), "up");
}

int cw_kafka_mock_produce_errors(int err, int count)
{
	rd_kafka_resp_err_t errs[64];
	int i;

	if (!mock || count < 1 || count > (int)CW_ARRAY_SIZE(errs))
		return cw_error("kafka mock: no cluster, or %d errors", count);
	for (i = 0; i < count; i++)
		errs[i] = (rd_kafka_resp_err_t)err;
	rd_kafka_mock_push_request_errors_array(mock, 0 /* Produce */,
						(size_t)count, errs);
	return 0;
}

void cw_kafka_mock_stop(void)
{
	if (mock)
		rd_kafka_mock_cluster_destroy(mock);
	if (mock_rk)
		rd_kafka_destroy(mock_rk);
	mock = NULL;
	mock_rk = NULL;
}
