/* SPDX-License-Identifier: MIT */
/*
 * The Kafka clients' shared inside, for common/kafka.c (settings, logging,
 * the producer, the embedded broker) and common/kafka_consume.c (the
 * consumer and the state log).  Nothing else includes this.
 */
#ifndef CW_KAFKA_IMPL_H
#define CW_KAFKA_IMPL_H

#include <stdint.h>
#include <librdkafka/rdkafka.h>

#include "common/kafka.h"

/* Buffered records get this long to leave when a client is freed. */
#define FREE_FLUSH_MS 10000
/* A commit or a consumer's close waits session.timeout.ms and this. */
#define GROUP_WAIT_SLACK_MS 5000
/* Tries, 50 ms apart, while librdkafka's queue is full. */
#define QUEUE_FULL_TRIES 20

/* One setting; 0, or -1 with the client's reason printed. */
int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val);
/* A librdkafka properties file into conf; 0 or -1 (printed). */
int kafka_conf_load_file(rd_kafka_conf_t *conf, const char *path);
uint64_t kafka_now_ms(void);
/* librdkafka's log and error callbacks, for every client. */
void kafka_on_log(const rd_kafka_t *rk, int level, const char *fac,
		  const char *buf);
void kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);
/* Settings every client shares (brokers, logging); NULL (printed). */
rd_kafka_conf_t *kafka_conf_common(const struct cw_kafka_conf *c);

/*
 * Make topic (kafka_topic.c) with the brokers' default partitions and
 * replication and the n settings in kv (key, value, key, value ...): 0
 * (made now, or by another client meanwhile), 1 (the brokers make no
 * topic on request: the embedded broker), -1 after a message.
 */
int kafka_topic_create(rd_kafka_t *rk, const char *topic,
		       const char *const *kv, int n, int timeout_ms);
/* Make topic by a metadata request that lets the brokers make it with
 * their defaults (auto.create.topics.enable); 0 or -1 (printed). */
int kafka_topic_auto_create(const struct cw_kafka_conf *c, const char *topic);

#endif
