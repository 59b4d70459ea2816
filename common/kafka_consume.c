// SPDX-License-Identifier: MIT
/*
 * Reading Kafka: the group consumer the correlator, serve and place use
 * (assignment hooks, offsets stored only once applied, watermarks and
 * lag), and the state log, a plain producer and consumer pair for the
 * correlator's checkpoints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <librdkafka/rdkafka.h>

#include "common/kafka.h"
#include "common/kafka_impl.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

struct cw_kafka_consumer {
	rd_kafka_t *rk;
	rd_kafka_resp_err_t last_err;
	cw_kafka_assign_fn assign;
	cw_kafka_revoke_fn revoke;
	void *hook_arg;
	uint64_t rebalances; /* assignments and revocations so far */
	bool member;	     /* holds an assignment (maybe empty) now */
	/*
	 * Offsets applied but not yet handed to librdkafka: one
	 * rd_kafka_offsets_store() per partition and commit, rebalance or
	 * close, not one (with a list made and freed) per record.
	 */
	struct pending_store {
		char *topic;
		int32_t partition;
		bool dirty; /* next is not stored yet */
		int64_t next;
	} *pend; /* one per partition ever applied */
	size_t npend, cap_pend, last_pend, ndirty;
};

/* Hand the applied offsets to librdkafka, before it may commit them. */
static void store_pending(struct cw_kafka_consumer *kc)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;
	size_t i;

	if (!kc->ndirty)
		return;
	list = rd_kafka_topic_partition_list_new((int)kc->ndirty);
	for (i = 0; i < kc->npend; i++) {
		if (!kc->pend[i].dirty)
			continue;
		rd_kafka_topic_partition_list_add(list, kc->pend[i].topic,
						  kc->pend[i].partition)
			->offset = kc->pend[i].next;
		kc->pend[i].dirty = false;
	}
	err = rd_kafka_offsets_store(kc->rk, list);
	/* A partition revoked meanwhile is refused: its new owner reads
	 * from its own checkpoint or the group's last commit. */
	for (i = 0; i < (size_t)list->cnt; i++)
		if (err || list->elems[i].err)
			cw_debug("kafka: unable to store offset %s[%d]@%" PRId64
				 ": %s",
				 list->elems[i].topic,
				 list->elems[i].partition,
				 list->elems[i].offset,
				 rd_kafka_err2str(err ? err
						      : list->elems[i].err));
	rd_kafka_topic_partition_list_destroy(list);
	kc->ndirty = 0;
}

/* Tell the owner, then take the partitions (eager or cooperative). */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	struct cw_kafka_consumer *kc = opaque;
	/* NULL while the protocol is not known, as when the consumer closes
	 * during a rebalance: then the revocation is an eager one. */
	const char *proto = rd_kafka_rebalance_protocol(rk);
	bool coop = proto && !strcmp(proto, "COOPERATIVE");
	rd_kafka_topic_partition_t *tp;
	int64_t off;
	int i;

	/* What was applied before is stored while it is still ours. */
	store_pending(kc);
	for (i = 0; i < parts->cnt; i++) {
		tp = &parts->elems[i];
		if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && kc->assign) {
			off = kc->assign(kc->hook_arg, tp->topic,
					 tp->partition);
			if (off != CW_KAFKA_OFFSET_COMMITTED)
				tp->offset = off;
		} else if (err != RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS &&
			   kc->revoke) {
			kc->revoke(kc->hook_arg, tp->topic, tp->partition,
				   rd_kafka_assignment_lost(rk));
		}
	}
	kc->rebalances++;
	/* Eager revocations leave the member without an assignment until
	 * the group is in sync again; cooperative ones only lose some. */
	kc->member = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ||
		     (coop && !rd_kafka_assignment_lost(rk));
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		if (coop)
			rd_kafka_error_destroy(
				rd_kafka_incremental_assign(rk, parts));
		else
			rd_kafka_assign(rk, parts);
	} else if (coop) {
		rd_kafka_error_destroy(
			rd_kafka_incremental_unassign(rk, parts));
	} else {
		rd_kafka_assign(rk, NULL);
	}
}

void cw_kafka_consumer_hooks(struct cw_kafka_consumer *c,
			     cw_kafka_assign_fn assign,
			     cw_kafka_revoke_fn revoke, void *arg)
{
	c->assign = assign;
	c->revoke = revoke;
	c->hook_arg = arg;
}

bool cw_kafka_consumer_member(const struct cw_kafka_consumer *c,
			      uint64_t *rebalances)
{
	*rebalances = c->rebalances;
	return c->member;
}

/*
 * A partition's watermarks, asked again while its leadership moves: for
 * the seconds a failover takes (the old leader killed, a new one elected
 * from the in-sync replicas) the answer is "not leader" or no answer, and
 * a caller that gave up there (a snapshot reading P.edges back) made its
 * correlator exit.  Bounded: WATERMARK_TRIES answers, WATERMARK_WAIT_MS
 * apart, each waiting up to 10 s.
 */
#define WATERMARK_TRIES	  20
#define WATERMARK_WAIT_MS 500

static bool watermark_retriable(rd_kafka_resp_err_t err)
{
	switch (err) {
	case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
	case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
	case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
	case RD_KAFKA_RESP_ERR__TRANSPORT:
	case RD_KAFKA_RESP_ERR__TIMED_OUT:
	case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
		return true;
	default:
		return false;
	}
}

/* Ask the brokers for topic's leaders again: the query goes to the one
 * the client's metadata names, which a dead leader stays until refreshed. */
static void refresh_leaders(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;

	if (!rkt)
		return;
	if (!rd_kafka_metadata(rk, 0, rkt, &md, 2000))
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
}

static rd_kafka_resp_err_t watermarks(rd_kafka_t *rk, const char *topic,
				      int32_t partition, int64_t *lo,
				      int64_t *hi)
{
	rd_kafka_resp_err_t err;
	int i;

	for (i = 0;; i++) {
		err = rd_kafka_query_watermark_offsets(rk, topic, partition, lo,
						       hi, 10000);
		if (!err || !watermark_retriable(err) ||
		    i + 1 >= WATERMARK_TRIES)
			return err;
		refresh_leaders(rk, topic);
		usleep(WATERMARK_WAIT_MS * 1000);
	}
}

int cw_kafka_watermarks(struct cw_kafka_consumer *c, const char *topic,
			int32_t partition, int64_t *lo, int64_t *hi)
{
	rd_kafka_resp_err_t err = watermarks(c->rk, topic, partition, lo, hi);

	if (err)
		return cw_error("kafka: no watermarks for %s [%d]: %s", topic,
				partition, rd_kafka_err2str(err));
	return 0;
}

struct cw_kafka_consumer *cw_kafka_consumer_new(const struct cw_kafka_conf *c,
						const char *const *topics,
						int ntopics)
{
	struct cw_kafka_consumer *kc;
	rd_kafka_topic_partition_list_t *list = NULL;
	rd_kafka_conf_t *conf;
	rd_kafka_resp_err_t err;
	char errstr[512];
	int i;

	kc = calloc(1, sizeof(*kc));
	if (!kc) {
		cw_error("out of memory");
		return NULL;
	}
	conf = kafka_conf_common(c);
	if (!conf)
		goto fail;
	/* A topic made after we subscribed (the first agent with timing
	 * windows on) is found within 10 s rather than 5 min. */
	if (kafka_conf_set(conf, "group.id",
			   c->group ? c->group : CW_KAFKA_GROUP) ||
	    kafka_conf_set(conf, "auto.offset.reset",
			   c->from_beginning ? "earliest" : "latest") ||
	    kafka_conf_set(conf, "topic.metadata.refresh.interval.ms",
			   "10000") ||
	    (c->properties && kafka_conf_load_file(conf, c->properties)) ||
	    /* Offsets move only for records the caller applied. */
	    kafka_conf_set(conf, "enable.auto.commit", "false") ||
	    kafka_conf_set(conf, "enable.auto.offset.store", "false")) {
		rd_kafka_conf_destroy(conf);
		goto fail;
	}
	rd_kafka_conf_set_error_cb(conf, kafka_on_error);
	rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
	rd_kafka_conf_set_opaque(conf, kc);
	kc->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!kc->rk) {
		rd_kafka_conf_destroy(conf);
		cw_error("unable to create kafka consumer: %s", errstr);
		goto fail;
	}
	rd_kafka_poll_set_consumer(kc->rk);
	list = rd_kafka_topic_partition_list_new(ntopics);
	for (i = 0; i < ntopics; i++)
		rd_kafka_topic_partition_list_add(list, topics[i],
						  RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(kc->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err) {
		cw_error("kafka: unable to subscribe: %s",
			 rd_kafka_err2str(err));
		goto fail;
	}
	return kc;
fail:
	if (kc->rk)
		rd_kafka_destroy(kc->rk);
	free(kc);
	return NULL;
}

int cw_kafka_consume(struct cw_kafka_consumer *c, int timeout_ms,
		     struct cw_kafka_msg *m)
{
	rd_kafka_message_t *km = rd_kafka_consumer_poll(c->rk, timeout_ms);

	memset(m, 0, sizeof(*m));
	if (!km)
		return 0;
	if (km->err) {
		rd_kafka_resp_err_t err = km->err;

		/* A topic no producer made yet (say, .timing while no agent
		 * has windows on) is normal: it is picked up once it exists. */
		if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		    err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
			cw_debug("kafka: %s", rd_kafka_message_errstr(km));
		else if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
			 err != c->last_err)
			cw_warn("kafka: %s", rd_kafka_message_errstr(km));
		c->last_err = err;
		rd_kafka_message_destroy(km);
		return err == RD_KAFKA_RESP_ERR__FATAL ? -1 : 0;
	}
	c->last_err = 0;
	m->topic = rd_kafka_topic_name(km->rkt);
	m->partition = km->partition;
	m->offset = km->offset;
	m->key = km->key;
	m->key_len = km->key_len;
	m->value = km->payload;
	m->len = km->len;
	m->ts_ms = rd_kafka_message_timestamp(km, NULL);
	m->priv = km;
	return 1;
}

void cw_kafka_msg_applied(struct cw_kafka_consumer *c, struct cw_kafka_msg *m)
{
	struct pending_store *ps;
	size_t i = c->last_pend;

	if (!m->priv)
		return;
	/* Records come in runs from one partition: try the last one first. */
	if (i >= c->npend || c->pend[i].partition != m->partition ||
	    strcmp(c->pend[i].topic, m->topic)) {
		for (i = 0; i < c->npend; i++)
			if (c->pend[i].partition == m->partition &&
			    !strcmp(c->pend[i].topic, m->topic))
				break;
		if (i == c->npend) {
			if (CW_GROW(c->pend, c->cap_pend, c->npend + 1, 16) ||
			    !(c->pend[i].topic = strdup(m->topic))) {
				/* Store it now rather than lose it. */
				cw_kafka_offset_store(c, m->topic, m->partition,
						      m->offset + 1);
				cw_kafka_msg_release(m);
				return;
			}
			c->npend++;
			c->pend[i].partition = m->partition;
			c->pend[i].dirty = false;
		}
		c->last_pend = i;
	}
	ps = &c->pend[i];
	ps->next = m->offset + 1;
	if (!ps->dirty) {
		ps->dirty = true;
		c->ndirty++;
	}
	cw_kafka_msg_release(m);
}

int cw_kafka_offset_store(struct cw_kafka_consumer *c, const char *topic,
			  int32_t partition, int64_t next)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;

	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, topic, partition)->offset =
		next;
	err = rd_kafka_offsets_store(c->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err) {
		cw_debug("kafka: unable to store offset %s[%d]@%" PRId64 ": %s",
			 topic, partition, next, rd_kafka_err2str(err));
		return -1;
	}
	return 0;
}

void cw_kafka_msg_release(struct cw_kafka_msg *m)
{
	if (m->priv)
		rd_kafka_message_destroy(m->priv);
	memset(m, 0, sizeof(*m));
}

/*
 * How long a commit or the group's farewell may take.  librdkafka's own
 * synchronous forms wait without end (for the coordinator's answer, for
 * the group to end), and once in CI a member stopped after the group had
 * fenced it (paused past its session) never ended.  Past this bound the
 * coordinator is out of reach or wedged, and the stop goes on.  The
 * checkpoints are the truth, written and flushed before; an offset not
 * committed is only read again.
 */
static int group_wait_ms(rd_kafka_t *rk)
{
	char buf[32];
	size_t n = sizeof(buf);
	long ms = 45000;

	if (rd_kafka_conf_get(rd_kafka_conf(rk), "session.timeout.ms", buf,
			      &n) == RD_KAFKA_CONF_OK)
		ms = strtol(buf, NULL, 10);
	if (ms < 1000 || ms > 300000)
		ms = 45000;
	return (int)ms + GROUP_WAIT_SLACK_MS;
}

int cw_kafka_consumer_commit(struct cw_kafka_consumer *c)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(c->rk);
	uint64_t end = kafka_now_ms() + (uint64_t)group_wait_ms(c->rk);
	rd_kafka_resp_err_t err;
	rd_kafka_event_t *ev;
	uint64_t now;

	store_pending(c);
	/* The result comes back as an event on our own queue. */
	err = rd_kafka_commit_queue(c->rk, NULL, q, NULL, NULL);
	while (!err && (now = kafka_now_ms()) < end) {
		ev = rd_kafka_queue_poll(q, (int)(end - now));
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) {
			err = rd_kafka_event_error(ev);
			rd_kafka_event_destroy(ev);
			goto done;
		}
		rd_kafka_event_destroy(ev);
	}
	if (!err)
		err = RD_KAFKA_RESP_ERR__TIMED_OUT;
done:
	rd_kafka_queue_destroy(q);
	if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
		return cw_error("kafka: commit failed: %s",
				rd_kafka_err2str(err));
	return 0;
}

/*
 * Leave the group (revocations served here, through the rebalance hook)
 * and free the client, within group_wait_ms.  Past it the handle is
 * left behind, not destroyed: destroying waits for the group to end,
 * which is what did not happen.  Only ever done on the way out.
 */
static void consumer_close_bounded(rd_kafka_t *rk, const char *what,
				   struct cw_kafka_consumer *kc)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	uint64_t end = kafka_now_ms() + (uint64_t)group_wait_ms(rk);
	rd_kafka_error_t *error = rd_kafka_consumer_close_queue(rk, q);
	bool closing = !error;
	rd_kafka_event_t *ev;

	if (error) {
		cw_warn("kafka: %s: close: %s", what,
			rd_kafka_error_string(error));
		rd_kafka_error_destroy(error);
	}
	/* Served as events: the last revocation goes to our hook here. */
	while (closing && !rd_kafka_consumer_closed(rk) &&
	       kafka_now_ms() < end) {
		ev = rd_kafka_queue_poll(q, 100);
		if (ev && kc &&
		    rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE)
			on_rebalance(rk, rd_kafka_event_error(ev),
				     rd_kafka_event_topic_partition_list(ev),
				     kc);
		if (ev)
			rd_kafka_event_destroy(ev);
	}
	rd_kafka_queue_destroy(q);
	if (closing && !rd_kafka_consumer_closed(rk)) {
		cw_warn("kafka: %s: the group did not let go in %d s: "
			"leaving without a goodbye",
			what, group_wait_ms(rk) / 1000);
		return;
	}
	/* A close that could not start must not be retried, unbounded, by
	 * the destroy. */
	rd_kafka_destroy_flags(rk, closing ? 0
					   : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

static void lag_of(rd_kafka_t *rk, const rd_kafka_topic_partition_t *tp,
		   struct cw_kafka_lag *l)
{
	int64_t low = -1, high = -1;

	snprintf(l->topic, sizeof(l->topic), "%s", tp->topic);
	l->partition = tp->partition;
	if (rd_kafka_get_watermark_offsets(rk, tp->topic, tp->partition, &low,
					   &high))
		low = high = -1;
	l->low = low < 0 ? -1 : low;
	l->high = high < 0 ? -1 : high;
	l->position = tp->offset < 0 ? -1 : tp->offset;
	l->lag = 0;
	if (l->high >= 0 && l->position >= 0)
		l->lag = l->high - l->position;
	else if (l->high >= 0 && l->low >= 0)
		l->lag = l->high - l->low;
	if (l->lag < 0)
		l->lag = 0;
}

int cw_kafka_consumer_lag(struct cw_kafka_consumer *c, struct cw_kafka_lag *out,
			  size_t max)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	size_t i, n = 0;

	if (rd_kafka_assignment(c->rk, &parts) || !parts)
		return -1;
	/* Positions are the caller's: what it has been handed, plus one. */
	rd_kafka_position(c->rk, parts);
	for (i = 0; i < (size_t)parts->cnt && n < max; i++)
		lag_of(c->rk, &parts->elems[i], &out[n++]);
	rd_kafka_topic_partition_list_destroy(parts);
	return (int)n;
}

int cw_kafka_consumer_pause(struct cw_kafka_consumer *c, const char *topic,
			    int32_t partition, bool pause)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_resp_err_t err;

	if (!l)
		return -1;
	rd_kafka_topic_partition_list_add(l, topic, partition);
	err = pause ? rd_kafka_pause_partitions(c->rk, l)
		    : rd_kafka_resume_partitions(c->rk, l);
	if (!err)
		err = l->elems[0].err;
	rd_kafka_topic_partition_list_destroy(l);
	return err ? -1 : 0;
}

void cw_kafka_consumer_free(struct cw_kafka_consumer *c)
{
	size_t i;

	if (!c)
		return;
	cw_kafka_consumer_commit(c);
	consumer_close_bounded(c->rk, "group consumer", c);
	for (i = 0; i < c->npend; i++)
		free(c->pend[i].topic);
	free(c->pend);
	free(c);
}

/* Log: a topic written to chosen partitions, read back with no group. */

#define LOG_CONFIGS 4

struct cw_kafka_log {
	rd_kafka_t *prod, *cons;
	rd_kafka_topic_t *topic;
	char name[CW_KAFKA_TOPIC_MAX];
	struct cw_kafka_conf conf;
	uint64_t in_flight, failed;
	rd_kafka_resp_err_t first_err;
	/* Settings the topic is made with, if it is missing. */
	char cfg[LOG_CONFIGS][2][64];
	const char *kv[2 * LOG_CONFIGS];
	int ncfg;
};

static void on_log_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
			    void *opaque)
{
	struct cw_kafka_log *l = opaque;

	(void)rk;
	l->in_flight--;
	if (m->err && !l->failed++)
		l->first_err = m->err;
}

struct cw_kafka_log *cw_kafka_log_new(const struct cw_kafka_conf *c,
				      const char *topic)
{
	struct cw_kafka_log *l = calloc(1, sizeof(*l));
	rd_kafka_conf_t *conf;
	char err[512];

	if (!l) {
		cw_error("out of memory");
		return NULL;
	}
	l->conf = *c;
	snprintf(l->name, sizeof(l->name), "%s", topic);
	conf = kafka_conf_common(c);
	if (!conf ||
	    /* Sent from the copy librdkafka makes of each record, not
	     * copied again into each request (records here are edge sets
	     * and checkpoint chunks of tens of kilobytes, under the 64 KiB
	     * default): one copy and its fresh memory fewer.  A file may
	     * say otherwise. */
	    kafka_conf_set(conf, "message.copy.max.bytes", "0") ||
	    (c->properties && kafka_conf_load_file(conf, c->properties)) ||
	    kafka_conf_set(conf, "enable.idempotence", "true") ||
	    /* A look at a missing topic must not make it with the broker's
	     * defaults: cw_kafka_log_partitions() makes it with ours. */
	    kafka_conf_set(conf, "allow.auto.create.topics", "false") ||
	    kafka_conf_set(conf, "linger.ms", "5")) {
		if (conf)
			rd_kafka_conf_destroy(conf);
		goto fail;
	}
	rd_kafka_conf_set_dr_msg_cb(conf, on_log_delivery);
	rd_kafka_conf_set_opaque(conf, l);
	l->prod = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!l->prod) {
		rd_kafka_conf_destroy(conf);
		cw_error("unable to create kafka producer: %s", err);
		goto fail;
	}
	l->topic = rd_kafka_topic_new(l->prod, topic, NULL);
	if (!l->topic) {
		cw_error("kafka: unable to use topic '%s'", topic);
		goto fail;
	}
	return l;
fail:
	cw_kafka_log_free(l);
	return NULL;
}

int cw_kafka_log_topic_config(struct cw_kafka_log *l, const char *key,
			      const char *value)
{
	int i;

	for (i = 0; i < l->ncfg && strcmp(l->cfg[i][0], key); i++)
		;
	if (i >= LOG_CONFIGS || strlen(key) >= sizeof(l->cfg[i][0]) ||
	    strlen(value) >= sizeof(l->cfg[i][1]))
		return cw_error("kafka: too many or too long settings for "
				"'%s'", l->name);
	snprintf(l->cfg[i][0], sizeof(l->cfg[i][0]), "%s", key);
	snprintf(l->cfg[i][1], sizeof(l->cfg[i][1]), "%s", value);
	l->kv[2 * i] = l->cfg[i][0];
	l->kv[2 * i + 1] = l->cfg[i][1];
	l->ncfg += i == l->ncfg;
	return 0;
}

/*
 * How many partitions topic rkt has as rk sees it, asking once for at most
 * timeout_ms: 0 when it has none yet (a topic just made has no leaders for
 * a moment; *missing set when the brokers do not know it), -1 when the
 * brokers did not say (*err says why).
 */
static int partitions_once(rd_kafka_t *rk, rd_kafka_topic_t *rkt,
			   int timeout_ms, rd_kafka_resp_err_t *err,
			   bool *missing)
{
	const struct rd_kafka_metadata *md;
	int n = 0;

	*missing = false;
	*err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
	if (*err)
		return -1;
	if (md->topic_cnt == 1 && !md->topics[0].err &&
	    md->topics[0].partition_cnt > 0)
		n = md->topics[0].partition_cnt;
	if (md->topic_cnt == 1 &&
	    md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		*missing = true;
	rd_kafka_metadata_destroy(md);
	return n;
}

/* Make the log's missing topic: with its settings, else (the embedded
 * broker) as the brokers make topics on first use.  0 or -1. */
static int log_make_topic(struct cw_kafka_log *l)
{
	int r = kafka_topic_create(l->prod, l->name, l->kv, l->ncfg, 30000);

	if (r == 1)
		r = kafka_topic_auto_create(&l->conf, l->name);
	return r;
}

int cw_kafka_log_partitions(struct cw_kafka_log *l)
{
	rd_kafka_resp_err_t err;
	bool missing, made = false;
	int tries, n = 0;

	for (tries = 0; tries < 50 && n <= 0; tries++) {
		n = partitions_once(l->prod, l->topic, 5000, &err, &missing);
		if (missing && !made) {
			if (log_make_topic(l))
				return -1;
			made = true;
			continue;
		}
		/* A broker that died unanswered times out: try another. */
		if (n < 0 && (!watermark_retriable(err) || tries + 1 >= 50))
			return cw_error("kafka: no metadata for '%s': %s",
					l->name, rd_kafka_err2str(err));
		if (n <= 0)
			usleep(100000);
	}
	if (!n)
		return cw_error("kafka: topic '%s' has no partitions",
				l->name);
	return n;
}

int cw_kafka_consumer_partitions(struct cw_kafka_consumer *c,
				 const char *topic, int timeout_ms)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(c->rk, topic, NULL);
	rd_kafka_resp_err_t err;
	bool missing;
	int n;

	if (!rkt)
		return -1;
	n = partitions_once(c->rk, rkt, timeout_ms, &err, &missing);
	rd_kafka_topic_destroy(rkt);
	return n > 0 ? n : -1;
}

int cw_kafka_log_put(struct cw_kafka_log *l, int32_t partition, const char *key,
		     const void *value, size_t len)
{
	int tries;

	for (tries = 0; tries < QUEUE_FULL_TRIES; tries++) {
		if (!rd_kafka_produce(l->topic, partition, RD_KAFKA_MSG_F_COPY,
				      (void *)value, len, key,
				      key ? strlen(key) : 0, NULL)) {
			l->in_flight++;
			return 0;
		}
		if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		rd_kafka_poll(l->prod, 50);
	}
	return cw_error("kafka: unable to write to '%s' [%d]: %s", l->name,
			partition, rd_kafka_err2str(rd_kafka_last_error()));
}

int cw_kafka_log_flush(struct cw_kafka_log *l, int timeout_ms)
{
	uint64_t failed;

	rd_kafka_flush(l->prod, timeout_ms);
	rd_kafka_poll(l->prod, 0);
	failed = l->failed;
	l->failed = 0;
	if (l->in_flight)
		return cw_error("kafka: %" PRIu64 " records to '%s' not "
				"stored in time",
				l->in_flight, l->name);
	if (failed)
		return cw_error("kafka: %" PRIu64 " records to '%s' not "
				"stored: %s",
				failed, l->name,
				rd_kafka_err2str(l->first_err));
	return 0;
}

/* The group-less consumer reads use, made on the first read. */
static int log_reader(struct cw_kafka_log *l)
{
	rd_kafka_conf_t *conf;
	char err[512];

	if (l->cons)
		return 0;
	conf = kafka_conf_common(&l->conf);
	if (!conf ||
	    (l->conf.properties &&
	     kafka_conf_load_file(conf, l->conf.properties)) ||
	    kafka_conf_set(conf, "enable.partition.eof", "true") ||
	    /* Partitions are assigned, never subscribed: the group only
	     * names the client, nothing is committed. */
	    kafka_conf_set(conf, "group.id", "causeway-log-reader") ||
	    /* A restore waits for every fetch: no batching delay. */
	    kafka_conf_set(conf, "fetch.wait.max.ms", "10") ||
	    kafka_conf_set(conf, "enable.auto.commit", "false")) {
		if (conf)
			rd_kafka_conf_destroy(conf);
		return -1;
	}
	l->cons = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!l->cons) {
		rd_kafka_conf_destroy(conf);
		return cw_error("unable to create kafka consumer: %s", err);
	}
	rd_kafka_poll_set_consumer(l->cons);
	return 0;
}

/* Records of one assigned partition until offset hi - 1 is read. */
static int log_drain(struct cw_kafka_log *l, int64_t hi, cw_kafka_record_fn fn,
		     void *arg)
{
	uint64_t quiet = kafka_now_ms() + 30000;
	rd_kafka_message_t *m;
	int64_t at = -1;
	int ret = 0;

	while (!ret && at < hi - 1) {
		m = rd_kafka_consumer_poll(l->cons, 200);
		if (!m) {
			if (kafka_now_ms() > quiet)
				return cw_error("kafka: '%s' stopped before "
						"offset %" PRId64,
						l->name, hi);
			continue;
		}
		quiet = kafka_now_ms() + 30000;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			at = m->offset - 1;
		} else if (m->err) {
			cw_warn("kafka: %s", rd_kafka_message_errstr(m));
		} else {
			at = m->offset;
			ret = fn(arg, m->offset, m->key, m->key_len,
				 m->payload, m->len);
		}
		rd_kafka_message_destroy(m);
	}
	return ret;
}

int cw_kafka_log_read(struct cw_kafka_log *l, int32_t partition, int64_t from,
		      cw_kafka_record_fn fn, void *arg)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;
	int64_t lo, hi;
	int ret;

	if (log_reader(l))
		return -1;
	err = watermarks(l->cons, l->name, partition, &lo, &hi);
	if (err)
		return cw_error("kafka: no watermarks for '%s' [%d]: %s",
				l->name, partition, rd_kafka_err2str(err));
	if (from < lo)
		from = lo;
	if (from >= hi)
		return 0;
	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, l->name, partition)->offset =
		from;
	err = rd_kafka_assign(l->cons, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err)
		return cw_error("kafka: unable to read '%s' [%d]: %s", l->name,
				partition, rd_kafka_err2str(err));
	ret = log_drain(l, hi, fn, arg);
	rd_kafka_assign(l->cons, NULL);
	return ret;
}

void cw_kafka_log_free(struct cw_kafka_log *l)
{
	if (!l)
		return;
	if (l->prod) {
		rd_kafka_flush(l->prod, FREE_FLUSH_MS);
		if (l->topic)
			rd_kafka_topic_destroy(l->topic);
		rd_kafka_destroy(l->prod);
	}
	if (l->cons) {
		consumer_close_bounded(l->cons, "state log reader", NULL);
	}
	free(l);
}
