// SPDX-License-Identifier: MIT
/*
 * Linking calls to requests at each node.  Thread evidence first, where a
 * thread had exactly one request open; then a model learned from links
 * (per request class = who called, per callee and occurrence: how often the
 * call happens and the delays from the request's start to the call's and
 * from the call's end to the request's), and a one-to-one assignment of
 * each window of calls to request slots (Hungarian), a slot left empty
 * paying the learned cost of skipping that call.  Without thread links the
 * model is bootstrapped from FCFS and re-learned from its own assignment.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "traces/infer_impl.h"

/*
 * The order feature's histogram is mixed with a uniform share this large
 * per count: learned from FCFS it would forbid all but the oldest waiting
 * request.  Too large lets noisy delays overrule an event loop's order:
 * on the testbed's busy event loop 0.03 fell 0.02 below FCFS.  At 0.01
 * (48 bins: a third of the mass uniform) the rounds from FCFS's links
 * stopped early on the 80% capture (the event loop 0.892, its first
 * calls, in arrival order, 0.92 right where FCFS had 0.97); from 0.0005
 * to 0.002 they run on to a more regular fixed point (0.938-0.923), and
 * no row of the kept captures, with or without the agent, nor of the
 * span traces fell; at 0 FCFS's order is law and the start from the
 * chains wins (0.819). */
#define ORDER_MIX 0.001
/* refine() with thread links: a call counts when one request has this
 * share of it (the testbed's event loop at 80-90%: 0.95 and 0.8 alike). */
#define ANCHOR_SHARE 0.95
/* refine() without: only where calls average this many candidates or
 * fewer (TrainTicket 1.0-1.5, gaining; captures of the testbed 1.6-6.6). */
#define SOFT_MAX_CANDS 1.5
/* The windowed assignment is left out of later rounds when its links
 * were this much less regular (nats a call) than one at a time's: the
 * testbed's event loop, thread-per-request and pool 0.4-0.7, Online
 * Boutique's frontend 1.5; the closest, a proxy, 0.2. */
#define JOINT_FAR 0.3
/* Rounds stop gaining (nats a call): the testbed's event loop gained
 * 0.25, 0.22, 0.04, 0.01, then lost; Online Boutique's frontend 0.7,
 * 0.07, 0.05, 0.02, 0.04, 0.02, 0. */
#define ROUND_GAIN 0.02

/* (int)(2 log2(1 + us)) without a log: the octave from the exponent,
 * its upper half where the mantissa passes the square root of 2. */
int ti_bin_of(uint64_t ns)
{
	double d = 1.0 + (double)ns / 1000.0, r2 = M_SQRT2;
	uint64_t bits, root;
	int b;

	/* frexp()'s exponent and mantissa read from the bits: d >= 1 */
	memcpy(&bits, &d, sizeof(bits));
	memcpy(&root, &r2, sizeof(root));
	b = 2 * ((int)(bits >> 52) - 1023) +
	    ((bits & 0xfffffffffffffULL) >= (root & 0xfffffffffffffULL));
	return b < 0 ? 0 : b >= NB ? NB - 1 : b;
}

static struct cell *cell_of(struct node_ctx *c, int32_t req, int32_t call,
			    uint32_t k)
{
	const struct cw_tspan *r = &c->t->spans[req], *x = &c->t->spans[call];
	size_t rc = (size_t)c->rcmap[r->peer], cc = (size_t)c->ccmap[x->peer];

	if (k >= KMAX)
		k = KMAX - 1;
	return &c->cells[(rc * c->n_cc + cc) * KMAX + k];
}

uint32_t *ti_used_of(struct node_ctx *c, int32_t req, int32_t call)
{
	return &c->used[(size_t)c->loc[req] * c->n_cc +
			(size_t)c->ccmap[c->t->spans[call].peer]];
}

/* The cells changed (learnt, refined, put back): their logs are stale. */
static void cells_changed(struct node_ctx *c)
{
	c->gen++;
}

/* Cell m's -log probabilities, computed when first needed after the
 * cells changed: a cost is then sums of lookups, not of logs. */
static struct ltab *ltab_of(struct node_ctx *c, const struct cell *m, double n)
{
	struct ltab *l = &c->ltabs[m - c->cells];
	/* Soft counts (refine()) may sum past the requests: p stays < 1. */
	double p = (fmin(m->cnt, n) + 0.5) / (n + 1.0);
	int b;

	if (l->gen == c->gen)
		return l;
	l->gen = c->gen;
	l->d = m->cnt + 0.2 * NB, l->mix = 0.2 + ORDER_MIX * m->cnt;
	l->rden = m->cnt + l->mix * NB;
	memset(l->done, 0, sizeof(l->done));
	l->lp = (float)-log(p), l->lskip = (float)-log(1.0 - p);
	for (b = 0; b < NBUSY; b++)
		l->lb[b] = (float)-log((m->hb[b] + 0.1) /
				       (m->cnt + 0.1 * NBUSY));
	return l;
}

/* Bin b of a table of l: -log((h[b] + add) / den), on first reading. */
static float lbin(struct ltab *l, int t, float *tab, const float *h, int b,
		  double add, double den)
{
	if (!(l->done[t] >> b & 1)) {
		tab[b] = (float)-log((h[b] + add) / den);
		l->done[t] |= 1ULL << b;
	}
	return tab[b];
}

static float l_s(struct ltab *l, const struct cell *m, int b)
{
	return lbin(l, 0, l->ls, m->hs, b, 0.2, l->d);
}

static float l_e(struct ltab *l, const struct cell *m, int b)
{
	return lbin(l, 1, l->le, m->he, b, 0.2, l->d);
}

/* The features one at a time adds: gap, busy, queue, order (or not). */
static double l_feats(const struct node_ctx *c, struct ltab *l,
		      const struct cell *m, double v, int g, int busy, int q,
		      int r)
{
	return v + lbin(l, 2, l->lg, m->hg, g, 0.2, l->d) + l->lb[busy] +
	       lbin(l, 3, l->lq, m->hq, q, 0.2, l->d) +
	       (c->no_order ? 0 : lbin(l, 4, l->lr, m->hr, r, l->mix, l->rden));
}

/*
 * -log of: the call happens as occurrence k, at these delays, with `order`
 * older candidates still waiting for a call to this callee.
 */
double ti_cost(struct node_ctx *c, int32_t req, int32_t call, uint32_t k,
	       uint32_t order, double *skip)
{
	const struct cw_tspan *r = &c->t->spans[req], *x = &c->t->spans[call];
	const struct cell *m = cell_of(c, req, call, k);
	struct ltab *l = ltab_of(c, m, c->n_req_rc[c->rcmap[r->peer]]);
	double v = l->lp + l_s(l, m, ti_bin_of(x->start_ns - r->start_ns)) +
		   l_e(l, m, ti_bin_of(r->end_ns - x->end_ns));
	struct ti_feats f;

	if (skip)
		*skip = l->lskip;
	if (!c->one_by_one)
		return v;
	f = ti_feats(c, req, call);
	return l_feats(c, l, m, v, f.gap, f.busy, f.queue,
		       order < NB ? (int)order : NB - 1);
}

/* Sweep helper: the open requests that enclose call `x`. */
size_t ti_enclosing(struct node_ctx *c, int32_t x, int32_t *out, size_t max,
		    size_t *n_open_thread, int32_t *thr_req)
{
	const struct cw_tspan *xs = &c->t->spans[x];
	size_t i, j = 0, n = 0, n_all = 0;

	while (c->next_req < c->n_reqs &&
	       c->t->spans[c->reqs[c->next_req]].start_ns <= xs->start_ns)
		c->active[c->n_active++] = c->reqs[c->next_req++];
	ti_chain_advance(c, xs->start_ns);
	*n_open_thread = 0;
	for (i = 0; i < c->n_active; i++) {
		const struct cw_tspan *r = &c->t->spans[c->active[i]];

		if (r->end_ns < xs->start_ns)
			continue; /* over: drop it from the sweep */
		c->active[j++] = c->active[i];
		if (xs->thread && r->thread == xs->thread) {
			(*n_open_thread)++;
			*thr_req = r->end_ns >= xs->end_ns ? c->active[i] : -1;
		}
		if (r->end_ns >= xs->end_ns && n < max)
			out[n++] = c->active[i];
		n_all += r->end_ns >= xs->end_ns;
	}
	c->n_active = j;
	c->n_enclosing = n_all;
	/*
	 * None encloses it: a call that outlives its request (fire and
	 * forget, or the request's reply sent before the call's reply came
	 * back).  Then any request open when it started is a candidate.
	 */
	for (i = 0; !n && i < c->n_active && i < max; i++)
		out[i] = c->active[i];
	return n ? n : i;
}

/* How many of the candidates before `cand[k]` (older) still wait for a
 * call to this callee. */
uint32_t ti_order_of(struct node_ctx *c, const int32_t *cand, size_t k,
		     int32_t call)
{
	uint32_t n = 0;
	size_t j;

	for (j = 0; j < k; j++)
		n += !*ti_used_of(c, cand[j], call);
	return n;
}

void ti_sweep_reset(struct node_ctx *c)
{
	c->n_active = c->next_req = c->n_rec = 0;
	memset(c->used, 0, c->n_reqs * c->n_cc * sizeof(*c->used));
	ti_chain_reset(c);
}

void ti_record(struct node_ctx *c, int32_t req, int32_t call, uint32_t order)
{
	const struct cw_tspan *rs = &c->t->spans[req], *xs = &c->t->spans[call];
	struct ti_rec *e = &c->rec[c->n_rec++];
	struct ti_feats f = ti_feats(c, req, call);

	e->cell = (uint32_t)(cell_of(c, req, call, *ti_used_of(c, req, call)) -
			     c->cells);
	e->s = (uint8_t)ti_bin_of(xs->start_ns - rs->start_ns);
	e->e = (uint8_t)ti_bin_of(rs->end_ns - xs->end_ns);
	e->g = (uint8_t)f.gap, e->b = (uint8_t)f.busy, e->q = (uint8_t)f.queue;
	e->r = (uint8_t)(order < NB - 1 ? order : NB - 1);
}

/* The model of the links the last recording sweep saw (c->rec). */
static void learn_recorded(struct node_ctx *c)
{
	size_t i;

	memset(c->cells, 0, c->n_rc * c->n_cc * KMAX * sizeof(*c->cells));
	cells_changed(c);
	memset(c->n_req_rc, 0, c->n_rc * sizeof(*c->n_req_rc));
	for (i = 0; i < c->n_reqs; i++)
		c->n_req_rc[c->rcmap[c->t->spans[c->reqs[i]].peer]]++;
	for (i = 0; i < c->n_rec; i++) {
		const struct ti_rec *e = &c->rec[i];
		struct cell *m = &c->cells[e->cell];

		m->cnt++;
		m->hs[e->s]++, m->he[e->e]++;
		m->hg[e->g]++, m->hb[e->b]++, m->hq[e->q]++, m->hr[e->r]++;
	}
}

/* Learn the model from the links in `link` (call span -> request, -1). */
static void learn(struct node_ctx *c, const int32_t *link)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	size_t i, k, n, open;

	ti_sweep_reset(c);
	for (i = 0; i < c->n_calls; i++) {
		int32_t x = c->calls[i], r = link[x];

		n = ti_enclosing(c, x, cand, CW_TRACES_MAX_OPEN, &open, &thr);
		if (r < 0)
			continue;
		for (k = 0; k < n && cand[k] != r; k++)
			;
		ti_record(c, r, x, k < n ? ti_order_of(c, cand, k, x) : NB - 1);
		ti_note_call(c, r, x);
	}
	learn_recorded(c);
}

/*
 * Mean cost, every feature counted, of the recorded links under the
 * cells (their own model): *full with the order feature, the return
 * value as c->no_order says.  The sums are ti_cost()'s, term by term.
 */
static double cost_recorded(struct node_ctx *c, double *full)
{
	double sum = 0, sum_full = 0;
	size_t i, per_rc = c->n_cc * KMAX;

	for (i = 0; i < c->n_rec; i++) {
		const struct ti_rec *e = &c->rec[i];
		const struct cell *m = &c->cells[e->cell];
		struct ltab *l = ltab_of(c, m, c->n_req_rc[e->cell / per_rc]);
		double v = l->lp + l_s(l, m, e->s) + l_e(l, m, e->e);
		bool no_order = c->no_order;

		sum += l_feats(c, l, m, v, e->g, e->b, e->q, e->r);
		c->no_order = false;
		sum_full += l_feats(c, l, m, v, e->g, e->b, e->q, e->r);
		c->no_order = no_order;
	}
	if (full)
		*full = c->n_rec ? sum_full / (double)c->n_rec : 0;
	return c->n_rec ? sum / (double)c->n_rec : 0;
}

/* Call x to request r, with weight wt, into the cells `to`. */
static void count_call(struct node_ctx *c, struct cell *to, int32_t r,
		       int32_t x, uint32_t order, float wt)
{
	const struct cw_tspan *rs = &c->t->spans[r], *xs = &c->t->spans[x];
	struct ti_feats f = ti_feats(c, r, x);
	struct cell *m =
		to + (cell_of(c, r, x, *ti_used_of(c, r, x)) - c->cells);

	m->cnt += wt;
	m->hs[ti_bin_of(xs->start_ns - rs->start_ns)] += wt;
	m->he[ti_bin_of(rs->end_ns - xs->end_ns)] += wt;
	m->hg[f.gap] += wt, m->hb[f.busy] += wt, m->hq[f.queue] += wt;
	m->hr[order < NB - 1 ? order : NB - 1] += wt;
}

/*
 * One step: each call no thread link fixed counts for every candidate in
 * proportion to exp(-cost) under the current model, and the counts are
 * the next model: the right requests' delays, which agree call after
 * call, outweigh the wrong ones, which scatter.  With thread links (a
 * loop that sometimes held one request), a call counts only for a request
 * with ANCHOR_SHARE of it, lest many alike candidates blur the anchors. */
static double refine(struct node_ctx *c)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	double v[CW_TRACES_MAX_OPEN], skip, lo, sum, all = 0, m = 0;
	uint32_t order[CW_TRACES_MAX_OPEN], waiting;
	size_t i, k, n, open, best, nc = c->n_rc * c->n_cc * KMAX;

	memset(c->next, 0, nc * sizeof(*c->next));
	c->one_by_one = false;
	ti_sweep_reset(c);
	for (i = 0; i < c->n_calls; i++) {
		int32_t x = c->calls[i];
		const struct cw_tspan *xs = &c->t->spans[x];

		n = ti_enclosing(c, x, cand, CW_TRACES_MAX_OPEN, &open, &thr);
		if (xs->method == CW_LINK_THREAD) {
			count_call(c, c->next, xs->parent, x, 0, 1.0f);
			ti_note_call(c, xs->parent, x);
			continue;
		}
		all += (double)n, m++;
		for (waiting = 0, k = 0; k < n; k++) { /* ti_order_of() */
			order[k] = waiting;
			waiting += !*ti_used_of(c, cand[k], x);
		}
		for (lo = INF, best = 0, k = 0; k < n; k++) {
			v[k] = ti_cost(c, cand[k], x,
				       *ti_used_of(c, cand[k], x), order[k],
				       &skip) -
			       skip;
			if (v[k] < lo)
				lo = v[k], best = k;
		}
		for (sum = 0, k = 0; k < n; k++)
			sum += v[k] = exp(lo - v[k]);
		for (k = 0; k < n; k++)
			if (!c->anchored || (k == best &&
					     v[k] >= ANCHOR_SHARE * sum))
				count_call(c, c->next, cand[k], x, order[k],
					   c->anchored ? 1.0f
						       : (float)(v[k] / sum));
		if (n) {
			ti_note_call(c, cand[best], x);
		}
	}
	memcpy(c->cells, c->next, nc * sizeof(*c->cells));
	cells_changed(c);
	return m ? all / m : 0; /* candidates a call, for learn_refined() */
}

/* Thread links and the FCFS baseline: one sweep. */
static void thread_and_fcfs(struct node_ctx *c, bool use_thread)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	size_t i, k, n, open;

	ti_sweep_reset(c);
	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]];

		thr = -1;
		n = ti_enclosing(c, c->calls[i], cand, CW_TRACES_MAX_OPEN,
				 &open, &thr);
		x->fcfs = n ? cand[0] : -1;
		for (k = 0; k < n; k++)
			if (!*ti_used_of(c, cand[k], c->calls[i])) {
				x->fcfs = cand[k];
				break;
			}
		if (x->fcfs >= 0)
			(*ti_used_of(c, x->fcfs, c->calls[i]))++;
		x->parent = -1;
		x->method = CW_LINK_NONE;
		if (!use_thread)
			continue;
		/* The kernel's context, where the input has it, says which
		 * request the thread held and how many; else the requests
		 * of the same thread open by span times. */
		if (c->t->has_ctx) {
			thr = x->ctx_open == 1 ? x->ctx_req : -1;
			open = x->ctx_open;
		}
		if (open == 1 && thr >= 0) {
			x->parent = thr;
			x->method = CW_LINK_THREAD;
			x->conf = 1.0f;
			c->t->n_thread_links++;
		} else if (open > 1) {
			c->t->n_ambiguous_thread++;
		}
	}
}

static int by_start(const void *a, const void *b, void *arg)
{
	return cw_traces_span_cmp(arg, *(const int32_t *)a, *(const int32_t *)b);
}

static void ctx_free(struct node_ctx *c)
{
	free(c->reqs), free(c->calls);
	free(c->n_req_rc), free(c->cells), free(c->used), free(c->active);
	free(c->last), free(c->saved), free(c->model), free(c->next);
	free(c->best), free(c->ltabs), free(c->alt), free(c->rec);
	ti_chain_free(c);
}

/*
 * Gather node v's requests and calls (its spans mine[0..n), in span order)
 * and size its model.  rcmap and ccmap are the caller's, all -1, and are
 * left so: a node touches only its peers' entries, so linking is linear
 * in the nodes, not quadratic.
 */
static int ctx_init(struct node_ctx *c, uint32_t v, const int32_t *mine,
		    size_t n)
{
	struct cw_traces *t = c->t;
	size_t i;

	c->n_reqs = c->n_calls = c->n_rc = c->n_cc = 0;
	c->reqs = malloc((n + 1) * sizeof(int32_t));
	c->calls = malloc((n + 1) * sizeof(int32_t));
	if (!c->reqs || !c->calls)
		return cw_error("out of memory for spans");
	for (i = 0; i < n; i++) {
		const struct cw_tspan *s = &t->spans[mine[i]];

		if (s->role == CW_ROLE_ACCEPTED) {
			if (c->rcmap[s->peer] < 0)
				c->rcmap[s->peer] = (int32_t)c->n_rc++;
			c->loc[mine[i]] = (int32_t)c->n_reqs;
			c->reqs[c->n_reqs++] = mine[i];
		} else {
			if (c->ccmap[s->peer] < 0)
				c->ccmap[s->peer] = (int32_t)c->n_cc++;
			c->calls[c->n_calls++] = mine[i];
		}
	}
	qsort_r(c->reqs, c->n_reqs, sizeof(int32_t), by_start, t);
	qsort_r(c->calls, c->n_calls, sizeof(int32_t), by_start, t);
	for (i = 0; i < c->n_reqs; i++)
		c->loc[c->reqs[i]] = (int32_t)i;
	c->n_req_rc = calloc(c->n_rc + 1, sizeof(uint32_t));
	c->cells = calloc((c->n_rc * c->n_cc + 1) * KMAX, sizeof(*c->cells));
	c->used = calloc(c->n_reqs * c->n_cc + 1, sizeof(uint32_t));
	c->active = malloc((c->n_reqs + 1) * sizeof(int32_t));
	c->last = malloc((c->n_reqs + 1) * sizeof(uint64_t));
	c->saved = malloc((c->n_calls + 1) * sizeof(*c->saved));
	c->best = malloc((c->n_calls + 1) * sizeof(*c->best));
	c->alt = malloc((c->n_calls + 1) * sizeof(*c->alt));
	c->rec = malloc((c->n_calls + 1) * sizeof(*c->rec));
	c->ltabs = calloc((c->n_rc * c->n_cc + 1) * KMAX, sizeof(*c->ltabs));
	c->gen = 1;
	c->model = calloc((c->n_rc * c->n_cc + 1) * KMAX, sizeof(*c->model));
	c->next = calloc((c->n_rc * c->n_cc + 1) * KMAX, sizeof(*c->next));
	if (!c->n_req_rc || !c->cells || !c->used || !c->active || !c->last ||
	    ti_chain_init(c) || !c->saved || !c->best || !c->model ||
	    !c->next || !c->ltabs || !c->alt || !c->rec)
		return cw_error("out of memory for the model of '%s'",
				t->names[v]);
	return 0;
}

/* The model the assignments start from: kept, and put back. */
static void keep_model(struct node_ctx *c)
{
	memcpy(c->model, c->cells,
	       c->n_rc * c->n_cc * KMAX * sizeof(*c->cells));
}

static void use_model(struct node_ctx *c)
{
	memcpy(c->cells, c->model,
	       c->n_rc * c->n_cc * KMAX * sizeof(*c->cells));
	cells_changed(c);
}

void ti_current_links(struct node_ctx *c, int32_t *link, bool fcfs,
			  bool thread_only)
{
	size_t i;

	for (i = 0; i < c->n_calls; i++) {
		const struct cw_tspan *x = &c->t->spans[c->calls[i]];

		link[c->calls[i]] =
			fcfs ? x->fcfs
			: thread_only
				? (x->method == CW_LINK_THREAD ? x->parent : -1)
				: x->parent;
	}
}

/*
 * Mean cost of the links in `link` under the model learned from them, with
 * every feature: how regular a set of links makes the service look (*full:
 * with the order feature whatever c->no_order says; NULL: not wanted).
 */
double ti_links_cost(struct node_ctx *c, const int32_t *link, double *full)
{
	learn(c, link);
	c->one_by_one = true;
	return cost_recorded(c, full);
}

double ti_links_cost_free(struct node_ctx *c, const int32_t *link)
{
	bool no_order = c->no_order;
	double v;

	c->no_order = true;
	v = ti_links_cost(c, link, NULL);
	c->no_order = no_order;
	return v;
}

static void swap_links(struct node_ctx *c)
{
	size_t i;

	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]], t = *x;

		x->parent = c->saved[i].parent, x->method = c->saved[i].method;
		x->conf = c->saved[i].conf, x->flags = c->saved[i].flags;
		memcpy(x->top, c->saved[i].top, sizeof(x->top));
		c->saved[i] = t;
	}
}

struct ti_counts ti_counts_get(const struct cw_traces *t)
{
	return (struct ti_counts){t->n_windows,   t->n_cut,       t->n_cut_calls,
			       t->n_cut_cands, t->n_cut_truth, t->n_over_open};
}

void ti_counts_set(struct cw_traces *t, struct ti_counts k)
{
	t->n_windows = k.windows, t->n_cut = k.cut, t->n_cut_calls = k.calls;
	t->n_cut_cands = k.cands, t->n_cut_truth = k.truth;
	t->n_over_open = k.over;
}

/*
 * Two assignments from the kept model.  One call at a time sees each
 * request's gap and order fresh, which suits requests that make their
 * calls one after another; a window's joint assignment weighs competing
 * requests together, which suits many open at once.  Which suits this
 * service is not known beforehand, so both run and the links that make it
 * the more regular (lower mean cost under the model each teaches) stay.
 */
static double assign_best(struct node_ctx *c, struct window *w,
			  int32_t *scratch, bool *joint_far, double *full)
{
	struct ti_counts before = ti_counts_get(c->t), one_k;
	double one, joint, one_full, joint_full;
	size_t i;

	c->one_by_one = true;
	ti_assign(c, w, 1); /* recorded its links as learn() would */
	learn_recorded(c);
	one = cost_recorded(c, &one_full);
	c->learnt = *joint_far; /* the model is these links' */
	*full = one_full;
	if (*joint_far)
		return one;
	one_k = ti_counts_get(c->t);
	for (i = 0; i < c->n_calls; i++)
		c->saved[i] = c->t->spans[c->calls[i]];
	use_model(c);
	c->one_by_one = false;
	ti_counts_set(c->t, before);
	ti_assign(c, w, c->o->window);
	ti_current_links(c, scratch, false, false);
	joint = ti_links_cost(c, scratch, &joint_full);
	*joint_far = joint > one + JOINT_FAR;
	c->learnt = joint < one;
	if (one <= joint) {
		swap_links(c);
		ti_counts_set(c->t, one_k);
	}
	*full = one <= joint ? one_full : joint_full;
	return one <= joint ? one : joint;
}

/* A model learned from `link`, refined o->refine soft steps. */
static void learn_refined(struct node_ctx *c, const int32_t *link)
{
	int k;

	if (!c->learnt) /* else ti_links_cost() just learned from these */
		learn(c, link);
	c->learnt = false;
	for (k = 0; k < c->o->refine && !c->no_soft; k++)
		if (refine(c) > SOFT_MAX_CANDS && !c->anchored) {
			/* too many alike candidates: undone, and not
			 * tried again in later rounds */
			learn(c, link);
			c->no_soft = true;
			break;
		}
	keep_model(c);
}

/* The links of every call, kept from the round that made the node the
 * most regular, and put back. */
static void links_keep(struct node_ctx *c, struct cw_tspan *to, bool back)
{
	size_t i;

	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]];
		struct cw_tspan *a = back ? x : &to[i], *b = back ? &to[i] : x;

		a->parent = b->parent, a->method = b->method;
		a->conf = b->conf, a->flags = b->flags;
		memcpy(a->top, b->top, sizeof(a->top));
	}
}

/*
 * Timing rounds: learn from the links, assign, and again from the new
 * links, so the delays are refined with the assignment; each round's
 * links are scored by how regular they make the node (ti_links_cost()), the
 * most regular kept.  It stops when a round gains less than ROUND_GAIN
 * nats a call (a fixed point, or drifting: re-learning from its own
 * links can also lock mistakes in) or at o->rounds, which is counted.
 * Returns the kept links' cost with the order feature (ti_links_cost()'s).
 */
static double rounds_to_fixed_point(struct node_ctx *c, struct window *w,
				    int32_t *link, int32_t *scratch)
{
	struct ti_counts base = ti_counts_get(c->t), best_k = base;
	double v, full, best = INF, best_full = INF, prev = INF;
	int r;

	for (r = 0; r < c->o->rounds; r++) {
		ti_counts_set(c->t, base);
		learn_refined(c, link);
		v = assign_best(c, w, scratch, &c->joint_far, &full);
		ti_current_links(c, link, false, false);
		if (v < best) {
			best = v, best_k = ti_counts_get(c->t), best_full = full;
			links_keep(c, c->best, false);
		}
		if (v > prev - ROUND_GAIN)
			break;
		prev = v;
	}
	c->t->n_round_bound += r == c->o->rounds;
	r = r < c->o->rounds ? r + 1 : r; /* rounds run */
	if (r > c->t->rounds)
		c->t->rounds = r;
	links_keep(c, c->best, true);
	ti_current_links(c, link, false, false);
	ti_counts_set(c->t, best_k);
	return best_full;
}

/*
 * Rounds twice: from FCFS's links (or the thread links) with the order
 * feature (how many older candidates wait for this callee, FCFS's own
 * rule), and from the chains' links (traces/chain.c) without it; both
 * results then scored with every feature, the more regular kept.  FCFS's
 * links teach that a call's request is often busy and FCFS's order,
 * which an event loop or a chained handler never follows (Online
 * Boutique at 4x: 0.084 right end to end from FCFS, 0.904 from the
 * chains); where requests wait their turn, FCFS's start decides (the
 * event loop from the 90% capture: 0.579, against 0.467).  Returns the
 * cost of the links kept; c->chains_won says which start they came
 * from.  `only` 0 or 1: that start alone (FCFS's, the chains').
 */
double ti_rounds_both(struct node_ctx *c, struct window *w, int32_t *link,
		      int32_t *scratch, int only)
{
	struct ti_counts k0 = ti_counts_get(c->t), ka = k0;
	double a = INF, b = INF;

	c->no_order = false;
	if (only != 1) {
		a = rounds_to_fixed_point(c, w, link, scratch);
		ka = ti_counts_get(c->t);
		links_keep(c, c->alt, false);
	}
	if (only != 0) {
		ti_chain_links(c, link);
		ti_counts_set(c->t, k0);
		c->learnt = false, c->no_order = true;
		b = rounds_to_fixed_point(c, w, link, scratch);
		c->no_order = false;
	}
	c->chains_won = b < a;
	if (only < 0) { /* both ran: the chains' links are the spans' */
		double b_free = ti_links_cost_free(c, link), a_free;

		links_keep(c, c->best, false);
		links_keep(c, c->alt, true);
		ti_current_links(c, link, false, false);
		a_free = ti_links_cost_free(c, link);
		links_keep(c, c->best, true);
		c->chains_won = !ti_first_wins(a, a_free, b, b_free);
	}
	if (!c->chains_won) {
		links_keep(c, c->alt, true);
		ti_counts_set(c->t, ka);
	}
	c->learnt = false;
	ti_current_links(c, link, false, false);
	return c->chains_won ? b : a;
}

static int infer_node(struct node_ctx *c, struct window *w, int32_t *link,
		      int32_t *scratch)
{
	size_t n_thread = c->t->n_thread_links;
	struct ti_counts base = ti_counts_get(c->t);
	double mine;

	thread_and_fcfs(c, !c->o->no_thread);
	n_thread = c->t->n_thread_links - n_thread;
	if (!c->n_reqs || !c->n_calls)
		return 0;
	/* Enough thread links teach the first round's model; else FCFS. */
	if (n_thread * 4 >= c->n_calls) {
		ti_current_links(c, link, false, true);
		c->no_soft = true; /* true links: nothing to refine */
		ti_rounds_both(c, w, link, scratch, -1);
		return 0;
	}
	ti_current_links(c, link, true, false);
	c->anchored = n_thread > 0;
	mine = ti_rounds_both(c, w, link, scratch, -1);
	/* A model some true links taught beats FCFS's whole links, not
	 * FCFS's to the first callee (the agent's event loop at 90%: 0.693
	 * right without them, 0.958 with). */
	if (c->anchored || !ti_keep_fcfs_if_regular(c, mine, scratch))
		ti_anchor_first_callee(c, w, link, scratch, base);
	return 0;
}

void cw_traces_opts_default(struct cw_traces_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->window = 24;
	o->max_cands = 8;
	o->rounds = 8;
	o->refine = 5;
}

/*
 * Span ids grouped by node (by[first[v] .. first[v + 1]), in span order
 * within a node), and the per-node maps all -1.  0 or -1 (no memory).
 */
static int group_by_node(const struct cw_traces *t, int32_t **by,
			 size_t **first, struct node_ctx *c)
{
	size_t i, nn = t->n_names;

	*by = malloc((t->n_spans + 1) * sizeof(**by));
	*first = calloc(nn + 2, sizeof(**first));
	c->rcmap = malloc((nn + 1) * sizeof(int32_t));
	c->ccmap = malloc((nn + 1) * sizeof(int32_t));
	if (!*by || !*first || !c->rcmap || !c->ccmap)
		return -1;
	for (i = 0; i < nn; i++)
		c->rcmap[i] = c->ccmap[i] = -1;
	for (i = 0; i < t->n_spans; i++)
		(*first)[t->spans[i].node + 2]++;
	for (i = 0; i < nn; i++)
		(*first)[i + 2] += (*first)[i + 1];
	for (i = 0; i < t->n_spans; i++)
		(*by)[(*first)[t->spans[i].node + 1]++] = (int32_t)i;
	return 0;
}

/* Back to all -1 for the next node: only its peers' entries moved. */
static void maps_reset(struct node_ctx *c, const int32_t *mine, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		c->rcmap[c->t->spans[mine[i]].peer] =
			c->ccmap[c->t->spans[mine[i]].peer] = -1;
}

int cw_traces_infer(struct cw_traces *t, const struct cw_traces_opts *o)
{
	struct node_ctx c = {.t = t, .o = o};
	struct window *w = calloc(1, sizeof(*w));
	int32_t *link = malloc(2 * (t->n_spans + 1) * sizeof(int32_t));
	int32_t *by = NULL, *rcmap, *ccmap;
	size_t v, *first = NULL;
	int rc = 0;

	if (o->window < 1 || o->window > 256 || o->max_cands < 1 ||
	    o->max_cands > 16 || o->rounds < 1 || o->refine < 0)
		rc = cw_error("window must be 1..256 and candidates 1..16");
	c.loc = malloc((t->n_spans + 1) * sizeof(int32_t));
	if (!rc && (!w || !link || !c.loc || group_by_node(t, &by, &first, &c)))
		rc = cw_error("out of memory for inference");
	if (!rc)
		w->a = malloc(o->window * o->window * o->max_cands *
			      sizeof(double));
	if (!rc && !w->a)
		rc = cw_error("out of memory for inference");
	ti_counts_set(t, (struct ti_counts){0});
	t->n_thread_links = 0;
	t->n_ambiguous_thread = 0;
	t->rounds = 0, t->n_round_bound = 0;
	rcmap = c.rcmap, ccmap = c.ccmap;
	for (v = 0; !rc && v < t->n_names; v++) {
		int32_t *loc = c.loc, *mine = by + first[v];
		size_t n = first[v + 1] - first[v];

		memset(&c, 0, sizeof(c));
		c.t = t, c.o = o, c.loc = loc, c.rcmap = rcmap, c.ccmap = ccmap;
		rc = ctx_init(&c, (uint32_t)v, mine, n);
		if (!rc)
			rc = infer_node(&c, w, link, link + t->n_spans + 1);
		ctx_free(&c);
		maps_reset(&c, mine, n);
	}
	if (w)
		free(w->a);
	free(w), free(link), free(c.loc), free(by), free(first);
	free(rcmap), free(ccmap);
	return rc;
}
