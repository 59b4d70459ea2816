// SPDX-License-Identifier: MIT
/*
 * The nesting method, for RPC traffic: a call into j and j's reply bracket
 * an interval on j's clock; a call j makes to k (and k's reply) that falls
 * inside it is taken to be caused by it.  A caller->callee->callee triple
 * is kept when it nests more often than intervals of those lengths would
 * by chance.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/paths.h"

#define SCAN_LIMIT 256

/* Calls a -> b: the k-th call paired with the k-th reply (FIFO). */
struct relation {
	uint32_t a, b;
	size_t n;
	const uint64_t *srv_s, *srv_e; /* at b: call arrives, reply leaves */
	const uint64_t *cli_s, *cli_e; /* at a: call leaves, reply arrives */
	long *parent_rel;	       /* per call: enclosing call into a */
	size_t *parent_idx;
};

struct triple {
	size_t p, r; /* relation indices: p = (i, j), r = (j, k) */
	double score;
};

struct nest_ctx {
	const struct cw_msgtrace *t;
	const struct cw_paths_opts *o;
	struct cw_edge_index ix;
	struct relation *rel;
	size_t n_rel;
	struct triple *tri;
	size_t n_tri, cap_tri;
};

struct interval {
	uint64_t s, e;
	size_t rel, idx;
};

static int build_relations(struct nest_ctx *c)
{
	size_t i, n;

	c->rel = calloc(c->ix.n_edges + 1, sizeof(*c->rel));
	if (!c->rel)
		return cw_error("out of memory");
	for (i = 0; i < c->ix.n_edges; i++) {
		const struct cw_msg_edge *call = &c->ix.edges[i], *reply;
		struct relation *r = &c->rel[c->n_rel];

		reply = cw_edge_index_get(&c->ix, call->to, call->from);
		if (call->reply || !reply || !reply->reply)
			continue;
		n = call->n_out < call->n_in ? call->n_out : call->n_in;
		n = reply->n_out < n ? reply->n_out : n;
		n = reply->n_in < n ? reply->n_in : n;
		memset(r, 0, sizeof(*r));
		r->a = call->from;
		r->b = call->to;
		r->n = n;
		r->srv_s = call->in;
		r->srv_e = reply->out;
		r->cli_s = call->out;
		r->cli_e = reply->in;
		r->parent_rel = malloc((n + 1) * sizeof(long));
		r->parent_idx = malloc((n + 1) * sizeof(size_t));
		if (!r->parent_rel || !r->parent_idx)
			return cw_error("out of memory");
		c->n_rel++;
	}
	return 0;
}

static int ival_cmp(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Calls served by node j, as intervals on j's clock, sorted by start. */
static struct interval *served_by(const struct nest_ctx *c, uint32_t j,
				  size_t *n)
{
	size_t r, k, m = 0, cnt = 0;
	struct interval *iv;

	for (r = 0; r < c->n_rel; r++)
		if (c->rel[r].b == j)
			cnt += c->rel[r].n;
	iv = malloc((cnt + 1) * sizeof(*iv));
	if (!iv)
		return NULL;
	for (r = 0; r < c->n_rel; r++)
		for (k = 0; c->rel[r].b == j && k < c->rel[r].n; k++)
			if (c->rel[r].srv_e[k] >= c->rel[r].srv_s[k])
				iv[m++] = (struct interval){c->rel[r].srv_s[k],
							    c->rel[r].srv_e[k],
							    r, k};
	qsort(iv, m, sizeof(*iv), ival_cmp);
	*n = m;
	return iv;
}

/* For each call j makes, the latest call into j that encloses it. */
static void find_parents(struct relation *r, const struct interval *iv,
			 size_t n)
{
	size_t k, lo, hi, scanned;

	for (k = 0; k < r->n; k++) {
		r->parent_rel[k] = -1;
		if (r->cli_e[k] < r->cli_s[k])
			continue; /* FIFO pairing went wrong: no interval */
		for (lo = 0, hi = n; lo < hi;) {
			size_t mid = (lo + hi) / 2;

			if (iv[mid].s <= r->cli_s[k])
				lo = mid + 1;
			else
				hi = mid;
		}
		for (scanned = 0; lo-- > 0 && scanned++ < SCAN_LIMIT;)
			if (iv[lo].e >= r->cli_e[k]) {
				r->parent_rel[k] = (long)iv[lo].rel;
				r->parent_idx[k] = iv[lo].idx;
				break;
			}
	}
}

static int link_calls(struct nest_ctx *c)
{
	struct interval *iv;
	size_t j, r, n;

	for (j = 0; j < c->ix.n_nodes; j++) {
		iv = served_by(c, (uint32_t)j, &n);
		if (!iv)
			return cw_error("out of memory");
		for (r = 0; r < c->n_rel; r++)
			if (c->rel[r].a == j)
				find_parents(&c->rel[r], iv, n);
		free(iv);
	}
	return 0;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The shortest of r's well-formed calls (the easiest to enclose, so the
 * chance estimate errs high); their count in *n. */
static double shortest_len(const struct relation *r, size_t *n)
{
	double *d = malloc((r->n + 1) * sizeof(*d)), m;
	size_t k;

	*n = 0;
	if (!d)
		return 0;
	for (k = 0; k < r->n; k++)
		if (r->cli_e[k] >= r->cli_s[k])
			d[(*n)++] = (double)(r->cli_e[k] - r->cli_s[k]);
	qsort(d, *n, sizeof(*d), dcmp);
	m = *n ? d[0] : 0;
	free(d);
	return m;
}

/*
 * How many of r's calls would fall inside some call of p by chance: each
 * lands at a random time, and is enclosed with the probability that the
 * time is covered by p's calls (their union: under heavy concurrency that
 * nears 1 and nesting proves little) with room for the call's length.
 */
static double chance_nested(const struct nest_ctx *c, const struct relation *p,
			    const struct relation *r)
{
	double cover = 0, span, len;
	uint64_t cs = 0, ce = 0;
	size_t k, n;

	len = shortest_len(r, &n);
	span = (double)(c->ix.node_t1[r->a] - c->ix.node_t0[r->a]) + 1;
	for (k = 0; k <= p->n; k++) {
		/* arrivals are sorted, so the union is one sweep */
		if (k < p->n && p->srv_e[k] < p->srv_s[k])
			continue;
		if (k < p->n && k && p->srv_s[k] <= ce) {
			ce = p->srv_e[k] > ce ? p->srv_e[k] : ce;
			continue;
		}
		if (k && (double)(ce - cs) > len)
			cover += (double)(ce - cs) - len;
		if (k < p->n) {
			cs = p->srv_s[k];
			ce = p->srv_e[k];
		}
	}
	cover /= span;
	return (double)n * (cover < 1 ? cover : 1);
}

static double log_poisson_tail(double s, double lambda)
{
	double term = 1, sum = 1;
	int i;

	if (s <= lambda)
		return 0;
	if (lambda <= 0)
		return -INFINITY;
	for (i = 1; i < 10000 && term > 1e-12 * sum; i++) {
		term *= lambda / (s + i);
		sum += term;
	}
	return -lambda + s * log(lambda) - lgamma(s + 1) + log(sum);
}

static int add_triple(struct nest_ctx *c, size_t p, size_t r, double score)
{
	if (c->n_tri == c->cap_tri) {
		size_t cap = c->cap_tri ? c->cap_tri * 2 : 64;
		struct triple *n = realloc(c->tri, cap * sizeof(*n));

		if (!n)
			return cw_error("out of memory");
		c->tri = n;
		c->cap_tri = cap;
	}
	c->tri[c->n_tri++] = (struct triple){p, r, score};
	return 0;
}

/* Judge every (p into j, r out of j) pair that nests at all. */
static int judge_relation(struct nest_ctx *c, size_t r, double log_m)
{
	const struct relation *rr = &c->rel[r];
	size_t p, k, cnt;
	double lp;

	for (p = 0; p < c->n_rel; p++) {
		if (c->rel[p].b != rr->a)
			continue;
		for (cnt = 0, k = 0; k < rr->n; k++)
			cnt += rr->parent_rel[k] == (long)p;
		if (!cnt)
			continue;
		lp = log_poisson_tail((double)cnt,
				      chance_nested(c, &c->rel[p], rr)) +
		     log_m;
		if (lp < log(c->o->alpha) &&
		    add_triple(c, p, r, lp < -690 ? 300 : -lp / M_LN10))
			return -1;
	}
	return 0;
}

static int judge(struct nest_ctx *c)
{
	size_t r, p, in, out;

	for (r = 0; r < c->n_rel; r++) {
		for (in = out = 0, p = 0; p < c->n_rel; p++) {
			in += c->rel[p].b == c->rel[r].a;
			out += c->rel[p].a == c->rel[r].a;
		}
		/* Bonferroni over the pairs examined at this node. */
		if (judge_relation(c, r, log((double)(in > 0 ? in * out : 1))))
			return -1;
	}
	return 0;
}

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
	double *d = malloc((p->n + 1) * sizeof(*d));
	struct cw_hop h = {
		.parent = hop, .from = p->b, .to = p->a, .is_return = true};
	size_t k, n = 0;
	int err = 0;

	if (!d)
		return cw_error("out of memory");
	for (k = 0; k < p->n; k++)
		if (in_set[k] && p->srv_e[k] >= p->srv_s[k])
			d[n++] = (double)(p->srv_e[k] - p->srv_s[k]) / 1e3;
	hop_delays(&h, d, n);
	if (n && cw_path_add_hop(w->path, &h) < 0)
		err = -1;
	free(d);
	return err;
}

static int child_hop(struct nest_walk *w, int hop, const struct triple *tr,
		     const uint8_t *in_set)
{
	const struct relation *p = &w->c->rel[tr->p], *r = &w->c->rel[tr->r];
	double *d = malloc((r->n + 1) * sizeof(*d));
	uint8_t *next = calloc(r->n + 1, 1);
	struct cw_hop h = {
		.parent = hop, .from = r->a, .to = r->b, .score = tr->score};
	size_t k, n = 0;
	int id, err = 0;

	if (!d || !next) {
		free(d);
		free(next);
		return cw_error("out of memory");
	}
	for (k = 0; k < r->n; k++) {
		if (r->parent_rel[k] != (long)tr->p ||
		    !in_set[r->parent_idx[k]])
			continue;
		d[n++] = (double)(r->cli_s[k] - p->srv_s[r->parent_idx[k]]) /
			 1e3;
		next[k] = 1;
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
	int err = reply_hop(w, hop, &w->c->rel[p], in_set);

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
		.parent = -1, .from = r->a, .to = r->b, .messages = r->n};
	uint8_t *all = malloc(r->n + 1);
	int err;

	if (!all)
		return cw_error("out of memory");
	memset(all, 1, r->n + 1);
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
	for (i = 0; !err && i < n; i++)
		for (r = 0; !err && r < c->n_rel; r++)
			if (c->rel[r].a == (uint32_t)roots[i])
				err = nest_root(c, ps, r);
	return err;
}

int cw_paths_nesting(const struct cw_msgtrace *t, const struct cw_paths_opts *o,
		     struct cw_pathset *ps)
{
	struct nest_ctx c = {.t = t, .o = o};
	size_t r;
	int err;

	cw_pathset_init(ps);
	if (cw_edge_index_build(&c.ix, t))
		return -1;
	err = build_relations(&c);
	if (!err)
		err = link_calls(&c);
	if (!err)
		err = judge(&c);
	if (!err)
		err = nest_roots(&c, ps);
	ps->n_correlations = c.n_tri;
	ps->method = CW_PATHS_NESTING;
	for (r = 0; c.rel && r <= c.n_rel; r++) {
		free(c.rel[r].parent_rel);
		free(c.rel[r].parent_idx);
	}
	free(c.rel);
	free(c.tri);
	cw_edge_index_release(&c.ix);
	if (err)
		cw_pathset_release(ps);
	return err;
}
