// SPDX-License-Identifier: MIT
/* Drawings of a view (cw_render_view) and the process graph's DOT
 * source (cw_viz_write_dot), in the house style of viz/style.c. */
#include <errno.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"
#include "viz/viz.h"

static const char *vertex_color(const struct cw_view *v, size_t i)
{
	if (v->v[i].node->kind == CW_NODE_EXTERNAL)
		return "#555555";
	return cw_viz_color(cw_viz_vertex_command(v, i));
}

/* The largest memory and CPU among the vertices drawn. */
struct usage_max {
	uint64_t rss;
	double cpu;
};

static void usage_max_of(const struct cw_view *v, const bool *vertex_on,
			 struct usage_max *m)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < v->nv; i++) {
		const struct cw_usage_stats *u = &v->v[i].usage;

		if (!vertex_on[i] || !u->known)
			continue;
		if (u->rss_bytes > m->rss)
			m->rss = u->rss_bytes;
		if (u->cpu_cores > m->cpu)
			m->cpu = u->cpu_cores;
	}
}

/* Which edges to draw, and which vertices they leave. */
static size_t select_edges(const struct cw_view *v, double min_share,
			   bool *edge_on, bool *vertex_on, uint64_t *max_bytes)
{
	double total = 0;
	size_t i, n = 0;

	for (i = 0; i < v->ne; i++)
		total += (double)cw_view_edge_bytes(v, i);
	*max_bytes = 1;
	for (i = 0; i < v->ne; i++) {
		double share = total > 0 ? cw_view_edge_bytes(v, i) / total : 0;

		if (share < min_share)
			continue;
		edge_on[i] = true;
		vertex_on[v->e[i].from] = vertex_on[v->e[i].to] = true;
		n++;
	}
	for (i = 0; i < v->nv; i++)
		if (vertex_on[i] &&
		    v->v[i].bytes_out + v->v[i].bytes_in > *max_bytes)
			*max_bytes = v->v[i].bytes_out + v->v[i].bytes_in;
	return n;
}

static int add_vertices(const struct cw_view *v, Agraph_t *g,
			const bool *vertex_on, uint64_t max_bytes,
			Agnode_t **nodes)
{
	char name[32], buf[64], cluster[96], label[2 * 512 + 128], bytes[32];
	char text[2][512];
	struct usage_max m;
	Agraph_t *sub;
	size_t i;

	usage_max_of(v, vertex_on, &m);
	if (v->has_usage && cw_viz_legend(g, m.rss, m.cpu))
		return -1;
	for (i = 0; i < v->nv; i++) {
		const struct cw_view_vertex *x = &v->v[i];

		if (!vertex_on[i])
			continue;
		sub = g;
		if (x->same_host && v->by != CW_BY_HOST) {
			snprintf(cluster, sizeof(cluster), "cluster_%s",
				 x->node->host);
			sub = agsubg(g, cluster, 1);
			if (!sub)
				return cw_viz_fail("unable to add a cluster");
			if (cw_viz_set(sub, "label",
				       cw_viz_text(text[0], sizeof(text[0]),
						   x->node->host, CW_HOST_LEN)))
				return -1;
		}
		snprintf(name, sizeof(name), "v%zu", i);
		nodes[i] = agnode(sub, name, 1);
		if (!nodes[i])
			return cw_viz_fail("unable to add a node");
		cw_fmt_bytes(x->bytes_out + x->bytes_in, bytes, sizeof(bytes));
		if (v->by == CW_BY_PROCESS && x->node->kind == CW_NODE_PROCESS)
			snprintf(label, sizeof(label), "%s\n%s\n%s",
				 cw_viz_text(text[0], sizeof(text[0]),
					     cw_node_label(x->node, buf,
							   sizeof(buf)),
					     sizeof(buf)),
				 cw_viz_text(text[1], sizeof(text[1]),
					     x->node->proc.cmdline, 40),
				 bytes);
		else
			snprintf(label, sizeof(label), "%s\n%s",
				 cw_viz_text(text[0], sizeof(text[0]), x->label,
					     sizeof(text[0]) / 5),
				 bytes);
		snprintf(buf, sizeof(buf), "%.2f",
			 cw_viz_height_of_bytes(x->bytes_out + x->bytes_in,
						max_bytes));
		if (cw_viz_set(nodes[i], "height", buf) ||
		    cw_viz_usage_attrs(nodes[i], &x->usage, m.rss, m.cpu, label,
				       sizeof(label)) ||
		    cw_viz_set(nodes[i], "label", label) ||
		    cw_viz_set(nodes[i], "color", vertex_color(v, i)) ||
		    (x->node->kind == CW_NODE_EXTERNAL &&
		     cw_viz_set(nodes[i], "style", "dashed")))
			return -1;
	}
	return 0;
}

static int add_edges(const struct cw_view *v, Agraph_t *g, const bool *edge_on,
		     Agnode_t **nodes)
{
	char a[32], b[32], label[96], width[16];
	double total = 0, share;
	Agedge_t *e;
	size_t i;

	for (i = 0; i < v->ne; i++)
		total += (double)cw_view_edge_bytes(v, i);
	for (i = 0; i < v->ne; i++) {
		const struct cw_view_edge *x = &v->e[i];

		if (!edge_on[i])
			continue;
		e = agedge(g, nodes[x->from], nodes[x->to], NULL, 1);
		if (!e)
			return cw_viz_fail("unable to add an edge");
		share = total > 0 ? cw_view_edge_bytes(v, i) / total : 0;
		snprintf(width, sizeof(width), "%.2f",
			 cw_viz_width_of_share(share));
		snprintf(label, sizeof(label), "%s / %s",
			 cw_fmt_bytes(x->bytes_c2s, a, sizeof(a)),
			 cw_fmt_bytes(x->bytes_s2c, b, sizeof(b)));
		/* xlabel: dot 2.4x loses (and double-frees) labelled edges
		 * between nodes of one rank inside clusters. */
		if (cw_viz_set(e, "penwidth", width) ||
		    cw_viz_set(e, "xlabel", label) ||
		    cw_viz_set(
			    e, "color",
			    cw_viz_pair_color(cw_viz_vertex_command(v, x->from),
					      cw_viz_vertex_command(v, x->to))))
			return -1;
	}
	return 0;
}

/* ---- the process graph as DOT source (graph.dot) ---------------------- */

static bool same_group(const struct cw_node *a, const struct cw_node *b)
{
	return a->kind != CW_NODE_EXTERNAL && b->kind != CW_NODE_EXTERNAL &&
	       !strcmp(a->host, b->host) && a->netns == b->netns;
}

static int graph_node(const struct cw_graph *g, size_t i, Agraph_t *sub,
		      Agnode_t **nodes)
{
	const struct cw_node *n = &g->nodes[i];
	char label[2 * 512 + 64], name[128], id[32], text[2][512];

	if (n->kind == CW_NODE_EXTERNAL && n->name[0] && n->port)
		snprintf(name, sizeof(name), "%.100s:%u", n->name, n->port);
	else if (n->kind == CW_NODE_EXTERNAL && n->name[0]) /* DNS name */
		snprintf(name, sizeof(name), "%.100s", n->name);
	else
		cw_node_label(n, name, sizeof(name));
	cw_viz_text(text[0], sizeof(text[0]), name, sizeof(name));
	/* One line: the label's break is a space, as it always was. */
	if (n->kind == CW_NODE_PROCESS)
		snprintf(label, sizeof(label), "%s %s", text[0],
			 cw_viz_text(text[1], sizeof(text[1]), n->proc.cmdline,
				     60));
	else
		snprintf(label, sizeof(label), "%s", text[0]);
	snprintf(id, sizeof(id), "n%zu", i);
	nodes[i] = agnode(sub, id, 1);
	if (!nodes[i])
		return cw_viz_fail("unable to add a node");
	if (cw_viz_set(nodes[i], "label", label))
		return -1;
	if (n->kind == CW_NODE_PROCESS)
		return cw_viz_set(nodes[i], "color",
				  cw_viz_color(n->proc.comm));
	return cw_viz_set(nodes[i], "style", "dashed");
}

/* Node indices in order of (host, netns), then index (qsort_r). */
static int by_group(const void *a, const void *b, void *ctx)
{
	const struct cw_graph *g = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct cw_node *x = &g->nodes[i], *y = &g->nodes[j];
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Beyond this many hosts and namespaces the processes are not put in
 * clusters: cgraph's writer looks for each node and each edge in every
 * subgraph (quadratic: a 10,000-host graph.dot took minutes), and no
 * drawing of that many clusters is legible anyway.
 */
#define DOT_CLUSTERS_MAX 256

/* Write the processes of group ord[0 .. n - 1] in one cluster. */
static int graph_cluster(const struct cw_graph *g, Agraph_t *gr,
			 Agnode_t **nodes, const size_t *ord, size_t n,
			 size_t id)
{
	char label[160], cname[32], host[128];
	const struct cw_node *first = &g->nodes[ord[0]];
	Agraph_t *sub;
	size_t k;

	snprintf(cname, sizeof(cname), "cluster_%zu", id);
	snprintf(label, sizeof(label), "%s netns %u",
		 cw_viz_text(host, sizeof(host), first->host, 20),
		 first->netns);
	sub = agsubg(gr, cname, 1);
	if (!sub)
		return cw_viz_fail("unable to add a cluster");
	if (cw_viz_set(sub, "label", label))
		return -1;
	for (k = 0; k < n; k++)
		if (graph_node(g, ord[k], sub, nodes))
			return -1;
	return 0;
}

/*
 * Processes in a cluster per host and network namespace, clusters in the
 * order of their first process, processes by index.
 */
static int graph_nodes(const struct cw_graph *g, Agraph_t *gr, Agnode_t **nodes)
{
	/* ord: the sorted indices; run: by node, its group's start in
	 * ord; len: by start, the group's length. */
	size_t m = g->nnodes + 1, *ord = calloc(3 * m, sizeof(*ord));
	size_t *run = ord + m, *len = ord + 2 * m;
	size_t i, k, n = 0, runs = 0, clusters = 0;
	int ret = -1;

	if (!ord)
		return cw_error("out of memory");
	for (i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind != CW_NODE_EXTERNAL)
			ord[n++] = i;
	qsort_r(ord, n, sizeof(*ord), by_group, (void *)g);
	for (k = 0; k < n; k += len[k], runs++) {
		for (len[k] = 1;
		     k + len[k] < n &&
		     same_group(&g->nodes[ord[k]], &g->nodes[ord[k + len[k]]]);
		     len[k]++)
			run[ord[k + len[k]]] = k;
		run[ord[k]] = k;
	}
	for (i = 0; i < g->nnodes; i++) {
		if (nodes[i])
			continue;
		if (g->nodes[i].kind == CW_NODE_EXTERNAL ||
		    runs > DOT_CLUSTERS_MAX) {
			if (graph_node(g, i, gr, nodes))
				goto out;
			continue;
		}
		k = run[i];
		if (graph_cluster(g, gr, nodes, &ord[k], len[k], clusters++))
			goto out;
	}
	ret = 0;
out:
	free(ord);
	return ret;
}

static int graph_edges(const struct cw_graph *g, Agraph_t *gr, Agnode_t **nodes,
		       double min_share)
{
	char a[32], b[32], label[96], width[16];
	double total = 0, share;
	Agedge_t *e;
	size_t i;

	for (i = 0; i < g->nedges; i++)
		total +=
			(double)(g->edges[i].bytes_c2s + g->edges[i].bytes_s2c);
	for (i = 0; i < g->nedges; i++) {
		const struct cw_edge *x = &g->edges[i];

		share = total > 0 ? (x->bytes_c2s + x->bytes_s2c) / total : 0;
		if (share < min_share)
			continue;
		e = agedge(gr, nodes[x->client], nodes[x->server], NULL, 1);
		if (!e)
			return cw_viz_fail("unable to add an edge");
		snprintf(width, sizeof(width), "%.2f",
			 cw_viz_width_of_share(share));
		snprintf(label, sizeof(label), "%s %s / %s",
			 cw_proto_name(x->protocol),
			 cw_fmt_bytes(x->bytes_c2s, a, sizeof(a)),
			 cw_fmt_bytes(x->bytes_s2c, b, sizeof(b)));
		/* xlabel, as every drawing: see add_edges() */
		if (cw_viz_set(e, "penwidth", width) ||
		    cw_viz_set(e, "xlabel", label))
			return -1;
	}
	return 0;
}

int cw_viz_write_dot(const struct cw_graph *g, FILE *fp,
		     const struct cw_viz_opts *opts)
{
	Agnode_t **nodes = calloc(g->nnodes + 1, sizeof(*nodes));
	Agraph_t *gr = NULL;
	int ret = -1;

	cw_viz_errors_begin();
	if (!nodes)
		return cw_error("out of memory");
	gr = cw_dot_open("causeway");
	if (!gr) {
		cw_viz_fail("unable to create a graph");
		goto out;
	}
	if (cw_viz_defaults(gr, false) || graph_nodes(g, gr, nodes) ||
	    graph_edges(g, gr, nodes, opts ? opts->min_share : 0))
		goto out;
	ret = cw_dot_write(gr, fp);
out:
	if (gr && agclose(gr))
		ret = cw_viz_fail("unable to close the graph");
	free(nodes);
	return ret;
}

/*
 * Lay out and render g in memory before the output is opened (Graphviz
 * ends the process when a write of its own fails, and a layout that
 * fails leaves nothing behind), then write it through cw_outfile: a
 * temporary renamed into place, a device such as /dev/null written in
 * place.  DOT source is written as it is.  0, or -1 after a message.
 */
static int draw(GVC_t *gvc, Agraph_t *g, const char *format,
		const char *layout, const char *path, bool *laid_out)
{
	struct cw_outfile of;
	unsigned int len = 0;
	char *data = NULL;
	int ret = -1;

	if (strcmp(format, "dot")) {
		if (gvLayout(gvc, g, layout))
			return cw_viz_fail("layout failed");
		*laid_out = true;
		if (gvRenderData(gvc, g, format, &data, &len) || !data) {
			gvFreeRenderData(data);
			return cw_viz_fail("unable to render");
		}
	}
	if (cw_outfile_open(&of, path))
		goto out;
	if (data ? fwrite(data, 1, len, of.fp) != len : agwrite(g, of.fp)) {
		cw_error("unable to write '%s': %s", path,
			 strerror(errno ? errno : EIO));
		cw_outfile_abort(&of);
		goto out;
	}
	ret = cw_outfile_commit(&of);
out:
	gvFreeRenderData(data);
	return ret;
}

int cw_render_view(const struct cw_view *v, const char *path,
		   const struct cw_render_opts *opts, size_t *drawn)
{
	const char *format = opts && opts->format ? opts->format : "svg";
	const char *layout = opts && opts->layout ? opts->layout : "dot";
	bool *edge_on = calloc(v->ne + 1, sizeof(bool));
	bool *vertex_on = calloc(v->nv + 1, sizeof(bool));
	Agnode_t **nodes = calloc(v->nv + 1, sizeof(*nodes));
	bool laid_out = false;
	GVC_t *gvc = NULL;
	Agraph_t *g = NULL;
	uint64_t max_bytes;
	size_t n;
	int ret = -1;

	cw_viz_errors_begin();
	if (!edge_on || !vertex_on || !nodes) {
		cw_error("out of memory");
		goto out;
	}
	n = select_edges(v, opts ? opts->min_share : 0, edge_on, vertex_on,
			 &max_bytes);
	gvc = gvContext();
	if (!gvc) {
		cw_viz_fail("unable to create a context");
		goto out;
	}
	g = agopen("causeway", Agdirected, NULL);
	if (!g) {
		cw_viz_fail("unable to create a graph");
		goto out;
	}
	if (cw_viz_defaults(g, false) ||
	    add_vertices(v, g, vertex_on, max_bytes, nodes) ||
	    add_edges(v, g, edge_on, nodes))
		goto out;
	if (draw(gvc, g, format, layout, path, &laid_out))
		goto out;
	if (drawn)
		*drawn = n;
	ret = 0;
out:
	if (laid_out && gvFreeLayout(gvc, g))
		ret = cw_viz_fail("unable to free the layout");
	if (g && agclose(g))
		ret = cw_viz_fail("unable to close the graph");
	if (gvc && gvFreeContext(gvc))
		ret = cw_viz_fail("unable to free the context");
	free(edge_on);
	free(vertex_on);
	free(nodes);
	return ret;
}
