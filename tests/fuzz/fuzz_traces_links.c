// fuzz-sources: common/log.c common/util.c traces/read.c traces/spans.c
// fuzz-sources: traces/build.c traces/infer.c traces/contest.c traces/window.c traces/chain.c traces/hungarian.c
// fuzz-sources: traces/out.c traces/score.c traces/pcap.c common/pcap.c
// fuzz-sources: common/htab.c traces/links.c
// fuzz-sources: paths/names.c paths/csv.c paths/span_rows.c traces/critical.c common/jsonw.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the truth-links reader of causeway traces: any
 * buffer, read against a small fixed capture-like input (a client, a web
 * node that calls a db, two requests on one kept-alive connection), is
 * read or refused with an error, never crashes or leaks; what it sets
 * holds: a call's true request is a request at the call's own node, and
 * scoring runs on it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "traces/traces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void msg(struct cw_traces *t, uint64_t at, uint32_t from, uint32_t to,
		uint32_t conn, int from_client)
{
	struct cw_msg m = {.start_ns = at, .end_ns = at + 10, .conn = conn};

	m.node = from, m.peer = to, m.dir = CW_MSG_OUT;
	m.role = from_client ? CW_ROLE_CONNECTED : CW_ROLE_ACCEPTED;
	cw_traces_add_msg(t, &m);
	m.node = to, m.peer = from, m.dir = CW_MSG_IN;
	m.role = from_client ? CW_ROLE_ACCEPTED : CW_ROLE_CONNECTED;
	cw_traces_add_msg(t, &m);
}

static int setup(struct cw_traces *t)
{
	int c = cw_traces_node(t, "10.0.0.1"),
	    w = cw_traces_node(t, "10.0.0.2"),
	    d = cw_traces_node(t, "10.0.0.3");
	uint64_t k;

	if (c < 0 || w < 0 || d < 0 ||
	    cw_traces_set_ends(t, 1, (uint32_t)c, 40000, (uint32_t)w, 80) ||
	    cw_traces_set_ends(t, 2, (uint32_t)w, 50000, (uint32_t)d, 6379))
		return -1;
	for (k = 0; k < 2; k++) {
		uint64_t at = 1000000 + k * 1000000;

		msg(t, at, (uint32_t)c, (uint32_t)w, 1, 1);
		msg(t, at + 200000, (uint32_t)w, (uint32_t)d, 2, 1);
		msg(t, at + 400000, (uint32_t)d, (uint32_t)w, 2, 0);
		msg(t, at + 600000, (uint32_t)w, (uint32_t)c, 1, 0);
	}
	return cw_traces_build(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_traces t;
	struct cw_traces_opts o;
	struct cw_traces_eval ev;
	FILE *fp;
	size_t i;

	if (size > 1 << 16)
		return 0;
	cw_traces_init(&t);
	fp = fmemopen((void *)data, size, "r");
	if (fp && !setup(&t) && !cw_traces_read_truth_links(&t, fp, "fuzz")) {
		for (i = 0; i < t.n_spans; i++) {
			const struct cw_tspan *x = &t.spans[i];

			if (x->truth >= 0 &&
			    (x->role != CW_ROLE_CONNECTED ||
			     t.spans[x->truth].role != CW_ROLE_ACCEPTED ||
			     t.spans[x->truth].node != x->node))
				abort();
		}
		cw_traces_opts_default(&o);
		if (!cw_traces_infer(&t, &o) && !cw_traces_evaluate(&t, &ev))
			cw_traces_eval_release(&ev);
	}
	if (fp)
		fclose(fp);
	cw_traces_release(&t);
	return 0;
}
