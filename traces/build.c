// SPDX-License-Identifier: MIT
/*
 * Messages -> spans: on each connection, seen at one node, a request
 * message and the reply that follows it.  Request-reply alternates; a
 * second request before the reply means overlapping requests (pipelining,
 * HTTP/2, a multiplexed RPC channel): the connection is flagged and its
 * spans left out rather than guessed.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "traces/traces.h"

static int by_conn(const void *a, const void *b)
{
	const struct cw_msg *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return (int)x->dir - (int)y->dir;
}

static int add_span(struct cw_traces *t, const struct cw_msg *req,
		    const struct cw_msg *rep, uint32_t seq)
{
	struct cw_tspan *s;
	int k;

	if (CW_GROW(t->spans, t->cap_spans, t->n_spans + 1, 1024))
		return cw_error("out of memory for %zu spans", t->n_spans);
	s = &t->spans[t->n_spans++];
	memset(s, 0, sizeof(*s));
	s->start_ns = req->start_ns;
	s->end_ns = rep->end_ns;
	s->bytes = req->bytes + rep->bytes;
	s->node = req->node, s->peer = req->peer, s->conn = req->conn;
	s->thread = req->thread, s->seq = seq, s->role = req->role;
	s->kseq = req->seq;
	s->ctx_conn = req->ctx_conn, s->ctx_seq = req->ctx_seq;
	s->ctx_open = req->ctx_open;
	s->ctx_loop = req->ctx_loop;
	s->parent = s->fcfs = s->truth = s->peer_span = s->trace = -1;
	s->ctx_req = -1;
	for (k = 0; k < CW_TRACES_TOPK; k++)
		s->top[k] = -1;
	return 0;
}

/* One (node, conn) group of messages in time order. */
static int build_conn(struct cw_traces *t, const struct cw_msg *m, size_t n)
{
	uint8_t req_dir =
		m[0].role == CW_ROLE_ACCEPTED ? CW_MSG_IN : CW_MSG_OUT;
	size_t first = t->n_spans, i;
	const struct cw_msg *open = NULL;
	uint32_t seq = 0;

	for (i = 0; i < n; i++) {
		if (m[i].role != m[0].role || m[i].peer != m[0].peer)
			return cw_error("connection %u at '%s' changes role or "
					"peer",
					m[i].conn, t->names[m[i].node]);
		if (m[i].dir == req_dir) {
			if (open) {
				t->n_multiplexed++;
				t->n_spans = first;
				return 0;
			}
			open = &m[i];
		} else if (open) {
			if (add_span(t, open, &m[i], seq++))
				return -1;
			open = NULL;
		}
	}
	if (open)
		t->n_unanswered++;
	return 0;
}

static int conn_key(const void *a, const void *b, void *arg)
{
	const struct cw_tspan *s = arg;
	const struct cw_tspan *x = &s[*(const int32_t *)a],
			      *y = &s[*(const int32_t *)b];

	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (int)x->role - (int)y->role;
}

/* Ranks either way that two ends' spans of a connection may disagree by:
 * a request one end saw and the other did not (its recording began or
 * ended between the two, as agents on two hosts attach apart). */
#define MAX_SHIFT 2

static bool inside(const struct cw_tspan *srv, const struct cw_tspan *cli)
{
	return srv->start_ns >= cli->start_ns && srv->end_ns <= cli->end_ns;
}

/*
 * One connection's spans, sorted by rank: servers' (accepted) and
 * clients' interleaved.  The client's i-th span is the server's
 * (i + shift)-th, for the shift under which most server spans lie inside
 * their client span (on one clock a request is served within its call);
 * 0 when none does better, as on a clean recording.
 */
static void pair_conn(struct cw_traces *t, const int32_t *ix, size_t n,
		      int32_t *cli, int32_t *srv)
{
	size_t nc = 0, ns = 0, i, hits, best_hits = 0;
	int k, best = 0;

	for (i = 0; i < n; i++) {
		const struct cw_tspan *s = &t->spans[ix[i]];

		if (s->role == CW_ROLE_CONNECTED)
			cli[nc++] = ix[i];
		else
			srv[ns++] = ix[i];
	}
	for (k = 0; k <= 2 * MAX_SHIFT; k++) {
		int sh = k % 2 ? (k + 1) / 2 : -(k / 2); /* 0, 1, -1, 2, -2 */

		for (hits = 0, i = 0; i < nc; i++)
			if ((long)i + sh >= 0 && (size_t)((long)i + sh) < ns &&
			    inside(&t->spans[srv[i + sh]], &t->spans[cli[i]]))
				hits++;
		if (hits > best_hits)
			best_hits = hits, best = sh;
	}
	for (i = 0; i < nc; i++) {
		struct cw_tspan *c = &t->spans[cli[i]], *v;
		long j = (long)i + best;

		if (j < 0 || (size_t)j >= ns)
			continue;
		v = &t->spans[srv[j]];
		if (v->node != c->peer)
			continue;
		c->peer_span = srv[j];
		v->peer_span = cli[i];
	}
}

/* Both ends of a connection: the call's n-th span is the server's n-th,
 * or nearly (pair_conn()). */
static int pair_ends(struct cw_traces *t)
{
	int32_t *ix = malloc((t->n_spans + 1) * 3 * sizeof(*ix));
	size_t i, j;

	if (!ix)
		return cw_error("out of memory for %zu spans", t->n_spans);
	/* ix, then the scratch of pair_conn(): each as long as the spans. */
	for (i = 0; i < t->n_spans; i++)
		ix[i] = (int32_t)i;
	qsort_r(ix, t->n_spans, sizeof(*ix), conn_key, t->spans);
	for (i = 0; i < t->n_spans; i = j) {
		for (j = i + 1; j < t->n_spans &&
				t->spans[ix[j]].conn == t->spans[ix[i]].conn;
		     j++)
			;
		pair_conn(t, ix + i, j - i, ix + t->n_spans + 1,
			  ix + 2 * (t->n_spans + 1));
	}
	free(ix);
	return 0;
}

/* Requests by node, connection and the kernel's number. */
static int kseq_cmp(const struct cw_tspan *x, const struct cw_tspan *y)
{
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	return x->kseq < y->kseq ? -1 : x->kseq > y->kseq;
}

static int by_kseq(const void *a, const void *b, void *arg)
{
	const struct cw_tspan *s = arg;

	return kseq_cmp(&s[*(const int32_t *)a], &s[*(const int32_t *)b]);
}

/*
 * Each call's context request: the span, at the call's node, of request
 * ctx_seq on connection ctx_conn.  One missing (read before the recording
 * began, its reply not recorded, or its connection left out), or not open
 * when the call began (an input at odds with itself), is counted, and its
 * call linked by timing.
 */
static int resolve_ctx(struct cw_traces *t)
{
	int32_t *ix = malloc((t->n_spans + 1) * sizeof(*ix));
	size_t i, n = 0, lo, hi, mid;
	struct cw_tspan key;
	int c;

	if (!ix)
		return cw_error("out of memory for %zu spans", t->n_spans);
	for (i = 0; i < t->n_spans; i++)
		if (t->spans[i].role == CW_ROLE_ACCEPTED && t->spans[i].kseq)
			ix[n++] = (int32_t)i;
	qsort_r(ix, n, sizeof(*ix), by_kseq, t->spans);
	for (i = 0; i < t->n_spans; i++) {
		struct cw_tspan *x = &t->spans[i];

		if (x->role != CW_ROLE_CONNECTED || !x->ctx_conn)
			continue;
		key.node = x->node, key.conn = x->ctx_conn;
		key.kseq = x->ctx_seq;
		for (lo = 0, hi = n; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			c = kseq_cmp(&t->spans[ix[mid]], &key);
			if (!c)
				break;
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* The kernel named it while it was open: on one clock it
		 * began before the call and its reply ended after. */
		if (lo < hi && t->spans[ix[mid]].start_ns <= x->start_ns &&
		    t->spans[ix[mid]].end_ns >= x->start_ns)
			x->ctx_req = ix[mid];
		t->n_ctx_missing += x->ctx_req < 0;
		/* The event loop's evidence (the request of its latest read,
		 * written in the same loop iteration) is as certain as one
		 * request open: the thread link takes it as that. */
		if (x->ctx_loop && x->ctx_req >= 0) {
			x->ctx_open = 1;
			t->n_loop_links++;
		}
	}
	free(ix);
	return 0;
}

/* Truth, where the input carried it: by connection (one call each). */
static void attach_truth(struct cw_traces *t)
{
	int32_t *req_of = NULL;
	size_t i;

	if (!t->n_truth)
		return;
	req_of = malloc(t->n_truth * sizeof(*req_of));
	if (!req_of)
		return;
	for (i = 0; i < t->n_truth; i++)
		req_of[i] = -1;
	for (i = 0; i < t->n_spans; i++)
		if (t->spans[i].role == CW_ROLE_ACCEPTED &&
		    t->spans[i].conn < t->n_truth)
			req_of[t->spans[i].conn] = (int32_t)i;
	for (i = 0; i < t->n_spans; i++) {
		struct cw_tspan *s = &t->spans[i];
		uint32_t pc;

		if (s->conn >= t->n_truth)
			continue;
		s->trace = t->truth_trace[s->conn];
		pc = t->truth_conn[s->conn];
		if (s->role == CW_ROLE_ACCEPTED && t->truth_blind[s->conn]) {
			s->flags |= CW_TS_BLIND;
			t->n_blind++;
		}
		if (s->role == CW_ROLE_CONNECTED && pc && pc < t->n_truth)
			s->truth = req_of[pc];
	}
	free(req_of);
}

/*
 * Spans in time order, ties broken by time too, never by ids (which a
 * reordered input renumbers): start, end, the other end's start and end,
 * bytes, the peer's name; the index only between spans alike in all of
 * those.
 */
int cw_traces_span_cmp(const struct cw_traces *t, int32_t a, int32_t b)
{
	const struct cw_tspan *x = &t->spans[a], *y = &t->spans[b];
	const struct cw_tspan *px = x->peer_span >= 0 ? &t->spans[x->peer_span]
						       : x,
			      *py = y->peer_span >= 0 ? &t->spans[y->peer_span]
						       : y;
	int c;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	if (px->start_ns != py->start_ns)
		return px->start_ns < py->start_ns ? -1 : 1;
	if (px->end_ns != py->end_ns)
		return px->end_ns < py->end_ns ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	c = x->peer == y->peer ? 0 : strcmp(t->names[x->peer], t->names[y->peer]);
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

int cw_traces_build(struct cw_traces *t)
{
	size_t i, j;

	if (!t->n_msgs)
		return cw_error("no messages to build spans from");
	qsort(t->msgs, t->n_msgs, sizeof(*t->msgs), by_conn);
	t->n_spans = t->n_ctx_missing = 0;
	for (i = 0; i < t->n_msgs; i = j) {
		for (j = i + 1;
		     j < t->n_msgs && t->msgs[j].node == t->msgs[i].node &&
		     t->msgs[j].conn == t->msgs[i].conn;
		     j++)
			;
		if (build_conn(t, &t->msgs[i], j - i))
			return -1;
	}
	if (!t->n_spans)
		return cw_error("no request with a reply in the input");
	if (t->n_spans >= INT32_MAX)
		return cw_error("too many spans");
	if (pair_ends(t) || (t->has_ctx && resolve_ctx(t)))
		return -1;
	attach_truth(t);
	return 0;
}
