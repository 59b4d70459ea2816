// SPDX-License-Identifier: MIT
/* What a correlator did, for people and programs (correlator/report.h). */
#include <inttypes.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/lag.h"
#include "correlator/report.h"
#include "graph/graph.h"

void cw_graph_print_table(const struct cw_graph *g)
{
	char c[64], s[64], b1[32], b2[32];
	size_t i;

	printf("%-28s %-28s %-5s %6s %12s %12s %9s %9s\n", "CLIENT", "SERVER",
	       "PROTO", "CONNS", "BYTES C->S", "BYTES S->C", "MSGS C->S",
	       "MSGS S->C");
	for (i = 0; i < g->nedges; i++) {
		const struct cw_edge *e = &g->edges[i];

		printf("%-28s %-28s %-5s %6llu %12s %12s %9llu %9llu\n",
		       cw_node_label(&g->nodes[e->client], c, sizeof(c)),
		       cw_node_label(&g->nodes[e->server], s, sizeof(s)),
		       cw_proto_name(e->protocol), (unsigned long long)e->conns,
		       cw_fmt_bytes(e->bytes_c2s, b1, sizeof(b1)),
		       cw_fmt_bytes(e->bytes_s2c, b2, sizeof(b2)),
		       (unsigned long long)e->msgs_c2s,
		       (unsigned long long)e->msgs_s2c);
	}
}

void cw_pairing_stats_json(struct cw_jsonw *w, const struct cw_pairing_stats *ps)
{
	cw_jsonw_u64(w, "applied", ps->records);
	cw_jsonw_u64(w, "ends", ps->ends);
	cw_jsonw_u64(w, "paired", ps->paired);
	cw_jsonw_u64(w, "unpaired", ps->unpaired);
	cw_jsonw_u64(w, "ambiguous", ps->ambiguous);
}

/* The graph and counters as one JSON object on stdout. */
static void print_json(const struct cw_correlator *c, const struct cw_graph *g)
{
	struct cw_jsonw w;

	cw_jsonw_init(&w, stdout);
	cw_jsonw_obj_open(&w, NULL);
	cw_graph_json(g, &w);
	cw_jsonw_obj_open(&w, "stats");
	cw_pairing_stats_json(&w, &c->pairing.st);
	cw_jsonw_obj_close(&w);
	cw_jsonw_obj_open(&w, "bad_records");
	cw_jsonw_u64(&w, "malformed", c->errors.count[-CW_WIRE_EMALFORMED]);
	cw_jsonw_u64(&w, "unknown_version", c->errors.count[-CW_WIRE_EVERSION]);
	cw_jsonw_u64(&w, "unknown_kind", c->errors.count[-CW_WIRE_EKIND]);
	cw_jsonw_u64(&w, "future", c->errors.count[-CW_WIRE_EFUTURE]);
	cw_jsonw_u64(&w, "past", c->errors.count[-CW_WIRE_EPAST]);
	cw_jsonw_obj_close(&w);
	if (c->o.kafka) {
		/* Loss and state counters beside the bad records. */
		cw_jsonw_obj_open(&w, "state");
		cw_jsonw_u64(&w, "lost_to_retention", c->sst.lost);
		cw_jsonw_u64(&w, "checkpoints", c->sst.checkpoints);
		cw_jsonw_u64(&w, "restored", c->sst.restored);
		cw_jsonw_u64(&w, "restored_ends", c->sst.restored_ends);
		cw_jsonw_u64(&w, "fresh", c->sst.fresh);
		cw_jsonw_u64(&w, "dropped", c->sst.dropped);
		cw_jsonw_u64(&w, "replayed", c->sst.replayed);
		cw_jsonw_obj_close(&w);
		cw_lag_json(&w);
	}
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* What the time buckets did, over the partitions held at the end. */
static void print_buckets(const struct cw_correlator *c)
{
	struct cw_bucket_state t = c->pairing.bk.s;
	size_t i, live = cw_pairing_live_ends(&c->pairing);

	for (i = 0; i < c->nparts; i++) {
		const struct cw_pairing *p = &c->parts[i].pairing;

		t.gone_ends += p->bk.s.gone_ends;
		t.dormant += p->bk.s.dormant;
		t.late += p->bk.s.late;
		t.sealed_ns = p->bk.s.sealed_ns > t.sealed_ns
				      ? p->bk.s.sealed_ns
				      : t.sealed_ns;
		live += cw_pairing_live_ends(p);
	}
	cw_info("buckets: %zu live ends, %" PRIu64 " folded into their "
		"edges and freed (%" PRIu64 " kept dormant), %" PRIu64
		" late deltas; sealed up to %" PRIu64 "; %" PRIu64
		" edges written to the edges topic",
		live, t.gone_ends, t.dormant, t.late, t.sealed_ns,
		c->edge_records);
}

/* The graph and counters at the end: JSON or a table on stdout. */
void cw_correlator_report(const struct cw_correlator *c,
			  const struct cw_graph *g, bool json)
{
	const struct cw_pairing_stats *st = &c->pairing.st;

	if (json) {
		print_json(c, g);
	} else {
		cw_graph_print_table(g);
	}
	cw_wire_errors_report(&c->errors, "records");
	/* This run's records; the graph also holds what the restored
	 * checkpoints reflect (st->records in all). */
	cw_info("%llu records applied, %llu ends (%llu paired, %llu unpaired), "
		"%llu bad records skipped",
		(unsigned long long)c->applied, (unsigned long long)st->ends,
		(unsigned long long)st->paired,
		(unsigned long long)st->unpaired,
		(unsigned long long)cw_wire_errors_total(&c->errors));
	if (c->cpu_first)
		cw_info("ingest: %.6f s CPU from the first record read to the "
			"last snapshot (join, restore, idling and the last "
			"windows' paths left out)",
			cw_correlator_ingest_cpu(c));
	if (c->o.kafka)
		cw_info("state: %" PRIu64 " checkpoints (%" PRIu64
			" records), %" PRIu64 " partitions restored (%" PRIu64
			" ends, %.3f s), %" PRIu64 " started afresh, %" PRIu64
			" handed over or lost; %" PRIu64
			" records lost to retention, %" PRIu64
			" already applied skipped",
			c->sst.checkpoints, c->sst.chunks, c->sst.restored,
			c->sst.restored_ends, c->sst.restore_secs, c->sst.fresh,
			c->sst.dropped, c->sst.lost, c->sst.replayed);
	if (c->o.bucket_ns)
		print_buckets(c);
	if (c->o.paths &&
	    (c->timing.records || c->windows_failed || c->timing.refused))
		cw_info("paths: %" PRIu64 " windows inferred (%" PRIu64
			" without paths) from %" PRIu64
			" timing records; %" PRIu64 " late records, %" PRIu64
			" without their end's fields, %" PRIu64
			" of slots too far from the clock; %" PRIu64
			" pauses of a partition ahead",
			c->windows, c->windows_failed, c->timing.records,
			c->timing.late, c->no_conn, c->timing.refused,
			c->timing_pauses);
	if (c->trace_windows || c->traces_post_failed)
		cw_info("traces: %" PRIu64 " windows, %" PRIu64
			" spans built; %" PRIu64 " posted, %" PRIu64
			" posts failed",
			c->trace_windows, c->trace_spans, c->traces_posted,
			c->traces_post_failed);
}

