/* SPDX-License-Identifier: MIT */
/*
 * Per-request traces from black boxes: which outgoing call of a service
 * served which of its incoming requests, inferred from kernel evidence
 * (the thread) where it is unambiguous and from timing where it is not.
 *
 *	struct cw_traces t;
 *	struct cw_traces_opts o;
 *	cw_traces_init(&t);
 *	cw_traces_read_file(&t, "msgs.csv");	// or cw_traces_read_spans()
 *	cw_traces_build(&t);			// messages -> spans
 *	cw_traces_opts_default(&o);
 *	cw_traces_infer(&t, &o);		// links, FCFS baseline too
 *	cw_traces_write_otlp(&t, fp);
 *	cw_traces_release(&t);
 *
 * A message (paths.h's struct cw_msg, the one model of both) is one run of
 * bytes in one direction on one connection, seen at `node` (its own
 * clock).  A span is a request and its reply on one
 * connection: at a server ("accepted" socket) it is a request the node
 * serves, at a client ("connected") a call the node makes.  Linking gives
 * every call the request it was made for, at the same node.  Functions
 * returning int give 0 or -1 after printing one "causeway: error: ..." line.
 */
#ifndef CW_TRACES_H
#define CW_TRACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "paths/paths.h"

/* How a call got its request. */
enum cw_link_method {
	CW_LINK_NONE = 0,  /* no enclosing request: left unlinked */
	CW_LINK_THREAD,	   /* the sending thread served exactly one request
			    * (the kernel's context where the input has it) */
	CW_LINK_CONTAINED, /* only one request encloses it */
	CW_LINK_TIMING,	   /* chosen by the assignment over learned delays */
};

#define CW_TRACES_TOPK 5
/* Enclosing requests a call's sweep holds; more are counted, dropped. */
#define CW_TRACES_MAX_OPEN 64

/* cw_tspan's flags. */
enum {
	/* request: a call made for it has no client span in the truth (the
	 * caller's side not recorded): not scored */
	CW_TS_BLIND = 1,
	/* call: more candidates than the bound; the worst were dropped */
	CW_TS_CUT = 2,
	/* call: ... and its true request was among them (scoring only) */
	CW_TS_CUT_TRUTH = 4,
};

struct cw_tspan {
	uint64_t start_ns, end_ns, bytes;
	uint32_t node, peer, conn, thread;
	uint32_t seq;	   /* its rank among its connection's spans */
	uint32_t kseq;	   /* request: the kernel's number for it, 0 */
	uint32_t ctx_conn, ctx_seq, ctx_open; /* call: as its message's */
	int32_t ctx_req; /* call: the request the kernel saw its thread
			  * serve (ctx_conn's span ctx_seq at this node), -1 */
	uint8_t role;	   /* accepted: request served; connected: call */
	uint8_t method;	   /* enum cw_link_method (calls) */
	uint8_t flags;	   /* CW_TS_*: what scoring must know */
	uint8_t ctx_loop;  /* call: ctx_req is the event loop's evidence */
	float conf;	   /* confidence of the link, 0..1 */
	int32_t parent;	   /* call: the request it serves, -1 none */
	int32_t fcfs;	   /* call: FCFS baseline's request, -1 none */
	int32_t truth;	   /* call: true request (scoring only), -1 */
	int32_t peer_span; /* the other end of the connection, -1 */
	int32_t trace;	   /* true trace (scoring only), -1 */
	int32_t top[CW_TRACES_TOPK]; /* candidates, best first, -1 ends */
};

/* A connection's two ends, where the input names them (a pcap). */
struct cw_tends {
	uint32_t client, server; /* nodes; UINT32_MAX unknown */
	uint16_t client_port, server_port;
};

/* What matching a truth-links file to the spans found (see below). */
struct cw_tlinks_stats {
	size_t records;	  /* lines, each one request and one call or none */
	size_t outside;	  /* requests read outside the captured time */
	size_t no_conn;	  /* a connection the input does not hold */
	size_t requests;  /* distinct requests found among the spans */
	size_t calls;	  /* calls found among the spans */
	size_t unmatched; /* request or call with no span to match */
	size_t conflicts; /* a call span claimed by two requests */
};

struct cw_traces {
	/* Mixed into trace and span ids (0: none): ids are numbered within
	 * one run, so outputs of several runs (a correlator's windows) that
	 * may meet in one viewer each use a salt of their own. */
	uint64_t id_salt;
	/* The correlator's window (0: none): every resource of the OTLP
	 * output then carries it as causeway.window.slot_ns, so an export
	 * request names the window it is. */
	uint64_t window_slot;
	struct cw_msg *msgs;
	size_t n_msgs, cap_msgs;
	union { /* node names: paths/'s index (paths.h) */
		struct cw_names nodes;
		struct {
			CW_NAMES_FIELDS;
		};
	};
	struct cw_tspan *spans;
	size_t n_spans, cap_spans;
	/* The input carries the kernel's request context (cw_msg's seq
	 * and ctx_*): thread links come from it, not from span times. */
	bool has_ctx;
	/* --truth: per connection id, the connection of the true parent
	 * request (0 none), the true trace (-1), and whether the request
	 * served on it made a call with no client span (not scored). */
	uint32_t *truth_conn;
	int32_t *truth_trace;
	uint8_t *truth_blind;
	size_t n_truth, cap_truth, n_true_traces;
	/* Span input: name services by the pod with its replica suffix cut
	 * (off: as the data names them).  Set before reading. */
	bool fold_replicas;
	/* Calls with no client span (left out), requests so not scored. */
	size_t n_no_client, n_blind;
	/* Per connection id, its ends (pcap input), for --truth-links. */
	struct cw_tends *ends;
	size_t n_ends, cap_ends;
	/* --truth-links: only requests it names are scored. */
	bool truth_by_links;
	struct cw_tlinks_stats links;
	/* What building and inference saw. */
	size_t n_multiplexed;	 /* connections with overlapping requests */
	size_t n_unanswered;	 /* requests with no reply, dropped */
	size_t n_windows, n_cut; /* assignment windows, of them cut */
	/* What the candidate bound cost: calls cut, candidates dropped,
	 * calls whose true request was dropped (with truth), calls with
	 * more enclosing requests than a sweep holds (CW_TRACES_MAX_OPEN). */
	size_t n_cut_calls, n_cut_cands, n_cut_truth, n_over_open;
	size_t n_thread_links, n_ambiguous_thread;
	size_t n_ctx_missing; /* a call's context request not among spans */
	size_t n_loop_links;  /* calls whose context is the loop's evidence */
	int rounds; /* timing-only learning rounds run, most at a node */
	size_t n_round_bound; /* nodes whose rounds stopped at the bound */
	/* Fleet input (MsgWindow records): its state, and what it saw. */
	struct cw_traces_wire *wire;
	size_t wire_records, wire_hosts, wire_left_out;
	uint64_t wire_lost;
};

struct cw_traces_opts {
	size_t window;	  /* calls per assignment window (default 24) */
	size_t max_cands; /* candidates kept per call (default 8) */
	int rounds; /* learning rounds without thread links, at most (8) */
	int refine;	  /* soft refinement steps of each model (5) */
	bool no_thread;	  /* ignore thread evidence (tests) */
};

void cw_traces_init(struct cw_traces *t);
void cw_traces_release(struct cw_traces *t);
/* The id of a node name, created on first use; -1 on allocation failure. */
int cw_traces_node(struct cw_traces *t, const char *name);
int cw_traces_add_msg(struct cw_traces *t, const struct cw_msg *m);

/*
 * Message observations CSV: a header naming start_ns,node,peer,conn,dir
 * (in/out),role (accepted/connected) and optionally end_ns, bytes, thread,
 * node_port and peer_port, and the kernel's context (seq, ctx_conn,
 * ctx_seq, ctx_open: read only when all four are there; ctx_loop with
 * them, optional), in any order.  `what` names the input in errors.
 */
int cw_traces_read_csv(struct cw_traces *t, FILE *fp, const char *what);
/*
 * Span CSV (TraceID,SpanID,ParentID,PodName,...,StartTimeUnixNano,
 * EndTimeUnixNano) turned into messages between services, one connection
 * per remote call, and the parent links kept aside as truth for scoring.
 */
int cw_traces_read_spans(struct cw_traces *t, FILE *fp, const char *what);
/* TCP messages from a capture: runs of payload per direction; the SYN's
 * sender (else the higher port) is the client.  Nodes named by address. */
int cw_traces_read_pcap(struct cw_traces *t, const char *path);
/* Records connection `conn`'s ends; -1 on allocation failure. */
int cw_traces_set_ends(struct cw_traces *t, uint32_t conn, uint32_t client,
		       uint16_t client_port, uint32_t server,
		       uint16_t server_port);
/*
 * Fleet input (traces/wire.c): one MsgWindow record (`causeway agent
 * --traces`, from Kafka or a wire file).  Nodes named by address; a
 * connection is its 4-tuple in one window, so ends seen on two hosts are
 * stitched; loopback and link-local connections are left out (counted in
 * wire_left_out).  The reading state lives until cw_traces_wire_done(),
 * which the caller must call before cw_traces_release().
 */
struct cw_wire_msgs;
int cw_traces_add_wire(struct cw_traces *t, const struct cw_wire_msgs *r);
/* Every MsgWindow record of a wire stream file (others are skipped). */
int cw_traces_read_wire(struct cw_traces *t, FILE *fp, const char *what);
void cw_traces_wire_done(struct cw_traces *t);
/* Picks by content: pcap magic, a span CSV header, else messages CSV. */
int cw_traces_read_file(struct cw_traces *t, const char *path);

/* Messages -> spans; multiplexed connections are counted and skipped. */
int cw_traces_build(struct cw_traces *t);
/* Spans a and b in time order (after cw_traces_build()), ties broken by
 * times and names, never by ids: the index only between spans alike in
 * everything else, so a reordered input links the same. */
int cw_traces_span_cmp(const struct cw_traces *t, int32_t a, int32_t b);

/*
 * Truth from the services' own records, for an input whose connections
 * have ends (a pcap), after cw_traces_build().  A CSV with the header
 *
 *   service,in_client,in_server,in_start_ns,out_client,out_server,out_start_ns
 *
 * one line per call a service made for a request (the out_ fields empty
 * for a request that made none); ends are ADDR:PORT ([ADDR]:PORT for
 * IPv6), times are nanoseconds on the capture's clock.  A request is the
 * span on its connection at the service that was open when the service
 * read it (the latest one started by in_start_ns, not ended before it); a
 * call is the first span on its connection that started at or after
 * out_start_ns.  Requests read outside the captured time are skipped.
 * Matched calls get their true request, matched requests a true trace,
 * and nodes named by address take the service's name.  What matched is in
 * t->links.  0, or -1 on a malformed file (one line naming where).
 */
int cw_traces_read_truth_links(struct cw_traces *t, FILE *fp, const char *what);

void cw_traces_opts_default(struct cw_traces_opts *o);
/* Link every call to a request; also fills the FCFS baseline. */
int cw_traces_infer(struct cw_traces *t, const struct cw_traces_opts *o);

/* Scores against truth, per node and overall (node == n_names). */
struct cw_traces_score {
	size_t requests, right, right_fcfs, top5;
	size_t links_true, links_found, links_hit;
	size_t fcfs_found, fcfs_hit;
};

/*
 * Calibration of the timing links' confidence: of the links given a
 * confidence in [cw_traces_calib_lo[b], the next bin's), how many, their
 * mean confidence and how many were right.  Calibrated: right/links near
 * conf_sum/links in every bin.
 */
#define CW_TRACES_CALIB_BINS 7
extern const double cw_traces_calib_lo[CW_TRACES_CALIB_BINS];
struct cw_traces_calib {
	size_t links, right;
	double conf_sum;
};

struct cw_traces_eval {
	struct cw_traces_score *node; /* n_names + 1, the last overall */
	/* Traces with a request scored: right end to end, FCFS's. */
	size_t traces, traces_right, traces_right_fcfs;
	size_t blind; /* requests not scored: a call of theirs unrecorded */
	struct cw_traces_calib calib[CW_TRACES_CALIB_BINS];
};

int cw_traces_evaluate(const struct cw_traces *t, struct cw_traces_eval *ev);
void cw_traces_eval_release(struct cw_traces_eval *ev);

/* Roots of the inferred traces: requests no linked call leads to. */
int cw_traces_roots(const struct cw_traces *t, int32_t **roots, size_t *n);
/* Trace and span ids of our spans, as OTLP hex. */
void cw_traces_trace_id(const struct cw_traces *t, int32_t root, char hex[33]);
/* The root whose trace id is `hex`, or the slowest root if hex is NULL;
 * -1 if none. */
int32_t cw_traces_find(const struct cw_traces *t, const char *hex);

int cw_traces_write_otlp(const struct cw_traces *t, FILE *fp);
int cw_traces_write_jaeger(const struct cw_traces *t, FILE *fp);
/* A waterfall of one trace, critical path marked with '*'. */
void cw_traces_print_waterfall(const struct cw_traces *t, int32_t root,
			       FILE *fp);
/*
 * The critical path of one trace whose spans sp[0..n) are in tree order
 * (a parent before its children; parent: its index, -1 for a root): from
 * the end back, the child that finished last, then the one that finished
 * last before it started, and so on, each followed the same way; on a tie
 * the earlier in tree order.  Sets each span's `critical`; 0, or -1 when
 * out of memory (no message).
 */
struct cw_crit_span {
	uint64_t start_ns, end_ns;
	int32_t parent;
	bool critical;
};
int cw_traces_critical_path(struct cw_crit_span *sp, size_t n);
/* POST `body` (JSON) to an http:// URL (libcurl; /v1/traces when the URL
 * names no path), within 10 s; 0 on a 2xx answer, else -1 with
 * why it failed in why[why_len] (why NULL: said as an error line). */
int cw_traces_post(const char *url, const char *body, size_t len, char *why,
		   size_t why_len);

const char *cw_link_method_name(int method);

/*
 * Minimum-cost assignment of n rows to distinct columns of the row-major
 * n x m matrix `a` (n <= m): match[row] = column.  0, or -1 when out of
 * memory or n > m.
 */
int cw_traces_hungarian(const double *a, size_t n, size_t m, int32_t *match);

#endif
