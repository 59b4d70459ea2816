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
#include "correlator/paths.h"

/*
 * Fill t (initialised by the caller) from the windows in recs, after
 * cw_pairing_build(): nodes are processes ("comm[pid]", "@host" added
 * when with_host) and the addresses of ends nobody watched.  0 or -1.
 */
int cw_live_trace(const struct cw_pairing *p,
		  const struct cw_timing_record *recs, size_t n,
		  bool with_host, struct cw_msgtrace *t);

#endif
