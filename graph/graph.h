/* SPDX-License-Identifier: MIT */
/*
 * The traffic graph: processes (and external addresses) as nodes, one edge
 * per (client, server, protocol) with bytes and messages each way and the
 * number of connections.  The correlator builds it from paired connection
 * ends; viz/ draws it.
 */
#ifndef CW_GRAPH_H
#define CW_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/htab.h"
#include "common/record.h"

enum cw_node_kind {
	CW_NODE_PROCESS,
	CW_NODE_UNKNOWN,  /* an end whose owning process was never seen */
	CW_NODE_EXTERNAL, /* the other end was not watched: an address */
};

struct cw_node {
	enum cw_node_kind kind;
	char host[CW_HOST_LEN];
	uint32_t netns;
	struct cw_process proc; /* CW_NODE_PROCESS */
	struct cw_addr addr;	/* CW_NODE_EXTERNAL */
	uint16_t port;		/* CW_NODE_EXTERNAL server: its port */
};

/* Traffic of one connection as both ends (or the one watched end) saw it. */
struct cw_conn_traffic {
	uint8_t protocol;
	uint64_t bytes_c2s, bytes_s2c; /* as the sender counted */
	uint64_t msgs_c2s, msgs_s2c;
	/* sender's count minus receiver's; only when both ends were seen */
	int64_t diff_c2s, diff_s2c;
	uint64_t first_ns, last_ns;
	uint32_t retrans;
	uint32_t srtt_us;
	int both_ends;
};

struct cw_edge {
	size_t client, server; /* node indices */
	uint8_t protocol;
	uint64_t conns;
	uint64_t paired; /* connections seen from both ends */
	uint64_t bytes_c2s, bytes_s2c;
	uint64_t msgs_c2s, msgs_s2c;
	int64_t diff_c2s, diff_s2c;
	uint64_t first_ns, last_ns;
	uint64_t retrans;
};

struct cw_graph {
	struct cw_node *nodes;
	size_t nnodes, cap_nodes;
	struct cw_edge *edges;
	size_t nedges, cap_edges;
	struct cw_htab node_index; /* node key -> index */
	struct cw_htab edge_index; /* (client, server, proto) -> index */
};

void cw_graph_init(struct cw_graph *g);
void cw_graph_release(struct cw_graph *g);
/* Node for the process (or unknown owner) of a watched end; -1 on ENOMEM. */
long cw_graph_node_for_end(struct cw_graph *g, const struct cw_conn_record *r);
/* Node for an address nobody watched; port 0 for a client. */
long cw_graph_node_external(struct cw_graph *g, const struct cw_addr *a,
			    uint16_t port);
/* Add one connection's traffic to the client -> server edge; 0 or -1. */
int cw_graph_add(struct cw_graph *g, size_t client, size_t server,
		 const struct cw_conn_traffic *t);
/* Edges by bytes (both ways), largest first; the array is the graph's. */
void cw_graph_sort_edges(struct cw_graph *g);
/* A short label: "nginx[1234]", "10.0.0.9:80", "?[netns 4026531840]". */
const char *cw_node_label(const struct cw_node *n, char *buf, size_t len);
void cw_graph_json(const struct cw_graph *g, struct cw_jsonw *w);

#endif
