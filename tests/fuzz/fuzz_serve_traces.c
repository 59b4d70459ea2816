// fuzz-sources: serve/traces.c common/log.c common/util.c
// fuzz-sources: traces/critical.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the OTLP/JSON reader of `causeway serve --traces`:
 * any bytes are read or refused with a reason, never crash or leak; what is
 * read keeps its invariants: the traces cover every span once, slowest
 * first; each trace's spans share its id and are in tree order (a parent
 * before its children, depths that follow); times within the trace; the
 * critical path starts at a root and runs down from critical parents; and
 * each trace is found by its id.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "serve/tset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_trace(const struct serve_tset *set, size_t t)
{
	const struct serve_trace *tr = &set->traces[t];
	const struct serve_tspan *sp = &set->spans[tr->first];
	size_t i, crit = 0;

	if (!tr->n || tr->first + tr->n > set->nspans ||
	    serve_tset_find(set, tr->id) != (ssize_t)t)
		abort();
	for (i = 0; i < tr->n; i++) {
		const struct serve_tspan *s = &sp[i];

		if (strcmp(s->trace_id, tr->id) || s->end_ns < s->start_ns ||
		    s->start_ns < tr->start_ns || s->end_ns > tr->end_ns ||
		    s->service >= set->nservices || s->method >= SERVE_LINK_N ||
		    !(s->conf == -1 || (s->conf >= 0 && s->conf <= 1)) ||
		    s->kind > 5 || !s->name)
			abort();
		if (s->parent < 0 ? s->depth != 0
				  : (size_t)s->parent >= i ||
					    s->depth != sp[s->parent].depth + 1)
			abort();
		if (s->critical && s->parent >= 0 && !sp[s->parent].critical)
			abort();
		crit += s->critical;
	}
	/* Tree order starts at a root; some root ends last: critical. */
	if (sp[0].parent != -1 || !crit)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_tset set;
	char err[256];
	size_t i, seen = 0;

	cw_log_level = CW_LOG_ERROR;
	err[0] = '\0';
	if (serve_tset_parse(&set, (const char *)data, size, err,
			     sizeof(err))) {
		if (!err[0] || set.nspans || set.ntraces)
			abort();
		return 0;
	}
	for (i = 0; i < set.ntraces; i++) {
		const struct serve_trace *tr = &set.traces[i];

		if (i && tr->end_ns - tr->start_ns >
				 set.traces[i - 1].end_ns -
					 set.traces[i - 1].start_ns)
			abort();
		check_trace(&set, i);
		seen += tr->n;
	}
	if (seen != set.nspans)
		abort();
	serve_tset_release(&set);
	return 0;
}
