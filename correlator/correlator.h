/* SPDX-License-Identifier: MIT */
/*
 * The correlator: keeps the newest record of every connection end and pairs
 * the two ends of each connection on the canonical 4-tuple + protocol +
 * time overlap.  What it found is exported for the graph component (which
 * builds nodes and edges from it, graph/graph.h) and for live paths: each
 * end's partner (or none), the ends grouped by connection tuple, and each
 * end's numbers and owner.  An end whose partner was not watched is kept
 * alone; nothing is dropped.
 *
 *	struct cw_pairing p;
 *
 *	cw_pairing_init(&p);
 *	cw_pairing_add_many(&p, recs, n);	// as records come
 *	if (cw_pairing_pair(&p))		// the partner map
 *		return cw_error("out of memory pairing connection ends");
 *	for (i = 0; i < p.st.ends; i++)
 *		if (p.partner[i] >= 0)
 *			...			// i and p.partner[i] pair
 *	cw_pairing_release(&p);
 *
 * The service around it (Kafka, timing windows, the commit rule) is in
 * correlator/service.h.
 */
#ifndef CW_CORRELATOR_H
#define CW_CORRELATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/htab.h"
#include "common/record.h"

struct cw_pairing_stats {
	uint64_t records;   /* records applied */
	uint64_t stale;	    /* older than what we had: ignored */
	uint64_t ends;	    /* distinct connection ends */
	uint64_t paired;    /* connections seen from both ends */
	uint64_t unpaired;  /* ends whose partner was not watched */
	uint64_t ambiguous; /* ends that matched several candidates */
};

/*
 * Which end a record is about: host, socket cookie and, for UDP, the remote
 * address and the flow's first_ns (a flow re-created later is another
 * end).  No padding: hashed as it is.
 */
struct cw_end_id {
	char host[CW_HOST_LEN];
	uint64_t cookie;
	uint64_t generation;  /* UDP: first_ns */
	struct cw_addr raddr; /* UDP */
	uint8_t protocol;
	uint16_t rport; /* UDP */
	uint8_t pad[4];
};

/* r's end, zero-padded. */
void cw_end_id_of(const struct cw_conn_record *r, struct cw_end_id *id);

/* What is kept of an end's newest record besides its key and process. */
struct cw_end {
	uint64_t bytes_out, bytes_in;
	uint64_t calls_out, calls_in;
	uint64_t msgs_out, msgs_in;
	uint64_t first_ns, last_ns;
	uint64_t seq;
	uint64_t proc_at; /* its process in the pairing's log */
	uint32_t proc_room;
	uint32_t
		owner; /* what makes its graph node: 0..cw_pairing_owners()-1 */
	uint32_t flags;
	uint32_t retrans, srtt_us;
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t protocol, role;
};

/* Is e the client end?  The agent says so; else the higher port is. */
bool cw_end_is_client(const struct cw_end *e);

/* Who owns an end: the parts its graph node is made of. */
struct cw_end_owner {
	const char *host; /* the pairing's; valid until the next add */
	uint32_t netns;
	bool unknown; /* CW_REC_NO_OWNER: a netns, no process */
	struct cw_process proc;
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
	struct cw_pairing_stats st;
	/*
	 * What cw_pairing_pair() found, valid until the next add: each end's
	 * partner (or -1); the ends grouped by connection tuple, groups in
	 * the order of their first end (order[group_end[k-1]..group_end[k]) is
	 * group k, ends in index order within it).
	 */
	long *partner;
	uint32_t *order;
	uint32_t *group_end;
	size_t ngroups;
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
/*
 * Pair every end: within one tuple each end takes the complementary end
 * whose lifetime overlaps its own, preferring opposite roles and then the
 * nearest start.  Fills partner, order, group_end and the stats' ends,
 * paired, unpaired and ambiguous.  0 or -1 (out of memory; no message).
 */
int cw_pairing_pair(struct cw_pairing *p);
/* The TCP end (host, cookie), or -1; valid until the next add. */
long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie);
/* The end *id, or -1; valid until the next add. */
long cw_pairing_find_id(const struct cw_pairing *p, const struct cw_end_id *id);
/* End i's numbers (i < st.ends); valid until the next add. */
const struct cw_end *cw_pairing_numbers(const struct cw_pairing *p, size_t i);
/* How many owners (distinct graph nodes of watched ends) there are. */
size_t cw_pairing_owners(const struct cw_pairing *p);
/* End i's owner into *o. */
void cw_pairing_owner(const struct cw_pairing *p, size_t i,
		      struct cw_end_owner *o);
/* End i's newest record; the pointer is valid until the next add. */
const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *p,
					    size_t i);
/* The same, copied into *r. */
void cw_pairing_end_copy(const struct cw_pairing *p, size_t i,
			 struct cw_conn_record *r);

#endif
