// SPDX-License-Identifier: MIT
/*
 * The windowed assignment: calls in start order, a window at a time, each
 * window one minimum-cost one-to-one assignment (Hungarian) of its calls
 * to slots (request, callee, occurrence), a slot left empty paying the
 * learned cost of skipping that call; candidates past the bound are cut
 * and counted.
 */
#include <math.h>
#include <string.h>

#include "traces/infer_impl.h"

static size_t group_of(struct node_ctx *c, struct window *w, int32_t r,
		       int32_t x)
{
	size_t g;
	uint32_t callee = c->t->spans[x].peer;

	for (g = 0; g < w->n_groups; g++)
		if (w->g_req[g] == r && w->g_callee[g] == callee)
			return g;
	w->g_req[g] = r, w->g_call0[g] = x, w->g_n[g] = 0;
	w->g_callee[g] = callee;
	w->n_groups++;
	return g;
}

/* Slots: per (request, callee), as many as calls could fill them. */
static void make_slots(struct node_ctx *c, struct window *w)
{
	size_t i, k, g;
	uint32_t j;

	w->n_groups = w->n_slots = 0;
	for (i = 0; i < w->n; i++)
		for (k = 0; k < w->n_cand[i]; k++) {
			g = group_of(c, w, w->cand[i][k], w->calls[i]);
			w->cgroup[i][k] = (uint16_t)g;
			if (w->g_n[g] < KMAX)
				w->g_n[g]++;
		}
	for (g = 0; g < w->n_groups; g++)
		for (w->g_first[g] = (uint32_t)w->n_slots, j = 0; j < w->g_n[g];
		     j++) {
			w->slot_g[w->n_slots] = (int32_t)g;
			w->slot_j[w->n_slots++] = j;
		}
}

/* Call i's row of costs: INF but at the slots of its candidates' groups
 * (request, its callee), the only ones it can fill. */
static void slot_costs(struct node_ctx *c, struct window *w, size_t i)
{
	double *row = &w->a[i * w->n_slots], skip, v;
	int32_t x = w->calls[i];
	size_t k, s;

	for (s = 0; s < w->n_slots; s++)
		row[s] = INF;
	for (k = 0; k < w->n_cand[i]; k++) {
		size_t g = w->cgroup[i][k];
		int32_t r = w->g_req[g];

		for (s = w->g_first[g]; s < w->g_first[g] + w->g_n[g]; s++) {
			v = ti_cost(c, r, x,
				    *ti_used_of(c, r, x) + w->slot_j[s],
				    w->corder[i][k], &skip);
			row[s] = v - skip;
		}
	}
}

/*
 * A window of one call: what make_slots(), slot_cost() and the Hungarian
 * would give, without them.  Its slots are one per candidate, in ranked
 * order, each costing rank()'s cost less its skip; the Hungarian on one
 * row takes the first least.
 */
static void one_alone(struct window *w)
{
	size_t k, best = 0;
	double lo = INF * 2, v;

	for (k = 0; k < w->n_cand[0]; k++) {
		v = w->ccost[0][k] - w->cskip[0][k];
		w->g_req[k] = w->cand[0][k];
		w->slot_g[k] = (int32_t)k;
		w->a[k] = v;
		if (v < lo)
			lo = v, best = k;
	}
	w->n_groups = w->n_slots = w->n_cand[0];
	w->match[0] = (int32_t)best;
}

/* The window's links; `record`: each noted as learn() would (ti_record(),
 * right only for windows of one, where nothing moves in between). */
static void solve_window(struct node_ctx *c, struct window *w, bool record)
{
	size_t i, s, k, best;
	double sum, v;

	if (w->n == 1) {
		one_alone(w);
	} else {
		make_slots(c, w);
		for (i = 0; i < w->n; i++)
			slot_costs(c, w, i);
		if (cw_traces_hungarian(w->a, w->n, w->n_slots, w->match))
			for (i = 0; i < w->n; i++)
				w->match[i] = -1; /* no memory: each alone */
	}
	for (i = 0; i < w->n; i++) {
		struct cw_tspan *x = &c->t->spans[w->calls[i]];
		int32_t r;

		s = (size_t)w->match[i];
		if (w->match[i] < 0 || w->a[i * w->n_slots + s] >= INF / 2)
			r = w->cand[i][0]; /* capped slots: best alone */
		else
			r = w->g_req[w->slot_g[s]];
		for (sum = 0, best = 0, k = 0; k < w->n_cand[i]; k++) {
			v = exp((w->ccost[i][0] - w->ccost[i][k]) / CONF_TEMP);
			sum += v;
			if (w->cand[i][k] == r)
				best = k;
		}
		x->parent = r;
		if (record)
			ti_record(c, r, w->calls[i], w->corder[i][best]);
		x->method =
			w->n_cand[i] == 1 ? CW_LINK_CONTAINED : CW_LINK_TIMING;
		x->conf = (float)(exp((w->ccost[i][0] - w->ccost[i][best]) /
				      CONF_TEMP) /
				  sum);
	}
	for (i = 0; i < w->n; i++) {
		int32_t x = w->calls[i], r = c->t->spans[x].parent;

		ti_note_call(c, r, x);
	}
	w->n = 0;
}

/* Candidates of call i, best first by their own cost (ties: the older),
 * only the best o->max_cands (5 at least) in place: note_cut() keeps
 * those, top-5 the first 5.  An insertion that drops what falls past
 * the bound orders the kept ones as a whole stable sort would. */
static void rank(struct node_ctx *c, struct window *w, size_t i)
{
	struct {
		double cost, skip;
		int32_t req;
		uint32_t order;
	} e, top[CW_TRACES_MAX_OPEN];
	size_t a, b, k, kept = 0, lim = c->o->max_cands;

	if (lim < CW_TRACES_TOPK) /* top-5 ranks past a smaller bound */
		lim = CW_TRACES_TOPK;

	if (w->n_cand[i] == 1) { /* alone: its costs decide nothing */
		w->ccost[i][0] = w->cskip[i][0] = 0;
		c->t->spans[w->calls[i]].top[0] = w->cand[i][0];
		for (k = 1; k < CW_TRACES_TOPK; k++)
			c->t->spans[w->calls[i]].top[k] = -1;
		return;
	}
	for (a = 0; a < w->n_cand[i]; a++) {
		e.req = w->cand[i][a], e.order = w->corder[i][a];
		e.cost = ti_cost(c, e.req, w->calls[i],
				 *ti_used_of(c, e.req, w->calls[i]), e.order,
				 &e.skip);
		if (kept == lim && !(e.cost < top[kept - 1].cost))
			continue; /* past the bound */
		for (b = kept < lim ? kept++ : lim - 1;
		     b > 0 && e.cost < top[b - 1].cost; b--)
			top[b] = top[b - 1];
		top[b] = e;
	}
	for (k = 0; k < kept; k++) {
		w->ccost[i][k] = top[k].cost, w->cskip[i][k] = top[k].skip;
		w->cand[i][k] = top[k].req, w->corder[i][k] = top[k].order;
	}
	for (k = 0; k < CW_TRACES_TOPK; k++)
		c->t->spans[w->calls[i]].top[k] = k < kept ? top[k].req : -1;
}

/* Does request r enclose call x (a candidate by ti_enclosing())? */
static bool encloses(const struct cw_tspan *r, const struct cw_tspan *x)
{
	return r->start_ns <= x->start_ns && r->end_ns >= x->end_ns;
}

/* The bound said: call i kept its best maxc of n ranked candidates, of at
 * most CW_TRACES_MAX_OPEN; counts the dropped and whether the true request
 * was among them (scoring only: the links never read truth). */
static bool note_cut(struct node_ctx *c, struct window *w, size_t i, size_t n)
{
	struct cw_traces *t = c->t;
	struct cw_tspan *x = &t->spans[w->calls[i]];
	size_t maxc = c->o->max_cands, keep = n > maxc ? maxc : n, k;
	bool kept = false;

	x->flags &= (uint8_t) ~(CW_TS_CUT | CW_TS_CUT_TRUTH);
	t->n_over_open += c->n_enclosing > n;
	if (n <= maxc && c->n_enclosing <= n)
		return false;
	x->flags |= CW_TS_CUT;
	t->n_cut_calls++;
	t->n_cut_cands +=
		n - keep + (c->n_enclosing > n ? c->n_enclosing - n : 0);
	for (k = 0; k < keep; k++)
		kept |= w->cand[i][k] == x->truth;
	if (x->truth >= 0 && !kept && encloses(&t->spans[x->truth], x)) {
		x->flags |= CW_TS_CUT_TRUTH;
		t->n_cut_truth++;
	}
	w->n_cand[i] = keep;
	return true;
}

/* One assignment pass over the node's calls with the current model, in
 * windows of `win` calls. */
void ti_assign(struct node_ctx *c, struct window *w, size_t win)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	size_t i, k, n, open;
	uint32_t waiting;
	bool cut = false;

	ti_sweep_reset(c);
	w->n = 0;
	for (i = 0; i < c->n_calls; i++) {
		int32_t x = c->calls[i];
		struct cw_tspan *xs = &c->t->spans[x];

		n = ti_enclosing(c, x, cand, CW_TRACES_MAX_OPEN, &open, &thr);
		if (xs->method == CW_LINK_THREAD) {
			for (k = 0; k < n && cand[k] != xs->parent; k++)
				;
			if (win == 1)
				ti_record(c, xs->parent, x,
					  k < n ? ti_order_of(c, cand, k, x)
						: NB - 1);
			ti_note_call(c, xs->parent, x);
			continue;
		}
		xs->parent = -1, xs->method = CW_LINK_NONE, xs->conf = 0;
		if (!n)
			continue;
		w->calls[w->n] = x;
		w->n_cand[w->n] = n;
		for (waiting = 0, k = 0; k < n; k++) { /* ti_order_of() */
			w->cand[w->n][k] = cand[k];
			w->corder[w->n][k] = waiting;
			waiting += !*ti_used_of(c, cand[k], x);
		}
		rank(c, w, w->n);
		cut |= note_cut(c, w, w->n, n);
		if (++w->n == win) {
			c->t->n_windows++, c->t->n_cut += cut, cut = false;
			solve_window(c, w, win == 1);
		}
	}
	if (w->n) {
		c->t->n_windows++, c->t->n_cut += cut;
		solve_window(c, w, win == 1);
	}
}
