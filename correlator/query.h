/* SPDX-License-Identifier: MIT */
/*
 * `causeway graph` past its options: the graph of record files, or of a
 * correlator group's buckets in P.edges, grouped (graph/graph.h), the
 * edges asked for (--neighbours, --top) and the view written as a table,
 * JSON, GraphML, DOT, CSV or the traffic matrix; --bench times each stage
 * on stderr.
 *
 *	struct cw_graph_query q = {.by = CW_BY_HOST, .top = 20,
 *				   .inputs = paths, .ninputs = n};
 *	return cw_graph_query_run(&q) ? 1 : 0;
 */
#ifndef CW_CORRELATOR_QUERY_H
#define CW_CORRELATOR_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/kafka.h"
#include "graph/graph.h"

enum cw_query_format {
	CW_QUERY_TABLE,
	CW_QUERY_JSON,
	CW_QUERY_GRAPHML,
	CW_QUERY_DOT,
	CW_QUERY_CSV
};

struct cw_graph_query {
	enum cw_group_by by;
	uint64_t window_ns; /* per-window traffic (JSON); 0: none */
	uint64_t top;	    /* 0: every edge */
	const char *neighbours;
	bool matrix; /* the traffic matrix as CSV instead */
	int format;  /* enum cw_query_format */
	const char *out; /* NULL: stdout; else whole or not at all */
	bool skip_bad, bench;
	struct cw_kafka_conf kc; /* brokers set: the group's buckets */
	uint64_t since_ns, until_ns;
	char **inputs; /* else these record files */
	size_t ninputs;
};

/* 0, or -1 after a message. */
int cw_graph_query_run(const struct cw_graph_query *a);

#endif
