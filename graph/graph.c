// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

struct node_key {
	uint8_t kind;
	uint8_t pad[3];
	uint32_t netns;
	uint32_t tgid;
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

void cw_graph_init(struct cw_graph *g)
{
	memset(g, 0, sizeof(*g));
	cw_htab_init(&g->node_index, sizeof(struct node_key), sizeof(size_t));
	cw_htab_init(&g->edge_index, sizeof(struct edge_key), sizeof(size_t));
}

void cw_graph_release(struct cw_graph *g)
{
	free(g->nodes);
	free(g->edges);
	cw_htab_release(&g->node_index);
	cw_htab_release(&g->edge_index);
	memset(g, 0, sizeof(*g));
}

static long node_get(struct cw_graph *g, const struct node_key *k,
		     const struct cw_node *proto)
{
	bool created;
	size_t *idx = cw_htab_upsert(&g->node_index, k, &created);

	if (!idx)
		return -1;
	if (!created)
		return (long)*idx;
	if (g->nnodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
		struct cw_node *n = realloc(g->nodes, cap * sizeof(*n));

		if (!n) {
			cw_htab_delete(&g->node_index, k);
			return -1;
		}
		g->nodes = n;
		g->cap_nodes = cap;
	}
	g->nodes[g->nnodes] = *proto;
	*idx = g->nnodes;
	return (long)g->nnodes++;
}

long cw_graph_node_for_end(struct cw_graph *g, const struct cw_conn_record *r)
{
	struct node_key k;
	struct cw_node n;

	memset(&k, 0, sizeof(k));
	memset(&n, 0, sizeof(n));
	snprintf(k.host, sizeof(k.host), "%s", r->host);
	snprintf(n.host, sizeof(n.host), "%s", r->host);
	n.netns = k.netns = r->netns;
	if (r->flags & CW_REC_NO_OWNER) {
		n.kind = CW_NODE_UNKNOWN;
		k.kind = CW_NODE_UNKNOWN;
	} else {
		n.kind = CW_NODE_PROCESS;
		k.kind = CW_NODE_PROCESS;
		k.tgid = r->proc.tgid;
		k.start_ns = r->proc.start_ns;
		k.netns = 0; /* a process may hold sockets in several */
		n.proc = r->proc;
	}
	return node_get(g, &k, &n);
}

long cw_graph_node_external(struct cw_graph *g, const struct cw_addr *a,
			    uint16_t port)
{
	struct node_key k;
	struct cw_node n;

	memset(&k, 0, sizeof(k));
	memset(&n, 0, sizeof(n));
	k.kind = n.kind = CW_NODE_EXTERNAL;
	k.addr = n.addr = *a;
	k.port = n.port = port;
	return node_get(g, &k, &n);
}

int cw_graph_add(struct cw_graph *g, size_t client, size_t server,
		 const struct cw_conn_traffic *t)
{
	struct edge_key k;
	struct cw_edge *e;
	bool created;
	size_t *idx;

	memset(&k, 0, sizeof(k));
	k.client = client;
	k.server = server;
	k.protocol = t->protocol;
	idx = cw_htab_upsert(&g->edge_index, &k, &created);
	if (!idx)
		return -1;
	if (created) {
		if (g->nedges == g->cap_edges) {
			size_t cap = g->cap_edges ? g->cap_edges * 2 : 64;
			struct cw_edge *ne = realloc(g->edges, cap * sizeof(*ne));

			if (!ne) {
				cw_htab_delete(&g->edge_index, &k);
				return -1;
			}
			g->edges = ne;
			g->cap_edges = cap;
		}
		*idx = g->nedges++;
		e = &g->edges[*idx];
		memset(e, 0, sizeof(*e));
		e->client = client;
		e->server = server;
		e->protocol = t->protocol;
		e->first_ns = t->first_ns;
	}
	e = &g->edges[*idx];
	e->conns++;
	e->paired += t->both_ends ? 1 : 0;
	e->bytes_c2s += t->bytes_c2s;
	e->bytes_s2c += t->bytes_s2c;
	e->msgs_c2s += t->msgs_c2s;
	e->msgs_s2c += t->msgs_s2c;
	e->diff_c2s += t->diff_c2s;
	e->diff_s2c += t->diff_s2c;
	e->retrans += t->retrans;
	if (t->first_ns && (!e->first_ns || t->first_ns < e->first_ns))
		e->first_ns = t->first_ns;
	if (t->last_ns > e->last_ns)
		e->last_ns = t->last_ns;
	return 0;
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
	struct edge_key k;
	size_t i, *idx;

	qsort(g->edges, g->nedges, sizeof(*g->edges), edge_cmp);
	for (i = 0; i < g->nedges; i++) {
		memset(&k, 0, sizeof(k));
		k.client = g->edges[i].client;
		k.server = g->edges[i].server;
		k.protocol = g->edges[i].protocol;
		idx = cw_htab_get(&g->edge_index, &k);
		if (idx)
			*idx = i;
	}
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

static const char *kind_name(enum cw_node_kind k)
{
	return k == CW_NODE_PROCESS ? "process" :
	       k == CW_NODE_UNKNOWN ? "unknown" :
				      "external";
}

static void node_json(const struct cw_node *n, size_t id, struct cw_jsonw *w)
{
	char buf[128];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "id", id);
	cw_jsonw_str(w, "kind", kind_name(n->kind));
	cw_jsonw_str(w, "label", cw_node_label(n, buf, sizeof(buf)));
	if (n->kind == CW_NODE_EXTERNAL) {
		cw_jsonw_str(w, "addr", cw_addr_str(&n->addr, buf, sizeof(buf)));
		cw_jsonw_u64(w, "port", n->port);
	} else {
		cw_jsonw_str(w, "host", n->host);
		cw_jsonw_u64(w, "netns", n->netns);
	}
	if (n->kind == CW_NODE_PROCESS) {
		cw_jsonw_u64(w, "pid", n->proc.tgid);
		cw_jsonw_u64(w, "start_ns", n->proc.start_ns);
		cw_jsonw_str(w, "comm", n->proc.comm);
		cw_jsonw_str(w, "cmdline", n->proc.cmdline);
		cw_jsonw_str(w, "container", n->proc.container);
		cw_jsonw_str(w, "pod", n->proc.pod);
	}
	cw_jsonw_obj_close(w);
}

static void edge_json(const struct cw_edge *e, struct cw_jsonw *w)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "client", e->client);
	cw_jsonw_u64(w, "server", e->server);
	cw_jsonw_str(w, "proto", cw_proto_name(e->protocol));
	cw_jsonw_u64(w, "conns", e->conns);
	cw_jsonw_u64(w, "paired", e->paired);
	cw_jsonw_u64(w, "bytes_c2s", e->bytes_c2s);
	cw_jsonw_u64(w, "bytes_s2c", e->bytes_s2c);
	cw_jsonw_u64(w, "msgs_c2s", e->msgs_c2s);
	cw_jsonw_u64(w, "msgs_s2c", e->msgs_s2c);
	cw_jsonw_i64(w, "unreceived_c2s", e->diff_c2s);
	cw_jsonw_i64(w, "unreceived_s2c", e->diff_s2c);
	cw_jsonw_u64(w, "retrans", e->retrans);
	cw_jsonw_u64(w, "first_ns", e->first_ns);
	cw_jsonw_u64(w, "last_ns", e->last_ns);
	cw_jsonw_obj_close(w);
}

void cw_graph_json(const struct cw_graph *g, struct cw_jsonw *w)
{
	size_t i;

	cw_jsonw_arr_open(w, "nodes");
	for (i = 0; i < g->nnodes; i++)
		node_json(&g->nodes[i], i, w);
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "edges");
	for (i = 0; i < g->nedges; i++)
		edge_json(&g->edges[i], w);
	cw_jsonw_arr_close(w);
}
