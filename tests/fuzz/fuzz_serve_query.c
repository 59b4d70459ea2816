// fuzz-sources: serve/query.c common/util.c common/log.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the query strings of `causeway serve`'s API: any
 * bytes are parsed or refused with a reason, never crash; what is parsed
 * keeps its invariants (a known projection, a share in 0..1, a range in
 * order and at most CW_SERVE_RANGE_MAX long, values shorter than their
 * buffers).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fixed "now" (2026-11-23), so that a crash replays. */
#define NOW (1795478400ULL * 1000000000ULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_serve_query q;
	char err[256];
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	err[0] = '\0';
	if (cw_serve_query_parse(s, NOW, &q, err, sizeof(err))) {
		if (!err[0] || !memchr(err, '\0', sizeof(err)))
			abort();
	} else {
		if ((unsigned)q.by >= CW_SERVE_BY_N || q.min_share < 0 ||
		    q.min_share > 1 || q.has_since != q.has_until ||
		    !memchr(q.node, '\0', sizeof(q.node)) ||
		    !memchr(q.run, '\0', sizeof(q.run)))
			abort();
		if (q.has_since &&
		    (q.since_ns >= q.until_ns ||
		     q.until_ns - q.since_ns > CW_SERVE_RANGE_MAX ||
		     q.since_ns < CW_SERVE_TIME_FLOOR))
			abort();
	}
	free(s);
	return 0;
}
