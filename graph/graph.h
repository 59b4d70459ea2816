/* SPDX-License-Identifier: MIT */
/*
 * The traffic graph, a store: processes (and external addresses) as
 * nodes, one edge per (client, server, protocol) with bytes and messages
 * each way and the number of connections; projections, queries and
 * exports through igraph.  It knows nothing of where the traffic comes
 * from: the correlator feeds it (correlator/pipeline.h: from a pairing,
 * from time buckets, from a group's P.edges), viz/ and place/ read it.
 *
 *	struct cw_graph g;
 *	struct cw_view v;
 *
 *	cw_graph_init(&g);
 *	c = cw_graph_node_for_proc(&g, host, netns, false, &proc);
 *	s = cw_graph_node_external(&g, &addr, 443);
 *	if (c < 0 || s < 0 || cw_graph_add(&g, c, s, &traffic))
 *		goto fail;				// out of memory
 *	if (cw_view_build(&v, &g, CW_BY_HOST, NULL))	// or &windows
 *		goto fail;				// already reported
 *	cw_view_edges(&v, -1, 20, &edges, &ne);		// top 20 edges
 *	cw_view_json(&v, &w, edges, ne);
 *	cw_view_release(&v);
 *	cw_graph_release(&g);
 */
#ifndef CW_GRAPH_H
#define CW_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/htab.h"
#include "common/jsonw.h"
#include "common/record.h"
#include "common/wire.h"

enum cw_node_kind {
	CW_NODE_PROCESS,
	CW_NODE_UNKNOWN,  /* an end whose owning process was never seen */
	CW_NODE_EXTERNAL, /* the other end was not watched: an address */
};

/*
 * A node's identity as a hash key: graph/ and the correlator's buckets key
 * nodes the same way.  Zero it before filling it in, padding included
 * (keys are hashed 8 bytes at a time).
 */
struct cw_node_key {
	uint8_t kind;
	uint8_t pad[3];
	uint32_t netns;
	uint32_t tgid;
	uint16_t port;
	uint16_t pad2;
	uint64_t start_ns;
	struct cw_addr addr;
	uint8_t pad3[7];
	char host[CW_HOST_LEN];
};

#define CW_NODE_NAME_MAX 256 /* a DNS name, cut past 255 bytes */

struct cw_node {
	enum cw_node_kind kind;
	char host[CW_HOST_LEN];
	uint32_t netns;
	struct cw_process proc; /* CW_NODE_PROCESS */
	struct cw_addr addr;	/* CW_NODE_EXTERNAL */
	uint16_t port;		/* CW_NODE_EXTERNAL server: its port */
	/* CW_NODE_EXTERNAL: its DNS name as an agent learned it ("" none;
	 * correlator/pipeline.h, cw_peer_names_apply()); labels show it. */
	char name[CW_NODE_NAME_MAX];
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
	/*
	 * Messages estimated outside timing windows (common/record.h):
	 * msgs_est bit 0: msgs_c2s is an estimate, bit 1: msgs_s2c;
	 * sampled_bytes: the bytes whose messages were counted; has_sampled:
	 * an end carried an estimate block.
	 */
	uint64_t sampled_bytes;
	uint8_t msgs_est;
	bool has_sampled;
	/* Edge health (common/wire.h; docs/edge-health.md): what the
	 * connection's ends gave (cw_edge_health_end()); NULL: none.  The
	 * caller of cw_graph_add() owns it (cw_graph_add_links() frees the
	 * traffic function's). */
	struct cw_edge_health *h;
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
	/* Estimated messages (cw_conn_traffic): connections with an
	 * estimate, the bytes whose messages were counted, and whether any
	 * end said (edges.json shows msgs_estimated, sampled_fraction). */
	uint64_t est_conns, sampled_bytes;
	bool has_sampled;
	/* Edge health (docs/edge-health.md): counters summed, histograms
	 * merged exactly; graph JSON and GraphML write it when it has any.
	 * A block of its own, NULL: none; freed by cw_graph_release(). */
	struct cw_edge_health *h;
};

/* Did every connection on the edge fail to connect (refused, timed out)?
 * Such an edge goes to the address the client tried, marked failed. */
static inline bool cw_graph_edge_failed(const struct cw_edge *e)
{
	return e->conns && e->h &&
	       cw_count_add(e->h->conns_refused, e->h->conns_timeout) >=
		       e->conns;
}

struct cw_resources;

struct cw_graph {
	struct cw_node *nodes;
	size_t nnodes, cap_nodes;
	struct cw_edge *edges;
	size_t nedges, cap_edges;
	struct cw_htab node_index; /* node key -> index */
	struct cw_htab edge_index; /* (client, server, proto) -> index */
	bool edge_index_stale;	   /* rebuilt by the next cw_graph_add */
	/* Processes' resources and hosts' capacities (the caller's; NULL:
	 * none): set with cw_graph_set_resources(), read by the views. */
	const struct cw_resources *res;
};

/* One connection for cw_graph_add_links(). */
struct cw_conn_link {
	uint32_t client, server; /* node indices */
	uint32_t a, b;		 /* the caller's, for its traffic callback */
	uint8_t protocol;
};

/* Fill *t, the traffic of link l (t->protocol is l's). */
typedef void (*cw_link_traffic_fn)(const struct cw_conn_link *l,
				   struct cw_conn_traffic *t, void *arg);

void cw_graph_init(struct cw_graph *g);
void cw_graph_release(struct cw_graph *g);
/* Room for n nodes and m edges without growing; 0 or -1 (ENOMEM). */
int cw_graph_reserve(struct cw_graph *g, size_t n, size_t m);
/* Node for the process (or unknown owner) of a watched end, from the end's
 * parts: its host, netns, whether its owner is unknown (CW_REC_NO_OWNER)
 * and its process; -1 on ENOMEM. */
long cw_graph_node_for_proc(struct cw_graph *g, const char *host,
			    uint32_t netns, bool no_owner,
			    const struct cw_process *proc);
/* Node for an address nobody watched; port 0 for a client. */
long cw_graph_node_external(struct cw_graph *g, const struct cw_addr *a,
			    uint16_t port);
/* Add one connection's traffic to the client -> server edge; 0 or -1. */
int cw_graph_add(struct cw_graph *g, size_t client, size_t server,
		 const struct cw_conn_traffic *t);
/* Add an edge's totals over time (correlator buckets); 0 or -1. */
int cw_graph_add_total(struct cw_graph *g, size_t client, size_t server,
		       uint8_t protocol, const struct cw_edge_total *t);
/* The node of a bucket's edge end (common/wire.h), made if new; -1 on
 * ENOMEM. */
long cw_graph_node_of(struct cw_graph *g, const struct cw_edge_node *n);
/*
 * One edge's totals over a time bucket into g (arg: the graph), its ends
 * made if new: the shape of the correlator's cw_edge_fn, so buckets and a
 * group's merged P.edges go straight in.  0 or -1 (out of memory).
 */
int cw_graph_bucket_edge(const struct cw_edge_node *client,
			 const struct cw_edge_node *server, uint8_t protocol,
			 uint64_t bucket_ns, const struct cw_edge_total *t,
			 void *arg);
/*
 * Add n connections, as n calls of cw_graph_add() in that order would
 * (edges in order of first appearance), but by sorting instead of one
 * hash lookup each; traffic() is asked for each link's traffic in order.  0 or
 * -1 (out of memory; the graph is then unchanged or partly filled, as with a
 * failed cw_graph_add()).
 */
int cw_graph_add_links(struct cw_graph *g, const struct cw_conn_link *l,
		       size_t n, cw_link_traffic_fn traffic, void *arg);
/* Edges by bytes (both ways), largest first; the array is the graph's. */
void cw_graph_sort_edges(struct cw_graph *g);
/*
 * The indices 0..n-1 ordered by key (ties in index order) into order[n]:
 * a radix sort, for grouping many things by a small integer key.  0 or -1
 * (out of memory).
 */
int cw_sort_by_key(const uint64_t *key, size_t n, uint32_t *order);
/* "process", "unknown" or "external": the JSON and igraph `kind`. */
const char *cw_node_kind_name(enum cw_node_kind k);
/* A short label: "nginx[1234]", "10.0.0.9:80", "?[netns 4026531840]". */
const char *cw_node_label(const struct cw_node *n, char *buf, size_t len);
/*
 * The process graph's "nodes" and "edges" members into the open object w
 * (edges.json: per protocol, with netns, start_ns, unreceived bytes and
 * retransmits).  cw_view_json() writes a view: grouped vertices with
 * members, protocols summed, windows; both with cw_node_json() and
 * cw_edge_json().
 */
void cw_graph_json(const struct cw_graph *g, struct cw_jsonw *w);

/*
 * One node in JSON, the one node schema of every output (edges.json,
 * `graph --format json`, serve's /api/graph): its members into the open
 * object w, each only where the output has it, in this order: name (a
 * view's unique group name), label, kind, external (has_external); an
 * external peer's addr, dns_name (its DNS name when an agent learned one:
 * "name" is a view's group) and port (has_port); host, netns (has_netns);
 * a process's pid (has_pid), start_ns (has_start), comm, cmdline, and its
 * container and pod as the agent gave them; who it is at the projection
 * `by` (identity: cw_identity_json()); members, bytes_out, bytes_in
 * (has_traffic); what the members used (usage, when known).  Strings are
 * left out when NULL.  The caller writes its own "id" first: an index
 * (edges.json, views) or serve's page id.
 */
struct cw_node_json {
	const char *name, *label, *kind;
	bool has_external, external;
	const char *addr;
	const char *dns_name; /* an external peer's, when known */
	bool has_port;
	uint16_t port;
	const char *host;
	bool has_netns, has_pid, has_start;
	uint32_t netns, pid;
	uint64_t start_ns;
	const char *comm, *cmdline, *container, *pod;
	const struct cw_process *identity;
	int by;		   /* enum cw_group_by, for identity */
	bool container_id; /* identity: with the container's id */
	bool has_traffic;
	uint64_t members, bytes_out, bytes_in;
	const struct cw_usage_stats *usage;
};

void cw_node_json(struct cw_jsonw *w, const struct cw_node_json *n);

/*
 * One edge in JSON, the one edge schema of every output (edges.json,
 * `graph --format json`, serve's /api/graph): its members into the open
 * object w, in this order: the ends, as indices ("client", "server", then
 * "client_name" and "server_name" when both names are given) or as names
 * ("client", "server": CW_JSON_ENDS_NAME); "proto" (protocol >= 0);
 * conns, paired, bytes and messages each way; msgs_estimated and
 * sampled_fraction (has_sampled: only where an agent said how it
 * counted); unreceived_c2s, unreceived_s2c and retrans (has_unreceived);
 * first_ns and last_ns (has_times).  The caller writes what its output
 * adds before and after (an "id", serve's "share").
 */
enum cw_json_ends { CW_JSON_ENDS_INDEX, CW_JSON_ENDS_NAME };

struct cw_edge_json {
	size_t client, server;
	const char *client_name, *server_name;
	int protocol; /* -1: not written */
	uint64_t conns, paired;
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c;
	bool has_sampled, msgs_est;
	uint64_t sampled_bytes;
	bool has_unreceived;
	int64_t diff_c2s, diff_s2c;
	uint64_t retrans;
	bool has_times;
	uint64_t first_ns, last_ns;
	/* Edge health (docs/edge-health.md), NULL: none; written (with
	 * "failed") only when it has any. */
	const struct cw_edge_health *health;
};

void cw_edge_json(struct cw_jsonw *w, const struct cw_edge_json *e,
		  enum cw_json_ends ends);
/* The initialisers of the traffic members from any edge struct that
 * names them alike (struct cw_edge, cw_view_edge, serve's). */
#define CW_EDGE_JSON_TRAFFIC(e)                                                \
	.conns = (e)->conns, .paired = (e)->paired,                            \
	.bytes_c2s = (e)->bytes_c2s, .bytes_s2c = (e)->bytes_s2c,              \
	.msgs_c2s = (e)->msgs_c2s, .msgs_s2c = (e)->msgs_s2c,                  \
	.has_sampled = (e)->has_sampled, .sampled_bytes = (e)->sampled_bytes

/* One edge's traffic in one window. */
struct cw_view_window {
	size_t edge;
	uint64_t start_ns;
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c;
	/* As cw_view_edge's: bytes whose messages were counted, whether
	 * an end estimated, and whether any end said (the JSON shows
	 * msgs_estimated and sampled_fraction only then). */
	uint64_t sampled_bytes;
	bool msgs_est, has_sampled;
};

/*
 * Traffic per time window on a graph's edges, for cw_view_build(): cells
 * of width_ns (edge: an index in g->edges; any order, several to one edge
 * and window allowed) and the window bytes no edge took.  The correlator
 * makes them from its records (cw_windows_by_edge(),
 * correlator/pipeline.h).
 */
struct cw_edge_windows {
	uint64_t width_ns; /* 0: no windows */
	struct cw_view_window *cells;
	size_t n;
	uint64_t unattributed;
};

/* Free the cells; *ew is then empty. */
void cw_edge_windows_release(struct cw_edge_windows *ew);

/*
 * Resources per process and capacity per host (graph/resources.c), from the
 * agents' ProcessMeta and HostMeta records: a process's CPU time and
 * resident memory are sampled every interval, so the graph gives each
 * vertex what its members used over the span their samples cover.
 *
 *	struct cw_resources r;
 *	cw_resources_init(&r);
 *	cw_resources_add(&r, &msg);		// every host / process record
 *	cw_graph_set_resources(&g, &r);		// before cw_view_build()
 *	...
 *	cw_resources_release(&r);		// after the views
 */
struct cw_usage_sample {
	uint64_t time_ns, cpu_ns, rss_bytes;
};

/*
 * What one process (or container, or group) used over its samples' span:
 * cpu_ns the CPU time between the first and the last sample (a counter
 * that goes back counts from its new value), cpu_cores that over the span,
 * cpu_peak_cores the highest rate between two consecutive samples;
 * rss_bytes the mean of the samples, rss_peak_bytes the highest.  A
 * group's figures are the sums over its distinct processes and containers
 * (a container's cgroup counts once however many of its processes are
 * members: the member whose samples span longest stands for it); its
 * peaks are the sums of their peaks: what it needs if they peak together.
 * known: any sample at all.
 */
struct cw_usage_stats {
	bool known;
	uint32_t samples; /* fewest samples among the summed units */
	uint64_t span_ns; /* longest span among the summed units */
	uint64_t cpu_ns;
	double cpu_cores, cpu_peak_cores;
	uint64_t rss_bytes, rss_peak_bytes;
};

/* One process's samples, and what it is labelled with. */
struct cw_proc_usage {
	char host[CW_HOST_LEN];
	struct cw_process proc; /* the newest record's labels */
	uint8_t source;		/* enum cw_usage_source (common/wire.h) */
	uint64_t newest_ns;	/* time of the newest sample */
	struct cw_usage_sample *s;
	size_t n, cap;
	struct cw_usage_stats st; /* after cw_resources_finish() */
};

struct cw_resources {
	struct cw_htab procs; /* (host, tgid, start) -> index in p */
	struct cw_proc_usage *p;
	size_t np, capp;
	struct cw_host_meta *hosts; /* the newest record per host, in order
				     * of first appearance */
	size_t nhosts, caphosts;
	bool finished;
};

void cw_resources_init(struct cw_resources *r);
void cw_resources_release(struct cw_resources *r);
/*
 * Take one record: a host's newest capacity, or one process sample (other
 * kinds are ignored).  0, or -1 when out of memory (no message).
 */
int cw_resources_add(struct cw_resources *r, const struct cw_wire_msg *m);
/* Sort each process's samples and compute its figures; then read only. */
void cw_resources_finish(struct cw_resources *r);
/* The process (host, tgid, start_ns), or NULL. */
const struct cw_proc_usage *cw_resources_find(const struct cw_resources *r,
					      const char *host, uint32_t tgid,
					      uint64_t start_ns);
/* Figures of n samples sorted by time (as cw_resources_finish() does). */
void cw_usage_stats_of(const struct cw_usage_sample *s, size_t n,
		       struct cw_usage_stats *st);
/* Add b into the group a (sums, as described above). */
void cw_usage_stats_sum(struct cw_usage_stats *a,
			const struct cw_usage_stats *b);
/*
 * Let g's views use r (finished first if need be): process nodes that lack
 * a workload identity take it from r's records of the same process.
 */
void cw_graph_set_resources(struct cw_graph *g, struct cw_resources *r);

/*
 * Views of the traffic graph through igraph (graph/igraph.c): the process
 * graph or a projection of it, one vertex per group and one edge per
 * (client group, server group) with the traffic summed over protocols.
 * Projected traffic between members of one group becomes a loop: in the
 * host view the loop of a host is its intra-host traffic.
 */
enum cw_group_by {
	CW_BY_PROCESS,
	CW_BY_CMDLINE,	 /* process type: the command line (comm if none) */
	CW_BY_CONTAINER, /* container id; processes outside any per host */
	CW_BY_HOST,	 /* host id; external peers per address */
	CW_BY_POD,	 /* namespace/pod name (else pod uid, else container);
			  * processes outside containers per host */
	CW_BY_WORKLOAD,	 /* namespace/kind/owner (else as CW_BY_POD) */
};

/* "process", "cmdline", "container", "host", "pod", "workload"; 0 or -1
 * (no message). */
int cw_group_by_parse(const char *s, enum cw_group_by *out);
const char *cw_group_by_name(enum cw_group_by by);

struct cw_view_vertex {
	char *name;		    /* unique within the view */
	char *label;		    /* for people, may be shortened */
	const struct cw_node *node; /* the first member: host, comm, ... */
	int same_host;		    /* every member is on node->host */
	uint64_t members;	    /* processes (or nodes) in the group */
	uint64_t bytes_out, bytes_in;
	/* Resources of the members, when the graph has them (known) */
	struct cw_usage_stats usage;
};

struct cw_view_edge {
	size_t from, to; /* client group -> server group */
	uint64_t conns, paired;
	uint64_t bytes_c2s, bytes_s2c;
	uint64_t msgs_c2s, msgs_s2c;
	uint64_t first_ns, last_ns;
	/* Estimated messages, summed from cw_edge's fields of that name. */
	uint64_t est_conns, sampled_bytes;
	bool has_sampled;
	/* summed as cw_edge's, NULL: none; freed by cw_view_release() */
	struct cw_edge_health *h;
};

struct igraph_s;

struct cw_view {
	enum cw_group_by by;
	struct cw_view_vertex *v;
	size_t nv;
	struct cw_view_edge *e;
	size_t ne;
	size_t *group_of; /* base node -> vertex */
	uint64_t window_ns;
	struct cw_view_window *win; /* by window start, then edge */
	size_t nwin;
	uint64_t unattributed; /* window bytes of ends no edge matched */
	const struct cw_resources *res; /* the graph's, or NULL */
	bool has_usage;			/* some vertex has resources */
	/* Directed, vertex i and edge i as above, with igraph's C attribute
	 * handler: vertex name, label, kind, host, pid, comm, cmdline,
	 * container, pod, members, bytes_out, bytes_in, dns_name (only
	 * where an external peer has one); edge weight (bytes
	 * both ways), bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c, conns,
	 * first_seen, last_seen (seconds since the epoch); when an edge of
	 * the view has health: failed (0 or 1), the health counters and
	 * <name>_count, _p50_ns, _p90_ns, _p99_ns of each histogram and of
	 * the network time (docs/edge-health.md). */
	struct igraph_s *ig;
};

/*
 * Build the view of g grouped by `by`; windows (may be NULL) adds the
 * per-window traffic, summed per view edge and window (the cells are
 * copied: windows stays the caller's).  0, or -1 after a message.
 */
int cw_view_build(struct cw_view *v, const struct cw_graph *g,
		  enum cw_group_by by, const struct cw_edge_windows *windows);
void cw_view_release(struct cw_view *v);
/* Bytes both ways on edge i. */
uint64_t cw_view_edge_bytes(const struct cw_view *v, size_t i);
/*
 * Edge indices, largest first: all edges (vid < 0) or those touching
 * vertex vid (found with igraph_incident); at most `max` (0: no limit).
 * The caller frees *out.  0 or -1.
 */
int cw_view_edges(const struct cw_view *v, long vid, size_t max, size_t **out,
		  size_t *n);
/* The vertex named (or labelled) `what`: its index, -1 if none, -2 if
 * several labels match. */
long cw_view_find(const struct cw_view *v, const char *what);
/*
 * Exports of the edges listed (all when edges is NULL) and the vertices they
 * touch.  0, or -1 after a message.
 */
int cw_view_write_graphml(const struct cw_view *v, FILE *fp,
			  const size_t *edges, size_t n);
int cw_view_write_dot(const struct cw_view *v, FILE *fp, const size_t *edges,
		      size_t n);
int cw_view_write_csv(const struct cw_view *v, FILE *fp, const size_t *edges,
		      size_t n);
/*
 * The one DOT writer: a cgraph graph (Agraph_t of <graphviz/cgraph.h>)
 * through agwrite, which quotes what DOT must have quoted; the export
 * above, viz/'s drawings and graph.dot, serve's page.  0, or -1 after a
 * message.
 */
struct Agraph_s;
int cw_dot_write(struct Agraph_s *dg, FILE *fp);
/* A new directed cgraph graph whose objects get ids in the order they are
 * made (graph/dot_ids.c), so that cw_dot_write writes the same graph the
 * same way every run; NULL when cgraph cannot make it. */
struct Agraph_s *cw_dot_open(const char *name);
void cw_view_json(const struct cw_view *v, struct cw_jsonw *w,
		  const size_t *edges, size_t n);
/*
 * Two parts of a vertex in that JSON, for other writers of the schema
 * (serve's API): what its members used (cpu_ms, cpu_cores,
 * cpu_peak_cores, rss_bytes, rss_peak_bytes, usage_span_ns), and who a
 * process is at projection by (container in the process and container
 * views, with its id only if container_id; pod; namespace; workload).
 */
void cw_usage_json(struct cw_jsonw *w, const struct cw_usage_stats *u);
void cw_identity_json(struct cw_jsonw *w, enum cw_group_by by,
		      const struct cw_process *p, bool container_id);
/*
 * The traffic matrix as CSV: a row and a column per vertex, cell (i, j) the
 * bytes vertex i sent to vertex j; the diagonal is traffic inside a group.
 */
int cw_view_write_matrix(const struct cw_view *v, FILE *fp);
/* Bytes vertex `from` sent to vertex `to` (the matrix cell). */
uint64_t cw_view_sent(const struct cw_view *v, size_t from, size_t to);

#endif
