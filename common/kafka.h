/* SPDX-License-Identifier: MIT */
/*
 * Kafka transport (librdkafka): the producer agents publish wire records
 * with, the consumer correlators read them with, and an embedded broker
 * (librdkafka's mock cluster) for one-machine runs and tests.  The embedded
 * broker is reached through exactly the same code as a real one: only the
 * bootstrap string differs.  docs/wire.md describes topics and settings.
 *
 *	struct cw_kafka_conf conf = { .brokers = "k1:9092,k2:9092",
 *				      .properties = "/etc/causeway/kafka.conf",
 *				      .spool = sp };
 *	struct cw_kafka_producer *p = cw_kafka_producer_new(&conf);
 *	cw_kafka_produce_conn(p, &rec);
 *	cw_kafka_producer_poll(p, 0);		// in the agent's loop
 *	cw_kafka_producer_free(p);		// flushes, spools the rest
 *
 *	struct cw_kafka_consumer *c = cw_kafka_consumer_new(&conf, topics, 1);
 *	while (cw_kafka_consume(c, 1000, &m) >= 0) {
 *		apply(m.value, m.len);
 *		cw_kafka_msg_applied(c, &m);	// commit point
 *	}
 *	cw_kafka_consumer_commit(c);
 *	cw_kafka_consumer_free(c);
 *
 * Functions returning int give 0 or -1 with a logged message.  Neither
 * object is thread-safe.
 */
#ifndef CW_KAFKA_H
#define CW_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "common/spool.h"

#define CW_KAFKA_PREFIX	     "causeway"
#define CW_KAFKA_GROUP	     "causeway-correlator"
#define CW_KAFKA_COMPRESSION "lz4"
#define CW_KAFKA_TOPIC_MAX   200

struct cw_kafka_conf {
	const char *brokers;	  /* bootstrap.servers; required */
	const char *properties;	  /* librdkafka "key=value" file, or NULL */
	const char *topic_prefix; /* NULL: "causeway" */
	const char *compression;  /* NULL: "lz4" (or zstd, gzip, none) */
	const char *group;	  /* consumer group; NULL: default above */
	bool from_beginning;	  /* consumer: no committed offset: earliest */
	/* Producer: where records Kafka could not take go, or NULL. */
	struct cw_spool *spool;
	/* Producer: how long to try a record before it is spooled. 0: 30s */
	int message_timeout_ms;
};

/*
 * Topic names: "<prefix>.conns" for connections, "<prefix>.meta" for host
 * and process metadata, "<prefix>.timing" for timing windows (keyed by the
 * window's slot, so one correlator sees a whole window of the fleet) and
 * "<prefix>.samples" for sample runs (keyed by host/device).  `kind` is an
 * enum cw_wire_kind.
 */
const char *cw_kafka_topic(const struct cw_kafka_conf *conf, int kind,
			   char *buf, size_t len);

/*
 * Read a librdkafka properties file ("key=value" lines, '#' comments) into
 * a scratch configuration: 0, or -1 naming the file, line and why.
 */
int cw_kafka_properties_check(const char *path);

/* Producer. */

struct cw_kafka_producer_stats {
	uint64_t produced;   /* handed to librdkafka */
	uint64_t delivered;  /* acknowledged by the brokers */
	uint64_t failed;     /* delivery failed (then spooled, if a spool) */
	uint64_t spooled;    /* written to the spool */
	uint64_t replayed;   /* taken from the spool and produced again */
	uint64_t lost;	     /* failed and could not be spooled */
	uint64_t queue_full; /* QUEUE_FULL retries */
	uint64_t in_flight;  /* produced, no delivery report yet */
	uint64_t lost_permanent; /* of lost: refused for good (too large,
				  * not authorised), never retried */
	uint64_t recreated;	 /* new producers after a fatal error */
};

/*
 * What a delivery error means for the record: retriable ones (timeouts,
 * transport, leadership, purges) go back to the spool; permanent ones
 * (message too large, authorisation, invalid record) are counted lost
 * with their reason, once logged; a fatal one (the idempotent producer
 * lost its guarantees) also makes the producer destroy its client and
 * make a new one at the next poll (the record itself is retried).
 */
enum cw_kafka_err_class {
	CW_KAFKA_OK,
	CW_KAFKA_RETRIABLE,
	CW_KAFKA_PERMANENT,
	CW_KAFKA_FATAL,
};
/* `err` is an rd_kafka_resp_err_t. */
enum cw_kafka_err_class cw_kafka_err_class(int err);

struct cw_kafka_producer;

struct cw_kafka_producer *cw_kafka_producer_new(const struct cw_kafka_conf *c);
/*
 * Queue one encoded wire record of kind `kind` with partition key `key`.
 * While records wait in the spool, new ones join them there so the order is
 * kept.  0, or -1 if the record could neither be queued nor spooled.
 */
int cw_kafka_produce(struct cw_kafka_producer *p, int kind, const char *key,
		     const void *value, size_t len);
/* Encode, key and queue a connection record. */
int cw_kafka_produce_conn(struct cw_kafka_producer *p,
			  const struct cw_conn_record *r);
/* The same for one timing window record (at most CW_WIRE_TIMING_CHUNK
 * messages: split larger ones first) ... */
int cw_kafka_produce_timing(struct cw_kafka_producer *p,
			    const struct cw_timing_record *t);
/* ... and for a sample run; one over CW_KAFKA_VALUE_MAX is refused. */
struct cw_sample_run;
int cw_kafka_produce_samples(struct cw_kafka_producer *p,
			     const struct cw_sample_run *run, uint64_t seq);
/* Largest record value produced: under Kafka's default message.max.bytes. */
#define CW_KAFKA_VALUE_MAX 950000
/*
 * Serve delivery reports (waiting up to `timeout_ms`) and, when brokers
 * take records again, replay the spool.  Call it often.  Returns the
 * number of delivery reports served.
 */
int cw_kafka_producer_poll(struct cw_kafka_producer *p, int timeout_ms);
/*
 * Wait up to `timeout_ms` until every record is delivered, the spooled ones
 * included.  0 when all are, -1 if some are still in flight or spooled.
 */
int cw_kafka_producer_flush(struct cw_kafka_producer *p, int timeout_ms);
void cw_kafka_producer_get_stats(const struct cw_kafka_producer *p,
				 struct cw_kafka_producer_stats *st);
/* Flush for up to 10 s, spool what is still undelivered, destroy. */
void cw_kafka_producer_free(struct cw_kafka_producer *p);

/* Consumer: one member of a consumer group; offsets are committed only for
 * records the caller marked applied. */

struct cw_kafka_msg {
	const char *topic;
	int32_t partition;
	int64_t offset;
	const void *key;
	size_t key_len;
	const uint8_t *value;
	size_t len;
	int64_t ts_ms; /* its timestamp (ms since the epoch), -1 if none */
	void *priv;    /* the librdkafka message */
};

struct cw_kafka_consumer;

struct cw_kafka_consumer *cw_kafka_consumer_new(const struct cw_kafka_conf *c,
						const char *const *topics,
						int ntopics);
/*
 * Wait up to `timeout_ms` for the next record: 1 with `m` filled (release
 * it with cw_kafka_msg_applied() or cw_kafka_msg_release()), 0 on timeout
 * or end of a partition, -1 on a fatal error.
 */
int cw_kafka_consume(struct cw_kafka_consumer *c, int timeout_ms,
		     struct cw_kafka_msg *m);
/*
 * The record's effects are stored: its offset may be committed.  Releases.
 * The offset reaches librdkafka at the next commit, rebalance or close.
 */
void cw_kafka_msg_applied(struct cw_kafka_consumer *c, struct cw_kafka_msg *m);
/* Release without marking it applied. */
void cw_kafka_msg_release(struct cw_kafka_msg *m);
/*
 * Store `next` (the offset of the first record not yet applied) as the
 * partition's commit point, for records kept past their release (timing
 * windows are applied when their whole window is).  0 or -1 (not assigned).
 */
int cw_kafka_offset_store(struct cw_kafka_consumer *c, const char *topic,
			  int32_t partition, int64_t next);
/*
 * Partition ownership: once hooks are set, `assign` is called for every
 * partition given to this member, before any of its records is read, and
 * returns where to start (an offset >= 0, CW_KAFKA_OFFSET_BEGINNING, or
 * CW_KAFKA_OFFSET_COMMITTED: the group's committed offset, else as
 * from_beginning says); `revoke` for every partition taken away, with lost
 * set when it was taken without a handover (this member was out of the
 * group past its session timeout: another may own it already).  Both run
 * inside cw_kafka_consume().
 */
#define CW_KAFKA_OFFSET_BEGINNING (-2)
#define CW_KAFKA_OFFSET_COMMITTED (-1001)
typedef int64_t (*cw_kafka_assign_fn)(void *arg, const char *topic,
				      int32_t partition);
typedef void (*cw_kafka_revoke_fn)(void *arg, const char *topic,
				   int32_t partition, bool lost);
void cw_kafka_consumer_hooks(struct cw_kafka_consumer *c,
			     cw_kafka_assign_fn assign,
			     cw_kafka_revoke_fn revoke, void *arg);
/*
 * Whether c holds an assignment now (possibly empty: more members than
 * partitions), not joining or waiting out a rebalance; `rebalances` counts
 * the assignments and revocations so far, so a caller sees one happen.
 */
bool cw_kafka_consumer_member(const struct cw_kafka_consumer *c,
			      uint64_t *rebalances);
/*
 * A partition's low and high watermarks (the oldest offset retention kept
 * and the next offset to be written).  0, or -1 after a message.
 */
int cw_kafka_watermarks(struct cw_kafka_consumer *c, const char *topic,
			int32_t partition, int64_t *lo, int64_t *hi);
/* How many partitions topic has, asking at most timeout_ms; -1 when
 * that is not known (no message: the caller decides what that means). */
int cw_kafka_consumer_partitions(struct cw_kafka_consumer *c,
				 const char *topic, int timeout_ms);
/* Commit the offsets of applied records, synchronously. */
int cw_kafka_consumer_commit(struct cw_kafka_consumer *c);
/* One assigned partition of a consumer and how far behind it is. */
struct cw_kafka_lag {
	char topic[CW_KAFKA_TOPIC_MAX];
	int32_t partition;
	int64_t low, high; /* watermarks; -1 until a fetch has told them */
	int64_t position;  /* next offset the caller will see; -1: none yet */
	int64_t lag;	   /* high - position (high - low before any), >= 0 */
};
/*
 * The partitions assigned to c (at most `max` into out), from the
 * watermarks the last fetches brought: never waits for a broker.  Their
 * number, or -1 (no message) when the assignment cannot be read.
 */
int cw_kafka_consumer_lag(struct cw_kafka_consumer *c, struct cw_kafka_lag *out,
			  size_t max);
/*
 * Stop fetching an assigned partition (pause), or go on (resume): what
 * was fetched and not handed over yet is dropped and fetched again from
 * the next offset the caller would see.  A pause outlives a rebalance
 * that gives the partition back.  0, or -1 (not assigned; no message).
 */
int cw_kafka_consumer_pause(struct cw_kafka_consumer *c, const char *topic,
			    int32_t partition, bool pause);
/* Leave the group (committing applied offsets first) and destroy. */
void cw_kafka_consumer_free(struct cw_kafka_consumer *c);

/*
 * A log: one topic written to chosen partitions and read back a partition
 * at a time, with no consumer group: where correlators keep what they
 * must find again (<prefix>.state checkpoints, <prefix>.edges buckets).
 *
 *	struct cw_kafka_log *l = cw_kafka_log_new(&conf, "causeway.state");
 *	n = cw_kafka_log_partitions(l);
 *	cw_kafka_log_put(l, p % n, key, buf, len);	// queued ...
 *	if (cw_kafka_log_flush(l, 30000))		// ... stored, or -1
 *		...
 *	cw_kafka_log_read(l, p % n, 0, on_record, arg);	// up to the end
 *	cw_kafka_log_free(l);
 */
struct cw_kafka_log;

struct cw_kafka_log *cw_kafka_log_new(const struct cw_kafka_conf *c,
				      const char *topic);
/*
 * A setting (e.g. "cleanup.policy", "compact") the topic gets if
 * cw_kafka_log_partitions() finds it missing and makes it; at most four,
 * before that call.  0, or -1 after a message.
 */
int cw_kafka_log_topic_config(struct cw_kafka_log *l, const char *key,
			      const char *value);
/*
 * The topic's partitions, or -1 after a message.  A missing topic is made
 * with the brokers' default partitions and replication and the settings
 * above (the embedded broker: as on first use, with 4 partitions); a look
 * at it never makes it with the broker's defaults.
 */
int cw_kafka_log_partitions(struct cw_kafka_log *l);
/* Queue a record for partition; 0, or -1 after a message. */
int cw_kafka_log_put(struct cw_kafka_log *l, int32_t partition, const char *key,
		     const void *value, size_t len);
/* Wait until every record put is stored: 0, or -1 after a message (some
 * were not: whatever they were part of must be written again). */
int cw_kafka_log_flush(struct cw_kafka_log *l, int timeout_ms);
/* Called per record read, with its key (NULL, 0: none) and value;
 * non-zero stops the read (and is returned). */
typedef int (*cw_kafka_record_fn)(void *arg, int64_t offset, const char *key,
				  size_t key_len, const uint8_t *value,
				  size_t len);
/*
 * Read partition from offset `from` (or its low watermark, if higher) up
 * to its high watermark at the call.  0, what fn returned, or -1 after a
 * message.
 */
int cw_kafka_log_read(struct cw_kafka_log *l, int32_t partition, int64_t from,
		      cw_kafka_record_fn fn, void *arg);
/* Flush (10 s at most) and destroy; NULL is fine. */
void cw_kafka_log_free(struct cw_kafka_log *l);

/*
 * Embedded broker: a librdkafka mock cluster of `brokers` brokers inside
 * this process, on localhost ports; its bootstrap string goes to `bootstrap`.
 * One per process.
 */
int cw_kafka_mock_start(int brokers, char *bootstrap, size_t len);
/* Create a topic with `partitions` partitions (else auto-created with 4). */
int cw_kafka_mock_topic_create(const char *topic, int partitions);
/* An outage: broker `id` (1..brokers, or -1 for all) refuses connections. */
int cw_kafka_mock_broker_down(int id);
int cw_kafka_mock_broker_up(int id);
/* The next `count` produce requests fail with `err` (an rd_kafka_resp_err_t),
 * to drill the producer's error handling. */
int cw_kafka_mock_produce_errors(int err, int count);
void cw_kafka_mock_stop(void);

#endif
