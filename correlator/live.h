/* SPDX-License-Identifier: MIT */
/*
 * Live causal paths: timing windows (message starts per connection end)
 * joined to the pairing, as the message trace that paths.h infers from.
 */
#ifndef CW_LIVE_H
#define CW_LIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/record.h"
#include "correlator/correlator.h"
#include "paths/paths.h"

/*
 * Fill t (initialised by the caller) from the windows in recs, after
 * cw_pairing_graph(): nodes are processes ("comm[pid]", "@host" added
 * when with_host) and the addresses of ends nobody watched.  0 or -1.
 */
int cw_live_trace(const struct cw_pairing *p,
		  const struct cw_timing_record *recs, size_t n, bool with_host,
		  struct cw_msgtrace *t);

/* What cw_live_trace_windows() made of one window's records. */
struct cw_live_stats {
	size_t records;	   /* timing records given */
	size_t unknown;	   /* without their end's fields: skipped */
	size_t duplicates; /* the same record twice (a replay): dropped */
	size_t ends;	   /* connection ends (a split end's records joined) */
	size_t paired;	   /* ends whose other end was in the window too */
	size_t unpaired;   /* ends whose peer nobody watched, or was silent */
	size_t ambiguous;  /* ends with several candidate peers: unpaired */
	size_t messages;   /* observations in the trace */
	size_t trimmed;	   /* answers to requests from before the window */
};

/*
 * The same from one window's records alone, with no connection records:
 * the two ends of a connection are paired by their canonical 4-tuple and
 * protocol (each record carries its end's fields: has_conn), mirrored
 * (one's local endpoint is the other's remote) and of different roles
 * when both are known.  Records of one end split over several (same host
 * and cookie) are joined; repeated ones (same seq) dropped.  An end of
 * known role starts at its first request (client: sent, server: received),
 * so a window opening mid-exchange does not make the callee look like the
 * caller.  Nodes are as above; an unpaired end's peer is its remote
 * address.  st may be NULL.
 * 0, or -1 (out of memory, or no message at all).
 */
int cw_live_trace_windows(const struct cw_timing_record *recs, size_t n,
			  bool with_host, struct cw_msgtrace *t,
			  struct cw_live_stats *st);

#endif
