// SPDX-License-Identifier: MIT
/*
 * Scoring against truth, with TraceWeaver's definitions: a request is
 * right at its service when every call made for it is mapped to it and no
 * other call is; a trace is right when every request in it is right.
 * Requests are counted at services that make calls.  With truth from the
 * services' own records (--truth-links), only the requests and services
 * those records name are counted: the others have no truth to score.
 * A request that made a call whose caller side the truth did not record
 * (no client span) is not counted either: its other calls alone would
 * flatter it.  A trace counts when it has a request counted.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "traces/traces.h"

enum { W_OURS = 1, W_FCFS = 2, W_TOP5 = 4, W_SCORED = 8 };

const double cw_traces_calib_lo[CW_TRACES_CALIB_BINS] = {
	0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99};

static void calibrate(struct cw_traces_eval *ev, const struct cw_tspan *x)
{
	int b = CW_TRACES_CALIB_BINS - 1;

	if (x->method != CW_LINK_TIMING)
		return;
	while (b > 0 && x->conf < cw_traces_calib_lo[b])
		b--;
	ev->calib[b].links++;
	ev->calib[b].right += x->parent == x->truth;
	ev->calib[b].conf_sum += x->conf;
}

static void mark_calls(const struct cw_traces *t, uint8_t *wrong,
		       struct cw_traces_eval *ev)
{
	struct cw_traces_score *sc = ev->node;
	size_t i, k;

	for (i = 0; i < t->n_spans; i++) {
		const struct cw_tspan *x = &t->spans[i];
		struct cw_traces_score *s = &sc[x->node];
		bool top = false;

		if (x->role != CW_ROLE_CONNECTED || x->truth < 0)
			continue;
		s->links_true++;
		s->links_found += x->parent >= 0;
		s->links_hit += x->parent == x->truth;
		s->fcfs_found += x->fcfs >= 0;
		s->fcfs_hit += x->fcfs == x->truth;
		calibrate(ev, x);
		for (k = 0; k < CW_TRACES_TOPK; k++)
			top |= x->top[k] == x->truth;
		/* A thread or lone link has no ranking: its link is its top. */
		top |= x->parent == x->truth && x->method != CW_LINK_TIMING;
		if (x->parent != x->truth) {
			wrong[x->truth] |= W_OURS;
			if (x->parent >= 0)
				wrong[x->parent] |= W_OURS;
		}
		if (x->fcfs != x->truth) {
			wrong[x->truth] |= W_FCFS;
			if (x->fcfs >= 0)
				wrong[x->fcfs] |= W_FCFS;
		}
		if (!top)
			wrong[x->truth] |= W_TOP5;
	}
}

int cw_traces_evaluate(const struct cw_traces *t, struct cw_traces_eval *ev)
{
	uint8_t *wrong = calloc(t->n_spans + 1, 1), *calls_at;
	uint8_t *tw = calloc(t->n_true_traces + 1, 1);
	struct cw_traces_score *all;
	size_t i, nn = t->n_names;

	memset(ev, 0, sizeof(*ev));
	ev->node = calloc(nn + 1, sizeof(*ev->node));
	calls_at = calloc(nn + 1, 1);
	if (!wrong || !tw || !ev->node || !calls_at) {
		free(wrong), free(tw), free(calls_at);
		return cw_error("out of memory for scores");
	}
	mark_calls(t, wrong, ev);
	for (i = 0; i < t->n_spans; i++)
		if (t->spans[i].role == CW_ROLE_CONNECTED &&
		    (!t->truth_by_links || t->spans[i].truth >= 0))
			calls_at[t->spans[i].node] = 1;
	all = &ev->node[nn];
	for (i = 0; i < t->n_spans; i++) {
		const struct cw_tspan *r = &t->spans[i];
		struct cw_traces_score *s = &ev->node[r->node];

		if (r->role != CW_ROLE_ACCEPTED ||
		    (t->truth_by_links && r->trace < 0))
			continue;
		if (r->flags & CW_TS_BLIND) {
			ev->blind++;
			continue;
		}
		if (!calls_at[r->node])
			continue;
		s->requests++;
		s->right += !(wrong[i] & W_OURS);
		s->right_fcfs += !(wrong[i] & W_FCFS);
		s->top5 += !(wrong[i] & W_TOP5);
		if (r->trace >= 0)
			tw[r->trace] |= wrong[i] | W_SCORED;
	}
	for (i = 0; i < nn; i++) {
		const struct cw_traces_score *s = &ev->node[i];

		all->requests += s->requests, all->right += s->right;
		all->right_fcfs += s->right_fcfs, all->top5 += s->top5;
		all->links_true += s->links_true;
		all->links_found += s->links_found;
		all->links_hit += s->links_hit;
		all->fcfs_found += s->fcfs_found, all->fcfs_hit += s->fcfs_hit;
	}
	for (i = 0; i < t->n_true_traces; i++) {
		if (!(tw[i] & W_SCORED))
			continue;
		ev->traces++;
		ev->traces_right += !(tw[i] & W_OURS);
		ev->traces_right_fcfs += !(tw[i] & W_FCFS);
	}
	free(wrong), free(tw), free(calls_at);
	return 0;
}

void cw_traces_eval_release(struct cw_traces_eval *ev)
{
	free(ev->node);
	memset(ev, 0, sizeof(*ev));
}
