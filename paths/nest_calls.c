// SPDX-License-Identifier: MIT
/* Nesting, step one: calls paired with their replies per connection (or
 * first in, first out), and the two views of each call linked. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/nest.h"

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

/*
 * The next connection both views hold, from cli[*i] and srv[*j] on (both
 * sorted by conn): its calls are cli[*i, *ie) and srv[*j, *je).  false
 * when either view runs out.
 */
static bool next_conn(const struct relation *r, size_t *i, size_t *j,
		      size_t *ie, size_t *je)
{
	while (*i < r->n_cli && *j < r->n_srv) {
		if (r->cli[*i].conn == r->srv[*j].conn) {
			*ie = group_end(r->cli, r->n_cli, *i);
			*je = group_end(r->srv, r->n_srv, *j);
			return true;
		}
		if (r->cli[*i].conn < r->srv[*j].conn)
			*i = group_end(r->cli, r->n_cli, *i);
		else
			*j = group_end(r->srv, r->n_srv, *j);
	}
	return false;
}

/* The callee's clock minus the caller's, plus the network: the median
 * over rank-paired calls on each connection. */
static int64_t view_offset(const struct relation *r, int64_t *d)
{
	size_t i = 0, j = 0, ie, je, k, n = 0;

	while (next_conn(r, &i, &j, &ie, &je)) {
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
	while (next_conn(r, &i, &j, &ie, &je)) {
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

void cw_nest_rel_free(struct relation *r)
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

int cw_nest_build_calls(struct nest_ctx *c)
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
