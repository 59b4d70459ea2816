/* SPDX-License-Identifier: MIT */
/*
 * What a correlator did, for people and programs: the edge table of a
 * graph, the pairing's counters in JSON, and a member's summary at the
 * end of `causeway correlate` (the graph on stdout, as a table or JSON,
 * its counters on stderr).
 */
#ifndef CW_CORRELATOR_REPORT_H
#define CW_CORRELATOR_REPORT_H

#include <stdbool.h>

#include "common/jsonw.h"
#include "correlator/correlator.h"
#include "graph/graph.h"

/* The edge table on stdout: client, server, protocol, connections,
 * bytes, messages. */
void cw_graph_print_table(const struct cw_graph *g);
/* The pairing's counters as members of the JSON object open in w. */
void cw_pairing_stats_json(struct cw_jsonw *w,
			   const struct cw_pairing_stats *ps);
/* The graph and c's counters: JSON or a table on stdout, the counters
 * on stderr. */
void cw_correlator_report(const struct cw_correlator *c,
			  const struct cw_graph *g, bool json);

#endif
