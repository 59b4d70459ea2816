/* SPDX-License-Identifier: MIT */
/*
 * Causal-path inference from message timing alone (Aguilera et al., SOSP
 * 2003): message observations in, path trees out.
 *
 *	struct cw_msgtrace t;
 *	struct cw_pathset ps;
 *	cw_msgtrace_init(&t);
 *	cw_msgtrace_read_file(&t, "trace.csv");	// or a pcap, or spans
 *	cw_paths_convolution(&t, &opts, &ps);
 *	cw_pathset_print_text(stdout, &t, &ps);
 *	cw_pathset_release(&ps);
 *	cw_msgtrace_release(&t);
 *
 * Every message is seen twice: leaving its sender ("out", stamped by the
 * sender's clock) and arriving at its receiver ("in", receiver's clock).
 * Inference only ever compares stamps taken on one node, so clock skew
 * between nodes drops out.  Functions returning int give 0 or -1 after
 * printing one "causeway: error: ..." line.
 */
#ifndef CW_PATHS_H
#define CW_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cw_msg_dir { CW_MSG_IN = 0, CW_MSG_OUT = 1 };
/* The socket a message was seen on, where the input says (traces/). */
enum cw_msg_role { CW_ROLE_ACCEPTED = 0, CW_ROLE_CONNECTED = 1 };

/*
 * One observation of a message at `node`, talking with `peer`: the one
 * message model of paths/ and traces/, whatever the input (CSV, pcap,
 * span traces, the agents' records).  `conn` names the connection (or
 * RPC) it travelled on, the same at both ends; 0 when unknown.  Nesting
 * pairs calls with replies per connection when it is known (exact for
 * call/return traffic), else first in, first out over everything between
 * the two nodes.  paths/ reads the stamp, size, ends, connection and
 * direction; traces/ also the end, the thread, the role and the kernel's
 * request context.
 */
struct cw_msg {
	union {
		uint64_t ts_ns;	   /* node's own clock: when it began */
		uint64_t start_ns; /* the same, as traces/ names it */
	};
	uint64_t end_ns; /* its last byte (traces/); paths/ leaves it 0 */
	uint64_t bytes;	 /* 0 if unknown */
	uint32_t node, peer;
	uint32_t conn;	 /* 0: unknown */
	uint32_t thread; /* that sent or received it; 0 unknown */
	/* The kernel's request context (`agent --traces`, `run --traces`;
	 * all 0 where the input has none).  A request (accepted, in): its
	 * number on its socket, from 1.  A call (connected, out): the
	 * request its thread was serving when it began (that request's
	 * connection and number; ctx_conn 0: none) and how many requests
	 * the thread held open then (received, reply not begun).  ctx_loop
	 * 1: the thread is an event loop and that request is its latest
	 * read's, in the same loop iteration as the call's write. */
	uint32_t seq;
	uint32_t ctx_conn, ctx_seq, ctx_open;
	uint8_t dir;  /* enum cw_msg_dir, as seen at node */
	uint8_t role; /* enum cw_msg_role of node's socket */
	uint8_t ctx_loop;
};

/*
 * Node names and their ids, numbered from 0 in order of first use: the one
 * name index of paths/ and traces/ (a hash on the name, so interning is
 * linear in the input, and no cap below 2^31 names).  A struct that holds
 * one embeds CW_NAMES_FIELDS in an anonymous union with a struct cw_names,
 * so its users keep writing t->names[id] and t->n_names.
 */
#define CW_NAMES_FIELDS                                                        \
	char **names;                                                          \
	size_t n_names, cap_names;                                             \
	uint32_t *slots; /* open addressing: id + 1, 0 free */                 \
	size_t n_slots

struct cw_names {
	CW_NAMES_FIELDS;
};

/* The id of name, created on first use; -1 on allocation failure or when
 * the index is full (2^31 - 1 names). */
int cw_names_id(struct cw_names *nm, const char *name);
/* The id of a known name, or -1. */
int cw_names_find(const struct cw_names *nm, const char *name);
void cw_names_release(struct cw_names *nm);
/* After names[] were renamed in place: the index made again (a name that
 * two ids now share is found as the lower id). */
void cw_names_reindex(struct cw_names *nm);

/* A set of observations and the node names they refer to. */
struct cw_msgtrace {
	struct cw_msg *msgs;
	size_t n_msgs, cap_msgs;
	union {
		struct cw_names nodes;
		struct {
			CW_NAMES_FIELDS;
		};
	};
	/* Who calls whom, where the source knows it (a live trace knows each
	 * connection's client and server): client << 32 | server.  Without
	 * them the caller is guessed from who spoke first. */
	uint64_t *calls;
	size_t n_calls, cap_calls;
};

void cw_msgtrace_init(struct cw_msgtrace *t);
void cw_msgtrace_release(struct cw_msgtrace *t);
/* The id of a node name, created on first use; -1 on allocation failure. */
int cw_msgtrace_node(struct cw_msgtrace *t, const char *name);
/* Node `client` opens connections to `server` (a hint, see above). */
int cw_msgtrace_add_call(struct cw_msgtrace *t, uint32_t client,
			 uint32_t server);
/* The id of a known node name, or -1. */
int cw_msgtrace_find(const struct cw_msgtrace *t, const char *name);
int cw_msgtrace_add(struct cw_msgtrace *t, uint64_t ts_ns, uint32_t node,
		    uint32_t peer, enum cw_msg_dir dir, uint64_t bytes);
/* The same, on connection `conn` (0: unknown). */
static inline int cw_msgtrace_add_conn(struct cw_msgtrace *t, uint64_t ts_ns,
				       uint32_t node, uint32_t peer,
				       enum cw_msg_dir dir, uint64_t bytes,
				       uint32_t conn)
{
	if (cw_msgtrace_add(t, ts_ns, node, peer, dir, bytes))
		return -1;
	t->msgs[t->n_msgs - 1].conn = conn;
	return 0;
}
/* Sort by time (ties in a fixed order) and refuse an empty trace. */
int cw_msgtrace_finish(struct cw_msgtrace *t, const char *what);

/*
 * Readers.  `what` names the input in error messages ("file:line: ...").
 * The CSV has a header naming ts_ns,node,peer,dir and optionally bytes, in
 * any order; each node's rows must be in its own clock's order (refused
 * otherwise, since a reordered log means a broken clock or a bad merge).
 */
int cw_msgtrace_read_csv(struct cw_msgtrace *t, FILE *fp, const char *what);
/* TCP messages rebuilt per connection: a message starts when the direction
 * flips.  Nodes are named by address. */
int cw_msgtrace_read_pcap(struct cw_msgtrace *t, const char *path);
/* Picks the reader by content (pcap magic) or extension; finishes. */
int cw_msgtrace_read_file(struct cw_msgtrace *t, const char *path);

/*
 * A span trace as its file gives it, the one reader of span traces for
 * paths/ and traces/: the span CSV (TraceID,SpanID,ParentID,PodName,...,
 * StartTimeUnixNano,EndTimeUnixNano; TraceID optional) or Jaeger JSON,
 * told apart by the first byte; a UTF-8 byte order mark taken.
 */
struct cw_span_row {
	char *trace;   /* "" when the input has none */
	char *id;
	char *parent;  /* NULL for a root (ParentID empty or "root") */
	char *pod;     /* PodName, or Jaeger's processID */
	char *service; /* Jaeger's serviceName; NULL: named from the pod */
	uint64_t start_ns, end_ns; /* as given: end may precede start */
	size_t line;		   /* in a CSV, else 0 */
};

struct cw_span_rows {
	struct cw_span_row *rows;
	size_t n, cap;
	bool has_trace; /* a TraceID column, or Jaeger */
};

/* Every span of fp; 0, or -1 (said) on a malformed or empty input. */
int cw_span_rows_read(struct cw_span_rows *r, FILE *fp, const char *what);
void cw_span_rows_release(struct cw_span_rows *r);

/* Ground truth from span traces with parent links. */
struct cw_truth_triple {
	uint32_t i, j, k; /* i->j causes j->k */
	double delay_us;  /* median time at j from i's call to k's */
	double *samples;
	size_t n, cap;
};

struct cw_truth {
	uint32_t *edges; /* caller, callee pairs, flattened */
	size_t n_edges, cap_edges;
	struct cw_truth_triple *triples;
	size_t n_triples, cap_triples;
	size_t n_spans, n_calls;
};

void cw_truth_init(struct cw_truth *tr);
void cw_truth_release(struct cw_truth *tr);

/*
 * Spans (CSV with TraceID,SpanID,ParentID,PodName,...,StartTimeUnixNano,
 * EndTimeUnixNano or Jaeger JSON) turned into message observations between
 * services (pod names without their replica suffix), trace ids dropped.
 * A request's root span is called by the node "client".  `tr` may be NULL.
 */
int cw_spans_read(struct cw_msgtrace *t, struct cw_truth *tr, FILE *fp,
		  const char *what);
int cw_spans_read_file(struct cw_msgtrace *t, struct cw_truth *tr,
		       const char *path);

/* What was inferred: a tree of hops per root. */
struct cw_hop {
	int id, parent; /* parent -1 for the root hop */
	uint32_t from, to;
	size_t messages;		  /* messages this hop explains */
	double p10_us, median_us, p90_us; /* time at `from` */
	double score;	/* -log10 of the chance probability; 0 for a root */
	bool is_return; /* goes back to a node already on the path */
};

struct cw_path {
	uint32_t root; /* the node the path starts from */
	struct cw_hop *hops;
	size_t n_hops, cap_hops;
};

struct cw_pathset {
	struct cw_path *paths;
	size_t n_paths, cap_paths;
	size_t n_correlations; /* edge pairs (triples for nesting) examined */
	int method;	       /* enum cw_paths_method that made it */
	size_t n_visits;       /* nodes visited by the search */
	bool truncated;	       /* the visit budget cut the search short */
};

enum cw_paths_method { CW_PATHS_CONVOLUTION, CW_PATHS_NESTING };

struct cw_paths_opts {
	uint64_t bin_ns;       /* default 100 us */
	uint64_t max_delay_ns; /* default 1 s */
	int root;	       /* node id, or -1: every root node */
	double alpha;	       /* family-wise false-alarm rate per pair */
	int threads;	       /* workers for the correlations */
	int max_depth;
	/* Node visits over the whole search (every root, every depth): when
	 * spent, the search stops and the pathset says it was truncated. */
	size_t max_visits; /* 0: CW_PATHS_MAX_VISITS */
	bool fft_only;	   /* never count sparse pairs directly (tests) */
};

#define CW_PATHS_MAX_VISITS 100000
/* The largest transform: a node's span plus the lags, in bins. */
#define CW_PATHS_MAX_BINS (1u << 24)

/* The visit budget o asks for. */
static inline size_t cw_paths_max_visits(const struct cw_paths_opts *o)
{
	return o->max_visits ? o->max_visits : CW_PATHS_MAX_VISITS;
}

/*
 * The trace regrouped by directed edge, for the inference methods: every
 * message on from->to as seen leaving `from` and as seen arriving at `to`.
 */
struct cw_msg_edge {
	uint32_t from, to;
	const uint64_t *out; /* departures, from's clock, sorted */
	const uint64_t *in;  /* arrivals, to's clock, sorted */
	size_t n_out, n_in;
	int64_t offset_ns; /* median arrival minus departure (clock skew) */
	bool reply;	   /* `to` opened the conversation: these answer it */
};

struct cw_edge_index {
	struct cw_msg_edge *edges; /* sorted by (from, to) */
	size_t n_edges, n_nodes;
	size_t *out_first;	     /* edges[out_first[v] .. out_first[v+1]) */
	uint64_t *node_t0, *node_t1; /* each node's first and last stamp */
	uint64_t span_ns; /* longest node span: the observation window */
	uint64_t *ts;	  /* storage behind out/in */
	uint64_t *calls;  /* the trace's known calls, sorted, unique */
	size_t n_calls;
};

int cw_edge_index_build(struct cw_edge_index *ix, const struct cw_msgtrace *t);
void cw_edge_index_release(struct cw_edge_index *ix);
const struct cw_msg_edge *cw_edge_index_get(const struct cw_edge_index *ix,
					    uint32_t from, uint32_t to);
/*
 * Where message `idx` of e->out arrived in e->in: pairs by rank when no
 * message was lost, else by the nearest arrival after the median offset.
 */
size_t cw_edge_arrival_of(const struct cw_msg_edge *e, size_t idx);
/* A quantile (0..1) of a sorted array. */
double cw_quantile(const double *sorted, size_t n, double q);

void cw_paths_opts_default(struct cw_paths_opts *o);
/*
 * Refuse options whose sizes no search can hold (a bin of 0, a delay
 * shorter than a bin, more lags than the largest transform), before any
 * arithmetic on them.
 */
int cw_paths_opts_check(const struct cw_paths_opts *o);
int cw_paths_convolution(const struct cw_msgtrace *t,
			 const struct cw_paths_opts *o, struct cw_pathset *ps);
int cw_paths_nesting(const struct cw_msgtrace *t, const struct cw_paths_opts *o,
		     struct cw_pathset *ps);
/* Nodes that start conversations and are never called; -1 ends the list. */
int cw_paths_roots(const struct cw_msgtrace *t, int *roots, size_t max);

void cw_pathset_init(struct cw_pathset *ps);
void cw_pathset_release(struct cw_pathset *ps);
/* Append a hop to a path; returns its id or -1. */
int cw_path_add_hop(struct cw_path *p, const struct cw_hop *h);
struct cw_path *cw_pathset_add(struct cw_pathset *ps, uint32_t root);

void cw_pathset_print_text(FILE *fp, const struct cw_msgtrace *t,
			   const struct cw_pathset *ps);
void cw_pathset_print_json(FILE *fp, const struct cw_msgtrace *t,
			   const struct cw_pathset *ps);

/* Inferred against true: precision and recall of caller->callee edges and
 * of causal triples, and the mean relative error of per-hop delays. */
struct cw_paths_eval {
	size_t edges_true, edges_found, edges_hit;
	size_t triples_true, triples_found, triples_hit;
	double edge_precision, edge_recall;
	double triple_precision, triple_recall;
	double delay_rel_err;	 /* median |inferred - true| / true */
	double delay_abs_err_us; /* median |inferred - true| */
	size_t delay_n;		 /* hops matched to a true triple */
};

void cw_paths_evaluate(const struct cw_msgtrace *t, const struct cw_truth *tr,
		       const struct cw_pathset *ps, struct cw_paths_eval *ev);

/*
 * Synthetic traces for tests and benchmarks, written as CSV:
 *   "tiers:seed=1,n=2000,rate=200,d1=2ms,d2=5ms,d3=1ms"
 *	client -> web -> app -> db and back: n requests at `rate` per second,
 *	web waits d1 before calling app, app d2 before db, db answers after
 *	d3, each with 20% jitter
 *   "random:seed=1,n=500,rate=200"
 *	the same six edges, n independent Poisson messages on each
 *   "graph:seed=1,nodes=1000,edges=10000,bins=131072,rate=2000"
 *	requests walking 6 hops down a random DAG of services over a
 *	window of `bins` x 100us, plus background messages on every edge
 */
int cw_paths_synthetic(const char *spec, FILE *out);

#endif
