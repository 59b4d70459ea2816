// SPDX-License-Identifier: MIT
/*
 * The time buckets' nodes, interned and compacted; and the buckets in
 * checkpoints: a pairing's live and dormant ends, open buckets' deltas
 * and sealed totals as chunks of a StateChunk record each, and back.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/bucket_impl.h"
#include "correlator/correlator.h"
#include "correlator/pair_impl.h"

/* ---- nodes --------------------------------------------------------------- */

static void node_key_of(const struct cw_edge_node *n, struct cw_node_key *k)
{
	memset(k, 0, sizeof(*k));
	k->kind = n->kind;
	if (n->kind == CW_EDGE_NODE_EXTERNAL) {
		k->addr = n->addr;
		k->port = n->port;
		return;
	}
	memcpy(k->host, n->host, strnlen(n->host, sizeof(k->host) - 1));
	if (n->kind == CW_EDGE_NODE_UNKNOWN) {
		k->netns = n->netns;
	} else {
		k->tgid = n->proc.tgid;
		k->start_ns = n->proc.start_ns;
	}
}

long cw_buckets_node(struct cw_buckets *b, const struct cw_edge_node *n)
{
	struct cw_node_key k;
	struct cw_edge_node *v;
	bool created;

	node_key_of(n, &k);
	v = cw_htab_upsert(&b->nodes, &k, &created);
	if (!v)
		return -1;
	if (created)
		*v = *n;
	/* Its place in the dense entries: no second lookup. */
	return (long)(((unsigned char *)v -
		       (unsigned char *)cw_htab_val(&b->nodes, 0)) /
		      b->nodes.entry_size);
}

/*
 * The owners' nodes through a renumbering (id[] as cw_buckets_keep_nodes()
 * takes it, before it is rewritten): those kept, the others -1.  Their
 * new ids are put in by owners_renumbered() once the nodes moved.  NULL
 * with *ok false when out of memory.
 */
static long *owners_kept(const struct cw_buckets *b, const uint32_t *id,
			 bool *ok)
{
	long *on, v;
	size_t o;

	*ok = true;
	if (!b->owner_nodes)
		return NULL;
	on = malloc(b->owner_nodes * sizeof(*on));
	if (!on) {
		*ok = false;
		return NULL;
	}
	for (o = 0; o < b->owner_nodes; o++) {
		v = b->owner_node[o];
		on[o] = v >= 0 && (size_t)v < b->nodes.len && !id[v] ? v : -1;
	}
	return on;
}

static void owners_renumbered(struct cw_buckets *b, long *on, size_t n,
			      const uint32_t *id)
{
	size_t o;

	cw_buckets_drop_owners(b);
	if (!on)
		return;
	for (o = 0; o < n; o++)
		if (on[o] >= 0)
			on[o] = id[on[o]];
	b->owner_node = on;
	b->owner_nodes = b->cap_owner_node = n;
}

int cw_buckets_keep_nodes(struct cw_buckets *b, uint32_t *id,
			  cw_node_remap_fn remap, void *arg)
{
	size_t n = b->nodes.len, used = 0, j, nowners = b->owner_nodes;
	long *on;
	bool ok;

	for (j = 0; j < n; j++)
		used += !id[j];
	if (n < 1024 || 2 * used > n)
		return 0;
	on = owners_kept(b, id, &ok);
	if (!ok)
		return -1;
	for (j = 0, used = 0; j < n; j++)
		id[j] = id[j] ? UINT32_MAX : (uint32_t)used++;
	if (remap(arg, id)) {
		free(on);
		return -1;
	}
	/* In place: the nodes to come reuse the memory (and its pages). */
	cw_htab_pack(&b->nodes, id);
	owners_renumbered(b, on, nowners, id);
	return 0;
}

/* h's edges with their node ids mapped through id[], in place (the ids
 * of the nodes they name are distinct: no two keys become one). */
static void rekeyed(struct cw_htab *h, const uint32_t *id)
{
	struct edge_key *k;
	size_t j;

	for (j = 0; j < h->len; j++) {
		k = cw_htab_key(h, j);
		k->client = id[k->client];
		k->server = id[k->server];
	}
	cw_htab_rehash(h);
}

/* The sealed edges' node ids through id[]: both tables, in place. */
static int rekey(void *arg, const uint32_t *id)
{
	struct cw_buckets *b = arg;

	rekeyed(&b->total, id);
	rekeyed(&b->sealed, id);
	return 0;
}

/*
 * Forget the nodes no edge names any more, once they are over half of
 * them.  Only the sealed edges hold ids between seals (a fold interns
 * the nodes it needs).  0 or -1.
 */
int cw_buckets_compact_nodes(struct cw_buckets *b, uint32_t *marked)
{
	const struct cw_htab *h[] = {&b->total, &b->sealed};
	const struct edge_key *k;
	uint32_t *id = marked;
	size_t t, j;
	int err;

	/* Too few to compact (cw_buckets_keep_nodes()): no walk. */
	if (b->nodes.len < 1024)
		return 0;
	if (!id) {
		id = cw_buckets_node_marks(b);
		if (!id)
			return -1;
	}
	for (t = marked ? 1 : 0; t < 2; t++)
		for (j = 0; j < h[t]->len; j++) {
			k = cw_htab_key(h[t], j);
			id[k->client] = id[k->server] = 0;
		}
	err = cw_buckets_keep_nodes(b, id, rekey, b);
	if (!marked)
		free(id);
	return err;
}

uint32_t *cw_buckets_node_marks(const struct cw_buckets *b)
{
	uint32_t *id = malloc((b->nodes.len + 1) * sizeof(*id));

	if (id)
		memset(id, 0xff, (b->nodes.len + 1) * sizeof(*id));
	return id;
}

/* ---- checkpoints -------------------------------------------------------- */

int cw_pairing_add_total(struct cw_pairing *p, const struct cw_wire_edge *w)
{
	long c = cw_buckets_node(&p->bk, &w->client),
	     s = cw_buckets_node(&p->bk, &w->server);
	struct cw_edge_total *t;
	struct edge_key k;

	if (c < 0 || s < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.bucket = p->bk.view_ns ? w->bucket_ns : 0;
	k.client = (uint32_t)c;
	k.server = (uint32_t)s;
	k.protocol = w->protocol;
	t = cw_htab_upsert(&p->bk.total, &k, NULL);
	if (!t)
		return -1;
	cw_edge_total_add(t, &w->t);
	return cw_edge_health_more(&t->h, &w->h);
}

/* Tables of totals own their health blocks (common/wire.h). */
void cw_edge_totals_release(struct cw_htab *h)
{
	size_t j;

	for (j = 0; j < h->len; j++)
		cw_edge_health_free(
			&((struct cw_edge_total *)cw_htab_val(h, j))->h);
	cw_htab_release(h);
}

void cw_edge_totals_delete(struct cw_htab *h, const void *key)
{
	struct cw_edge_total *t = cw_htab_get(h, key);

	if (t)
		cw_edge_health_free(&t->h);
	cw_htab_delete(h, key);
}

/* ---- checkpoints -------------------------------------------------------- */

#define CHUNK_ITEMS  CW_WIRE_STATE_CHUNK /* ends, live then dormant */
#define CHUNK_EDGES  CW_WIRE_STATE_CHUNK
#define CHUNK_DELTAS (4 * CW_WIRE_STATE_CHUNK)

static size_t ceil_div(size_t a, size_t b)
{
	return (a + b - 1) / b;
}

size_t cw_pairing_chunks(const struct cw_pairing *p)
{
	const struct cw_buckets *b = &p->bk;
	size_t n = ceil_div(p->ends.len + b->dormant.len, CHUNK_ITEMS);

	if (ceil_div(b->total.len, CHUNK_EDGES) > n)
		n = ceil_div(b->total.len, CHUNK_EDGES);
	if (ceil_div(b->pend.len, CHUNK_DELTAS) > n)
		n = ceil_div(b->pend.len, CHUNK_DELTAS);
	return n ? n : 1;
}

/* Dormant end j as a record: its key and its totals. */
static void dormant_record(const struct cw_pairing *p, size_t j,
			   struct cw_conn_record *r)
{
	const struct end_key *k = cw_htab_key(&p->bk.dormant, j);
	const struct dormant_val *d = cw_htab_val(&p->bk.dormant, j);
	const struct host_key *h = cw_htab_key(&p->hosts, k->host);

	memset(r, 0, sizeof(*r));
	memcpy(r->host, h->name, sizeof(r->host));
	memcpy(r->boot_id, h->boot, sizeof(r->boot_id));
	r->cookie = k->cookie;
	r->protocol = k->protocol;
	r->rport = k->rport;
	r->raddr.family = k->rfamily;
	memcpy(r->raddr.bytes, k->raddr, sizeof(r->raddr.bytes));
	r->bytes_out = d->bytes_out;
	r->bytes_in = d->bytes_in;
	r->msgs_out = d->msgs_out;
	r->msgs_in = d->msgs_in;
	r->first_ns = k->protocol != 6 ? k->generation : d->first_ns;
	r->last_ns = d->last_ns;
	r->retrans = d->retrans;
	r->flags = d->flags;
	r->seq = d->carried; /* kept in seq: a dormant end has no record */
	cw_health_dormant_out(d, r);
	if (d->has_hists)
		cw_hists_put(p, k, r);
}

/* Chunk k's ends (live, then dormant) and their flags into st. */
static void chunk_ends(const struct cw_pairing *p, size_t k,
		       struct cw_wire_state *st)
{
	size_t i, live = p->ends.len, all = live + p->bk.dormant.len;

	for (i = k * CHUNK_ITEMS; i < all && st->n < CHUNK_ITEMS; i++) {
		if (i < live) {
			cw_pairing_end_copy(p, i, &st->ends[st->n]);
			st->end_flags[st->n] =
				cw_pairing_numbers(p, i)->acct & CW_END_COUNTED;
		} else {
			dormant_record(p, i - live, &st->ends[st->n]);
			st->end_flags[st->n] =
				((const struct dormant_val *)cw_htab_val(
					 &p->bk.dormant, i - live))
					->acct |
				CW_END_DORMANT;
		}
		st->n++;
	}
}

/* Chunk k's deltas (end: index among all live ends) and edges. */
static void chunk_buckets(const struct cw_pairing *p, size_t k,
			  struct cw_wire_state *st)
{
	const struct cw_buckets *b = &p->bk;
	size_t j;

	for (j = k * CHUNK_DELTAS;
	     j < b->pend.len && st->ndeltas < CHUNK_DELTAS; j++) {
		const struct pend_key *pk = cw_htab_key(&b->pend, j);
		const struct pend_val *v = cw_htab_val(&b->pend, j);
		long i = cw_htab_index(&p->ends, &pk->ek);

		if (i < 0)
			continue;
		st->deltas[st->ndeltas] = (struct cw_end_delta){
			.end = (uint32_t)i,
			.bucket_ns = pk->bucket,
			.bytes_out = v->bytes_out,
			.bytes_in = v->bytes_in,
			.msgs_out = v->msgs_out,
			.msgs_in = v->msgs_in,
			.retrans = v->retrans,
			.last_ns = v->last_ns,
		};
		cw_health_delta_out(b, pk, v, &st->deltas[st->ndeltas++]);
	}
	for (j = k * CHUNK_EDGES; j < b->total.len && st->nedges < CHUNK_EDGES;
	     j++) {
		const struct edge_key *ek = cw_htab_key(&b->total, j);
		struct cw_wire_edge *w = &st->edges[st->nedges++];

		memset(w, 0, sizeof(*w));
		w->bucket_ns = ek->bucket; /* 0: all time */
		w->protocol = ek->protocol;
		w->client = *(struct cw_edge_node *)cw_htab_val(&b->nodes,
								ek->client);
		w->server = *(struct cw_edge_node *)cw_htab_val(&b->nodes,
								ek->server);
		cw_wire_edge_set_total(w, cw_htab_val(&b->total, j));
	}
	if (k == 0)
		st->bk = b->s;
}

int cw_pairing_chunk(const struct cw_pairing *p, size_t k,
		     struct cw_wire_state *st)
{
	st->n = st->ndeltas = st->nedges = 0;
	memset(&st->bk, 0, sizeof(st->bk));
	if (!st->ends)
		st->ends = malloc(CHUNK_ITEMS * sizeof(*st->ends));
	if (!st->end_flags)
		st->end_flags = malloc(CHUNK_ITEMS * sizeof(*st->end_flags));
	if (!st->deltas)
		st->deltas = malloc(CHUNK_DELTAS * sizeof(*st->deltas));
	if (!st->edges)
		st->edges = malloc(CHUNK_EDGES * sizeof(*st->edges));
	if (!st->ends || !st->end_flags || !st->deltas || !st->edges)
		return -1;
	chunk_ends(p, k, st);
	if (p->bk.s.width_ns)
		chunk_buckets(p, k, st);
	return 0;
}

/* A dormant end back from its record; 0 or -1. */
static int load_dormant(struct cw_pairing *p, const struct cw_conn_record *r,
			uint32_t flags)
{
	long h = cw_pairing_host(p, r->host, r->boot_id);
	struct dormant_val *d;
	struct end_key k;

	if (h < 0)
		return -1;
	cw_pairing_end_key(r, (uint32_t)h, &k);
	d = cw_htab_upsert(&p->bk.dormant, &k, NULL);
	if (!d)
		return -1;
	d->bytes_out = r->bytes_out;
	d->bytes_in = r->bytes_in;
	d->msgs_out = r->msgs_out;
	d->msgs_in = r->msgs_in;
	d->first_ns = r->first_ns;
	d->last_ns = r->last_ns;
	d->retrans = r->retrans;
	d->flags = r->flags;
	d->acct = flags & CW_END_COUNTED;
	d->carried = (uint32_t)r->seq;
	cw_health_dormant_in(d, r);
	return cw_hists_keep(p, &k, r);
}

int cw_pairing_load_chunk(struct cw_pairing *p, const struct cw_wire_state *st)
{
	size_t i, j;
	long e;
	int err = 0;

	cw_pairing_forget(p); /* its bucket counters change the pairs' */
	p->bk.loading = true;
	for (i = 0; i < st->n && !err; i = j) {
		if (st->end_flags && (st->end_flags[i] & CW_END_DORMANT)) {
			err = load_dormant(p, &st->ends[i], st->end_flags[i]);
			j = i + 1;
			continue;
		}
		/* A run of live ends at once; then their flags. */
		for (j = i; j < st->n && !(st->end_flags &&
					   (st->end_flags[j] & CW_END_DORMANT));
		     j++)
			;
		err = cw_pairing_add_many(p, st->ends + i, j - i);
		for (e = (long)p->ends.len - (long)(j - i);
		     !err && st->end_flags && e < (long)p->ends.len; e++)
			((struct cw_end *)cw_htab_val(&p->ends, (size_t)e))
				->acct = st->end_flags[i++] & CW_END_COUNTED;
	}
	p->bk.loading = false;
	for (i = 0; i < st->nedges && !err; i++)
		err = cw_pairing_add_total(p, &st->edges[i]);
	if (st->bk.width_ns) {
		struct cw_bucket_state keep = p->bk.s;

		p->bk.s = st->bk;
		/* The settings are this run's; the rest is the state's. */
		if (keep.width_ns) {
			p->bk.s.width_ns = keep.width_ns;
			p->bk.s.ttl_ns = keep.ttl_ns;
			p->bk.s.lateness_ns = keep.lateness_ns;
		}
	}
	return err;
}

int cw_pairing_load_deltas(struct cw_pairing *p, const struct cw_end_delta *d,
			   size_t n)
{
	struct pend_key pk;
	struct pend_val *v;
	struct cw_end *e;
	bool created;
	size_t j;

	for (j = 0; j < n; j++) {
		if (d[j].end >= p->ends.len)
			continue; /* not of this state: malformed, skipped */
		memset(&pk, 0, sizeof(pk));
		pk.bucket = d[j].bucket_ns;
		pk.ek = *(struct end_key *)cw_htab_key(&p->ends, d[j].end);
		v = cw_htab_upsert(&p->bk.pend, &pk, &created);
		if (!v)
			return -1;
		e = cw_htab_val(&p->ends, d[j].end);
		e->npend += created;
		v->bytes_out = cw_count_add(v->bytes_out, d[j].bytes_out);
		v->bytes_in = cw_count_add(v->bytes_in, d[j].bytes_in);
		v->msgs_out = cw_count_add(v->msgs_out, d[j].msgs_out);
		v->msgs_in = cw_count_add(v->msgs_in, d[j].msgs_in);
		v->retrans = cw_count_add(v->retrans, d[j].retrans);
		if (d[j].last_ns > v->last_ns)
			v->last_ns = d[j].last_ns;
		if (cw_health_delta_in(&p->bk, &pk, v, &d[j]))
			return -1;
	}
	p->bk.due = seal_point(&p->bk) > p->bk.s.sealed_ns;
	return 0;
}
