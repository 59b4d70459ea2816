// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* One end of a connection, keyed as the correlator keys it. */
struct end_key {
	char host[CW_HOST_LEN];
	uint64_t cookie;
	uint64_t generation; /* UDP: first_ns, a flow re-created later */
	struct cw_addr raddr;
	uint16_t rport;
	uint8_t protocol;
	uint8_t pad[5];
};

/* What the windows keep of an end's newest record. */
struct end_state {
	uint32_t id;
	uint32_t flags;
	uint32_t netns, tgid;
	uint64_t start_ns;
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t role;
	uint64_t first_ns, last_ns;
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in;
};

void cw_windows_init(struct cw_windows *w, uint64_t width_ns)
{
	memset(w, 0, sizeof(*w));
	w->width_ns = width_ns;
	cw_htab_init(&w->ends, sizeof(struct end_key),
		     sizeof(struct end_state));
}

void cw_windows_release(struct cw_windows *w)
{
	cw_htab_release(&w->ends);
	free(w->deltas);
	memset(w, 0, sizeof(*w));
}

static void end_key_of(const struct cw_conn_record *r, struct end_key *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->host, sizeof(k->host), "%s", r->host);
	k->cookie = r->cookie;
	k->protocol = r->protocol;
	if (r->protocol != 6) {
		k->raddr = r->raddr;
		k->rport = r->rport;
		k->generation = r->first_ns;
	}
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static struct cw_window_delta *push(struct cw_windows *w)
{
	if (w->ndeltas == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct cw_window_delta *d =
			realloc(w->deltas, cap * sizeof(*d));

		if (!d)
			return NULL;
		w->deltas = d;
		w->cap = cap;
	}
	return &w->deltas[w->ndeltas++];
}

/* Spread d over the windows of [from, to] by time; rounding goes last. */
static int spread(struct cw_windows *w, uint32_t end, uint64_t from,
		  uint64_t to, const uint64_t d[4])
{
	uint64_t width = w->width_ns, span = to - from + 1, left[4], s, e, v;
	struct cw_window_delta *x;
	int i;

	memcpy(left, d, sizeof(left));
	for (s = from - from % width;; s += width) {
		e = to - s < width ? to : s + width - 1;
		x = push(w);
		if (!x)
			return -1;
		memset(x, 0, sizeof(*x));
		x->end = end;
		x->start_ns = s;
		for (i = 0; i < 4; i++) {
			v = left[i];
			if (e < to)
				v = (uint64_t)((unsigned __int128)d[i] *
					       (e + 1 - (s > from ? s : from)) /
					       span);
			v = v < left[i] ? v : left[i];
			left[i] -= v;
			(&x->bytes_out)[i] = v;
		}
		if (e == to)
			return 0;
	}
}

int cw_windows_add(struct cw_windows *w, const struct cw_conn_record *r)
{
	struct end_state *st;
	struct end_key k;
	uint64_t d[4], from;
	bool created;

	if (!w->width_ns)
		return 0;
	end_key_of(r, &k);
	st = cw_htab_upsert(&w->ends, &k, &created);
	if (!st)
		return -1;
	if (created) {
		st->id = (uint32_t)(w->ends.len - 1);
	} else if (r->last_ns < st->last_ns || r->bytes_out < st->bytes_out ||
		   r->bytes_in < st->bytes_in) {
		w->stale++;
		return 0;
	}
	from = created ? r->first_ns : st->last_ns;
	d[0] = sub0(r->bytes_out, st->bytes_out);
	d[1] = sub0(r->bytes_in, st->bytes_in);
	d[2] = sub0(r->msgs_out, st->msgs_out);
	d[3] = sub0(r->msgs_in, st->msgs_in);
	st->flags = r->flags;
	st->netns = r->netns;
	st->tgid = r->proc.tgid;
	st->start_ns = r->proc.start_ns;
	st->laddr = r->laddr;
	st->raddr = r->raddr;
	st->lport = r->lport;
	st->rport = r->rport;
	st->role = r->role;
	st->first_ns = r->first_ns;
	st->last_ns = r->last_ns;
	st->bytes_out = r->bytes_out;
	st->bytes_in = r->bytes_in;
	st->msgs_out = r->msgs_out;
	st->msgs_in = r->msgs_in;
	if (!(d[0] | d[1] | d[2] | d[3]))
		return 0;
	/* A delta over absurdly many windows lands in the last one. */
	if (from > r->last_ns || (r->last_ns - from) / w->width_ns > 100000)
		from = r->last_ns;
	return spread(w, st->id, from, r->last_ns, d);
}

/* ---- deltas onto the edges of the correlator's graph ------------------ */

struct node_key {
	uint8_t kind;
	uint8_t pad[3];
	uint32_t netns, tgid;
	uint16_t port;
	uint16_t pad2;
	uint64_t start_ns;
	struct cw_addr addr;
	char host[CW_HOST_LEN];
};

struct edge_key {
	uint64_t client, server;
	uint8_t protocol;
	uint8_t pad[7];
};

struct tuple_key {
	struct cw_addr l, r;
	uint16_t lport, rport;
	uint8_t protocol;
	uint8_t pad[3];
};

struct matcher {
	const struct cw_windows *w;
	struct cw_htab nodes, edges, tuples; /* tuples: -> first end */
	uint32_t *next;			     /* chain of ends per tuple */
};

static void node_key_proc(struct node_key *k, const char *host, uint32_t flags,
			  uint32_t netns, uint32_t tgid, uint64_t start_ns)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->host, sizeof(k->host), "%s", host);
	if (flags & CW_REC_NO_OWNER) {
		k->kind = CW_NODE_UNKNOWN;
		k->netns = netns;
	} else {
		k->kind = CW_NODE_PROCESS;
		k->tgid = tgid;
		k->start_ns = start_ns;
	}
}

static void node_key_ext(struct node_key *k, const struct cw_addr *a,
			 uint16_t port)
{
	memset(k, 0, sizeof(*k));
	k->kind = CW_NODE_EXTERNAL;
	k->addr = *a;
	k->port = port;
}

static void tuple_key_of(struct tuple_key *k, const struct cw_addr *l,
			 uint16_t lport, const struct cw_addr *r,
			 uint16_t rport, uint8_t protocol)
{
	memset(k, 0, sizeof(*k));
	k->l = *l;
	k->r = *r;
	k->lport = lport;
	k->rport = rport;
	k->protocol = protocol;
}

static int matcher_init(struct matcher *m, const struct cw_windows *w,
			const struct cw_graph *g)
{
	const struct end_key *ek;
	const struct end_state *es;
	struct tuple_key tk;
	struct node_key nk;
	struct edge_key k;
	uint32_t *first;
	bool created;
	size_t i, *idx;

	memset(m, 0, sizeof(*m));
	m->w = w;
	cw_htab_init(&m->nodes, sizeof(nk), sizeof(size_t));
	cw_htab_init(&m->edges, sizeof(k), sizeof(size_t));
	cw_htab_init(&m->tuples, sizeof(tk), sizeof(uint32_t));
	m->next = calloc(w->ends.len + 1, sizeof(*m->next));
	if (!m->next)
		return -1;
	for (i = 0; i < g->nnodes; i++) {
		const struct cw_node *n = &g->nodes[i];

		if (n->kind == CW_NODE_EXTERNAL)
			node_key_ext(&nk, &n->addr, n->port);
		else
			node_key_proc(&nk, n->host,
				      n->kind == CW_NODE_UNKNOWN
					      ? CW_REC_NO_OWNER
					      : 0,
				      n->netns, n->proc.tgid, n->proc.start_ns);
		idx = cw_htab_upsert(&m->nodes, &nk, NULL);
		if (!idx)
			return -1;
		*idx = i;
	}
	for (i = 0; i < g->nedges; i++) {
		memset(&k, 0, sizeof(k));
		k.client = g->edges[i].client;
		k.server = g->edges[i].server;
		k.protocol = g->edges[i].protocol;
		idx = cw_htab_upsert(&m->edges, &k, NULL);
		if (!idx)
			return -1;
		*idx = i;
	}
	for (i = 0; i < w->ends.len; i++) {
		ek = cw_htab_key(&w->ends, i);
		es = cw_htab_val(&w->ends, i);
		tuple_key_of(&tk, &es->laddr, es->lport, &es->raddr, es->rport,
			     ek->protocol);
		first = cw_htab_upsert(&m->tuples, &tk, &created);
		if (!first)
			return -1;
		m->next[i] = created ? 0 : *first;
		*first = (uint32_t)i + 1;
	}
	return 0;
}

static void matcher_release(struct matcher *m)
{
	cw_htab_release(&m->nodes);
	cw_htab_release(&m->edges);
	cw_htab_release(&m->tuples);
	free(m->next);
}

static long node_of(const struct matcher *m, const struct node_key *k)
{
	const size_t *idx = cw_htab_get(&m->nodes, k);

	return idx ? (long)*idx : -1;
}

static long edge_of(const struct matcher *m, long client, long server,
		    uint8_t protocol)
{
	struct edge_key k;
	const size_t *idx;

	if (client < 0 || server < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.client = (uint64_t)client;
	k.server = (uint64_t)server;
	k.protocol = protocol;
	idx = cw_htab_get(&m->edges, &k);
	return idx ? (long)*idx : -1;
}

static bool is_client(const struct end_state *e)
{
	if (e->role)
		return e->role == CW_REC_ROLE_CLIENT;
	return e->lport > e->rport;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The partner the correlator would pick: complementary tuple, overlapping
 * lifetime (a second of slack), opposite roles, nearest start. */
static long partner_of(const struct matcher *m, size_t i)
{
	const struct end_key *ek = cw_htab_key(&m->w->ends, i);
	const struct end_state *x = cw_htab_val(&m->w->ends, i), *y;
	const uint64_t slack = 1000000000ULL;
	long best = -1;
	uint64_t bestd = 0;
	struct tuple_key tk;
	const uint32_t *first;
	uint32_t j;

	tuple_key_of(&tk, &x->raddr, x->rport, &x->laddr, x->lport,
		     ek->protocol);
	first = cw_htab_get(&m->tuples, &tk);
	for (j = first ? *first : 0; j; j = m->next[j - 1]) {
		y = cw_htab_val(&m->w->ends, j - 1);
		if (j - 1 == i || (x->role && y->role && x->role == y->role))
			continue;
		if (x->first_ns > y->last_ns + slack ||
		    y->first_ns > x->last_ns + slack)
			continue;
		if (best < 0 || distance(x->first_ns, y->first_ns) < bestd) {
			best = (long)(j - 1);
			bestd = distance(x->first_ns, y->first_ns);
		}
	}
	return best;
}

/* Edge of end i and how its counters map: 1 paired, 0 alone, -1 none. */
static int place_end(const struct matcher *m, size_t i, long *edge,
		     bool *client)
{
	const struct end_key *ek = cw_htab_key(&m->w->ends, i), *pk;
	const struct end_state *x = cw_htab_val(&m->w->ends, i), *y;
	struct node_key nk;
	long me, other, p;

	node_key_proc(&nk, ek->host, x->flags, x->netns, x->tgid, x->start_ns);
	me = node_of(m, &nk);
	*client = is_client(x);
	p = partner_of(m, i);
	if (p >= 0) {
		pk = cw_htab_key(&m->w->ends, (size_t)p);
		y = cw_htab_val(&m->w->ends, (size_t)p);
		node_key_proc(&nk, pk->host, y->flags, y->netns, y->tgid,
			      y->start_ns);
		other = node_of(m, &nk);
		*edge = *client ? edge_of(m, me, other, ek->protocol)
				: edge_of(m, other, me, ek->protocol);
		if (*edge >= 0)
			return 1;
	}
	node_key_ext(&nk, &x->raddr, *client ? x->rport : 0);
	other = node_of(m, &nk);
	*edge = *client ? edge_of(m, me, other, ek->protocol)
			: edge_of(m, other, me, ek->protocol);
	return *edge >= 0 ? 0 : -1;
}

int cw_windows_by_edge(const struct cw_windows *w, const struct cw_graph *g,
		       struct cw_view_window **out, size_t *n,
		       uint64_t *unattributed)
{
	struct cw_view_window *res = NULL, *c;
	const struct cw_window_delta *d;
	struct matcher m;
	long *edge = NULL;
	int8_t *how = NULL;
	bool *client = NULL;
	size_t i, k = 0;
	int err = -1;

	*out = NULL;
	*n = 0;
	if (matcher_init(&m, w, g))
		goto out;
	edge = calloc(w->ends.len + 1, sizeof(*edge));
	how = calloc(w->ends.len + 1, sizeof(*how));
	client = calloc(w->ends.len + 1, sizeof(*client));
	res = calloc(w->ndeltas + 1, sizeof(*res));
	if (!edge || !how || !client || !res)
		goto out;
	for (i = 0; i < w->ends.len; i++)
		how[i] = (int8_t)place_end(&m, i, &edge[i], &client[i]);
	for (i = 0; i < w->ndeltas; i++) {
		d = &w->deltas[i];
		if (how[d->end] < 0) {
			*unattributed += d->bytes_out + d->bytes_in;
			continue;
		}
		c = &res[k++];
		c->edge = (size_t)edge[d->end];
		c->start_ns = d->start_ns;
		/* A watched partner counts its own direction. */
		if (client[d->end]) {
			c->bytes_c2s = d->bytes_out;
			c->msgs_c2s = d->msgs_out;
			if (!how[d->end]) {
				c->bytes_s2c = d->bytes_in;
				c->msgs_s2c = d->msgs_in;
			}
		} else {
			c->bytes_s2c = d->bytes_out;
			c->msgs_s2c = d->msgs_out;
			if (!how[d->end]) {
				c->bytes_c2s = d->bytes_in;
				c->msgs_c2s = d->msgs_in;
			}
		}
	}
	*out = res;
	*n = k;
	res = NULL;
	err = 0;
out:
	matcher_release(&m);
	free(edge);
	free(how);
	free(client);
	free(res);
	return err;
}
