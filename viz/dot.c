// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/util.h"
#include "viz/viz.h"

const char *cw_viz_color(const char *comm)
{
	/* Distinguishable on white; picked by hash so a command keeps its
	 * colour across runs and views. */
	static const char *palette[] = {
		"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
		"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
	};

	return palette[cw_hash_bytes(comm, strlen(comm)) %
		       CW_ARRAY_SIZE(palette)];
}

static void put_id(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		fputc(*s == '\n' ? ' ' : *s, fp);
	}
	fputc('"', fp);
}

static void node_dot(const struct cw_graph *g, size_t i, FILE *fp)
{
	const struct cw_node *n = &g->nodes[i];
	char label[512], name[128];

	cw_node_label(n, name, sizeof(name));
	if (n->kind == CW_NODE_PROCESS)
		snprintf(label, sizeof(label), "%s\n%.60s", name,
			 n->proc.cmdline);
	else
		snprintf(label, sizeof(label), "%s", name);
	fprintf(fp, "    n%zu [label=", i);
	put_id(fp, label);
	if (n->kind == CW_NODE_PROCESS)
		fprintf(fp, ", color=\"%s\"", cw_viz_color(n->proc.comm));
	else
		fprintf(fp, ", style=dashed");
	fprintf(fp, "];\n");
}

static bool same_group(const struct cw_node *a, const struct cw_node *b)
{
	return a->kind != CW_NODE_EXTERNAL && b->kind != CW_NODE_EXTERNAL &&
	       !strcmp(a->host, b->host) && a->netns == b->netns;
}

int cw_viz_write_dot(const struct cw_graph *g, FILE *fp,
		     const struct cw_viz_opts *opts)
{
	double total = 0, share, min_share = opts ? opts->min_share : 0;
	char a[32], b[32], label[64];
	size_t i, j, clusters = 0;
	bool *done = calloc(g->nnodes ? g->nnodes : 1, sizeof(*done));

	if (!done)
		return -1;
	fprintf(fp,
		"digraph causeway {\n  rankdir=LR;\n"
		"  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n"
		"  edge [fontname=\"Helvetica\", fontsize=10];\n");
	for (i = 0; i < g->nnodes; i++) {
		if (done[i])
			continue;
		if (g->nodes[i].kind == CW_NODE_EXTERNAL) {
			node_dot(g, i, fp);
			continue;
		}
		fprintf(fp, "  subgraph cluster_%zu {\n    label=", clusters++);
		snprintf(label, sizeof(label), "%.20s netns %u",
			 g->nodes[i].host, g->nodes[i].netns);
		put_id(fp, label);
		fprintf(fp, ";\n");
		for (j = i; j < g->nnodes; j++) {
			if (!done[j] &&
			    same_group(&g->nodes[i], &g->nodes[j])) {
				node_dot(g, j, fp);
				done[j] = true;
			}
		}
		fprintf(fp, "  }\n");
	}
	free(done);
	for (i = 0; i < g->nedges; i++)
		total +=
			(double)(g->edges[i].bytes_c2s + g->edges[i].bytes_s2c);
	for (i = 0; i < g->nedges; i++) {
		const struct cw_edge *e = &g->edges[i];

		share = total > 0 ? (e->bytes_c2s + e->bytes_s2c) / total : 0;
		if (share < min_share)
			continue;
		fprintf(fp,
			"  n%zu -> n%zu [penwidth=%.2f, label=\"%s %s / "
			"%s\"];\n",
			e->client, e->server, 1 + 7 * sqrt(share),
			cw_proto_name(e->protocol),
			cw_fmt_bytes(e->bytes_c2s, a, sizeof(a)),
			cw_fmt_bytes(e->bytes_s2c, b, sizeof(b)));
	}
	fprintf(fp, "}\n");
	return ferror(fp) ? -1 : 0;
}
