/* SPDX-License-Identifier: MIT */
/*
 * Inside serve/: the pieces of `causeway serve` and what they share.  Not a
 * public header (serve.h is): other folders never include it.
 *
 *	model.c   records -> pairing -> graph -> views: the only file that
 *		  calls the graph and correlator APIs; hands out serve_graph,
 *		  plain copies that the rest reads without locks
 *	source.c  where records come from: files (re-read on change) or Kafka
 *	render.c  a serve_graph as DOT source in the page's style
 *	layout.c  the layout thread: DOT -> SVG in a child process, bounded
 *		  in time and memory, cached by source
 *	http.c    the routes on common/httpd.h's server, the built-in assets
 *	api.c     the JSON endpoints; metrics.c the Prometheus text;
 *		  plan.c the placement plan of `causeway place`
 *	feed.c    what Kafka brings besides connection records: the agents'
 *		  host metadata (their health), each timing window's paths
 *		  and the sample runs, kept newest-first for the handlers
 *	windows.c timing records -> windows -> causal paths, through the
 *		  correlator's and paths/' public headers, as `causeway
 *		  correlate` infers them
 *	traces.c  the OTLP/JSON of `causeway traces -o` (--traces): traces
 *		  in tree order with their critical paths, for /api/traces
 *		  (the reader's types: serve/tset.h, public for its fuzz
 *		  target)
 */
#ifndef CW_SERVE_INT_H
#define CW_SERVE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/httpd.h"
#include "common/kafka.h"
#include "common/record.h"
#include "common/wire.h"
#include "graph/graph.h"
#include "serve/serve.h"
#include "serve/tset.h"

/* A file of the page, compiled in from serve/assets (build/serve_assets.c). */
struct serve_asset {
	const char *path; /* "/index.html" */
	const char *type;
	const unsigned char *data;
	size_t len;
};
extern const struct serve_asset serve_assets[];
extern const size_t serve_nassets;

/* ---- model.c ------------------------------------------------------------ */

struct serve_node {
	char *name;  /* unique in the view */
	char *label; /* for people */
	char *host;  /* its host ("": several), an external peer's address */
	char *comm;  /* command ("" for hosts and external peers) */
	char *container;
	char *dns_name;	  /* an external peer's DNS name ("": none) */
	const char *kind; /* cw_node_kind_name() of its first member */
	bool external;
	uint64_t members;
	uint64_t bytes_out, bytes_in;
	/* The members' resources (usage.known: the agents reported some) */
	struct cw_usage_stats usage;
	/* Who the first member is (NULL: not a process): the identity
	 * fields; a copy, so it stays valid after the model changes. */
	struct cw_process *proc;
};

struct serve_edge {
	size_t from, to; /* client -> server, indices in nodes */
	uint64_t conns, paired;
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c;
	uint64_t first_ns, last_ns;
	/* Estimated messages, as the view's edges (or windows in a range)
	 * say: bytes whose messages were counted, whether any end
	 * estimated, whether any end said. */
	uint64_t sampled_bytes;
	bool msgs_est, has_sampled;
	/* Its health (common/wire.h, docs/edge-health.md) over all the
	 * records served (a range narrows the traffic, not the health);
	 * malloc'd, NULL when it has none. */
	struct cw_edge_health *health;
};

/* One answer to a graph query: the edges kept and the nodes they touch. */
struct serve_graph {
	enum cw_serve_by by;
	struct serve_node *nodes;
	size_t nn, cap_nodes;
	struct serve_edge *edges;
	size_t ne, cap_edges;
	uint64_t total_bytes;	    /* every edge in range, before min_share */
	size_t hidden;		    /* edges under min_share */
	uint64_t window_ns;	    /* bucket width of ranges */
	uint64_t first_ns, last_ns; /* traffic seen, all of it */
};

void serve_graph_release(struct serve_graph *g);

/*
 * A node's RED summary from the health of the edges into it (it as the
 * server): rate, the exchanges timed per second of the graph's span (the
 * servers' own timings; the clients' where no server end timed them);
 * errors, connections refused or timed out and resets, and their rate;
 * duration, p50 and p99 of those exchanges in ns.  known: some edge into
 * it has health.
 */
struct serve_red {
	bool known;
	uint64_t exchanges, errors;
	double rate, error_rate; /* per second */
	uint64_t p50_ns, p99_ns;
};

void serve_red_of(const struct serve_graph *g, size_t node,
		  struct serve_red *out);

struct serve_stats {
	uint64_t files, records, bad, loads, load_errors;
	uint64_t stale, ends, paired, unpaired, ambiguous;
	uint64_t agents; /* hosts that sent records */
	uint64_t unattributed;
	uint64_t processes_sampled, process_samples; /* resources known */
	uint64_t kafka_messages, kafka_bad, kafka_other;
	uint64_t loaded_ns; /* CLOCK_REALTIME of the last change */
	char last_error[256];
};

struct serve_model;

struct serve_model *serve_model_new(uint64_t window_ns);
void serve_model_free(struct serve_model *m);
/*
 * Replace everything with the records of these files (one pass, then
 * swapped in under the lock).  0, or -1 after a message (the old state is
 * kept).
 */
int serve_model_load_files(struct serve_model *m, char *const *paths, size_t n,
			   bool skip_bad);
/* Add records as they arrive (Kafka); 0 or -1 (out of memory). */
int serve_model_add(struct serve_model *m, const struct cw_conn_record *r,
		    size_t n);
/* A host or process metadata record (Kafka's meta topic); 0 or -1. */
int serve_model_add_meta(struct serve_model *m, const struct cw_wire_msg *msg);
/*
 * The graph for q: its projection, range, min_share and node.  0; 1 when
 * q->node names no node (err says so); 2 when it names several; -1 out of
 * memory (err says so).
 */
int serve_model_graph(struct serve_model *m, const struct cw_serve_query *q,
		      struct serve_graph *out, char *err, size_t errlen);
void serve_model_stats(struct serve_model *m, struct serve_stats *st);
/* The graph layer's projection for a view of the page. */
enum cw_group_by serve_group_by(enum cw_serve_by by);
/* Count things the sources saw, and a failed reload. */
void serve_model_note(struct serve_model *m, uint64_t kafka_messages,
		      uint64_t kafka_bad, uint64_t kafka_other,
		      const char *error);

/* ---- render.c ----------------------------------------------------------- */

/*
 * DOT source of g in the page's style (node i has id "n<i>", edge i
 * "e<i>"), malloc'd into *dot: its largest max_edges edges (0: all) and
 * the nodes they touch, with a line saying how many were left out.
 */
int serve_render_dot(const struct serve_graph *g, size_t max_edges,
		     char **dot, size_t *len);

/* ---- layout.c ----------------------------------------------------------- */

/* Defaults of the bounds; the environment may change the first two
 * (CAUSEWAY_LAYOUT_EDGES, CAUSEWAY_LAYOUT_TIMEOUT). */
#define SERVE_LAYOUT_EDGES	200	    /* most edges one drawing has */
#define SERVE_LAYOUT_TIMEOUT_MS 30000	    /* a layout's time bound */
#define SERVE_LAYOUT_WAIT_MS	2000	    /* a request waits this long */
#define SERVE_LAYOUT_IDLE_MS	5000	    /* unasked this long: stopped */
#define SERVE_LAYOUT_MEM	(512u << 20) /* and its memory bound */

enum { SERVE_LAYOUT_READY, SERVE_LAYOUT_PENDING, SERVE_LAYOUT_FAILED };

struct serve_layout_stats {
	uint64_t started, done, failed, timeouts, cancelled, hits, misses;
	bool running;
	uint64_t last_ms;    /* how long the last layout ran */
	size_t max_edges;    /* the bounds in force */
	unsigned timeout_ms;
};

/*
 * The SVG of this DOT source (taken: malloc'd), from the cache or laid
 * out by the layout thread, waiting at most SERVE_LAYOUT_WAIT_MS:
 * SERVE_LAYOUT_READY with the SVG malloc'd into *svg; SERVE_LAYOUT_PENDING
 * (ask again) or SERVE_LAYOUT_FAILED with the reason in err.  Thread-safe.
 */
int serve_layout_svg(char *dot, size_t dot_len, char **svg, size_t *len,
		     char *err, size_t errlen);
/* The counts, and the bounds in force. */
void serve_layout_stats(struct serve_layout_stats *st);

/* ---- source.c ----------------------------------------------------------- */

struct serve_feed;

struct serve_source;

struct serve_source *serve_source_new(const struct cw_serve_opts *o,
				      struct serve_model *m,
				      struct serve_feed *f);
/* Check the sources once (files changed? Kafka records?); wait at most
 * timeout_ms.  0, or -1 on a fatal error. */
int serve_source_poll(struct serve_source *s, int timeout_ms);
void serve_source_free(struct serve_source *s);

/* ---- feed.c ------------------------------------------------------------- */

#define SERVE_FEED_WINDOWS 100 /* newest windows' paths kept */
#define SERVE_FEED_RUNS	   200 /* newest sample runs kept */
#define SERVE_FEED_LAGS	   64  /* partitions whose lag is shown */

struct serve_feed_run {
	char name[CW_SERVE_VALUE_MAX]; /* "<host>-<dev>-<start ms>" */
	uint64_t seq;
	struct cw_sample_run *run;
};

/*
 * Filled by the source's thread, read by the HTTP thread: both hold the
 * lock (serve_feed_lock) while they touch anything in it.
 */
struct serve_feed {
	pthread_mutex_t lock;
	bool kafka; /* following Kafka: the feed is the source */
	struct cw_host_meta *hosts; /* newest per host, by seq */
	size_t nhosts, cap_hosts;
	char **windows; /* paths.jsonl lines (no newline), oldest first */
	size_t nwindows;
	struct serve_feed_run runs[SERVE_FEED_RUNS]; /* oldest first */
	size_t nruns;
	struct cw_kafka_lag lags[SERVE_FEED_LAGS];
	size_t nlags;
	uint64_t meta_records, timing_records, windows_inferred, windows_failed,
		windows_old, timing_late, timing_refused, sample_runs;
};

struct serve_feed *serve_feed_new(bool kafka);
void serve_feed_free(struct serve_feed *f);
void serve_feed_lock(struct serve_feed *f);
void serve_feed_unlock(struct serve_feed *f);
/* The calls below take the lock themselves.  A host's metadata replaces
 * the one of the same host taken earlier (by the agent's clock: a
 * restarted agent's seq starts again at 1). */
int serve_feed_host(struct serve_feed *f, const struct cw_host_meta *hm);
/* One window's line (taken: malloc'd); the oldest goes past the bound. */
void serve_feed_window(struct serve_feed *f, char *line);
/* A sample run (taken); the oldest goes past the bound. */
void serve_feed_run(struct serve_feed *f, struct cw_sample_run *run,
		    uint64_t seq);
void serve_feed_lags(struct serve_feed *f, const struct cw_kafka_lag *l,
		     size_t n);
/* A copy of the run of that name (or "latest"), for the caller to free;
 * NULL when there is none (or no memory). */
struct cw_sample_run *serve_feed_copy_run(struct serve_feed *f,
					  const char *name);

/* ---- windows.c ---------------------------------------------------------- */

struct serve_windows;

struct serve_windows *serve_windows_new(struct serve_feed *f);
void serve_windows_free(struct serve_windows *w);
/* A timing record read at (partition, offset); takes t->msgs. */
void serve_windows_add(struct serve_windows *w, struct cw_timing_record *t,
		       int32_t partition, int64_t offset);
/* Infer the windows that are complete and hand their lines to the feed. */
void serve_windows_step(struct serve_windows *w);

/* ---- traces.c ----------------------------------------------------------- */

/*
 * struct serve_traces follows the file: read at start, read again when it
 * changes.  Only the HTTP thread touches it once serve has started.
 */
struct serve_traces;

/* Read path at start: NULL after a message naming the file and why. */
struct serve_traces *serve_traces_new(const char *path);
void serve_traces_free(struct serve_traces *t);
/*
 * Read the file again if it changed (size, time or inode) since the last
 * look.  A file that goes bad keeps the last good traces: the error is
 * logged and counted (once per change).
 */
void serve_traces_refresh(struct serve_traces *t);
/* The traces now (valid until the next refresh), and the file's name. */
const struct serve_tset *serve_traces_set(const struct serve_traces *t);
const char *serve_traces_path(const struct serve_traces *t);
/* Loads, failed loads and the last failure ("" none). */
void serve_traces_counts(const struct serve_traces *t, uint64_t *loads,
			 uint64_t *errors, const char **last_error);

/* ---- api.c, metrics.c --------------------------------------------------- */

/* What the handlers read. */
struct serve_ctx {
	struct serve_model *model;
	struct serve_feed *feed;
	const char *paths;	     /* file of pathsets, or NULL */
	const char *samples_dir;     /* run store, or NULL */
	const char *plan;	     /* `causeway place` JSON, or NULL */
	struct serve_traces *traces; /* --traces, or NULL */
	char *const *inputs;
	size_t ninputs;
};

/*
 * A response being made (body in memory, status and type) and its three
 * calls are common/httpd.h's, under serve's older names until the
 * handlers call those directly.
 */
#define serve_reply	  cw_httpd_reply
#define serve_reply_open  cw_httpd_reply_open
#define serve_reply_close cw_httpd_reply_close
#define serve_reply_error cw_httpd_reply_error

/*
 * Answer one GET of path (no query) with query string qs (may be NULL);
 * fills r.  Never fails: errors become 4xx/5xx replies.
 */
void serve_api(const struct serve_ctx *c, const char *path, const char *qs,
	       struct serve_reply *r);
void serve_metrics(const struct serve_ctx *c, struct serve_reply *r);
/* /api/plan: the placement plan of --plan, before and after. */
void serve_plan(const struct serve_ctx *c, struct serve_reply *r);
/* /api/samples (list, or q->run with its bursts) and /api/samples.svg. */
void serve_samples(const struct serve_ctx *c, const struct cw_serve_query *q,
		   bool plot, struct serve_reply *r);

#endif
