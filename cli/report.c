// SPDX-License-Identifier: MIT
/* The table and output files that run and correlate both produce. */
#include <limits.h>
#include <stdio.h>

#include "cli/report.h"
#include "correlator/report.h"
#include "common/log.h"
#include "common/util.h"
#include "viz/viz.h"

void cli_stats_json(struct cw_jsonw *w, const struct cw_agent_stats *st,
		    const struct cw_pairing_stats *ps)
{
	cw_jsonw_obj_open(w, "stats");
	if (!st)
		goto pairing;
	cw_jsonw_u64(w, "records", st->records);
	cw_jsonw_u64(w, "collections", st->collections);
	cw_jsonw_u64(w, "close_lost", st->close_lost);
	cw_jsonw_u64(w, "storage_fail", st->storage_fail);
	cw_jsonw_u64(w, "udp_map_full", st->udp_map_full);
	cw_jsonw_u64(w, "connect_failed", st->connect_failed);
	cw_jsonw_u64(w, "no_owner", st->no_owner);
	cw_jsonw_u64(w, "event_lost", st->event_lost);
	cw_jsonw_u64(w, "events", st->events);
	cw_jsonw_u64(w, "windows", st->windows);
	cw_jsonw_u64(w, "timing_lost", st->timing_lost);
	cw_jsonw_u64(w, "nat_lookups", st->nat_lookups);
	cw_jsonw_u64(w, "nat_undone", st->nat_undone);
	cw_jsonw_u64(w, "nat_snat", st->nat_snat);
	cw_jsonw_u64(w, "nat_errors", st->nat_errors);
pairing:
	cw_pairing_stats_json(w, ps);
	cw_jsonw_obj_close(w);
}

static int write_graph_json(const char *path, const struct cw_graph *g,
			    const char *host, const char *attach,
			    const struct cw_agent_stats *st,
			    const struct cw_pairing_stats *ps)
{
	struct cw_outfile of;
	struct cw_jsonw w;

	if (cw_outfile_open(&of, path))
		return -1;
	cw_jsonw_init(&w, of.fp);
	cw_jsonw_obj_open(&w, NULL);
	if (host)
		cw_jsonw_str(&w, "host", host);
	if (attach)
		cw_jsonw_str(&w, "attach", attach);
	cw_graph_json(g, &w);
	cli_stats_json(&w, st, ps);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	return cw_outfile_commit(&of);
}

static int write_dot(const char *path, const struct cw_graph *g,
		     double min_share)
{
	struct cw_viz_opts vo = {.sz = sizeof(vo), .min_share = min_share};
	struct cw_outfile of;

	if (cw_outfile_open(&of, path))
		return -1;
	if (cw_viz_write_dot(g, of.fp, &vo)) { /* it said why */
		cw_outfile_abort(&of);
		return -1;
	}
	return cw_outfile_commit(&of);
}

int cli_write_outputs(const char *dir, const struct cw_graph *g,
		      const char *host, const char *attach,
		      const struct cw_agent_stats *st,
		      const struct cw_pairing_stats *ps, double min_share)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/edges.json", dir);
	if (write_graph_json(path, g, host, attach, st, ps))
		return -1;
	snprintf(path, sizeof(path), "%s/graph.dot", dir);
	return write_dot(path, g, min_share);
}
