/* SPDX-License-Identifier: MIT */
/*
 * End-to-end lag of the records a correlator applied: from the record's
 * Kafka timestamp (the producer's clock when it was produced: CreateTime)
 * to the correlator's wall clock once it is in the member's graph (applied
 * to its pairing).  Counted in 1 ms bins up to 10 s, 100 ms bins up to
 * 10 min, and one bin beyond; a negative lag (clocks apart) counts as 0.
 * One tally per process (a `causeway correlate` runs one correlator):
 *
 *	cw_lag_add_batch(ts_ms, n);	// after applying n records
 *	cw_lag_json(w);			// "lag_ms": {records, p50, p99, max}
 *
 * Records with no timestamp (-1) are not counted.  Not thread-safe: the
 * correlator's reading thread calls it.
 */
#ifndef CW_CORRELATOR_LAG_H
#define CW_CORRELATOR_LAG_H

#include <stddef.h>
#include <stdint.h>
#include "common/jsonw.h"

void cw_lag_add_batch(const int64_t *ts_ms, size_t n);
/* The lag at quantile q (0 to 1) in ms: exact below 10 s, above it the
 * upper bound of its 100 ms bin; -1 with no record counted. */
double cw_lag_quantile(double q);
void cw_lag_json(struct cw_jsonw *w);

#endif
