// fuzz-sources: common/log.c common/util.c traces/read.c traces/spans.c
// fuzz-sources: traces/build.c traces/infer.c traces/contest.c traces/window.c traces/chain.c traces/hungarian.c
// fuzz-sources: traces/out.c traces/score.c traces/pcap.c common/pcap.c
// fuzz-sources: common/htab.c
// fuzz-sources: paths/names.c paths/csv.c paths/span_rows.c traces/critical.c common/jsonw.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the readers of causeway traces: the message CSV and
 * the span CSV and the pcap reader (chosen by the first byte).  Any buffer is
 * read or refused with an error, never crashes or leaks; what is read goes on
 * through building, linking, scoring and OTLP output, whose invariants hold: a
 * call's request is at its own node and was open when the call began.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "traces/traces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cw_traces *t)
{
	size_t i;

	for (i = 0; i < t->n_spans; i++) {
		const struct cw_tspan *x = &t->spans[i], *r;

		if (x->parent < 0)
			continue;
		r = &t->spans[x->parent];
		if (r->node != x->node || r->role != CW_ROLE_ACCEPTED ||
		    r->start_ns > x->start_ns || r->end_ns < x->start_ns ||
		    !(x->conf >= 0 && x->conf <= 1.0f))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_traces t;
	struct cw_traces_opts o;
	struct cw_traces_eval ev;
	FILE *fp, *out;
	int rc;

	if (size < 1 || size > 1 << 16)
		return 0;
	cw_traces_init(&t);
	if (data[0] & 2) {
		char path[] = "/tmp/fuzz-traces-XXXXXX";
		int fd = mkstemp(path);

		if (fd < 0)
			return 0;
		rc = write(fd, data + 1, size - 1) != (ssize_t)(size - 1);
		close(fd);
		if (!rc)
			rc = cw_traces_read_pcap(&t, path);
		unlink(path);
	} else {
		fp = fmemopen((void *)(data + 1), size - 1, "r");
		if (!fp)
			return 0;
		rc = data[0] & 1 ? cw_traces_read_spans(&t, fp, "fuzz")
				 : cw_traces_read_csv(&t, fp, "fuzz");
		fclose(fp);
	}
	cw_traces_opts_default(&o);
	o.window = 1 + data[0] % 7;
	if (!rc && !cw_traces_build(&t) && !cw_traces_infer(&t, &o)) {
		check(&t);
		if (!cw_traces_evaluate(&t, &ev))
			cw_traces_eval_release(&ev);
		out = fopen("/dev/null", "w");
		if (out) {
			cw_traces_write_otlp(&t, out);
			cw_traces_write_jaeger(&t, out);
			fclose(out);
		}
	}
	cw_traces_release(&t);
	return 0;
}
