/* SPDX-License-Identifier: MIT */
/*
 * Inside serve/: the pieces of `causeway serve` and what they share.  Not a
 * public header (serve.h is): other folders never include it.
 *
 *	model.c   records -> pairing -> graph -> views: the only file that
 *		  calls the graph and correlator APIs; hands out serve_graph,
 *		  plain copies that the rest reads without locks
 *	source.c  where records come from: files (re-read on change) or Kafka
 *	render.c  a serve_graph laid out by Graphviz, as SVG in memory
 *	http.c    libmicrohttpd, routing, JSON errors, the built-in assets
 *	api.c     the JSON endpoints; metrics.c the Prometheus text
 */
#ifndef CW_SERVE_INT_H
#define CW_SERVE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/record.h"
#include "serve/serve.h"

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
	bool external;
	uint64_t members;
	uint64_t bytes_out, bytes_in;
};

struct serve_edge {
	size_t from, to; /* client -> server, indices in nodes */
	uint64_t conns, paired;
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c;
	uint64_t first_ns, last_ns;
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

struct serve_stats {
	uint64_t files, records, bad, loads, load_errors;
	uint64_t stale, ends, paired, unpaired, ambiguous;
	uint64_t agents; /* hosts that sent records */
	uint64_t unattributed;
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
/*
 * The graph for q: its projection, range, min_share and node.  0; 1 when
 * q->node names no node (err says so); 2 when it names several; -1 out of
 * memory (err says so).
 */
int serve_model_graph(struct serve_model *m, const struct cw_serve_query *q,
		      struct serve_graph *out, char *err, size_t errlen);
void serve_model_stats(struct serve_model *m, struct serve_stats *st);
/* Count things the sources saw, and a failed reload. */
void serve_model_note(struct serve_model *m, uint64_t kafka_messages,
		      uint64_t kafka_bad, uint64_t kafka_other,
		      const char *error);

/* ---- render.c ----------------------------------------------------------- */

/* SVG of g (node i has id "n<i>", edge i "e<i>"): malloc'd into *svg. */
int serve_render_svg(const struct serve_graph *g, char **svg, size_t *len);

/* ---- source.c ----------------------------------------------------------- */

struct serve_source;

struct serve_source *serve_source_new(const struct cw_serve_opts *o,
				      struct serve_model *m);
/* Check the sources once (files changed? Kafka records?); wait at most
 * timeout_ms.  0, or -1 on a fatal error. */
int serve_source_poll(struct serve_source *s, int timeout_ms);
void serve_source_free(struct serve_source *s);

/* ---- api.c, metrics.c --------------------------------------------------- */

/* What the handlers read. */
struct serve_ctx {
	struct serve_model *model;
	const char *paths;	 /* file of pathsets, or NULL */
	const char *samples_dir; /* run store, or NULL */
	char *const *inputs;
	size_t ninputs;
};

/* A response being made: body in memory, status and type. */
struct serve_reply {
	int status;
	const char *type;
	char *body;
	size_t len;
	FILE *fp; /* open_memstream onto body */
};

int serve_reply_open(struct serve_reply *r, int status, const char *type);
/* Close the stream: 0, or -1 (out of memory). */
int serve_reply_close(struct serve_reply *r);
/* Replace the reply with {"error": msg} and this status. */
void serve_reply_error(struct serve_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Answer one GET of path (no query) with query string qs (may be NULL);
 * fills r.  Never fails: errors become 4xx/5xx replies.
 */
void serve_api(const struct serve_ctx *c, const char *path, const char *qs,
	       struct serve_reply *r);
void serve_metrics(const struct serve_ctx *c, struct serve_reply *r);
/* /api/samples (list, or q->run with its bursts) and /api/samples.svg. */
void serve_samples(const struct serve_ctx *c, const struct cw_serve_query *q,
		   bool plot, struct serve_reply *r);

#endif
