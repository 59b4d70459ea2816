// SPDX-License-Identifier: MIT
/*
 * <prefix>.edges: each member writes, at every snapshot, every bucket of
 * its partitions that changed (the open ones as they stand, each sealed
 * one once more when it is sealed), as absolute values complete up to the
 * partition's next input offset.  All the edges of one (bucket, input
 * partition) written at one offset are one set, written as EdgeSet
 * records of consecutive edges (a few hundred a record, so that a set
 * costs a Kafka record or a few, not one an edge): each record says how
 * many edges the set has and the index of its first, so each edge has its
 * index in the set as an EdgeBucket record of it (older writers) has.
 * A reader takes both kinds alike and keeps, per (bucket, input
 * partition), the complete set of the highest offset and sums over input
 * partitions.  Values at an offset are a function of the records before
 * it, so a replay, a duplicate or a member writing after it lost its
 * partitions writes nothing a reader would keep instead of the truth; an
 * edge that moved between keys (an end paired after its bucket was first
 * written) leaves no stale record behind, since a whole set wins.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"

/* ---- writing ------------------------------------------------------------ */

/*
 * The edges of one partition's buckets, as cw_pairing_buckets_each()
 * gives them: each its bucket, totals and its nodes' places in the
 * pairing (valid until the pairing changes), not copies of the nodes (a
 * kilobyte each).
 */
struct batch_edge {
	uint64_t bucket_ns;
	const struct cw_edge_node *client, *server;
	uint32_t crank, srank; /* the nodes' ranks: rank_nodes() */
	struct cw_edge_total t;
	uint8_t protocol;
};

/* Kept from one partition to the next of a snapshot (its memory
 * touched once, not once a partition), freed after. */
struct batch {
	struct batch_edge *e;
	struct batch_edge **by; /* e in the order they are written */
	size_t n, cap, cap_by;
};

static int collect(const struct cw_edge_node *client,
		   const struct cw_edge_node *server, uint8_t protocol,
		   uint64_t bucket_ns, const struct cw_edge_total *t, void *arg)
{
	struct batch *b = arg;
	struct batch_edge *w;

	if (CW_GROW(b->e, b->cap, b->n + 1, 64))
		return -1;
	w = &b->e[b->n++];
	w->bucket_ns = bucket_ns;
	w->protocol = protocol;
	w->client = client;
	w->server = server;
	w->t = *t;
	/* A copy of its own: the open buckets' go when the walk ends. */
	w->t.h = NULL;
	if (t->h && !(w->t.h = cw_edge_health_dup(t->h))) {
		b->n--;
		return -1;
	}
	return 0;
}

/* A node's identity, for an order that does not depend on arrival. */
static int node_cmp(const struct cw_edge_node *a, const struct cw_edge_node *b)
{
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	c = strcmp(a->host, b->host);
	if (c)
		return c;
	if (a->proc.tgid != b->proc.tgid)
		return a->proc.tgid < b->proc.tgid ? -1 : 1;
	if (a->proc.start_ns != b->proc.start_ns)
		return a->proc.start_ns < b->proc.start_ns ? -1 : 1;
	if (a->netns != b->netns)
		return a->netns < b->netns ? -1 : 1;
	c = cw_addr_cmp(&a->addr, &b->addr);
	if (c)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

static int cmp_node_ptr(const void *a, const void *b)
{
	return node_cmp(*(const struct cw_edge_node *const *)a,
			*(const struct cw_edge_node *const *)b);
}

/*
 * Each node of a partition's table its rank in node_cmp()'s order (equal
 * nodes, equal ranks), by entry number: the edges are then sorted on
 * integers, the nodes compared once each in a sort of their own rather
 * than in every comparison of the edges' sort (a partition's nodes are a
 * few thousand, its edges tens of thousands).  NULL when out of memory.
 */
static uint32_t *rank_nodes(const struct cw_htab *nodes)
{
	const struct cw_edge_node **by = malloc((nodes->len + 1) * sizeof(*by));
	uint32_t *rank = malloc((nodes->len + 1) * sizeof(*rank));
	const unsigned char *base = cw_htab_val(nodes, 0);
	size_t i, k, prev = 0;

	if (!by || !rank) {
		free(by);
		free(rank);
		return NULL;
	}
	for (i = 0; i < nodes->len; i++)
		by[i] = cw_htab_val(nodes, i);
	qsort(by, nodes->len, sizeof(*by), cmp_node_ptr);
	for (i = 0; i < nodes->len; i++) {
		k = (size_t)((const unsigned char *)by[i] - base) /
		    nodes->entry_size;
		rank[k] = i && !node_cmp(by[i - 1], by[i]) ? rank[prev]
							  : (uint32_t)i;
		prev = k;
	}
	free(by);
	return rank;
}

/* Node n's rank, n an entry of nodes. */
static uint32_t rank_of(const struct cw_htab *nodes, const uint32_t *rank,
			const struct cw_edge_node *n)
{
	return rank[(size_t)((const unsigned char *)n -
			     (const unsigned char *)cw_htab_val(nodes, 0)) /
		    nodes->entry_size];
}

/*
 * Edges by bucket, then nodes (node_cmp(), by their ranks): a set's
 * records get their indices in an order every member agrees on, so that
 * two members writing the same set (one restored from the other's
 * checkpoint) write the same records.
 */
static int cmp_edge(const void *a, const void *b)
{
	const struct batch_edge *x = *(struct batch_edge *const *)a,
				*y = *(struct batch_edge *const *)b;

	if (x->bucket_ns != y->bucket_ns)
		return x->bucket_ns < y->bucket_ns ? -1 : 1;
	if (x->crank != y->crank)
		return x->crank < y->crank ? -1 : 1;
	if (x->srank != y->srank)
		return x->srank < y->srank ? -1 : 1;
	return x->protocol < y->protocol ? -1 : x->protocol > y->protocol;
}

/* One record of a set to the log; 0 or -1. */
static int put_record(struct cw_correlator *c, struct cw_part_state *ps,
		      const char *key, struct cw_wire_edges_put *p)
{
	size_t len = cw_wire_edges_end(p);

	if (!len)
		return cw_error("an edge set too large to encode");
	if (cw_kafka_log_put(c->edges_log, ps->partition % c->edges_partitions,
			     key, p->buf, len))
		return -1;
	c->edge_records += p->n;
	return 0;
}

/*
 * Put one set (edges [lo, hi) of one bucket) to the log: EdgeSet records
 * of consecutive edges, each as many as CW_WIRE_EDGES_CHUNK and
 * CW_WIRE_EDGES_BYTES allow.  0 or -1.
 */
static int put_set(struct cw_correlator *c, struct cw_part_state *ps,
		   struct batch_edge **e, size_t lo, size_t hi,
		   struct cw_wire_memo *memo)
{
	static struct cw_wire_msg m;
	static uint8_t buf[CW_WIRE_EDGES_BYTES]; /* the log copies it */
	struct cw_wire_edges_put p;
	char key[CW_WIRE_NAME_MAX + 48];
	bool health = false; /* m.edge.h not zero */
	size_t i;

	_Static_assert(CW_WIRE_EDGES_BYTES >= CW_WIRE_EDGES_ROOM,
		       "an edge set's record holds at least one edge");
	snprintf(key, sizeof(key), "%s/%" PRIu64 "/%d", c->o.group,
		 e[lo]->bucket_ns, ps->partition);
	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGE;
	snprintf(m.edge.group, sizeof(m.edge.group), "%s", c->o.group);
	snprintf(m.edge.topic, sizeof(m.edge.topic), "%s", c->o.conns_topic);
	m.edge.partition = ps->partition;
	m.edge.offset = ps->next;
	m.edge.width_ns = ps->pairing.bk.s.width_ns;
	m.edge.set_size = (uint32_t)(hi - lo);
	m.edge.bucket_ns = e[lo]->bucket_ns;
	m.edge.sealed = e[lo]->bucket_ns < ps->pairing.bk.s.sealed_ns;
	cw_wire_edges_begin(&p, buf, sizeof(buf), &m.edge);
	p.memo = memo;
	for (i = lo; i < hi; i++) {
		/* The nodes (a kilobyte each) by pointer: never copied. */
		m.edge.protocol = e[i]->protocol;
		/* cw_wire_edge_set_total(), with the health cleared only
		 * when the edge before had some. */
		m.edge.t = e[i]->t;
		m.edge.t.h = NULL;
		if (e[i]->t.h)
			m.edge.h = *e[i]->t.h;
		else if (health)
			memset(&m.edge.h, 0, sizeof(m.edge.h));
		health = e[i]->t.h != NULL;
		if (p.n < CW_WIRE_EDGES_CHUNK &&
		    !cw_wire_edges_add_nodes(&p, &m.edge, e[i]->client,
					     e[i]->server))
			continue;
		/* This record is full: it goes, the edge opens the next. */
		if (put_record(c, ps, key, &p))
			return -1;
		m.edge.set_index = (uint32_t)(i - lo);
		cw_wire_edges_begin(&p, buf, sizeof(buf), &m.edge);
		p.memo = memo;
		if (cw_wire_edges_add_nodes(&p, &m.edge, e[i]->client,
					    e[i]->server))
			return cw_error("an edge bucket too large to encode");
	}
	return put_record(c, ps, key, &p);
}

/* ps's buckets sealed since its last write, and with open the open
 * ones if it moved since; 0 or -1. */
static int put_part(struct cw_correlator *c, struct cw_part_state *ps,
		    bool open, struct batch *bt, struct cw_wire_memo *memo)
{
	struct batch b = *bt;
	const struct cw_htab *nodes = &ps->pairing.bk.nodes;
	uint32_t *rank;
	size_t lo, hi;
	int err;

	open = open && ps->next != ps->edges_at;
	if (!open && !ps->pairing.bk.sealed.len)
		return 0;
	b.n = 0;
	err = cw_pairing_buckets_each(&ps->pairing, open, collect, &b);
	/* The nodes are all interned now (the open buckets folded). */
	rank = err || !b.n ? NULL : rank_nodes(nodes);
	if ((!err && CW_GROW(b.by, b.cap_by, b.n + 1, 64)) || (b.n && !rank))
		err = -1;
	for (lo = 0; !err && lo < b.n; lo++) {
		b.by[lo] = &b.e[lo];
		b.e[lo].crank = rank_of(nodes, rank, b.e[lo].client);
		b.e[lo].srank = rank_of(nodes, rank, b.e[lo].server);
	}
	free(rank);
	if (!err)
		qsort(b.by, b.n, sizeof(*b.by), cmp_edge);
	for (lo = 0; !err && lo < b.n; lo = hi) {
		for (hi = lo + 1;
		     hi < b.n && b.by[hi]->bucket_ns == b.by[lo]->bucket_ns;
		     hi++)
			;
		err = put_set(c, ps, b.by, lo, hi, memo);
	}
	for (lo = 0; lo < b.n; lo++)
		cw_edge_health_free(&b.e[lo].t.h);
	*bt = b;
	return err ? cw_error("edge buckets of partition %d not written",
			      ps->partition)
		   : 0;
}

/*
 * Is c behind its input: more records waiting in the partitions of the
 * connections topic it owns than it applied in the last snapshot period?
 * Not when the lag is unknown (no consumer, no fetch yet).
 */
static bool behind(struct cw_correlator *c)
{
	static struct cw_kafka_lag lag[1024]; /* large: off the stack */
	uint64_t waiting = 0;
	int i, n;

	if (!c->consumer || !c->o.conns_topic)
		return false;
	n = cw_kafka_consumer_lag(c->consumer, lag, 1024);
	for (i = 0; i < n; i++)
		if (!strcmp(lag[i].topic, c->o.conns_topic))
			waiting += (uint64_t)lag[i].lag;
	return waiting > c->period_applied;
}

int cw_correlator_write_edges(struct cw_correlator *c, bool all)
{
	struct cw_wire_memo memo = {0};
	struct batch b = {0};
	uint64_t now = cw_now_mono_ns();
	bool open = all || now >= c->edges_open_mono + c->o.bucket_ns;
	size_t i;
	int err = 0;

	if (!c->edges_log || !c->o.bucket_ns)
		return 0;
	if (open && !all && behind(c)) {
		open = false;
		c->edges_skipped++;
	}
	if (c->edges_partitions <= 0)
		c->edges_partitions = cw_kafka_log_partitions(c->edges_log);
	if (c->edges_partitions <= 0)
		return -1;
	/* The nodes, each encoded once for all the sets of all the
	 * partitions (a process's node is in every partition its
	 * connections hash to): they stay where they are, unchanged, until
	 * records are applied again. */
	for (i = 0; i < c->nparts && !err; i++)
		err = put_part(c, &c->parts[i], open, &b, &memo);
	cw_wire_memo_release(&memo);
	free(b.e);
	free(b.by);
	if (!err)
		err = cw_kafka_log_flush(c->edges_log, 60000);
	if (err)
		return -1;
	for (i = 0; i < c->nparts; i++) {
		if (open)
			c->parts[i].edges_at = c->parts[i].next;
		cw_pairing_take_sealed(&c->parts[i].pairing);
	}
	if (open)
		c->edges_open_mono = now;
	return 0;
}

/* ---- reading: the merge ------------------------------------------------- */

/* One record of a set, and the set it belongs to. */
struct set_key {
	uint64_t bucket;
	int64_t offset;
	int32_t partition;
	uint32_t pad;
};

struct rec_key {
	struct set_key set;
	uint32_t index;
	uint32_t pad;
};

struct rec_val {
	uint32_t client, server; /* ids in the merge's nodes */
	uint8_t protocol;
	uint8_t pad[7];
	struct cw_edge_total t;
};

struct set_val {
	uint32_t size, seen;
};

/* An edge of the merged view: in a bucket (or 0: summed). */
struct sum_key {
	uint64_t bucket;
	uint32_t client, server;
	uint8_t protocol;
	uint8_t pad[7];
};

/* (bucket, input partition): the offset of its best whole set. */
struct best_key {
	uint64_t bucket;
	int32_t partition;
	uint32_t pad;
};

/* Forget record k, its health with it. */
static void rec_delete(struct cw_edge_merge *m, const struct rec_key *k)
{
	struct rec_val *v = cw_htab_get(&m->recs, k);

	if (v)
		cw_edge_health_free(&v->t.h);
	cw_htab_delete(&m->recs, k);
}

/* Is partition one of those the caller has the state of? */
static bool owned(const struct cw_edge_merge *m, int32_t partition)
{
	size_t i;

	for (i = 0; i < m->nowned; i++)
		if (m->owned[i] == partition)
			return true;
	return false;
}

void cw_edge_merge_init(struct cw_edge_merge *m, const char *group,
			uint64_t since_ns, uint64_t until_ns)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->group, sizeof(m->group), "%s", group);
	m->since_ns = since_ns;
	m->until_ns = until_ns;
	cw_buckets_init(&m->nodes);
	cw_htab_init(&m->recs, sizeof(struct rec_key), sizeof(struct rec_val));
	cw_htab_init(&m->sets, sizeof(struct set_key), sizeof(struct set_val));
	cw_htab_init(&m->best, sizeof(struct best_key), sizeof(int64_t));
}

void cw_edge_merge_release(struct cw_edge_merge *m)
{
	size_t j;

	cw_buckets_release(&m->nodes);
	for (j = 0; j < m->recs.len; j++)
		cw_edge_health_free(
			&((struct rec_val *)cw_htab_val(&m->recs, j))->t.h);
	cw_htab_release(&m->recs);
	cw_htab_release(&m->sets);
	cw_htab_release(&m->best);
	free(m->pos);
	m->pos = NULL;
}

/* The set s is whole: it wins its (bucket, partition) if newer. */
static int set_whole(struct cw_edge_merge *m, const struct set_key *s)
{
	struct best_key k = {.bucket = s->bucket, .partition = s->partition};
	int64_t *best;
	bool created;

	best = cw_htab_upsert(&m->best, &k, &created);
	if (!best)
		return -1;
	if (created || s->offset > *best) {
		m->superseded += !created;
		*best = s->offset;
	}
	return 0;
}

int cw_edge_merge_add(struct cw_edge_merge *m, const struct cw_wire_edge *w)
{
	struct rec_key k = {0};
	struct rec_val *v;
	struct set_val *s;
	long c, sv;
	bool created;

	if (strcmp(w->group, m->group)) {
		m->foreign++;
		return 0;
	}
	if (w->bucket_ns < m->since_ns ||
	    (m->until_ns && w->bucket_ns >= m->until_ns) || !w->set_size ||
	    w->set_index >= w->set_size) {
		m->outside++;
		return 0;
	}
	if (owned(m, w->partition)) {
		m->own++; /* the caller's state has it, newer */
		return 0;
	}
	m->records++;
	if (w->bucket_ns > m->newest_ns)
		m->newest_ns = w->bucket_ns;
	k.set = (struct set_key){.bucket = w->bucket_ns,
				 .offset = w->offset,
				 .partition = w->partition};
	k.index = w->set_index;
	v = cw_htab_upsert(&m->recs, &k, &created);
	if (!v)
		return -1;
	if (!created) {
		m->duplicates++;
		return 0;
	}
	c = cw_buckets_node(&m->nodes, &w->client);
	sv = cw_buckets_node(&m->nodes, &w->server);
	s = cw_htab_upsert(&m->sets, &k.set, NULL);
	if (c < 0 || sv < 0 || !s)
		return -1;
	v->client = (uint32_t)c;
	v->server = (uint32_t)sv;
	v->protocol = w->protocol;
	v->t = w->t;
	v->t.h = NULL;
	if (cw_edge_health_more(&v->t.h, &w->h))
		return -1;
	s->size = w->set_size;
	if (++s->seen == s->size)
		return set_whole(m, &k.set);
	return 0;
}

/* Is record k part of its (bucket, partition)'s best whole set? */
static bool kept(const struct cw_edge_merge *m, const struct rec_key *k)
{
	struct best_key b = {.bucket = k->set.bucket,
			     .partition = k->set.partition};
	const int64_t *best = cw_htab_get(&m->best, &b);

	return best && *best == k->set.offset;
}

/* What emit_sorted() sorts: an entry of the sums and its nodes. */
struct sorted {
	const struct sum_key *k;
	const struct cw_edge_node *c, *s;
	const struct cw_edge_total *t;
};

static int sorted_cmp(const void *x, const void *y)
{
	const struct sorted *a = x, *b = y;
	int r;

	if (a->k->bucket != b->k->bucket)
		return a->k->bucket < b->k->bucket ? -1 : 1;
	r = node_cmp(a->c, b->c);
	if (!r)
		r = node_cmp(a->s, b->s);
	if (!r)
		r = a->k->protocol < b->k->protocol   ? -1
		    : a->k->protocol > b->k->protocol ? 1
						      : 0;
	return r;
}

/* The sums to fn in the order of their buckets and nodes: the same
 * graph, node for node, whichever member wrote what first. */
static int emit_sorted(struct cw_edge_merge *m, struct cw_htab *sum,
		       cw_edge_fn fn, void *arg)
{
	struct sorted *o = malloc((sum->len + 1) * sizeof(*o));
	size_t j;
	int r = 0;

	if (!o)
		return -1;
	for (j = 0; j < sum->len; j++) {
		o[j].k = cw_htab_key(sum, j);
		o[j].c = cw_htab_val(&m->nodes.nodes, o[j].k->client);
		o[j].s = cw_htab_val(&m->nodes.nodes, o[j].k->server);
		o[j].t = cw_htab_val(sum, j);
	}
	qsort(o, sum->len, sizeof(*o), sorted_cmp);
	for (j = 0; j < sum->len && !r; j++)
		r = fn(o[j].c, o[j].s, o[j].k->protocol, o[j].k->bucket, o[j].t,
		       arg);
	free(o);
	return r;
}

int cw_edge_merge_each(struct cw_edge_merge *m, bool per_bucket, cw_edge_fn fn,
		       void *arg)
{
	struct cw_htab sum;
	struct sum_key k;
	struct cw_edge_total *t;
	size_t j;
	int r = -1;

	cw_htab_init(&sum, sizeof(k), sizeof(*t));
	for (j = 0; j < m->recs.len; j++) {
		const struct rec_key *rk = cw_htab_key(&m->recs, j);
		const struct rec_val *v = cw_htab_val(&m->recs, j);

		if (!kept(m, rk) || owned(m, rk->set.partition))
			continue;
		memset(&k, 0, sizeof(k));
		k.bucket = per_bucket ? rk->set.bucket : 0;
		k.client = v->client;
		k.server = v->server;
		k.protocol = v->protocol;
		t = cw_htab_upsert(&sum, &k, NULL);
		if (!t)
			goto out;
		cw_edge_total_add(t, &v->t);
	}
	r = emit_sorted(m, &sum, fn, arg);
out:
	cw_edge_totals_release(&sum);
	return r;
}

/*
 * Forget the records of sets older than their (bucket, partition)'s best
 * whole one, once the records have doubled since the last time: what a
 * long-running reader keeps is then about the sets that win.  0 or -1.
 */
static int prune(struct cw_edge_merge *m)
{
	struct rec_key k;
	struct best_key b;
	const int64_t *best;
	size_t j;

	if (m->recs.len < 2 * m->pruned_at + 4096)
		return 0;
	for (j = m->recs.len; j-- > 0;) {
		k = *(struct rec_key *)cw_htab_key(&m->recs, j);
		b = (struct best_key){.bucket = k.set.bucket,
				      .partition = k.set.partition};
		best = cw_htab_get(&m->best, &b);
		if (best && k.set.offset < *best)
			rec_delete(m, &k);
	}
	for (j = m->sets.len; j-- > 0;) {
		struct set_key s = *(struct set_key *)cw_htab_key(&m->sets, j);

		b = (struct best_key){.bucket = s.bucket,
				      .partition = s.partition};
		best = cw_htab_get(&m->best, &b);
		if (best && s.offset < *best)
			cw_htab_delete(&m->sets, &s);
	}
	m->pruned_at = m->recs.len;
	return 0;
}

/* The records' node ids through id[] (in place: nothing can fail). */
static int remap_recs(void *arg, const uint32_t *id)
{
	struct cw_edge_merge *m = arg;
	struct rec_val *v;
	size_t j;

	for (j = 0; j < m->recs.len; j++) {
		v = cw_htab_val(&m->recs, j);
		v->client = id[v->client];
		v->server = id[v->server];
	}
	return 0;
}

/* Forget the nodes no kept record names, once they are over half of
 * them.  0 or -1 (out of memory: nothing changed). */
static int merge_compact_nodes(struct cw_edge_merge *m)
{
	uint32_t *id = malloc((m->nodes.nodes.len + 1) * sizeof(*id));
	const struct rec_val *v;
	size_t j;
	int err;

	if (!id)
		return -1;
	memset(id, 0xff, (m->nodes.nodes.len + 1) * sizeof(*id));
	for (j = 0; j < m->recs.len; j++) {
		v = cw_htab_val(&m->recs, j);
		id[v->client] = id[v->server] = 0;
	}
	err = cw_buckets_keep_nodes(&m->nodes, id, remap_recs, m);
	free(id);
	return err;
}

int cw_edge_merge_since(struct cw_edge_merge *m, uint64_t since_ns)
{
	struct rec_key k;
	struct set_key s;
	struct best_key b;
	size_t j;

	if (since_ns <= m->since_ns)
		return 0;
	m->since_ns = since_ns;
	/* From the last: a delete moves the last entry, already seen, in. */
	for (j = m->recs.len; j-- > 0;) {
		k = *(struct rec_key *)cw_htab_key(&m->recs, j);
		if (k.set.bucket < since_ns)
			rec_delete(m, &k);
	}
	for (j = m->sets.len; j-- > 0;) {
		s = *(struct set_key *)cw_htab_key(&m->sets, j);
		if (s.bucket < since_ns)
			cw_htab_delete(&m->sets, &s);
	}
	for (j = m->best.len; j-- > 0;) {
		b = *(struct best_key *)cw_htab_key(&m->best, j);
		if (b.bucket < since_ns)
			cw_htab_delete(&m->best, &b);
	}
	m->pruned_at = m->recs.len;
	return merge_compact_nodes(m);
}

/* One record of the edges topic into the merge. */
/* The number key[0, n) holds, all digits (at most 19: no overflow). */
static bool key_num(const char *key, size_t n, uint64_t *v)
{
	size_t i;

	if (!n || n > 19)
		return false;
	for (*v = 0, i = 0; i < n; i++) {
		if (key[i] < '0' || key[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(key[i] - '0');
	}
	return true;
}

/*
 * What an edge record's key (put_set(): GROUP/BUCKET/PARTITION) tells
 * without decoding the record: true when it is another group's, outside
 * the range or an owned partition's, counted as cw_edge_merge_add()
 * would count it (a member reading its own records back no longer
 * decodes them); false when the record must be decoded.
 */
static bool skip_by_key(struct cw_edge_merge *m, const char *key, size_t n)
{
	size_t p = n, b;
	uint64_t bucket, part;

	while (p && key[p - 1] != '/')
		p--;
	for (b = p ? p - 1 : 0; b && key[b - 1] != '/'; b--)
		;
	if (!p || !b || !key_num(key + p, n - p, &part) || part > INT32_MAX ||
	    !key_num(key + b, p - 1 - b, &bucket))
		return false; /* not our shape: the value decides */
	if (b - 1 != strlen(m->group) || memcmp(key, m->group, b - 1)) {
		m->foreign++;
		return true;
	}
	if (bucket < m->since_ns || (m->until_ns && bucket >= m->until_ns)) {
		m->outside++;
		return true;
	}
	if (owned(m, (int32_t)part)) {
		m->own++;
		return true;
	}
	return false;
}

static int read_one(void *arg, int64_t at, const char *key, size_t key_len,
		    const uint8_t *v, size_t len)
{
	static struct cw_wire_msg msg;
	struct cw_edge_merge *m = arg;
	size_t i;
	int kind, err = 0;

	m->pos[m->cur] = at + 1;
	if (key && skip_by_key(m, key, key_len))
		return 0;
	kind = cw_wire_decode(v, len, &msg, NULL, 0);
	if (kind == CW_WIRE_EDGE)
		return cw_edge_merge_add(m, &msg.edge) ? -1 : 0;
	/* A set's edges in one record: each as its own record would be. */
	for (i = 0; kind == CW_WIRE_EDGES && i < msg.edges.n && !err; i++)
		err = cw_edge_merge_add(m, &msg.edges.e[i]);
	m->bad += kind < 0;
	cw_wire_msg_release(&msg);
	return err ? -1 : 0;
}

int cw_edge_merge_read_log(struct cw_edge_merge *m, struct cw_kafka_log *l,
			   int n)
{
	int p;

	if (n <= 0)
		return -1;
	if (n > m->npos) {
		int64_t *pos = realloc(m->pos, (size_t)n * sizeof(*pos));

		if (!pos)
			return cw_error("out of memory");
		for (p = m->npos; p < n; p++)
			pos[p] = 0;
		m->pos = pos;
		m->npos = n;
	}
	for (p = 0; p < n; p++) {
		if (p < m->nskip && m->skip[p])
			continue;
		m->cur = p;
		if (cw_kafka_log_read(l, p, m->pos[p], read_one, m))
			return -1;
	}
	return prune(m);
}

int cw_edge_merge_read(struct cw_edge_merge *m, const struct cw_kafka_conf *kc,
		       const char *topic)
{
	struct cw_kafka_log *l = cw_kafka_log_new(kc, topic);
	int err = l ? cw_edge_merge_read_log(m, l, cw_kafka_log_partitions(l))
		    : -1;

	cw_kafka_log_free(l);
	if (err)
		cw_error("unable to read the edge buckets of '%s'", topic);
	return err;
}
