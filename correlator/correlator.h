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
	uint64_t records;   /* records applied */
	uint64_t stale;	    /* older than what we had: ignored */
	uint64_t ends;	    /* distinct connection ends */
	uint64_t paired;    /* connections seen from both ends */
	uint64_t unpaired;  /* ends whose partner was not watched */
	uint64_t ambiguous; /* ends that matched several candidates */
};

/*
 * The ends are kept compactly: host names and node keys are interned, an
 * end keeps its newest record's numbers and its process packed in a log.
 * cw_pairing_end() puts a whole record back together.
 */
struct cw_pairing {
	struct cw_htab ends;   /* end key -> the end's newest numbers */
	struct cw_htab hosts;  /* host name -> id */
	struct cw_htab owners; /* what makes an end's node -> id */
	unsigned char *procs;  /* each end's process, packed */
	size_t procs_used, procs_size;
	long *partner; /* after build: each end's partner, or -1 */
	struct cw_pairing_stats st;
	/* cw_pairing_end()'s records, by end, until the next add */
	struct cw_conn_record **made;
	size_t nmade;
	struct cw_conn_record spare; /* when out of memory for those */
};

void cw_pairing_init(struct cw_pairing *p);
void cw_pairing_release(struct cw_pairing *p);
/* Room for about n ends, so the tables grow no more; 0 or -1 (ENOMEM). */
int cw_pairing_reserve(struct cw_pairing *p, size_t n);
/* Apply one record: the newest per end wins (cumulative counters). */
int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r);
/* Apply n records in order: the same, faster (lookups overlap). */
int cw_pairing_add_many(struct cw_pairing *p, const struct cw_conn_record *r,
			size_t n);
/* Pair all ends into g (which the caller has initialised). */
int cw_pairing_build(struct cw_pairing *p, struct cw_graph *g);
/* The TCP end (host, cookie), or -1; valid until the next add. */
long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie);
/* End i's newest record; the pointer is valid until the next add. */
const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *p,
					    size_t i);
/* The same, copied into *r. */
void cw_pairing_end_copy(const struct cw_pairing *p, size_t i,
			 struct cw_conn_record *r);

#endif
