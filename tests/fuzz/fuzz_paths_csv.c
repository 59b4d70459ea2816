// fuzz-sources: common/log.c common/util.c paths/trace.c
// fuzz-sources: paths/spans.c
// fuzz-sources: paths/names.c paths/csv.c paths/span_rows.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the readers of causeway paths: the observation CSV
 * and the span trace (CSV or Jaeger JSON).  Any buffer is read or refused
 * with an error, never crashes or leaks; what is read keeps its invariants
 * (every message names known nodes, a node never talks to itself).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths/paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cw_msgtrace *t)
{
	size_t i;

	for (i = 0; i < t->n_msgs; i++)
		if (t->msgs[i].node >= t->n_names ||
		    t->msgs[i].peer >= t->n_names ||
		    t->msgs[i].node == t->msgs[i].peer ||
		    (i && t->msgs[i].ts_ns < t->msgs[i - 1].ts_ns))
			abort();
}

static void try_csv(const uint8_t *data, size_t size)
{
	struct cw_msgtrace t;
	FILE *fp = fmemopen((void *)data, size, "r");

	if (!fp)
		return;
	cw_msgtrace_init(&t);
	if (!cw_msgtrace_read_csv(&t, fp, "fuzz") &&
	    !cw_msgtrace_finish(&t, "fuzz"))
		check(&t);
	fclose(fp);
	cw_msgtrace_release(&t);
}

static void try_spans(const uint8_t *data, size_t size)
{
	struct cw_msgtrace t;
	struct cw_truth tr;
	FILE *fp = fmemopen((void *)data, size, "r");
	size_t i;

	if (!fp)
		return;
	cw_msgtrace_init(&t);
	cw_truth_init(&tr);
	if (!cw_spans_read(&t, &tr, fp, "fuzz") &&
	    !cw_msgtrace_finish(&t, "fuzz")) {
		check(&t);
		for (i = 0; i < tr.n_triples; i++)
			if (!tr.triples[i].n || tr.triples[i].k >= t.n_names)
				abort();
	}
	fclose(fp);
	cw_truth_release(&tr);
	cw_msgtrace_release(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	try_csv(data, size);
	try_spans(data, size);
	return 0;
}
