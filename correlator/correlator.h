/* SPDX-License-Identifier: MIT */
/*
 * The correlator: keeps the newest record of every connection end, pairs
 * the two ends of each connection on the canonical 4-tuple + protocol +
 * time overlap, and builds the traffic graph.  An end whose partner was not
 * watched gets an external node for the other side; nothing is dropped.
 */
#ifndef CW_CORRELATOR_H
#define CW_CORRELATOR_H

#include <stdint.h>

#include "common/htab.h"
#include "common/record.h"
#include "graph/graph.h"

struct cw_pairing_stats {
	uint64_t records;    /* records applied */
	uint64_t stale;	     /* older than what we had: ignored */
	uint64_t ends;	     /* distinct connection ends */
	uint64_t paired;     /* connections seen from both ends */
	uint64_t unpaired;   /* ends whose partner was not watched */
	uint64_t ambiguous;  /* ends that matched several candidates */
};

struct cw_pairing {
	struct cw_htab ends; /* end key -> struct cw_conn_record */
	long *partner;	     /* after build: each end's partner, or -1 */
	struct cw_pairing_stats st;
};

void cw_pairing_init(struct cw_pairing *p);
void cw_pairing_release(struct cw_pairing *p);
/* Apply one record: the newest per end wins (cumulative counters). */
int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r);
/* Pair all ends into g (which the caller has initialised). */
int cw_pairing_build(struct cw_pairing *p, struct cw_graph *g);
/* The TCP end (host, cookie), or -1; valid until the next add. */
long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie);
const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *p,
					    size_t i);

#endif
