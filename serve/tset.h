/* SPDX-License-Identifier: MIT */
#ifndef CW_SERVE_TSET_H
#define CW_SERVE_TSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * serve's reader of per-request traces from an OTLP/JSON file (the
 * output of `causeway traces -o`), public so that its fuzz target reads
 * it as serve does; serve/traces.c follows the file (serve_int.h):
 *
 *	struct serve_tset set = {0};
 *	if (serve_tset_parse(&set, buf, len, err, sizeof(err)))
 *		... err says where and why ...
 *	for (i = 0; i < set.ntraces; i++)	// slowest first
 *		... set.spans[set.traces[i].first + k], k < .n: tree order ...
 *	serve_tset_release(&set);
 */

/* How a span got its parent: the causeway.link.method attribute. */
enum serve_link {
	SERVE_LINK_UNSAID,     /* no attribute (not causeway's span) */
	SERVE_LINK_CONNECTION, /* a request: paired exactly by connection */
	SERVE_LINK_THREAD,
	SERVE_LINK_CONTAINED,
	SERVE_LINK_TIMING,
	SERVE_LINK_NONE, /* a call linked to no request */
	SERVE_LINK_N,
};

struct serve_tspan {
	uint64_t start_ns, end_ns;
	char *name;
	uint32_t service; /* index in the set's services */
	int32_t parent;	  /* index in the trace (tree order); -1: a root */
	uint32_t depth;	  /* 0 for roots */
	uint8_t kind;	  /* OTLP SpanKind, 0..5 */
	uint8_t method;	  /* enum serve_link */
	bool critical;
	double conf; /* causeway.link.confidence; -1 when not said */
	char trace_id[33], span_id[17], parent_id[17]; /* lowercase hex */
};

struct serve_trace {
	const char *id;	 /* its spans' trace_id */
	size_t first, n; /* spans[first .. first + n), in tree order */
	uint64_t start_ns, end_ns;  /* earliest start, latest end */
	size_t links[SERVE_LINK_N]; /* spans by link method */
	double min_conf; /* lowest confidence of a call's link; -1 none */
};

struct serve_tset {
	struct serve_tspan *spans;
	size_t nspans, cap_spans;
	struct serve_trace *traces; /* slowest first */
	size_t ntraces;
	char **services; /* service.name of each resourceSpans */
	size_t nservices, cap_services;
};

#define SERVE_TRACES_FILE_MAX (256u << 20) /* bytes of OTLP read at most */

/*
 * Parse OTLP/JSON (an object with resourceSpans) from buf into set (zeroed
 * first): spans grouped into traces, each in tree order (children by start
 * time) with depths and the critical path marked.  0, or -1 with the
 * reason in err (no message) and set empty.
 */
int serve_tset_parse(struct serve_tset *set, const char *buf, size_t len,
		     char *err, size_t errlen);
void serve_tset_release(struct serve_tset *set);
/* The trace with this id (lowercase hex), or -1. */
ssize_t serve_tset_find(const struct serve_tset *set, const char *id);
/* "connection", "thread", "contained", "timing", "none", or NULL. */
const char *serve_link_name(int method);

#endif
