/* SPDX-License-Identifier: MIT */
/*
 * The embedded Kafka broker (librdkafka's mock cluster, common/kafka.h) as
 * a process of its own (`causeway broker`), for one machine without a
 * Kafka installation and for outage drills: it prints its bootstrap
 * address on stdout once its topics exist, then runs until its duration
 * or SIGINT/SIGTERM; SIGUSR1 takes every broker down, SIGUSR2 brings them
 * back.
 *
 *	struct cw_broker b = {.n = 3};
 *
 *	if (cw_broker_topic(&b, "causeway.conns:12"))
 *		return 2;		// told
 *	return cw_broker_run(&b) ? 1 : 0;
 */
#ifndef CW_KAFKA_BROKER_H
#define CW_KAFKA_BROKER_H

#include <stddef.h>
#include <stdint.h>

#define CW_BROKER_MAX_TOPICS 16

struct cw_broker {
	uint64_t n;	   /* brokers, 1 to 9 */
	uint64_t duration; /* ns; 0: until a signal */
	struct {
		char name[250]; /* Kafka's longest name, 249, and a NUL */
		uint64_t partitions;
	} topic[CW_BROKER_MAX_TOPICS];
	size_t ntopics;
};

/* "NAME:N" into the next topic: a legal Kafka name, 1 to 1024
 * partitions, not given twice; 0 or -1 after a message. */
int cw_broker_topic(struct cw_broker *a, const char *arg);
/* 0 at the end, or -1 after a message. */
int cw_broker_run(struct cw_broker *a);

#endif
