// SPDX-License-Identifier: MIT
/*
 * The critical path of a trace: from a span's end back, the child that
 * finished last, then the child that finished last before that one
 * started, and so on; each child on the path is followed the same way.
 * On a tie of ends the earlier child in tree order wins.  One rule for
 * `causeway traces --waterfall` and serve's trace view.
 */
#include <stdlib.h>

#include "common/log.h"
#include "traces/traces.h"

struct kid {
	uint64_t end;
	size_t pos;
};

/* Latest end first; on a tie the earlier in tree order. */
static int cmp_kid(const void *a, const void *b)
{
	const struct kid *x = a, *y = b;

	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * Mark the critical children of span v (v == n: of the whole trace, whose
 * children are the roots).  Walking the children by latest end, each one
 * that ended by `until` is on the path and moves `until` to its start: the
 * same choices as taking, again and again, the latest-ending child that
 * ended by `until`.
 */
static void critical_kids(struct cw_crit_span *sp, size_t n, size_t v,
			  const size_t *kid_of, const size_t *off,
			  struct kid *kids)
{
	size_t j, nk = off[v + 1] - off[v];
	uint64_t until = v < n ? sp[v].end_ns : UINT64_MAX;

	for (j = 0; j < nk; j++)
		kids[j] = (struct kid){sp[kid_of[off[v] + j]].end_ns,
				       kid_of[off[v] + j]};
	qsort(kids, nk, sizeof(*kids), cmp_kid);
	for (j = 0; j < nk; j++) {
		if (kids[j].end > until)
			continue;
		sp[kids[j].pos].critical = true;
		until = sp[kids[j].pos].start_ns;
	}
}

/* Tree order (parents before children) lets one pass mark a span before
 * its own children are looked at; children are grouped by parent first
 * (slot n: the roots). */
int cw_traces_critical_path(struct cw_crit_span *sp, size_t n)
{
	size_t *off = calloc(n + 3, sizeof(*off));
	size_t *kid_of = calloc(n + 1, sizeof(*kid_of));
	struct kid *kids = malloc((n + 1) * sizeof(*kids));
	size_t v, j, p;
	int ret = -1;

	if (!off || !kid_of || !kids)
		goto out;
	for (j = 0; j < n; j++) {
		sp[j].critical = false;
		off[(sp[j].parent < 0 ? n : (size_t)sp[j].parent) + 2]++;
	}
	for (v = 0; v <= n; v++)
		off[v + 2] += off[v + 1];
	for (j = 0; j < n; j++) {
		p = sp[j].parent < 0 ? n : (size_t)sp[j].parent;
		kid_of[off[p + 1]++] = j;
	}
	critical_kids(sp, n, n, kid_of, off, kids);
	for (v = 0; v < n; v++)
		if (sp[v].critical)
			critical_kids(sp, n, v, kid_of, off, kids);
	ret = 0;
out:
	free(off), free(kid_of), free(kids);
	return ret;
}
