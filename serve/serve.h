/* SPDX-License-Identifier: MIT */
/*
 * causeway serve: operators' views over HTTP.  One process follows the
 * fleet (files and `causeway run` output folders, re-read when they change,
 * or the conns topic on Kafka) and serves, read-only:
 *
 *	/                 the page (its files are built into the binary)
 *	/api/graph        the graph at a projection and time range (JSON)
 *	/api/graph.svg    the same laid out by Graphviz
 *	/api/matrix       bytes between hosts (the diagonal: inside a host)
 *	/api/paths        causal paths per timing window
 *	/api/samples      sample runs (list, one run, its plot)
 *	/api/plan         the placement plan (--plan), before and after
 *	/api/traces       per-request traces (--traces): the slowest, or one
 *	                  as a waterfall with its critical path
 *	/api/stats        the pipeline's own health
 *	/metrics          Prometheus text format
 *
 *	struct cw_serve_opts o = { .listen = "127.0.0.1:8080",
 *				   .inputs = paths, .ninputs = n };
 *	cw_catch_signals();			// sets cw_stop
 *	return cw_serve_run(&o, &cw_stop) ? 1 : 0;	// until stop is set
 *
 * Functions return 0, or -1 after a message, unless they say otherwise.
 */
#ifndef CW_SERVE_H
#define CW_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/record.h"

struct cw_serve_opts {
	const char *listen;  /* "ADDR:PORT"; NULL: 127.0.0.1:8080 */
	char *const *inputs; /* record files and run output folders */
	size_t ninputs;
	const char *paths;	 /* paths JSON (one pathset a line) or NULL */
	const char *samples_dir; /* sample run store, or NULL */
	const char *plan;	 /* `causeway place --format json` output */
	const char *traces;	 /* `causeway traces -o` OTLP/JSON, or NULL */
	const char *brokers;	 /* follow Kafka instead of files, or NULL */
	const char *kafka_properties;
	const char *topic_prefix;
	const char *group;  /* consumer group; NULL: causeway-serve */
	uint64_t window_ns; /* time buckets for ranges; 0: 10 s */
	uint64_t poll_ns;   /* how often files are checked; 0: 1 s */
	bool skip_bad;	    /* count and skip bad records instead of failing */
};

/*
 * Serve until *stop becomes non-zero.  -1 when the sources cannot be read
 * at start or the address cannot be bound; later read errors are counted
 * (and shown in /api/stats) and the last good state is kept.  Requests
 * are answered by common/httpd.h's server: a thread per connection, 128
 * connections, 32 from one address, 10 s for a request's header, and a
 * warning at start when the address is not loopback.
 */
int cw_serve_run(const struct cw_serve_opts *o, volatile int *stop);

/* Projections the API accepts. */
enum cw_serve_by {
	CW_SERVE_BY_PROCESS,
	CW_SERVE_BY_CMDLINE,
	CW_SERVE_BY_CONTAINER,
	CW_SERVE_BY_HOST,
	CW_SERVE_BY_POD,      /* namespace/pod, as `causeway graph --by pod` */
	CW_SERVE_BY_WORKLOAD, /* namespace/kind/owner */
	CW_SERVE_BY_N,	      /* how many there are */
};

#define CW_SERVE_QUERY_MAX  4096 /* longest query string taken */
#define CW_SERVE_VALUE_MAX  256	 /* longest value, decoded, with its NUL */
#define CW_SERVE_RANGE_MAX  (31ULL * 86400 * 1000000000ULL) /* until-since */
#define CW_SERVE_TIME_FLOOR (946684800ULL * 1000000000ULL)  /* 2000-01-01 */
#define CW_SERVE_LIMIT_MAX  10000 /* most traces one answer lists */

/* One request's parameters, decoded and checked. */
struct cw_serve_query {
	enum cw_serve_by by;
	bool has_by;
	bool has_since, has_until;
	uint64_t since_ns, until_ns;   /* CLOCK_REALTIME; since < until */
	double min_share;	       /* 0..1 */
	char node[CW_SERVE_VALUE_MAX]; /* "": all nodes */
	char run[CW_SERVE_VALUE_MAX];  /* "": none */
	char trace[33];		       /* 32 lowercase hex digits; "": none */
	bool has_limit;
	unsigned limit; /* 1..CW_SERVE_LIMIT_MAX when has_limit */
};

/*
 * Parse a URL query string ("by=host&since=-5m&min_share=0.05", no '?'):
 * '&'-separated key=value pairs, %XX and '+' decoded.  Keys: by (process,
 * cmdline, container, host, pod, workload), since and until (seconds since the
 * epoch, or "now", or "-" and a duration with s, m, h or d: that long before
 * now), min_share (0..1), node, run, trace (a trace id: 32 hex digits, not
 * all zero; kept in lowercase) and limit (1..CW_SERVE_LIMIT_MAX).  An
 * unknown or repeated key, a bad escape,
 * a NUL, a value too long, a time before 2000 or more than a day after now,
 * since not before until, or a range over 31 days is refused.  now_ns is
 * the current CLOCK_REALTIME.  0, or -1 with the reason in err (no message).
 */
int cw_serve_query_parse(const char *qs, uint64_t now_ns,
			 struct cw_serve_query *q, char *err, size_t errlen);
/* "process", "cmdline", "container", "host", "pod", "workload". */
const char *cw_serve_by_name(enum cw_serve_by by);

/*
 * What /api/graph answers for q (its projection, range, min_share, node)
 * over the records r[0..n), in time buckets of window_ns: the JSON object
 * to fp.  The page's graph without a server, for tests.  0, or -1 after a
 * message (q->node naming no node, or several, included).
 */
int cw_serve_graph_json(const struct cw_conn_record *r, size_t n,
			uint64_t window_ns, const struct cw_serve_query *q,
			FILE *fp);

#endif
