// SPDX-License-Identifier: MIT
/*
 * The --since and --until of `graph --kafka` and `render --kafka`: a
 * duration back from now, @SECONDS, a UTC date and time; anything else
 * and a range out of order are refused.
 */
#include <stdint.h>
#include <stdio.h>

#include "correlator/pipeline.h"
#include "graph/graph.h"

#include "tests/unit/check.h"

#define NS 1000000000ULL

int main(void)
{
	const uint64_t now = 1764000000ULL * NS; /* 2025-11-24 16:00:00 UTC */
	uint64_t t = 0, s, u;

	CHECK(!cw_time_arg("--since", "1h", now, &t) && t == now - 3600 * NS);
	CHECK(!cw_time_arg("--since", "90m", now, &t) && t == now - 5400 * NS);
	CHECK(!cw_time_arg("--since", "@100", now, &t) && t == 100 * NS);
	CHECK(!cw_time_arg("--since", "2025-11-23 14:00", now, &t) &&
	      t == 1763906400ULL * NS);
	CHECK(!cw_time_arg("--until", "2025-11-23T15:00:30", now, &t) &&
	      t == 1763910030ULL * NS);
	fprintf(stderr, "(four refusals follow)\n");
	CHECK(cw_time_arg("--since", "yesterday", now, &t) == -1);
	CHECK(cw_time_arg("--since", "2025-11-23 14:00 UTC", now, &t) == -1);
	CHECK(cw_time_arg("--since", "@", now, &t) == -1);
	CHECK(cw_time_range("@200", "@100", &s, &u) == -1);
	CHECK(!cw_time_range("@100", "@200", &s, &u) && s == 100 * NS &&
	      u == 200 * NS);
	CHECK(!cw_time_range(NULL, NULL, &s, &u) && !s && !u);
	return failures ? 1 : 0;
}
