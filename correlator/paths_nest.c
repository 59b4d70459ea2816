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
#include "correlator/paths.h"

#define SCAN_LIMIT 512 /* calls into j looked at, latest first */
#define MAX_CAND   32  /* candidate parents kept per call */

/* One call seen from one end: it starts (call sent or received) at s and
 * ends (reply received or sent) at e, on that end's clock. */
struct ival {
	uint64_t s, e;
	uint32_t conn;
};

/* Node a calls node b. */
struct relation {
	uint32_t a, b;
	struct ival *srv; /* at b, sorted by (conn, s) */
	struct ival *cli; /* at a, sorted by (conn, s) */
	size_t n_srv, n_cli;
	long *link;	    /* per cli call: the srv call it is, or -1 */
	long *par_rel;	    /* per cli call: its parent relation, or -1 */
	size_t *par_idx;    /* ... and the parent's srv index */
	size_t *cand_first; /* per cli call: candidates in the pool */
	uint32_t *cand_n;
	uint32_t *kids; /* per srv call: children given (scratch) */
	uint8_t *sig;	/* per relation p: (p, this) was kept */
};

struct cand {
	uint32_t rel, idx; /* a call into j: relation, srv index */
};

struct triple {
	size_t p, r; /* relation indices: p = (i, j), r = (j, k) */
	double score;
};

/* A call into a node, for the searches there. */
struct served {
	uint64_t s, e;
	uint32_t rel, idx;
};

struct nest_ctx {
	const struct cw_msgtrace *t;
	const struct cw_paths_opts *o;
	struct cw_edge_index ix;
	struct relation *rel;
	size_t n_rel;
	struct cand *pool;
	size_t n_pool, cap_pool;
	struct triple *tri;
	size_t n_tri, cap_tri, n_judged;
};

/* ---- calls: pairing and linking ---------------------------------------- */

struct ev {
	uint64_t ts;
	uint32_t conn;
	uint8_t end; /* 0: the call, 1: the reply */
};

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (int)x->end - (int)y->end;
}

/* Pair each reply with the oldest unanswered call on its connection. */
static size_t pair_fifo(const struct ev *ev, size_t n, struct ival *out,
			size_t *q)
{
	size_t i = 0, m = 0, head, tail;
	uint32_t conn;

	while (i < n) {
		conn = ev[i].conn;
		head = tail = 0;
		for (; i < n && ev[i].conn == conn; i++) {
			if (!ev[i].end)
				q[tail++] = i;
			else if (head < tail)
				out[m++] = (struct ival){ev[q[head++]].ts,
							 ev[i].ts, conn};
		}
	}
	return m;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Calls [lo, hi) of v with connection conn, v sorted by conn. */
static size_t group_end(const struct ival *v, size_t n, size_t lo)
{
	size_t hi = lo;

	while (hi < n && v[hi].conn == v[lo].conn)
		hi++;
	return hi;
}

/* The callee's clock minus the caller's, plus the network: the median
 * over rank-paired calls on each connection. */
static int64_t view_offset(const struct relation *r, int64_t *d)
{
	size_t i = 0, j = 0, ie, je, k, n = 0;

	while (i < r->n_cli && j < r->n_srv) {
		if (r->cli[i].conn != r->srv[j].conn) {
			if (r->cli[i].conn < r->srv[j].conn)
				i = group_end(r->cli, r->n_cli, i);
			else
				j = group_end(r->srv, r->n_srv, j);
			continue;
		}
		ie = group_end(r->cli, r->n_cli, i);
		je = group_end(r->srv, r->n_srv, j);
		for (k = 0; i + k < ie && j + k < je; k++)
			d[n++] = (int64_t)(r->srv[j + k].s - r->cli[i + k].s);
		i = ie;
		j = je;
	}
	if (!n)
		return 0;
	qsort(d, n, sizeof(*d), i64_cmp);
	return d[n / 2];
}

/* Each caller-side call to the callee-side call on its connection whose
 * start is nearest, after the offset. */
static void link_views(struct relation *r, int64_t *scratch, uint8_t *used)
{
	int64_t off = view_offset(r, scratch);
	size_t i = 0, j = 0, ie, je, k, lo, hi, mid, best;
	uint64_t want;

	for (k = 0; k < r->n_cli; k++)
		r->link[k] = -1;
	memset(used, 0, r->n_srv + 1);
	while (i < r->n_cli && j < r->n_srv) {
		if (r->cli[i].conn != r->srv[j].conn) {
			if (r->cli[i].conn < r->srv[j].conn)
				i = group_end(r->cli, r->n_cli, i);
			else
				j = group_end(r->srv, r->n_srv, j);
			continue;
		}
		ie = group_end(r->cli, r->n_cli, i);
		je = group_end(r->srv, r->n_srv, j);
		for (k = i; k < ie; k++) {
			want = (uint64_t)((int64_t)r->cli[k].s + off);
			for (lo = j, hi = je; lo < hi;) {
				mid = (lo + hi) / 2;
				if (r->srv[mid].s < want)
					lo = mid + 1;
				else
					hi = mid;
			}
			best = lo;
			if (lo == je || (lo > j && want - r->srv[lo - 1].s <
							   r->srv[lo].s - want))
				best = lo - 1;
			if (!used[best]) {
				used[best] = 1;
				r->link[k] = (long)best;
			}
		}
		i = ie;
		j = je;
	}
}

static int rel_alloc(struct relation *r, size_t n_srv_ev, size_t n_cli_ev)
{
	r->srv = malloc((n_srv_ev + 1) * sizeof(*r->srv));
	r->cli = malloc((n_cli_ev + 1) * sizeof(*r->cli));
	return r->srv && r->cli ? 0 : -1;
}

static int rel_alloc_calls(struct relation *r, size_t n_rel)
{
	size_t n = r->n_cli + 1;

	r->link = malloc(n * sizeof(*r->link));
	r->par_rel = malloc(n * sizeof(*r->par_rel));
	r->par_idx = calloc(n, sizeof(*r->par_idx));
	r->cand_first = calloc(n, sizeof(*r->cand_first));
	r->cand_n = calloc(n, sizeof(*r->cand_n));
	r->kids = calloc(r->n_srv + 1, sizeof(*r->kids));
	r->sig = calloc(n_rel + 1, 1);
	return r->link && r->par_rel && r->par_idx && r->cand_first &&
			       r->cand_n && r->kids && r->sig
		       ? 0
		       : -1;
}

static void rel_free(struct relation *r)
{
	free(r->srv);
	free(r->cli);
	free(r->link);
	free(r->par_rel);
	free(r->par_idx);
	free(r->cand_first);
	free(r->cand_n);
	free(r->kids);
	free(r->sig);
}

/*
 * Where message m belongs: its relation, and whether it is seen at the
 * callee (srv) and whether it is the reply (end).  -1 if it is in none.
 */
static long msg_place(const struct nest_ctx *c, const long *rel_of,
		      const struct cw_msg *m, bool *srv, bool *end)
{
	uint32_t from = m->dir == CW_MSG_OUT ? m->node : m->peer;
	uint32_t to = m->dir == CW_MSG_OUT ? m->peer : m->node;
	const struct cw_msg_edge *e = cw_edge_index_get(&c->ix, from, to);
	long r;

	if (!e)
		return -1;
	r = rel_of[e - c->ix.edges];
	if (r < 0)
		return -1;
	*end = e->reply;
	/* the callee sees the call come in and sends the reply */
	*srv = (m->dir == CW_MSG_IN) != e->reply;
	return r;
}

/* Relations from the edge index: a call edge and its reply edge. */
static long *find_relations(struct nest_ctx *c)
{
	long *rel_of = malloc((c->ix.n_edges + 1) * sizeof(*rel_of));
	size_t i;

	c->rel = calloc(c->ix.n_edges + 1, sizeof(*c->rel));
	if (!rel_of || !c->rel) {
		free(rel_of);
		return NULL;
	}
	for (i = 0; i < c->ix.n_edges; i++)
		rel_of[i] = -1;
	for (i = 0; i < c->ix.n_edges; i++) {
		const struct cw_msg_edge *call = &c->ix.edges[i], *reply;

		reply = cw_edge_index_get(&c->ix, call->to, call->from);
		if (call->reply || !reply || !reply->reply)
			continue;
		c->rel[c->n_rel].a = call->from;
		c->rel[c->n_rel].b = call->to;
		rel_of[i] = (long)c->n_rel;
		rel_of[reply - c->ix.edges] = (long)c->n_rel;
		c->n_rel++;
	}
	return rel_of;
}

static int build_calls(struct nest_ctx *c)
{
	size_t i, r, *ns = NULL, *nc = NULL, *q = NULL, max = 0;
	struct ev **sev = NULL, **cev = NULL;
	long *rel_of = find_relations(c);
	int64_t *scratch = NULL;
	uint8_t *used = NULL;
	bool srv, end;
	long k;
	int err = -1;

	if (!rel_of)
		goto out;
	ns = calloc(c->n_rel + 1, sizeof(*ns));
	nc = calloc(c->n_rel + 1, sizeof(*nc));
	sev = calloc(c->n_rel + 1, sizeof(*sev));
	cev = calloc(c->n_rel + 1, sizeof(*cev));
	if (!ns || !nc || !sev || !cev)
		goto out;
	for (i = 0; i < c->t->n_msgs; i++) {
		k = msg_place(c, rel_of, &c->t->msgs[i], &srv, &end);
		if (k >= 0)
			(srv ? ns : nc)[k]++;
	}
	for (r = 0; r < c->n_rel; r++) {
		sev[r] = malloc((ns[r] + 1) * sizeof(**sev));
		cev[r] = malloc((nc[r] + 1) * sizeof(**cev));
		if (!sev[r] || !cev[r] || rel_alloc(&c->rel[r], ns[r], nc[r]))
			goto out;
		max = ns[r] > max ? ns[r] : max;
		max = nc[r] > max ? nc[r] : max;
		ns[r] = nc[r] = 0;
	}
	for (i = 0; i < c->t->n_msgs; i++) {
		const struct cw_msg *m = &c->t->msgs[i];

		k = msg_place(c, rel_of, m, &srv, &end);
		if (k < 0)
			continue;
		if (srv)
			sev[k][ns[k]++] = (struct ev){m->ts_ns, m->conn, end};
		else
			cev[k][nc[k]++] = (struct ev){m->ts_ns, m->conn, end};
	}
	q = malloc((max + 1) * sizeof(*q));
	scratch = malloc((max + 1) * sizeof(*scratch));
	used = malloc(max + 1);
	if (!q || !scratch || !used)
		goto out;
	for (r = 0; r < c->n_rel; r++) {
		struct relation *rr = &c->rel[r];

		qsort(sev[r], ns[r], sizeof(**sev), ev_cmp);
		qsort(cev[r], nc[r], sizeof(**cev), ev_cmp);
		rr->n_srv = pair_fifo(sev[r], ns[r], rr->srv, q);
		rr->n_cli = pair_fifo(cev[r], nc[r], rr->cli, q);
		if (rel_alloc_calls(rr, c->n_rel))
			goto out;
		link_views(rr, scratch, used);
	}
	err = 0;
out:
	for (r = 0; sev && cev && r < c->n_rel; r++) {
		free(sev[r]);
		free(cev[r]);
	}
	free(sev);
	free(cev);
	free(ns);
	free(nc);
	free(q);
	free(scratch);
	free(used);
	free(rel_of);
	return err ? cw_error("out of memory for the calls of %zu messages",
			      c->t->n_msgs)
		   : 0;
}

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
	if (c->n_pool == c->cap_pool) {
		size_t cap = c->cap_pool ? c->cap_pool * 2 : 1024;
		struct cand *p = realloc(c->pool, cap * sizeof(*p));

		if (!p)
			return cw_error("out of memory");
		c->pool = p;
		c->cap_pool = cap;
	}
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
	if (c->n_tri == c->cap_tri) {
		size_t cap = c->cap_tri ? c->cap_tri * 2 : 64;
		struct triple *n = realloc(c->tri, cap * sizeof(*n));

		if (!n)
			return cw_error("out of memory");
		c->tri = n;
		c->cap_tri = cap;
	}
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
	for (i = 0; !err && i < n; i++)
		for (r = 0; !err && r < c->n_rel; r++)
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
	err = build_calls(&c);
	for (j = 0; !err && j < c.ix.n_nodes; j++)
		err = nest_node(&c, (uint32_t)j);
	if (!err)
		err = nest_roots(&c, ps);
	ps->n_correlations = c.n_judged;
	ps->method = CW_PATHS_NESTING;
	for (r = 0; c.rel && r < c.n_rel; r++)
		rel_free(&c.rel[r]);
	free(c.rel);
	free(c.pool);
	free(c.tri);
	cw_edge_index_release(&c.ix);
	if (err)
		cw_pathset_release(ps);
	return err;
}
