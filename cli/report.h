/* SPDX-License-Identifier: MIT */
/* The process-graph report shared by `run` and `correlate`. */
#ifndef CW_CLI_REPORT_H
#define CW_CLI_REPORT_H

#include "agent/agent.h"
#include "common/jsonw.h"
#include "correlator/correlator.h"
#include "graph/graph.h"

/* "stats": loss counters (agent stats may be NULL) and pairing counts. */
void cli_stats_json(struct cw_jsonw *w, const struct cw_agent_stats *st,
		    const struct cw_pairing_stats *ps);
/* DIR/edges.json and DIR/graph.dot, each written whole or not at all. */
int cli_write_outputs(const char *dir, const struct cw_graph *g,
		      const char *host, const char *attach,
		      const struct cw_agent_stats *st,
		      const struct cw_pairing_stats *ps, double min_share);

#endif
