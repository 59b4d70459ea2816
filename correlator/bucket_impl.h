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
};

/* A dormant end: the totals its next record is measured from. */
struct dormant_val {
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in;
	uint64_t first_ns, last_ns;
	uint32_t retrans, acct, flags;
	uint32_t carried; /* the gone_* counter it added to: 1 unpaired,
			     2 paired, 0 none (its partner did) */
};

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
