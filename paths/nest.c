// SPDX-License-Identifier: MIT
/*
 * The nesting method, for RPC traffic (Aguilera et al., SOSP 2003): a call
 * into j and j's reply bracket an interval on j's clock; a call j makes to
 * k whose reply comes back inside it is nested in it.
 *
 *  1. Calls are paired with their replies per connection when the trace
 *     names connections (a connection carries its calls one after another,
 *     or pipelines them first in, first out), else first in, first out
 *     over everything between the two nodes.  The caller's view of a call
 *     is linked to the callee's view by order on the same connection.
 *  2. At each node j, every call j makes lists the calls into j that
 *     enclose it: its candidate parents.
 *  3. A triple i -> j -> k is kept when more of j's calls to k fall
 *     inside the time j is busy with calls from i than when those calls
 *     are moved in time (binomial tail, widened by how much the moved
 *     counts spread; Bonferroni over the pairs at j).
 *  4. Each call j makes is then given to one parent among the kept
 *     triples' candidates, and counted once: the candidate with the fewest
 *     children of the same kind so far, then the one that came in first;
 *     the calls with the fewest candidates choose first.  Under
 *     concurrency several calls into j overlap, and this keeps one
 *     request's calls from all landing on whichever overlapping request
 *     started last.
 *  5. Paths follow the parent links down from each root; a hop's delay is
 *     the time at j from its parent call's arrival to its own departure.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/nest.h"

/* ---- candidates --------------------------------------------------------- */

static int served_cmp(const void *a, const void *b)
{
	const struct served *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Calls served by node j, as intervals on j's clock, sorted by start. */
static struct served *served_by(const struct nest_ctx *c, uint32_t j, size_t *n)
{
	size_t r, k, m = 0, cnt = 0;
	struct served *sv;

	for (r = 0; r < c->n_rel; r++)
		if (c->rel[r].b == j)
			cnt += c->rel[r].n_srv;
	sv = malloc((cnt + 1) * sizeof(*sv));
	if (!sv)
		return NULL;
	for (r = 0; r < c->n_rel; r++)
		for (k = 0; c->rel[r].b == j && k < c->rel[r].n_srv; k++)
			sv[m++] = (struct served){c->rel[r].srv[k].s,
						  c->rel[r].srv[k].e,
						  (uint32_t)r, (uint32_t)k};
	qsort(sv, m, sizeof(*sv), served_cmp);
	*n = m;
	return sv;
}

static int pool_add(struct nest_ctx *c, uint32_t rel, uint32_t idx)
{
	if (CW_GROW(c->pool, c->cap_pool, c->n_pool + 1, 1024))
		return cw_error("out of memory for candidate calls");
	c->pool[c->n_pool++] = (struct cand){rel, idx};
	return 0;
}

/* For each call r makes, the calls into r->a that enclose it. */
static int find_candidates(struct nest_ctx *c, struct relation *r,
			   const struct served *sv, size_t n)
{
	size_t k, lo, hi, mid, scanned;

	for (k = 0; k < r->n_cli; k++) {
		const struct ival *x = &r->cli[k];

		r->cand_first[k] = c->n_pool;
		for (lo = 0, hi = n; lo < hi;) {
			mid = (lo + hi) / 2;
			if (sv[mid].s <= x->s)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (scanned = 0; lo-- > 0 && scanned++ < SCAN_LIMIT &&
				  r->cand_n[k] < MAX_CAND;) {
			if (x->s - sv[lo].s > c->o->max_delay_ns)
				break;
			if (sv[lo].e < x->e)
				continue;
			if (pool_add(c, sv[lo].rel, sv[lo].idx))
				return -1;
			r->cand_n[k]++;
		}
	}
	return 0;
}

/* ---- significance ------------------------------------------------------- */

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* log P(X >= h) for X ~ Binomial(n, q). */
static double log_binom_tail(double h, double n, double q)
{
	double lt, term = 1, sum = 1, k;

	if (h <= n * q)
		return 0;
	if (q <= 0)
		return -INFINITY;
	if (q >= 1)
		return 0;
	lt = lgamma(n + 1) - lgamma(h + 1) - lgamma(n - h + 1) + h * log(q) +
	     (n - h) * log1p(-q);
	for (k = h; k < n && term > 1e-15 * sum; k++) {
		term *= (n - k) / (k + 1) * q / (1 - q);
		sum += term;
	}
	return lt + log(sum);
}

/*
 * The union of p's calls into j (sorted by start in sv): stretches of time
 * when j is busy with p.  It does not depend on how calls were paired with
 * replies (any pairing of the same arrivals and departures covers the
 * same time), so whether a call j makes falls inside it is judged the same
 * with or without connections.
 */
struct cover {
	uint64_t *s, *e; /* the stretches, in time order */
	size_t n;
	double p90; /* of p's calls' own lengths */
};

static void cover_free(struct cover *cv)
{
	free(cv->s);
	free(cv->e);
}

static int cover_build(struct cover *cv, const struct served *sv, size_t n,
		       uint32_t p)
{
	double *len = malloc((n + 1) * sizeof(*len));
	size_t k, m = 0, n_calls = 0;

	cv->s = malloc((n + 1) * sizeof(*cv->s));
	cv->e = malloc((n + 1) * sizeof(*cv->e));
	if (!cv->s || !cv->e || !len) {
		free(len);
		return cw_error("out of memory");
	}
	for (k = 0; k < n; k++) {
		if (sv[k].rel != p)
			continue;
		len[n_calls++] = (double)(sv[k].e - sv[k].s);
		if (m && sv[k].s <= cv->e[m - 1]) {
			if (sv[k].e > cv->e[m - 1])
				cv->e[m - 1] = sv[k].e;
			continue;
		}
		cv->s[m] = sv[k].s;
		cv->e[m++] = sv[k].e;
	}
	qsort(len, n_calls, sizeof(*len), dcmp);
	cv->p90 = cw_quantile(len, n_calls, 0.9);
	cv->n = m;
	free(len);
	return 0;
}

static bool cover_holds(const struct cover *cv, const struct ival *x)
{
	size_t lo = 0, hi = cv->n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (cv->s[mid] <= x->s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && cv->e[lo - 1] >= x->e;
}

static int add_triple(struct nest_ctx *c, size_t p, size_t r, double score)
{
	if (CW_GROW(c->tri, c->cap_tri, c->n_tri + 1, 64))
		return cw_error("out of memory for triples");
	c->tri[c->n_tri++] = (struct triple){p, r, score};
	c->rel[r].sig[p] = 1;
	return 0;
}

/*
 * How many of r's calls fall inside the cover with every call moved by
 * `shift` around j's window [t0, t0 + span) (a call that would wrap counts
 * as outside).
 */
static double shifted_hits(const struct relation *r, const struct cover *cv,
			   uint64_t t0, uint64_t span, uint64_t shift)
{
	struct ival x;
	double h = 0;
	size_t k;

	for (k = 0; k < r->n_cli; k++) {
		x.s = t0 + (r->cli[k].s - t0 + shift) % span;
		x.e = x.s + (r->cli[k].e - r->cli[k].s);
		h += cover_holds(cv, &x);
	}
	return h;
}

/*
 * Is (p, r) kept: are r's calls inside p's cover more often than chance?
 * Chance is what the same calls give when moved in time, by NULL_SHIFTS
 * shifts of 10 to 40 times a long call of p (p's 90th percentile), both
 * ways: far enough to break any causal link, near enough that the load on
 * j stays what it was (traffic whose rate drifts makes cover and calls
 * drift together, which a global null would take for nesting).  Calls
 * that overlap share the fate of one stretch of cover, so the hits are
 * not independent trials: the binomial tail is taken over fewer trials,
 * by the factor the shifted counts spread wider than binomial.
 */
#define NULL_SHIFTS 32

static int judge_pair(struct nest_ctx *c, size_t p, size_t r,
		      const struct cover *cv, uint64_t t0, uint64_t span,
		      double log_m)
{
	const struct relation *rr = &c->rel[r];
	double hits = 0, n = (double)rr->n_cli, h[NULL_SHIFTS], mean = 0;
	double var = 0, q, deff, lp, unit = cv->p90 > 0 ? cv->p90 : 1;
	uint64_t shift;
	size_t k;

	for (k = 0; k < rr->n_cli; k++)
		hits += cover_holds(cv, &rr->cli[k]);
	c->n_judged++;
	if (!hits)
		return 0;
	for (k = 0; k < NULL_SHIFTS; k++) {
		shift = (uint64_t)(unit *
				   (10 + 30 * (double)(k / 2) /
						 (NULL_SHIFTS / 2 - 1))) %
			span;
		if (k % 2)
			shift = span - shift;
		h[k] = shifted_hits(rr, cv, t0, span, shift);
		mean += h[k] / NULL_SHIFTS;
	}
	for (k = 0; k < NULL_SHIFTS; k++)
		var += (h[k] - mean) * (h[k] - mean) / (NULL_SHIFTS - 1);
	/* no shifted call inside says only that chance is below 1 in all */
	q = (mean * NULL_SHIFTS >= 1 ? mean : 1.0 / NULL_SHIFTS) / n;
	deff = q > 0 && q < 1 ? var / (n * q * (1 - q)) : 1;
	deff = deff > 1 ? deff : 1;
	lp = log_binom_tail(hits / deff, n / deff, q) + log_m;
	cw_debug("nesting: %s -> %s -> %s: %.0f of %.0f calls inside, chance "
		 "%.3f, spread x%.2f, log10 p %.1f",
		 c->t->names[c->rel[p].a], c->t->names[rr->a],
		 c->t->names[rr->b], hits, n, q, sqrt(deff), lp / M_LN10);
	if (lp >= log(c->o->alpha))
		return 0;
	return add_triple(c, p, r, lp < -690 ? 300 : -lp / M_LN10);
}

/* ---- giving each call one parent ---------------------------------------- */

struct order {
	uint32_t n; /* candidates allowed */
	uint64_t s;
	size_t k;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

/*
 * Each call, those with the fewest candidates first, goes to the candidate
 * with the fewest children of this kind so far, then the one that came in
 * first (first come, first served: when requests overlap, the oldest one
 * still open and not yet given such a call is the one being served).
 * The tightest enclosing call was tried instead and was worse: two
 * requests that overlap enclose each other's calls equally tightly.
 */
static int assign_parents(struct nest_ctx *c, struct relation *r)
{
	struct order *ord = malloc((r->n_cli + 1) * sizeof(*ord));
	size_t k, x, i, best;
	uint32_t bk = 0, kids;
	uint64_t bs = 0, start;

	if (!ord)
		return cw_error("out of memory");
	for (i = 0; i < c->n_rel; i++)
		if (c->rel[i].b == r->a)
			memset(c->rel[i].kids, 0,
			       c->rel[i].n_srv * sizeof(*c->rel[i].kids));
	for (k = 0; k < r->n_cli; k++) {
		ord[k] = (struct order){0, r->cli[k].s, k};
		r->par_rel[k] = -1;
		for (x = 0; x < r->cand_n[k]; x++)
			ord[k].n += r->sig[c->pool[r->cand_first[k] + x].rel];
	}
	qsort(ord, r->n_cli, sizeof(*ord), order_cmp);
	for (i = 0; i < r->n_cli; i++) {
		k = ord[i].k;
		best = SIZE_MAX;
		for (x = 0; x < r->cand_n[k]; x++) {
			const struct cand *cd = &c->pool[r->cand_first[k] + x];
			const struct relation *p = &c->rel[cd->rel];

			if (!r->sig[cd->rel])
				continue;
			kids = p->kids[cd->idx];
			start = p->srv[cd->idx].s;
			if (best == SIZE_MAX || kids < bk ||
			    (kids == bk && start < bs)) {
				best = x;
				bk = kids;
				bs = start;
			}
		}
		if (best == SIZE_MAX)
			continue;
		r->par_rel[k] = (long)c->pool[r->cand_first[k] + best].rel;
		r->par_idx[k] = c->pool[r->cand_first[k] + best].idx;
		c->rel[r->par_rel[k]].kids[r->par_idx[k]]++;
	}
	free(ord);
	return 0;
}

/* Candidates, judgement and parents at node j. */
static int nest_node(struct nest_ctx *c, uint32_t j)
{
	struct cover *cv = NULL;
	struct served *sv;
	size_t n, r, p, in = 0, out = 0;
	uint64_t t0 = c->ix.node_t0[j], span;
	double log_m;
	int err = 0;

	for (r = 0; r < c->n_rel; r++) {
		in += c->rel[r].b == j;
		out += c->rel[r].a == j;
	}
	if (!out)
		return 0;
	sv = served_by(c, j, &n);
	cv = calloc(c->n_rel + 1, sizeof(*cv));
	if (!sv || !cv) {
		free(sv);
		free(cv);
		return cw_error("out of memory");
	}
	span = c->ix.node_t1[j] - t0 + 1;
	/* Bonferroni over the pairs examined at this node. */
	log_m = log((double)(in ? in * out : 1));
	for (p = 0; !err && p < c->n_rel; p++)
		if (c->rel[p].b == j)
			err = cover_build(&cv[p], sv, n, (uint32_t)p);
	for (r = 0; !err && r < c->n_rel; r++) {
		if (c->rel[r].a != j || !c->rel[r].n_cli)
			continue;
		err = find_candidates(c, &c->rel[r], sv, n);
		for (p = 0; !err && p < c->n_rel; p++)
			if (c->rel[p].b == j)
				err = judge_pair(c, p, r, &cv[p], t0, span,
						 log_m);
		if (!err)
			err = assign_parents(c, &c->rel[r]);
	}
	for (p = 0; p < c->n_rel; p++)
		cover_free(&cv[p]);
	free(cv);
	free(sv);
	return err;
}

/* ---- paths -------------------------------------------------------------- */

struct nest_walk {
	struct nest_ctx *c;
	struct cw_path *path;
	uint32_t stack[64];
	int depth;
};

static int nest_visit(struct nest_walk *w, int hop, size_t p,
		      const uint8_t *in_set);

static void hop_delays(struct cw_hop *h, double *d, size_t n)
{
	qsort(d, n, sizeof(*d), dcmp);
	h->messages = n;
	h->p10_us = cw_quantile(d, n, 0.1);
	h->median_us = cw_quantile(d, n, 0.5);
	h->p90_us = cw_quantile(d, n, 0.9);
}

/* The reply hop j -> i: time at j from each call to its answer. */
static int reply_hop(struct nest_walk *w, int hop, const struct relation *p,
		     const uint8_t *in_set)
{
	double *d = malloc((p->n_srv + 1) * sizeof(*d));
	struct cw_hop h = {
		.parent = hop, .from = p->b, .to = p->a, .is_return = true};
	size_t k, n = 0;
	int err = 0;

	if (!d)
		return cw_error("out of memory");
	for (k = 0; k < p->n_srv; k++)
		if (in_set[k])
			d[n++] = (double)(p->srv[k].e - p->srv[k].s) / 1e3;
	hop_delays(&h, d, n);
	if (n && cw_path_add_hop(w->path, &h) < 0)
		err = -1;
	free(d);
	return err;
}

/* The calls of tr->r whose parents are in in_set: a hop, and the set of
 * the callee's calls they are, to go on from. */
static int child_hop(struct nest_walk *w, int hop, const struct triple *tr,
		     const uint8_t *in_set)
{
	const struct relation *p = &w->c->rel[tr->p], *r = &w->c->rel[tr->r];
	double *d = malloc((r->n_cli + 1) * sizeof(*d));
	uint8_t *next = calloc(r->n_srv + 1, 1);
	struct cw_hop h = {
		.parent = hop, .from = r->a, .to = r->b, .score = tr->score};
	size_t k, n = 0;
	int id, err = 0;

	if (!d || !next) {
		free(d);
		free(next);
		return cw_error("out of memory");
	}
	for (k = 0; k < r->n_cli; k++) {
		if (r->par_rel[k] != (long)tr->p || !in_set[r->par_idx[k]])
			continue;
		d[n++] = (double)(r->cli[k].s - p->srv[r->par_idx[k]].s) / 1e3;
		if (r->link[k] >= 0)
			next[r->link[k]] = 1;
	}
	hop_delays(&h, d, n);
	for (k = 0; k <= (size_t)w->depth; k++)
		h.is_return |= w->stack[k] == r->b;
	if (n) {
		id = cw_path_add_hop(w->path, &h);
		err = id < 0 ? -1 : 0;
		if (!err && !h.is_return && w->depth + 1 < w->c->o->max_depth &&
		    w->depth + 1 < (int)CW_ARRAY_SIZE(w->stack)) {
			w->stack[++w->depth] = r->b;
			err = nest_visit(w, id, tr->r, next);
			w->depth--;
		}
	}
	free(d);
	free(next);
	return err;
}

static int nest_visit(struct nest_walk *w, int hop, size_t p,
		      const uint8_t *in_set)
{
	size_t t;
	int err;

	if (w->c->n_visits >= cw_paths_max_visits(w->c->o)) {
		w->c->truncated = true;
		return 0;
	}
	w->c->n_visits++;
	err = reply_hop(w, hop, &w->c->rel[p], in_set);

	for (t = 0; !err && t < w->c->n_tri; t++)
		if (w->c->tri[t].p == p)
			err = child_hop(w, hop, &w->c->tri[t], in_set);
	return err;
}

static int nest_root(struct nest_ctx *c, struct cw_pathset *ps, size_t p)
{
	const struct relation *r = &c->rel[p];
	struct nest_walk w = {.c = c};
	struct cw_hop h = {
		.parent = -1, .from = r->a, .to = r->b, .messages = r->n_srv};
	uint8_t *all = malloc(r->n_srv + 1);
	int err;

	if (!all)
		return cw_error("out of memory");
	memset(all, 1, r->n_srv + 1);
	w.path = cw_pathset_add(ps, r->a);
	if (!w.path || cw_path_add_hop(w.path, &h) < 0) {
		free(all);
		return cw_error("out of memory");
	}
	w.stack[0] = r->a;
	w.stack[1] = r->b;
	w.depth = 1;
	err = nest_visit(&w, 0, p, all);
	free(all);
	if (!err && w.path->n_hops <= 2) {
		/* only the call and its own reply: nothing nests in it */
		free(w.path->hops);
		ps->n_paths--;
	}
	return err;
}

static int nest_roots(struct nest_ctx *c, struct cw_pathset *ps)
{
	int roots[4096], n, i, err = 0;
	size_t r;

	if (c->o->root >= 0) {
		roots[0] = c->o->root;
		n = 1;
	} else if ((n = cw_paths_roots(c->t, roots, CW_ARRAY_SIZE(roots))) <
		   0) {
		return -1;
	}
	for (i = 0; !err && !c->truncated && i < n; i++)
		for (r = 0; !err && !c->truncated && r < c->n_rel; r++)
			if (c->rel[r].a == (uint32_t)roots[i] &&
			    c->rel[r].n_srv)
				err = nest_root(c, ps, r);
	return err;
}

int cw_paths_nesting(const struct cw_msgtrace *t, const struct cw_paths_opts *o,
		     struct cw_pathset *ps)
{
	struct nest_ctx c = {.t = t, .o = o};
	size_t r, j;
	int err;

	cw_pathset_init(ps);
	if (cw_edge_index_build(&c.ix, t))
		return -1;
	err = cw_nest_build_calls(&c);
	for (j = 0; !err && j < c.ix.n_nodes; j++)
		err = nest_node(&c, (uint32_t)j);
	if (!err)
		err = nest_roots(&c, ps);
	ps->n_correlations = c.n_judged;
	ps->n_visits = c.n_visits;
	ps->truncated = c.truncated;
	ps->method = CW_PATHS_NESTING;
	for (r = 0; c.rel && r < c.n_rel; r++)
		cw_nest_rel_free(&c.rel[r]);
	free(c.rel);
	free(c.pool);
	free(c.tri);
	cw_edge_index_release(&c.ix);
	if (err)
		cw_pathset_release(ps);
	return err;
}
