// SPDX-License-Identifier: MIT
/* `causeway graph` past its options (correlator/query.h). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "correlator/query.h"
#include "graph/graph.h"

static void print_table(const struct cw_view *v, const size_t *edges, size_t n,
			FILE *fp)
{
	char b1[32], b2[32];
	size_t k;

	fprintf(fp, "%-36s %-36s %6s %12s %12s %9s %9s\n", "CLIENT", "SERVER",
		"CONNS", "BYTES C->S", "BYTES S->C", "MSGS C->S", "MSGS S->C");
	for (k = 0; k < n; k++) {
		const struct cw_view_edge *e = &v->e[edges[k]];

		fprintf(fp, "%-36.36s %-36.36s %6llu %12s %12s %9llu %9llu\n",
			v->v[e->from].label, v->v[e->to].label,
			(unsigned long long)e->conns,
			cw_fmt_bytes(e->bytes_c2s, b1, sizeof(b1)),
			cw_fmt_bytes(e->bytes_s2c, b2, sizeof(b2)),
			(unsigned long long)e->msgs_c2s,
			(unsigned long long)e->msgs_s2c);
	}
}

/* A write that failed: the file and why, in one line; -1. */
static int write_failed(const struct cw_graph_query *a)
{
	int err = errno ? errno : EIO;

	if (!a->out)
		return cw_error("unable to write to standard output: %s",
				strerror(err));
	return cw_error("unable to write '%s': %s", a->out, strerror(err));
}

static int write_view(const struct cw_graph_query *a, const struct cw_view *v,
		      const struct cw_pairing_stats *ps,
		      const struct cw_record_read_stats *rs,
		      const size_t *edges, size_t n, FILE *fp)
{
	struct cw_jsonw w;

	if (a->matrix)
		return cw_view_write_matrix(v, fp);
	switch (a->format) {
	case CW_QUERY_TABLE:
		print_table(v, edges, n, fp);
		return ferror(fp) ? write_failed(a) : 0;
	case CW_QUERY_GRAPHML:
		return cw_view_write_graphml(v, fp, edges, n);
	case CW_QUERY_DOT:
		return cw_view_write_dot(v, fp, edges, n);
	case CW_QUERY_CSV:
		return cw_view_write_csv(v, fp, edges, n);
	default:
		break;
	}
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_view_json(v, &w, edges, n);
	cw_jsonw_obj_open(&w, "stats");
	cw_jsonw_u64(&w, "files", rs->files);
	cw_jsonw_u64(&w, "records", rs->records);
	cw_jsonw_u64(&w, "bad_lines", rs->bad);
	cw_jsonw_u64(&w, "stale", ps->stale);
	cw_jsonw_u64(&w, "ends", ps->ends);
	cw_jsonw_u64(&w, "paired", ps->paired);
	cw_jsonw_u64(&w, "unpaired", ps->unpaired);
	cw_jsonw_u64(&w, "ambiguous", ps->ambiguous);
	cw_jsonw_obj_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	return ferror(fp) ? write_failed(a) : 0;
}

/* --bench: each stage's time on stderr. */
static void print_bench(const struct cw_graph_query *a,
			const struct cw_pipeline *pl)
{
	fprintf(stderr,
		"bench: records %llu read %.3fs (%.0f records/s) "
		"ends %llu nodes %zu edges %zu pair+build %.3fs "
		"project(%s) %.3fs build+project %.3fs vertices %zu "
		"edges %zu\n",
		(unsigned long long)pl->read.records, pl->t_read,
		pl->t_read > 0 ? (double)pl->read.records / pl->t_read : 0,
		(unsigned long long)pl->pairs.ends, pl->graph.nnodes,
		pl->graph.nedges, pl->t_pair, cw_group_by_name(a->by),
		pl->t_view, pl->t_pair + pl->t_view, pl->view.nv, pl->view.ne);
}

/* The edges asked for: --neighbours, --top.  0 or -1. */
static int select_edges(const struct cw_graph_query *a, const struct cw_view *v,
			size_t **edges, size_t *n)
{
	long vid = -1;

	if (a->neighbours) {
		vid = cw_view_find(v, a->neighbours);
		if (vid < 0)
			return cw_error("--neighbours '%s': %s in the %s graph",
					a->neighbours,
					vid == -2 ? "several nodes match; give "
						    "the full name"
						  : "no such node",
					cw_group_by_name(a->by));
	}
	return cw_view_edges(v, vid, a->top, edges, n);
}

/* --kafka: the fleet's merged buckets of [--since, --until). */
static int read_kafka(const struct cw_graph_query *a, struct cw_pipeline *pl)
{
	return cw_pipeline_read_kafka(
		pl, &a->kc, a->kc.group ? a->kc.group : CW_KAFKA_GROUP,
		a->since_ns, a->until_ns);
}

int cw_graph_query_run(const struct cw_graph_query *a)
{
	struct cw_outfile of = {0};
	struct cw_pipeline pl;
	size_t *edges = NULL, n = 0;
	int ret;

	ret = 1;
	cw_pipeline_init(&pl, a->window_ns);
	if (a->out && cw_outfile_open(&of, a->out))
		goto out;
	/*
	 * Big arrays come and go (tables that grow, sort buffers, the view,
	 * the igraph): keep freed memory for the next instead of giving it
	 * back, so that it is not mapped and zeroed again.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if ((a->kc.brokers ? read_kafka(a, &pl)
			  : cw_pipeline_read_files(&pl, a->inputs,
						   a->ninputs,
						   a->skip_bad)) ||
	    cw_pipeline_finish(&pl, a->by) ||
	    select_edges(a, &pl.view, &edges, &n))
		goto out;
	if (a->bench)
		print_bench(a, &pl);
	if (write_view(a, &pl.view, &pl.pairs, &pl.read, edges, n,
		       a->out ? of.fp : stdout))
		goto out;
	if (a->out) {
		if (cw_outfile_commit(&of))
			goto out;
	} else if (fflush(stdout)) {
		cw_error("unable to write to standard output");
		goto out;
	}
	ret = 0;
out:
	if (of.fp)
		cw_outfile_abort(&of);
	free(edges);
	cw_pipeline_release(&pl);
	return ret ? -1 : 0;
}
