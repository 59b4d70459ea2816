/* SPDX-License-Identifier: MIT */
/*
 * One member of a correlator group, assembled (`causeway correlate`): its
 * topics named from the prefix, the correlator (correlator/correlator.h)
 * opened with checkpoints in P.state and buckets to P.edges, the consumer
 * of P.conns (and P.timing), the snapshots (correlator/snapshot.h) hooked
 * in, run until the duration, idleness or a signal, and at the end the
 * graph and counters (correlator/report.h).
 *
 *	struct cw_member m = {.kc = {.brokers = "kafka1:9092"},
 *			      .every_ns = 10 * NSEC_PER_SEC,
 *			      .write = write_files};
 *	cw_member_defaults(&m);	// or fill m.o by hand
 *	return cw_member_run(&m) ? 1 : 0;
 */
#ifndef CW_CORRELATOR_MEMBER_H
#define CW_CORRELATOR_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/kafka.h"
#include "correlator/correlator.h"
#include "correlator/snapshot.h"

struct cw_member {
	struct cw_kafka_conf kc;
	struct cw_correlator_opts o; /* o.out: the snapshots' folder */
	bool no_checkpoints;	     /* nothing in P.state, no P.edges */
	uint64_t duration_ns, idle_ns, every_ns;
	bool json; /* the end's graph as JSON, else a table */
	cw_snapshot_write_fn write;
	void *write_arg;
};

/* The correlator's options' defaults (paths on, buckets, view). */
void cw_member_defaults(struct cw_member *m);
/* 0, or -1 after a message. */
int cw_member_run(struct cw_member *m);

#endif
