// SPDX-License-Identifier: MIT
/*
 * A request's chain of causes at a node.  Every output of a service (a
 * call, or a request's reply) is caused by one input of the same request
 * (its arrival, or the reply to one of its earlier calls).  Two features
 * of a candidate request follow from the links given so far in a sweep:
 * the gap from its latest input to the call (and whether a call of it is
 * still out), and where that input stands in the node's queue of inputs.
 * An event loop handles its inputs in arrival order and writes each
 * handler's outputs before the next input, so the cause of its next
 * output is at or just after the input the last output came from; a
 * thread pool's is anywhere.  Both are learned, never assumed.
 */
#include <stdlib.h>
#include <string.h>

#include "traces/infer_impl.h"

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int by_end(const void *a, const void *b, void *arg)
{
	const struct cw_traces *t = arg;
	const struct cw_tspan *x = &t->spans[*(const int32_t *)a];
	const struct cw_tspan *y = &t->spans[*(const int32_t *)b];

	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return cw_traces_span_cmp(t, *(const int32_t *)a, *(const int32_t *)b);
}

int ti_chain_init(struct node_ctx *c)
{
	size_t i, n = 0;

	c->in_t = malloc((c->n_reqs + c->n_calls + 1) * sizeof(uint64_t));
	c->by_end = malloc((c->n_reqs + 1) * sizeof(int32_t));
	c->pend = calloc((c->n_reqs + 1) * NPEND, sizeof(uint64_t));
	c->given = calloc(c->n_reqs + 1, sizeof(uint32_t));
	if (!c->in_t || !c->by_end || !c->pend || !c->given)
		return -1;
	for (i = 0; i < c->n_reqs; i++) {
		c->in_t[n++] = c->t->spans[c->reqs[i]].start_ns;
		c->by_end[i] = c->reqs[i];
	}
	for (i = 0; i < c->n_calls; i++)
		c->in_t[n++] = c->t->spans[c->calls[i]].end_ns;
	c->n_in = n;
	qsort(c->in_t, n, sizeof(uint64_t), by_u64);
	qsort_r(c->by_end, c->n_reqs, sizeof(int32_t), by_end, c->t);
	return 0;
}

void ti_chain_free(struct node_ctx *c)
{
	free(c->in_t), free(c->by_end), free(c->pend), free(c->given);
}

void ti_chain_reset(struct node_ctx *c)
{
	size_t i;

	memset(c->pend, 0, c->n_reqs * NPEND * sizeof(*c->pend));
	memset(c->given, 0, c->n_reqs * sizeof(*c->given));
	for (i = 0; i < c->n_reqs; i++)
		c->last[i] = c->t->spans[c->reqs[i]].start_ns;
	c->pos = 0, c->pos_n = 0;
	c->next_end = 0;
}

/* Request req's latest input by `at`; *busy: a call of it still out;
 * *out (if wanted): how many. */
static uint64_t latest_in(const struct node_ctx *c, int32_t req, uint64_t at,
			  bool *busy, uint32_t *out)
{
	uint64_t l = c->last[c->loc[req]];
	const uint64_t *p = &c->pend[(size_t)c->loc[req] * NPEND];
	uint32_t n = 0;
	int i;

	for (i = 0; i < NPEND; i++)
		if (p[i] && p[i] <= at)
			l = p[i] > l ? p[i] : l;
		else if (p[i])
			n++;
	*busy = n > 0;
	if (out)
		*out = n;
	return l;
}

/* Inputs at or before `at`, given that those before `lo` are: a gallop
 * from lo, then halving (the answer is most often near lo). */
static size_t inputs_from(const struct node_ctx *c, size_t lo, uint64_t at)
{
	size_t step = 1, hi;

	while (lo + step <= c->n_in && c->in_t[lo + step - 1] <= at)
		lo += step, step *= 2;
	hi = lo + step - 1 < c->n_in ? lo + step - 1 : c->n_in;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->in_t[mid] <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The replies sent before `at` were caused by their requests' latest
 * inputs: the queue's position moves past them. */
void ti_chain_advance(struct node_ctx *c, uint64_t at)
{
	bool busy;

	while (c->next_end < c->n_reqs &&
	       c->t->spans[c->by_end[c->next_end]].end_ns < at) {
		int32_t r = c->by_end[c->next_end++];
		uint64_t l =
			latest_in(c, r, c->t->spans[r].end_ns, &busy, NULL);

		if (l > c->pos)
			c->pos = l, c->pos_n = inputs_from(c, c->pos_n, l);
	}
}

struct ti_feats ti_feats(const struct node_ctx *c, int32_t req, int32_t call)
{
	uint64_t at = c->t->spans[call].start_ns;
	struct ti_feats f;
	bool busy;
	uint32_t out, back;
	uint64_t l = latest_in(c, req, at, &busy, &out);
	size_t q;

	f.gap = ti_bin_of(at > l ? at - l : 0);
	/* A call still out, and whether a reply came back: an event loop
	 * fanning out to b and c once a's reply is in has a call out when it
	 * writes c, as has a request still waiting for a (fan-out testbed:
	 * 0.920 -> 0.924 with the agent at 80%, 0.825 -> 0.882 from the
	 * capture).  Replies back beyond one teach no more (0.929 and 0.804
	 * counting up to three; Online Boutique at 4x lost 0.028). */
	back = c->given[c->loc[req]] - out;
	f.busy = (int)busy + 2 * (back > 0);
	if (l < c->pos) {
		f.queue = 0; /* behind the queue: not an event loop's */
	} else if (l == c->pos) {
		f.queue = 1; /* the last output's input: sent together */
	} else {
		/* inputs after the position, before this one */
		q = inputs_from(c, c->pos_n, l) - c->pos_n - 1;
		f.queue = q < NB - 3 ? (int)q + 2 : NB - 1;
	}
	return f;
}

void ti_note_call(struct node_ctx *c, int32_t req, int32_t call)
{
	uint64_t *l = &c->last[c->loc[req]], at = c->t->spans[call].start_ns;
	uint64_t *p = &c->pend[(size_t)c->loc[req] * NPEND];
	int i, lo = 0;

	(*ti_used_of(c, req, call))++;
	c->given[c->loc[req]]++;
	for (i = 0; i < NPEND; i++) {
		if (p[i] && p[i] <= at) /* came back: the latest input */
			*l = p[i] > *l ? p[i] : *l, p[i] = 0;
		if (p[i] < p[lo])
			lo = i;
	}
	if (*l > c->pos)
		c->pos = *l, c->pos_n = inputs_from(c, c->pos_n, *l);
	if (p[lo]) /* all out: the earliest taken as back */
		*l = p[lo] > *l ? p[lo] : *l;
	p[lo] = c->t->spans[call].end_ns;
}

/*
 * Links from the chains alone, where rounds start without FCFS: each call
 * to the candidate whose latest input came last before it, one with no
 * call still out first (ties: the older request).  FCFS's links teach
 * that a call's request is often busy, which a sequential or
 * event-driven handler is only while it fans out; these teach chains.
 */
void ti_chain_links(struct node_ctx *c, int32_t *link)
{
	int32_t cand[CW_TRACES_MAX_OPEN], thr;
	size_t i, k, n, open;

	ti_sweep_reset(c);
	for (i = 0; i < c->n_calls; i++) {
		int32_t x = c->calls[i], best = -1;
		uint64_t at = c->t->spans[x].start_ns, lo = UINT64_MAX;

		n = ti_enclosing(c, x, cand, CW_TRACES_MAX_OPEN, &open, &thr);
		if (c->t->spans[x].method == CW_LINK_THREAD)
			best = c->t->spans[x].parent;
		for (k = 0; best < 0 && k < n; k++) {
			bool busy;
			uint64_t l = latest_in(c, cand[k], at, &busy, NULL);
			uint64_t v = (at > l ? at - l : 0) +
				     (busy ? UINT64_MAX / 2 : 0);

			if (v < lo)
				lo = v, best = -2 - (int32_t)k;
		}
		if (best <= -2)
			best = cand[-2 - best];
		link[x] = best;
		if (best >= 0)
			ti_note_call(c, best, x);
	}
}
