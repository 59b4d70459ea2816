// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "graph/graph.h"

struct edge_key {
	uint64_t client, server;
	uint8_t protocol;
	uint8_t pad[7];
};

void cw_graph_init(struct cw_graph *g)
{
	memset(g, 0, sizeof(*g));
	cw_htab_init(&g->node_index, sizeof(struct cw_node_key),
		     sizeof(size_t));
	cw_htab_init(&g->edge_index, sizeof(struct edge_key), sizeof(size_t));
}

void cw_graph_release(struct cw_graph *g)
{
	size_t i;

	for (i = 0; i < g->nedges; i++)
		cw_edge_health_free(&g->edges[i].h);
	free(g->nodes);
	free(g->edges);
	cw_htab_release(&g->node_index);
	cw_htab_release(&g->edge_index);
	memset(g, 0, sizeof(*g));
}

int cw_graph_reserve(struct cw_graph *g, size_t nodes, size_t edges)
{
	if (CW_GROW(g->nodes, g->cap_nodes, nodes, nodes) ||
	    CW_GROW(g->edges, g->cap_edges, edges, edges) ||
	    cw_htab_reserve(&g->node_index, nodes) ||
	    cw_htab_reserve(&g->edge_index, edges))
		return -1;
	return 0;
}

/* The node of key k; *made points to it, zeroed, when it is new. */
static long node_get(struct cw_graph *g, const struct cw_node_key *k,
		     struct cw_node **made)
{
	bool created;
	size_t *idx = cw_htab_upsert(&g->node_index, k, &created);

	*made = NULL;
	if (!idx)
		return -1;
	if (!created)
		return (long)*idx;
	if (g->nnodes == g->cap_nodes &&
	    CW_GROW(g->nodes, g->cap_nodes, g->nnodes + 1, 64)) {
		cw_htab_delete(&g->node_index, k);
		return -1;
	}
	*made = &g->nodes[g->nnodes];
	memset(*made, 0, sizeof(**made));
	*idx = g->nnodes;
	return (long)g->nnodes++;
}

long cw_graph_node_for_proc(struct cw_graph *g, const char *host,
			    uint32_t netns, bool no_owner,
			    const struct cw_process *proc)
{
	struct cw_node_key k;
	struct cw_node *n;
	size_t len = strnlen(host, CW_HOST_LEN - 1);
	long i;

	memset(&k, 0, sizeof(k));
	memcpy(k.host, host, len);
	k.netns = netns;
	k.kind = no_owner ? CW_NODE_UNKNOWN : CW_NODE_PROCESS;
	if (!no_owner) {
		k.tgid = proc->tgid;
		k.start_ns = proc->start_ns;
		k.netns = 0; /* a process may hold sockets in several */
	}
	i = node_get(g, &k, &n);
	if (n) {
		n->kind = k.kind;
		memcpy(n->host, host, len);
		n->netns = netns;
		if (!no_owner)
			n->proc = *proc;
	}
	return i;
}

long cw_graph_node_external(struct cw_graph *g, const struct cw_addr *a,
			    uint16_t port)
{
	struct cw_node_key k;
	struct cw_node *n;
	long i;

	memset(&k, 0, sizeof(k));
	k.kind = CW_NODE_EXTERNAL;
	k.addr = *a;
	k.port = port;
	i = node_get(g, &k, &n);
	if (n) {
		n->kind = CW_NODE_EXTERNAL;
		n->addr = *a;
		n->port = port;
	}
	return i;
}

static void edge_key_of(struct edge_key *k, size_t client, size_t server,
			uint8_t protocol)
{
	memset(k, 0, sizeof(*k));
	k->client = client;
	k->server = server;
	k->protocol = protocol;
}

static void edge_start(struct cw_edge *e, size_t client, size_t server,
		       const struct cw_conn_traffic *t)
{
	memset(e, 0, sizeof(*e));
	e->client = client;
	e->server = server;
	e->protocol = t->protocol;
	e->first_ns = t->first_ns;
}

/*
 * The one sum of an edge: t's counters and the health h (NULL: none)
 * into e's own block (t->h is not read: a connection's health comes from
 * its traffic).
 */
static void edge_add(struct cw_edge *e, const struct cw_edge_total *t,
		     const struct cw_edge_health *h)
{
	e->conns = cw_count_add(e->conns, t->conns);
	e->paired = cw_count_add(e->paired, t->paired);
	e->bytes_c2s = cw_count_add(e->bytes_c2s, t->bytes_c2s);
	e->bytes_s2c = cw_count_add(e->bytes_s2c, t->bytes_s2c);
	e->msgs_c2s = cw_count_add(e->msgs_c2s, t->msgs_c2s);
	e->msgs_s2c = cw_count_add(e->msgs_s2c, t->msgs_s2c);
	e->diff_c2s = cw_sdiff_add(e->diff_c2s, t->diff_c2s);
	e->diff_s2c = cw_sdiff_add(e->diff_s2c, t->diff_s2c);
	e->retrans = cw_count_add(e->retrans, t->retrans);
	e->est_conns = cw_count_add(e->est_conns, t->est_conns);
	e->sampled_bytes = cw_count_add(e->sampled_bytes, t->sampled_bytes);
	e->has_sampled |= t->has_sampled != 0;
	(void)cw_edge_health_more(&e->h, h);
	if (t->first_ns && (!e->first_ns || t->first_ns < e->first_ns))
		e->first_ns = t->first_ns;
	if (t->last_ns > e->last_ns)
		e->last_ns = t->last_ns;
}

/* One connection into e: the totals of one connection (their health
 * left unset: edge_add() takes the traffic's). */
static void edge_sum(struct cw_edge *e, const struct cw_conn_traffic *t)
{
	struct cw_edge_total one;

	one.conns = 1;
	one.paired = t->both_ends ? 1 : 0;
	one.bytes_c2s = t->bytes_c2s;
	one.bytes_s2c = t->bytes_s2c;
	one.msgs_c2s = t->msgs_c2s;
	one.msgs_s2c = t->msgs_s2c;
	one.diff_c2s = t->diff_c2s;
	one.diff_s2c = t->diff_s2c;
	one.first_ns = t->first_ns;
	one.last_ns = t->last_ns;
	one.retrans = t->retrans;
	one.est_conns = t->msgs_est ? 1 : 0;
	one.sampled_bytes = t->sampled_bytes;
	one.has_sampled = t->has_sampled;
	edge_add(e, &one, t->h);
}

/* The edge index after cw_graph_add_links() or a sort; 0 or -1. */
static int edge_index_rebuild(struct cw_graph *g)
{
	struct edge_key k;
	size_t i, *idx;

	cw_htab_release(&g->edge_index);
	if (cw_htab_reserve(&g->edge_index, g->nedges))
		return -1;
	for (i = 0; i < g->nedges; i++) {
		edge_key_of(&k, g->edges[i].client, g->edges[i].server,
			    g->edges[i].protocol);
		idx = cw_htab_upsert(&g->edge_index, &k, NULL);
		if (!idx)
			return -1;
		*idx = i;
	}
	g->edge_index_stale = false;
	return 0;
}

/* The client -> server edge of that protocol, made (starting at
 * first_ns) if new; NULL when out of memory. */
static struct cw_edge *edge_get(struct cw_graph *g, size_t client,
				size_t server, uint8_t protocol,
				uint64_t first_ns)
{
	struct cw_conn_traffic first = {.protocol = protocol,
					.first_ns = first_ns};
	struct edge_key k;
	bool created;
	size_t *idx;

	if (g->edge_index_stale && edge_index_rebuild(g))
		return NULL;
	edge_key_of(&k, client, server, protocol);
	idx = cw_htab_upsert(&g->edge_index, &k, &created);
	if (!idx)
		return NULL;
	if (created) {
		if (g->nedges == g->cap_edges &&
		    CW_GROW(g->edges, g->cap_edges, g->nedges + 1, 64)) {
			cw_htab_delete(&g->edge_index, &k);
			return NULL;
		}
		*idx = g->nedges++;
		edge_start(&g->edges[*idx], client, server, &first);
	}
	return &g->edges[*idx];
}

int cw_graph_add(struct cw_graph *g, size_t client, size_t server,
		 const struct cw_conn_traffic *t)
{
	struct cw_edge *e = edge_get(g, client, server, t->protocol,
				     t->first_ns);

	if (!e)
		return -1;
	edge_sum(e, t);
	return 0;
}

int cw_graph_add_total(struct cw_graph *g, size_t client, size_t server,
		       uint8_t protocol, const struct cw_edge_total *t)
{
	struct cw_edge *e = edge_get(g, client, server, protocol, t->first_ns);

	if (!e)
		return -1;
	edge_add(e, t, t->h);
	return 0;
}

int cw_sort_by_key(const uint64_t *key, size_t n, uint32_t *order)
{
	enum { DIGIT = 11, BUCKETS = 1 << DIGIT };
	uint64_t max = 0, *k1 = NULL, *k2 = NULL, *kt;
	uint32_t *o2 = NULL, *ot, *o1 = order;
	size_t i, *count = NULL, sum, c;
	unsigned int shift, bits = 0;
	int err = -1;

	for (i = 0; i < n; i++) {
		o1[i] = (uint32_t)i;
		max |= key[i];
	}
	while (bits < 64 && max >> bits)
		bits++;
	if (!bits || n < 2)
		return 0;
	k1 = malloc(n * sizeof(*k1));
	k2 = malloc(n * sizeof(*k2));
	o2 = malloc(n * sizeof(*o2));
	count = malloc(BUCKETS * sizeof(*count));
	if (!k1 || !k2 || !o2 || !count)
		goto out;
	memcpy(k1, key, n * sizeof(*k1));
	/* Least significant digit first: each pass is stable. */
	for (shift = 0; shift < bits; shift += DIGIT) {
		memset(count, 0, BUCKETS * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(k1[i] >> shift) & (BUCKETS - 1)]++;
		for (i = 0, sum = 0; i < BUCKETS; i++) {
			c = count[i];
			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			size_t d = count[(k1[i] >> shift) & (BUCKETS - 1)]++;

			k2[d] = k1[i];
			o2[d] = o1[i];
		}
		kt = k1, k1 = k2, k2 = kt;
		ot = o1, o1 = o2, o2 = ot;
	}
	if (o1 != order) {
		memcpy(order, o1, n * sizeof(*order));
		o2 = o1; /* the spare buffer: freed below */
	}
	err = 0;
out:
	free(k1);
	free(k2);
	free(o2 == order ? NULL : o2);
	free(count);
	return err;
}

int cw_graph_add_links(struct cw_graph *g, const struct cw_conn_link *l,
		       size_t n, cw_link_traffic_fn traffic, void *arg)
{
	struct cw_conn_traffic t;
	uint32_t *order = NULL, *lead = NULL, max = 0;
	unsigned int bits = 0;
	uint64_t *key = NULL;
	size_t i, j, runs = 0;
	int err = -1;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		max |= l[i].client | l[i].server;
	while (bits < 32 && max >> bits)
		bits++;
	/* Into edges that are there already, or keys too wide: one by one. */
	if (g->nedges || 2 * bits + 8 > 64 || n >= UINT32_MAX) {
		for (i = 0; i < n; i++) {
			memset(&t, 0, sizeof(t));
			t.protocol = l[i].protocol;
			traffic(&l[i], &t, arg);
			err = cw_graph_add(g, l[i].client, l[i].server, &t);
			cw_edge_health_free(&t.h);
			if (err)
				return -1;
		}
		return 0;
	}
	key = malloc((n + 1) * sizeof(*key));
	order = malloc((n + 1) * sizeof(*order));
	lead = malloc((n + 1) * sizeof(*lead));
	if (!key || !order || !lead)
		goto out;
	for (i = 0; i < n; i++)
		key[i] = (uint64_t)l[i].client << (bits + 8) |
			 (uint64_t)l[i].server << 8 | l[i].protocol;
	if (cw_sort_by_key(key, n, order))
		goto out;
	/* Each run of one key: its first link (in order) leads it. */
	for (i = 0; i < n; i = j, runs++)
		for (j = i; j < n && key[order[j]] == key[order[i]]; j++)
			lead[order[j]] = order[i];
	free(key);
	key = NULL;
	if (CW_GROW(g->edges, g->cap_edges, runs, runs))
		goto out;
	/* In link order, as cw_graph_add() would: order[] now edge ids. */
	for (i = 0; i < n; i++) {
		memset(&t, 0, sizeof(t));
		t.protocol = l[i].protocol;
		traffic(&l[i], &t, arg);
		if (lead[i] == i) {
			order[i] = (uint32_t)g->nedges++;
			edge_start(&g->edges[order[i]], l[i].client,
				   l[i].server, &t);
		} else {
			order[i] = order[lead[i]];
		}
		if (!g->edges[order[i]].h) { /* moved, not copied */
			g->edges[order[i]].h = t.h;
			t.h = NULL;
		}
		edge_sum(&g->edges[order[i]], &t);
		cw_edge_health_free(&t.h);
	}
	g->edge_index_stale = true;
	err = 0;
out:
	free(key);
	free(order);
	free(lead);
	return err;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct cw_edge *x = a, *y = b;
	uint64_t bx = x->bytes_c2s + x->bytes_s2c;
	uint64_t by = y->bytes_c2s + y->bytes_s2c;

	if (bx != by)
		return bx > by ? -1 : 1;
	if (x->client != y->client)
		return x->client < y->client ? -1 : 1;
	return x->server < y->server ? -1 : x->server > y->server;
}

void cw_graph_sort_edges(struct cw_graph *g)
{
	qsort(g->edges, g->nedges, sizeof(*g->edges), edge_cmp);
	/* Indices moved: the next cw_graph_add() rebuilds the index. */
	g->edge_index_stale = g->nedges > 0;
}

const char *cw_node_label(const struct cw_node *n, char *buf, size_t len)
{
	char a[64];

	switch (n->kind) {
	case CW_NODE_PROCESS:
		snprintf(buf, len, "%s[%u]", n->proc.comm, n->proc.tgid);
		break;
	case CW_NODE_UNKNOWN:
		snprintf(buf, len, "?[netns %u]", n->netns);
		break;
	case CW_NODE_EXTERNAL:
		cw_addr_str(&n->addr, a, sizeof(a));
		if (!n->port)
			snprintf(buf, len, "%s", a);
		else if (n->addr.family == 6)
			snprintf(buf, len, "[%s]:%u", a, n->port);
		else
			snprintf(buf, len, "%s:%u", a, n->port);
		break;
	}
	return buf;
}

const char *cw_node_kind_name(enum cw_node_kind k)
{
	return k == CW_NODE_PROCESS   ? "process"
	       : k == CW_NODE_UNKNOWN ? "unknown"
				      : "external";
}

long cw_graph_node_of(struct cw_graph *g, const struct cw_edge_node *n)
{
	if (n->kind == CW_EDGE_NODE_EXTERNAL)
		return cw_graph_node_external(g, &n->addr, n->port);
	return cw_graph_node_for_proc(g, n->host, n->netns,
				      n->kind == CW_EDGE_NODE_UNKNOWN,
				      &n->proc);
}

int cw_graph_bucket_edge(const struct cw_edge_node *client,
			 const struct cw_edge_node *server, uint8_t protocol,
			 uint64_t bucket_ns, const struct cw_edge_total *t,
			 void *arg)
{
	struct cw_graph *g = arg;
	long c = cw_graph_node_of(g, client), s = cw_graph_node_of(g, server);

	(void)bucket_ns;
	if (c < 0 || s < 0)
		return -1;
	return cw_graph_add_total(g, (size_t)c, (size_t)s, protocol, t);
}
