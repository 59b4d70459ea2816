// SPDX-License-Identifier: MIT
/*
 * Links that compete with the timing rounds' at a node with few thread
 * links (under a quarter of its calls), by the rounds' own rule: the set
 * that makes the node the more regular (the lower mean cost, every
 * feature counted, under the model each set teaches) stays.  FCFS's
 * links whole; and FCFS's links to the callee most requests call first,
 * held as sure while the rest are re-learned around them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/infer_impl.h"

/*
 * FCFS's whole links replace timing's where they make the service more
 * regular at all.  Where timing is right, FCFS is the less regular by
 * 0.06 (the unit test's web) to 2.0 (Online Boutique's frontend); at the
 * testbed's worker pool, where FCFS is right (0.99), it is the more
 * regular by 0.005 to 0.07 on the kept captures, and a margin of 0.01
 * left the agent's 90% below FCFS (0.993 against 0.995) once the order
 * feature's uniform share fell to 0.001 (FCFS's lead there 0.027 ->
 * 0.005).  No unit test reproduces a lead that small (the simulated
 * worker pool of tests/unit/test_traces_contest.c passes with either
 * margin): the testbed's kept agent input at 90% is what shows it. */
#define FCFS_MARGIN 0.0
/* The first callee's anchored links must win by this much (nats a
 * call): they re-learn the rest, and closer is noise. */
#define ANCHOR_MARGIN 0.01
/*
 * The order feature (how many older candidates still wait for the
 * callee) is FCFS's own rule: links made by it, or started from it,
 * score it near nothing by construction (Online Boutique's frontend at
 * 8x its load: 0.09 nats a call under FCFS's links, 1.52 under the true
 * ones), and as load grows that lead outgrows what every other feature
 * says against them (FCFS 8.22 nats a call in all, the true links 8.46,
 * the chains' 8.86: FCFS's links stayed, 0.076 right end to end).
 * Without it FCFS is the less regular by 0.8 there (8.13 against the
 * chains' 7.31).  So two sets of links are compared without the order
 * feature first, and where they differ by more than this (nats a call)
 * that decides; closer, every feature does (the testbed's worker pool,
 * where FCFS is right, differs by 0.000-0.004 without it and FCFS leads
 * with it).  0.02 to 0.2 gave the same links on the span traces and the
 * testbed's kept inputs.
 */
#define ORDER_FREE_MARGIN 0.05

/*
 * The confidence of links kept from a contestant (FCFS's whole, or its
 * anchors to callee cc; -1: every timing link): each call's request's
 * share of exp(-cost / CONF_TEMP) over its candidates, as the
 * assignments give theirs, under the model those links taught (the one
 * just learned), its features as a sweep along them sees them.  The
 * rounds' confidence said how sure the rounds were of other links: at
 * the agent's event loop at 90% (plain), anchored links given under 0.5
 * were 0.98 right.
 */
static void links_conf(struct node_ctx *c, const int32_t *link, int32_t cc)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	double v[CW_TRACES_MAX_OPEN], lo, sum;
	uint32_t waiting;
	size_t i, k, n, open, at;

	ti_sweep_reset(c);
	for (i = 0; i < c->n_calls; i++) {
		int32_t x = c->calls[i], r = link[x];
		struct cw_tspan *xs = &c->t->spans[x];

		n = ti_enclosing(c, x, cand, CW_TRACES_MAX_OPEN, &open, &thr);
		if (r < 0)
			continue;
		if (xs->method == CW_LINK_TIMING && n > 1 &&
		    (cc < 0 || c->ccmap[xs->peer] == cc)) {
			for (waiting = 0, lo = INF, at = n, k = 0; k < n; k++) {
				v[k] = ti_cost(c, cand[k], x,
					       *ti_used_of(c, cand[k], x),
					       waiting, NULL);
				waiting += !*ti_used_of(c, cand[k], x);
				lo = v[k] < lo ? v[k] : lo;
				at = cand[k] == r ? k : at;
			}
			for (sum = 0, k = 0; k < n; k++)
				sum += exp((lo - v[k]) / CONF_TEMP);
			if (at < n)
				xs->conf = (float)(exp((lo - v[at]) /
						       CONF_TEMP) / sum);
		}
		ti_note_call(c, r, x);
	}
}

/* FCFS's links as a third contestant by assign_best()'s rule: where
 * more regular (FCFS_MARGIN; a sequential fan-out, a worker pool) they
 * stay, with confidences of their own (links_conf()); true then. */
bool ti_keep_fcfs_if_regular(struct node_ctx *c, double mine, int32_t *fcfs)
{
	double theirs, theirs_free, mine_free;
	size_t i;

	ti_current_links(c, fcfs, false, false);
	mine_free = ti_links_cost_free(c, fcfs);
	ti_current_links(c, fcfs, true, false);
	for (i = 0; i < c->n_calls; i++) /* thread links stay either way */
		if (c->t->spans[c->calls[i]].method == CW_LINK_THREAD)
			fcfs[c->calls[i]] = c->t->spans[c->calls[i]].parent;
	theirs_free = ti_links_cost_free(c, fcfs);
	theirs = ti_links_cost(c, fcfs, NULL);
	if (ti_first_wins(mine - FCFS_MARGIN, mine_free, theirs, theirs_free))
		return false;
	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]];

		if (x->method == CW_LINK_TIMING && x->fcfs >= 0)
			x->parent = x->fcfs;
	}
	links_conf(c, fcfs, -1);
	return true;
}

/* Links a stay against b: decided without the order feature where that
 * is clear (ORDER_FREE_MARGIN), else with every feature. */
bool ti_first_wins(double a, double a_free, double b, double b_free)
{
	if (fabs(a_free - b_free) > ORDER_FREE_MARGIN)
		return a_free < b_free;
	return a <= b;
}

/* The callee that most requests call first by FCFS's links (ties: the
 * one called earliest), so the choice never depends on ids; -1 when
 * the node has one callee. */
static int32_t first_callee(struct node_ctx *c)
{
	uint32_t *n = calloc(c->n_cc + 1, sizeof(*n));
	uint8_t *seen = calloc(c->n_reqs + c->n_cc + 1, 1), *cc_seen;
	int32_t *rank = malloc((c->n_cc + 1) * sizeof(*rank)), best = -1;
	size_t i, n_rank = 0;

	if (!n || !seen || !rank || c->n_cc < 2)
		goto out;
	cc_seen = seen + c->n_reqs;
	for (i = 0; i < c->n_calls; i++) {
		const struct cw_tspan *x = &c->t->spans[c->calls[i]];
		int32_t cc = c->ccmap[x->peer];

		if (!cc_seen[cc]) /* callees in the order of their first call */
			cc_seen[cc] = 1, rank[n_rank++] = cc;
		if (x->fcfs >= 0 && !seen[c->loc[x->fcfs]])
			seen[c->loc[x->fcfs]] = 1, n[cc]++;
	}
	for (i = 0; i < n_rank; i++)
		if (best < 0 || n[rank[i]] > n[best])
			best = rank[i];
out:
	free(n), free(seen), free(rank);
	return best;
}

/* Anchor k's link back as a timing link, its own at the top of its
 * ranking (where top-5 looks). */
static void unanchor(struct cw_tspan *x, const struct cw_tspan *was)
{
	int k, j;

	x->method = CW_LINK_TIMING;
	x->conf = was->parent == x->parent ? was->conf : 1.0f - was->conf;
	for (k = 0; k < CW_TRACES_TOPK - 1 && x->top[k] != x->parent; k++)
		;
	for (j = k; j > 0; j--)
		x->top[j] = x->top[j - 1];
	x->top[0] = x->parent;
}

/*
 * An event loop writes a request's first call while handling its
 * arrival, in arrival order: FCFS's links to that callee are right
 * (0.97-0.99 at the testbed's event loop), yet rounds that learn the
 * order from their own links drift from it (0.89).  So those links are
 * held as sure, as thread links are (which stay), and the rounds
 * re-learn the rest around them; the result stays where the node is
 * more regular under it by ANCHOR_MARGIN.  `base`: the bound's counters
 * before the node.
 */
void ti_anchor_first_callee(struct node_ctx *c, struct window *w,
			    int32_t *link, int32_t *scratch,
			    struct ti_counts base)
{
	struct ti_counts mine_k = ti_counts_get(c->t);
	struct cw_tspan *was;
	int32_t cc = first_callee(c);
	size_t i, n = 0, moved = 0, bound = c->t->n_round_bound;
	double mine, theirs;

	if (cc < 0 || !(was = malloc(c->n_calls * sizeof(*was))))
		return;
	ti_current_links(c, link, false, false);
	mine = ti_links_cost(c, link, NULL);
	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]];

		was[i] = *x;
		if (c->ccmap[x->peer] == cc && x->method == CW_LINK_TIMING &&
		    x->fcfs >= 0) {
			moved += x->parent != x->fcfs;
			x->parent = x->fcfs, x->method = CW_LINK_THREAD, n++;
		}
	}
	theirs = INF;
	if (n && moved) { /* anchors that move nothing teach nothing */
		ti_current_links(c, link, false, true);
		c->no_soft = true, c->learnt = false;
		ti_counts_set(c->t, base);
		theirs = ti_rounds_both(c, w, link, scratch, c->chains_won);
	}
	for (i = 0; i < c->n_calls; i++) {
		struct cw_tspan *x = &c->t->spans[c->calls[i]];

		if (theirs + ANCHOR_MARGIN >= mine)
			*x = was[i];
		else if (was[i].method == CW_LINK_TIMING &&
			 x->method == CW_LINK_THREAD)
			unanchor(x, &was[i]);
	}
	if (theirs + ANCHOR_MARGIN < mine) { /* kept: the anchors' own */
		ti_current_links(c, link, false, false);
		ti_links_cost(c, link, NULL);
		links_conf(c, link, cc);
	}
	if (theirs + ANCHOR_MARGIN >= mine) {
		ti_counts_set(c->t, mine_k);
		c->t->n_round_bound = bound;
	}
	free(was);
}
