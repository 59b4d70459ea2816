// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/htab.c
// fuzz-sources: common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: correlator/live.c paths/trace.c paths/graph.c paths/conv.c paths/nest.c
// fuzz-sources: paths/nest_calls.c paths/signif.c correlator/pair.c correlator/pair_match.c correlator/bucket.c graph/graph.c graph/export.c graph/dot_ids.c graph/igraph.c graph/resources.c
// fuzz-sources: paths/names.c paths/csv.c
// fuzz-sources: common/hist.c common/health.c correlator/health.c correlator/bucket_state.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the chain a correlator runs on timing windows from
 * Kafka: wire records ([u16 length][payload], repeated) are decoded, the
 * timing windows among them joined into a message trace
 * (cw_live_trace_windows), and both inference methods run on it with a
 * small visit budget.  Never a crash, a leak or a hang: hostile stamps,
 * duplicate ends, self-talk and spans too long for a transform included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "correlator/live.h"
#include "paths/paths.h"

#define MAX_RECS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void infer(const struct cw_msgtrace *t)
{
	struct cw_paths_opts o;
	struct cw_pathset ps;
	size_t i, k;

	cw_paths_opts_default(&o);
	o.bin_ns = 1000000; /* 1 ms: spans stay small transforms */
	o.max_delay_ns = 50000000;
	o.threads = 1;
	o.max_visits = 64;
	if (!cw_paths_convolution(t, &o, &ps)) {
		for (i = 0; i < ps.n_paths; i++)
			for (k = 0; k < ps.paths[i].n_hops; k++)
				if (ps.paths[i].hops[k].from >= t->n_names ||
				    ps.paths[i].hops[k].to >= t->n_names)
					abort();
		if (ps.n_visits > o.max_visits)
			abort();
		cw_pathset_release(&ps);
	}
	if (!cw_paths_nesting(t, &o, &ps)) {
		if (ps.n_visits > o.max_visits)
			abort();
		cw_pathset_release(&ps);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m[MAX_RECS];
	struct cw_timing_record recs[MAX_RECS];
	struct cw_msgtrace t;
	char err[128];
	size_t n = 0, len, i;
	int kind;

	while (size >= 2 && n < MAX_RECS) {
		len = data[0] | data[1] << 8;
		data += 2, size -= 2;
		if (len > size)
			len = size;
		kind = cw_wire_decode(data, len, &m[n], err, sizeof(err));
		if (kind == CW_WIRE_TIMING)
			recs[n] = m[n].timing, n++;
		else if (kind >= 0)
			cw_wire_msg_release(&m[n]);
		data += len, size -= len;
	}
	cw_msgtrace_init(&t);
	if (n && !cw_live_trace_windows(recs, n, n & 1, &t, NULL)) {
		for (i = 0; i < t.n_msgs; i++)
			if (t.msgs[i].node >= t.n_names ||
			    t.msgs[i].peer >= t.n_names)
				abort();
		infer(&t);
	}
	cw_msgtrace_release(&t);
	for (i = 0; i < n; i++)
		cw_wire_msg_release(&m[i]);
	return 0;
}
