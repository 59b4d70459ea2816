// SPDX-License-Identifier: MIT
/*
 * Traffic per time window: each end's cumulative counters spread over the
 * windows between its records, then put on the edges of the graph its
 * pairing built (correlator/pipeline.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/bucket_impl.h"
#include "correlator/pipeline.h"

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
	uint64_t sampled_out, sampled_in; /* see cw_window_delta */
};

/* The counters a delta carries, in cw_window_delta's order from
 * bytes_out. */
#define NVAL 6

void cw_windows_init(struct cw_windows *w, uint64_t width_ns)
{
	memset(w, 0, sizeof(*w));
	w->width_ns = width_ns;
	w->max_deltas = CW_WINDOWS_MAX_DELTAS;
	cw_htab_init(&w->ends, sizeof(struct cw_end_id),
		     sizeof(struct end_state));
}

void cw_windows_release(struct cw_windows *w)
{
	cw_htab_release(&w->ends);
	free(w->deltas);
	free(w->edge);
	free(w->client);
	free(w->paired);
	memset(w, 0, sizeof(*w));
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static struct cw_window_delta *push(struct cw_windows *w)
{
	if (CW_GROW(w->deltas, w->cap, w->ndeltas + 1, 1024))
		return NULL;
	return &w->deltas[w->ndeltas++];
}

/* Spread d over the windows of [from, to] by time; rounding goes last. */
static int spread(struct cw_windows *w, uint32_t end, uint32_t flags,
		  uint64_t from, uint64_t to, const uint64_t d[NVAL])
{
	uint64_t width = w->width_ns, span = to - from + 1, left[NVAL], s, e, v;
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
		x->flags = flags;
		x->start_ns = s;
		for (i = 0; i < NVAL; i++) {
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

/*
 * The bytes of r whose messages its agent counted: its sampled_ppm of each
 * direction, all of them where the record has no estimate block (ppm 0 and
 * not flagged), as correlator/graph.c reads it for the edges.
 */
static void sampled_of(const struct cw_conn_record *r, uint64_t *out,
		       uint64_t *in, uint32_t *flags)
{
	bool est = r->flags & CW_REC_MSGS_EST;
	uint32_t ppm = r->sampled_ppm || est ? r->sampled_ppm : CW_PPM;

	*out = (uint64_t)((double)r->bytes_out * ppm / CW_PPM + 0.5);
	*in = (uint64_t)((double)r->bytes_in * ppm / CW_PPM + 0.5);
	*flags = (est ? CW_WD_MSGS_EST : 0) |
		 (r->sampled_ppm || est ? CW_WD_SAMPLED : 0);
}

int cw_windows_add(struct cw_windows *w, const struct cw_conn_record *r)
{
	struct end_state *st;
	struct cw_end_id k;
	uint64_t d[NVAL], from, s_out, s_in;
	uint32_t flags;
	bool created;

	if (!w->width_ns)
		return 0;
	cw_end_id_of(r, &k);
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
	sampled_of(r, &s_out, &s_in, &flags);
	d[4] = sub0(s_out, st->sampled_out);
	d[5] = sub0(s_in, st->sampled_in);
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
	st->sampled_out = s_out;
	st->sampled_in = s_in;
	if (!(d[0] | d[1] | d[2] | d[3]))
		return 0;
	/* A delta over absurdly many windows lands in the last one. */
	if (from > r->last_ns)
		from = r->last_ns;
	if ((r->last_ns - from) / w->width_ns > CW_WINDOWS_SPAN_MAX ||
	    (from < r->last_ns &&
	     w->ndeltas + (r->last_ns - from) / w->width_ns + 1 >
		     w->max_deltas)) {
		from = r->last_ns;
		w->lumped++;
	}
	return spread(w, st->id, flags, from, r->last_ns, d);
}

/* ---- deltas onto the edges of the correlator's graph ------------------ */

/* Nodes are keyed as the buckets key them (struct cw_node_key). */
struct win_edge_key {
	uint64_t client, server;
	uint8_t protocol;
	uint8_t pad[7];
};

/* The graph's nodes and edges by key. */
struct matcher {
	struct cw_htab nodes, edges;
};

static void node_key_proc(struct cw_node_key *k, const char *host, bool unknown,
			  uint32_t netns, uint32_t tgid, uint64_t start_ns)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->host, sizeof(k->host), "%s", host);
	if (unknown) {
		k->kind = CW_NODE_UNKNOWN;
		k->netns = netns;
	} else {
		k->kind = CW_NODE_PROCESS;
		k->tgid = tgid;
		k->start_ns = start_ns;
	}
}

static void node_key_ext(struct cw_node_key *k, const struct cw_addr *a,
			 uint16_t port)
{
	memset(k, 0, sizeof(*k));
	k->kind = CW_NODE_EXTERNAL;
	k->addr = *a;
	k->port = port;
}

static int matcher_init(struct matcher *m, const struct cw_graph *g)
{
	const struct cw_node *n;
	struct cw_node_key nk;
	struct win_edge_key k;
	size_t i, *idx;

	cw_htab_init(&m->nodes, sizeof(nk), sizeof(size_t));
	cw_htab_init(&m->edges, sizeof(k), sizeof(size_t));
	for (i = 0; i < g->nnodes; i++) {
		n = &g->nodes[i];
		if (n->kind == CW_NODE_EXTERNAL)
			node_key_ext(&nk, &n->addr, n->port);
		else
			node_key_proc(&nk, n->host, n->kind == CW_NODE_UNKNOWN,
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
	return 0;
}

static void matcher_release(struct matcher *m)
{
	cw_htab_release(&m->nodes);
	cw_htab_release(&m->edges);
}

static long node_of(const struct matcher *m, const struct cw_node_key *k)
{
	const size_t *idx = cw_htab_get(&m->nodes, k);

	return idx ? (long)*idx : -1;
}

static long edge_of(const struct matcher *m, long client, long server,
		    uint8_t protocol)
{
	struct win_edge_key k;
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

/* The node of the partner the pairing chose for end *id, or -1. */
static long partner_node(const struct matcher *m, const struct cw_pairing *p,
			 const struct cw_end_id *id)
{
	long i = cw_pairing_find_id(p, id), q;
	struct cw_end_owner o;
	struct cw_node_key nk;

	if (i < 0 || !p->partner || (q = p->partner[i]) < 0)
		return -1;
	cw_pairing_owner(p, (size_t)q, &o);
	node_key_proc(&nk, o.host, o.unknown, o.netns, o.proc.tgid,
		      o.proc.start_ns);
	return node_of(m, &nk);
}

/* Edge of end i and whether its partner was watched. */
static void place_end(struct cw_windows *w, const struct matcher *m,
		      const struct cw_pairing *p, size_t i)
{
	const struct cw_end_id *id = cw_htab_key(&w->ends, i);
	const struct end_state *x = cw_htab_val(&w->ends, i);
	bool client = is_client(x);
	struct cw_node_key nk;
	long me, other, e = -1;

	node_key_proc(&nk, id->host, x->flags & CW_REC_NO_OWNER, x->netns,
		      x->tgid, x->start_ns);
	me = node_of(m, &nk);
	w->client[i] = client;
	w->paired[i] = 0;
	other = partner_node(m, p, id);
	if (other >= 0)
		e = client ? edge_of(m, me, other, id->protocol)
			   : edge_of(m, other, me, id->protocol);
	if (e >= 0) {
		w->paired[i] = 1;
	} else {
		node_key_ext(&nk, &x->raddr, client ? x->rport : 0);
		other = node_of(m, &nk);
		e = client ? edge_of(m, me, other, id->protocol)
			   : edge_of(m, other, me, id->protocol);
	}
	w->edge[i] = e;
}

int cw_windows_place(struct cw_windows *w, const struct cw_graph *g,
		     const struct cw_pairing *p)
{
	size_t n = w->ends.len, i;
	struct matcher m;
	int err = -1;

	free(w->edge);
	free(w->client);
	free(w->paired);
	w->edge = malloc((n + 1) * sizeof(*w->edge));
	w->client = malloc(n + 1);
	w->paired = malloc(n + 1);
	if (matcher_init(&m, g) || !w->edge || !w->client || !w->paired)
		goto out;
	for (i = 0; i < n; i++)
		place_end(w, &m, p, i);
	err = 0;
out:
	matcher_release(&m);
	return err;
}

/* Delta d on its end's edge: a watched partner counts its own direction. */
static void put_delta(const struct cw_windows *w,
		      const struct cw_window_delta *d, struct cw_view_window *c)
{
	bool alone = !w->paired[d->end];
	/* A change's share of a window can round to nothing: it then says
	 * nothing about how that window was counted. */
	bool any = d->bytes_out | d->bytes_in | d->msgs_out | d->msgs_in;

	c->edge = (size_t)w->edge[d->end];
	c->start_ns = d->start_ns;
	c->msgs_est = any && (d->flags & CW_WD_MSGS_EST);
	c->has_sampled = any && (d->flags & CW_WD_SAMPLED);
	c->sampled_bytes = d->sampled_out + (alone ? d->sampled_in : 0);
	if (w->client[d->end]) {
		c->bytes_c2s = d->bytes_out;
		c->msgs_c2s = d->msgs_out;
		if (alone) {
			c->bytes_s2c = d->bytes_in;
			c->msgs_s2c = d->msgs_in;
		}
	} else {
		c->bytes_s2c = d->bytes_out;
		c->msgs_s2c = d->msgs_out;
		if (alone) {
			c->bytes_c2s = d->bytes_in;
			c->msgs_c2s = d->msgs_in;
		}
	}
}

int cw_windows_by_edge(const struct cw_windows *w, struct cw_edge_windows *out)
{
	struct cw_view_window *res = NULL;
	const struct cw_window_delta *d;
	size_t i, k = 0;

	memset(out, 0, sizeof(*out));
	out->width_ns = w->width_ns;
	if (!w->width_ns)
		return 0;
	res = calloc(w->ndeltas + 1, sizeof(*res));
	if (!res)
		return -1;
	for (i = 0; i < w->ndeltas; i++) {
		d = &w->deltas[i];
		if (!w->edge || w->edge[d->end] < 0) {
			out->unattributed += d->bytes_out + d->bytes_in;
			continue;
		}
		put_delta(w, d, &res[k++]);
	}
	out->cells = res;
	out->n = k;
	return 0;
}

int cw_windows_view(const struct cw_windows *w, struct cw_view *v,
		    const struct cw_graph *g, enum cw_group_by by)
{
	struct cw_edge_windows ew;
	int err;

	if (cw_windows_by_edge(w, &ew))
		return cw_error("out of memory building the %s graph",
				cw_group_by_name(by));
	err = cw_view_build(v, g, by, &ew);
	cw_edge_windows_release(&ew);
	return err;
}
