/* SPDX-License-Identifier: MIT */
/*
 * What the time buckets' tables hold (correlator/bucket.c), shared with
 * their checkpoints (correlator/bucket_state.c).  Keys are hashed as they
 * are: no padding left unset.
 */
#ifndef CW_BUCKET_IMPL_H
#define CW_BUCKET_IMPL_H

#include <stdint.h>

#include "correlator/correlator.h"
#include "correlator/pair_impl.h"
#include "graph/graph.h"

/* An edge in a bucket (0: all sealed buckets); nodes are ids in nodes. */
struct edge_key {
	uint64_t bucket;
	uint32_t client, server;
	uint8_t protocol;
	uint8_t pad[7];
};

struct pend_key {
	uint64_t bucket;
	struct end_key ek;
};

/* What an end did in a bucket: differences, modulo 2^64. */
struct pend_val {
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in, retrans;
	uint64_t last_ns;
	/* Edge health: resets and untimed exchanges added; the connect
	 * time and failure when first told in this bucket; has_hists: the
	 * histograms' gain is in bk.pend_hists under the same key. */
	uint64_t resets_in, resets_out, xchg_pipelined;
	uint32_t connect_us;
	uint8_t fail, has_hists;
	uint16_t pad;
};

/* A dormant end: the totals its next record is measured from. */
struct dormant_val {
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in;
	uint64_t first_ns, last_ns;
	uint32_t retrans, acct, flags;
	uint32_t carried; /* the gone_* counter it added to: 1 unpaired,
			     2 paired, 0 none (its partner did) */
	/* Edge health totals (its histograms stay in p->hists). */
	uint32_t connect_us, resets_in, resets_out;
	uint8_t fail, has_hists;
	uint16_t pad;
	uint64_t xchg_pipelined;
};

/* ---- edge health (correlator/health.c) ---------------------------------- */

/* Does the record carry any histogram? */
bool cw_rec_has_hists(const struct cw_conn_record *r);
/* The record's health into its end (has_hists is kept once set). */
void cw_end_health_set(struct cw_end *e, const struct cw_conn_record *r);
/* The end's histograms (NULL none), kept from r, into r, dropped. */
const struct cw_end_hists *cw_hists_get(const struct cw_pairing *p,
					const struct end_key *k);
int cw_hists_keep(struct cw_pairing *p, const struct end_key *k,
		  const struct cw_conn_record *r);
void cw_hists_put(const struct cw_pairing *p, const struct end_key *k,
		  struct cw_conn_record *r);
void cw_hists_drop(struct cw_pairing *p, const struct end_key *k);
/*
 * The health of record r of end e (prev: its numbers before; before:
 * its histograms before, NULL none) added to its bucket's delta v, the
 * histograms' gain to bk.pend_hists under pk.  0 or -1 (no memory).
 */
int cw_health_note(struct cw_pairing *p, const struct pend_key *pk,
		   struct pend_val *v, const struct cw_end *e,
		   const struct cw_end *prev, const struct cw_conn_record *r,
		   const struct cw_end_hists *before);
/* A delta's health into its edge's total (h: its gain, NULL none). */
void cw_health_fold(struct cw_edge_total *t, const struct pend_val *d,
		    const struct cw_end_hists *h, bool client, bool paired);
/* The pend entry pk is gone: its histograms too. */
void cw_health_pend_drop(struct cw_buckets *b, const struct pend_key *pk);
/* A delta's health to a checkpoint's EndDelta, and back (adding). */
void cw_health_delta_out(const struct cw_buckets *b, const struct pend_key *pk,
			 const struct pend_val *v, struct cw_end_delta *d);
int cw_health_delta_in(struct cw_buckets *b, const struct pend_key *pk,
		       struct pend_val *v, const struct cw_end_delta *d);
/* A dormant end's health from its end, to its record, from its record. */
void cw_health_dormant(struct dormant_val *d, const struct cw_end *e);
void cw_health_dormant_out(const struct dormant_val *d,
			   struct cw_conn_record *r);
void cw_health_dormant_in(struct dormant_val *d,
			  const struct cw_conn_record *r);

/*
 * Forget the nodes no edge names any more, once they are over half of
 * them (correlator/bucket_state.c).  marked: from cw_buckets_node_marks(),
 * the nodes of the total's edges already marked 0 (the caller walked
 * it), or NULL (marked here).  0 or -1.
 */
int cw_buckets_compact_nodes(struct cw_buckets *b, uint32_t *marked);
/* One mark per node, all ones (unnamed); NULL when out of memory. */
uint32_t *cw_buckets_node_marks(const struct cw_buckets *b);

static inline uint64_t bucket_of(const struct cw_buckets *b, uint64_t ns)
{
	return ns / b->s.width_ns * b->s.width_ns;
}

/* Where sealing may reach now: buckets starting before it. */
static inline uint64_t seal_point(const struct cw_buckets *b)
{
	if (b->s.watermark_ns <= b->s.lateness_ns)
		return 0;
	return bucket_of(b, b->s.watermark_ns - b->s.lateness_ns);
}

#endif
