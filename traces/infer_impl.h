/* SPDX-License-Identifier: MIT */
/*
 * Linking's inside, shared by traces/infer.c (the model, learning, the
 * choice between assignments), traces/window.c (the windowed one-to-one
 * assignment) and traces/chain.c (links from each request's chain of
 * causes).  One node at a time: a node_ctx holds its requests and calls
 * and the model being learned; a sweep takes the calls in start order.
 */
#ifndef CW_INFER_IMPL_H
#define CW_INFER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traces/traces.h"

#define NB    48 /* delay bins: two per octave of microseconds */
#define KMAX  8	 /* occurrences of one callee per request modelled */
#define INF   1e12
#define NPEND 4 /* calls out at once per request, followed */
/*
 * A link's confidence is its request's share of exp(-cost / CONF_TEMP)
 * over the call's candidates.  The cost sums its features as if each
 * were news, but they overlap (a first call's gap is its start delay;
 * start, end and gap delays move together under load), so at 1 the
 * shares were overconfident: of links given 0.99 and more, 0.94 right,
 * of those given 0.9-0.95, 0.65 (the testbed's 80% capture).  At 2,
 * mean |confidence - share right| over the bins (ECE) on the testbed's
 * six kept captures fell from 0.09-0.15 to 0.05-0.08, on the span
 * traces at 1x-4x from 0.002-0.128 to 0.021-0.113 (TrainTicket at 1x,
 * nearly all right, rose from 0.002 to 0.021); docs/causeway-traces.md.
 */
#define CONF_TEMP 2.0
#define NBUSY 4 /* state's bins: a call out or not, a reply back or not */
/* Counts are fractional: refine() spreads a call over its candidates. */
struct cell {
	float cnt, hs[NB], he[NB], hg[NB], hr[NB], hb[NBUSY], hq[NB];
};

/* A cell's -log probabilities, valid while gen is the node's; a bin's
 * when its bit in done[] (s, e, g, q, r) is set: computed when first
 * read, as a small cell reads few of its bins. */
struct ltab {
	uint32_t gen;
	float lp, lskip, ls[NB], le[NB], lg[NB], lr[NB], lq[NB], lb[NBUSY];
	uint64_t done[5];
	double d, mix, rden; /* histograms' denominator; order's mix, its */
};

/* One link's features as a sweep saw them (ti_record()): its cell and
 * bins, so a model is learned and a set of links costed without another
 * sweep. */
struct ti_rec {
	uint32_t cell;
	uint8_t s, e, g, b, q, r; /* start, end, gap, busy, queue, order */
};

/* Everything about one node while it is linked. */
struct node_ctx {
	struct cw_traces *t;
	const struct cw_traces_opts *o;
	int32_t *reqs, *calls; /* span ids, by start */
	size_t n_reqs, n_calls;
	int32_t *loc;		/* span id -> index in reqs (requests only) */
	int32_t *rcmap, *ccmap; /* node id -> request class, callee class */
	size_t n_rc, n_cc;
	uint32_t *n_req_rc;
	struct cell *cells; /* [rc][cc][KMAX] */
	struct cell *model; /* the model the assignments start from */
	struct cell *next;  /* refine()'s model being learned */
	struct ltab *ltabs; /* [cell]: its logs, computed when first used */
	uint32_t gen;	    /* bumped when the cells change */
	uint32_t *used;	    /* [req][cc]: calls given so far */
	uint64_t *last;	    /* [req]: its latest input so far: start or reply */
	uint64_t *pend;	    /* [req][NPEND]: ends of its calls still out, 0 */
	uint32_t *given;    /* [req]: calls given so far */
	uint64_t *in_t; /* input times (request starts, call ends), sorted */
	size_t n_in;
	int32_t *by_end; /* requests by end */
	size_t next_end; /* sweep: replies before it moved the position */
	uint64_t pos;	 /* sweep: the latest input that caused an output */
	size_t pos_n;	 /* inputs at or before pos */
	int32_t *active; /* open requests during a sweep */
	size_t n_active, next_req;
	size_t n_enclosing; /* enclosing()'s last call: all, kept or not */
	bool one_by_one;    /* calls assigned one at a time: gap, order fresh */
	bool anchored;	    /* some thread links: refine() counts sure calls */
	bool no_soft;	    /* refine() found too many candidates: not again */
	bool learnt;	    /* the cells are the current links' model */
	struct cw_tspan *saved; /* [call]: the other assignment's links */
	struct cw_tspan *best;	/* [call]: the most regular round's links */
	struct cw_tspan *alt;	/* [call]: the other rounds' links */
	bool no_order;		/* the order feature left out of costs */
	bool joint_far;		/* windowed assignment far behind: not run */
	bool chains_won;	/* ti_rounds_both(): the chains' start stayed */
	struct ti_rec *rec;	/* [n_rec]: the sweep's links, in call order */
	size_t n_rec;
};

/* One window of calls being assigned (traces/window.c). */
struct window {
	int32_t calls[256];
	int32_t cand[256][CW_TRACES_MAX_OPEN];
	uint32_t corder[256][CW_TRACES_MAX_OPEN]; /* order_of each */
	double ccost[256][CW_TRACES_MAX_OPEN];
	double cskip[256][CW_TRACES_MAX_OPEN]; /* its slot left empty */
	size_t n_cand[256], n;
	int32_t g_req[4096], g_call0[4096]; /* slot groups (request, callee) */
	uint32_t g_n[4096];
	size_t n_groups;
	uint32_t g_callee[4096], g_first[4096];	  /* its callee, first slot */
	uint16_t cgroup[256][CW_TRACES_MAX_OPEN]; /* each candidate's group */
	int32_t slot_g[4096];
	uint32_t slot_j[4096];
	size_t n_slots;
	double *a;
	int32_t match[256];
};

/* A call's features at a candidate request (traces/chain.c): bins of the
 * gap from the request's latest input, its state (busy: whether a call
 * of it is still out, plus 2 where a reply to one came back), and where
 * that input stands in the node's queue of inputs (0:
 * behind the last output's cause, 1: that input itself, 2 + how many
 * inputs lie between). */
struct ti_feats {
	int gap, busy, queue;
};
struct ti_feats ti_feats(const struct node_ctx *c, int32_t req, int32_t call);
int ti_bin_of(uint64_t ns); /* delay bin of ns */
/* traces/chain.c's sweep state: sized (-1: no memory), freed, reset,
 * and moved past the replies sent before `at`. */
int ti_chain_init(struct node_ctx *c);
void ti_chain_free(struct node_ctx *c);
void ti_chain_reset(struct node_ctx *c);
void ti_chain_advance(struct node_ctx *c, uint64_t at);
/* Links from the chains alone into link[] (thread links kept). */
void ti_chain_links(struct node_ctx *c, int32_t *link);

/* The request call `call` is occurrence *used_of() of its callee in. */
uint32_t *ti_used_of(struct node_ctx *c, int32_t req, int32_t call);
/* Call `call` about to be given to request `req`, `order` older
 * candidates waiting: its features appended to c->rec. */
void ti_record(struct node_ctx *c, int32_t req, int32_t call, uint32_t order);
/* Call `call` given to request `req`: its occurrence and latest event. */
void ti_note_call(struct node_ctx *c, int32_t req, int32_t call);
/* -log of: the call happens as occurrence k of its callee at request req,
 * at these delays, `order` older candidates waiting; *skip the cost of
 * the slot left empty. */
double ti_cost(struct node_ctx *c, int32_t req, int32_t call, uint32_t k,
	       uint32_t order, double *skip);
/* Sweep: the open requests enclosing call x into out[0..max), their
 * count returned (requests open at its start when none encloses it). */
size_t ti_enclosing(struct node_ctx *c, int32_t x, int32_t *out, size_t max,
		    size_t *n_open_thread, int32_t *thr_req);
uint32_t ti_order_of(struct node_ctx *c, const int32_t *cand, size_t k,
		     int32_t call);
void ti_sweep_reset(struct node_ctx *c);
/* One assignment pass over the node's calls, windows of `win` calls. */
void ti_assign(struct node_ctx *c, struct window *w, size_t win);

/* traces/infer.c, for traces/contest.c: the calls' links into link[]
 * (FCFS's, thread links only, or the current ones); the mean cost of a
 * set of links under the model they teach (*full: every feature); the
 * rounds from both starts, their kept links' cost; and the bound's
 * counters of one assignment, kept for the one that stays. */
struct ti_counts {
	size_t windows, cut, calls, cands, truth, over;
};
void ti_current_links(struct node_ctx *c, int32_t *link, bool fcfs,
		      bool thread_only);
double ti_links_cost(struct node_ctx *c, const int32_t *link, double *full);
double ti_rounds_both(struct node_ctx *c, struct window *w, int32_t *link,
		      int32_t *scratch, int only); /* 0, 1: that start only */
struct ti_counts ti_counts_get(const struct cw_traces *t);
void ti_counts_set(struct cw_traces *t, struct ti_counts k);
/* traces/contest.c: other links that compete with the rounds' (`mine`
 * their cost), kept where the node is more regular under them: FCFS's
 * whole (true if kept), then, if not, FCFS's to the first callee. */
bool ti_keep_fcfs_if_regular(struct node_ctx *c, double mine, int32_t *fcfs);
/* Whether links a stay against links b, given each set's cost with every
 * feature and without the order feature (see contest.c). */
bool ti_first_wins(double a, double a_free, double b, double b_free);
/* Mean cost of `link` under its own model without the order feature. */
double ti_links_cost_free(struct node_ctx *c, const int32_t *link);
void ti_anchor_first_callee(struct node_ctx *c, struct window *w,
			    int32_t *link, int32_t *scratch,
			    struct ti_counts base);

#endif
