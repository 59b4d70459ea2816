// SPDX-License-Identifier: MIT
/*
 * A serve_graph as DOT source in the page's style, for the layout worker
 * (serve/layout.c) to lay out.  At most a bounded number of edges are
 * drawn (the largest; the graph's label says how many were left out), so
 * that no view of a fleet asks dot for a layout it cannot finish.  Edge labels are dot's own `label`s, which dot lays out as objects
 * of their own (virtual nodes of the ranking), so they never sit on a
 * node; hosts are therefore not drawn as clusters (dot 2.42 mishandles
 * labelled edges between nodes of one rank inside clusters): the host is
 * in each node's label instead.
 */
#include <graphviz/cgraph.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"
#include "viz/viz.h"

/* Graphviz keeps global state: one layout at a time. */
static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;

static int set(void *obj, const char *name, const char *val)
{
	if (agsafeset(obj, (char *)name, (char *)val, ""))
		return cw_error("graphviz: unable to set '%s'", name);
	return 0;
}

static int defaults(Agraph_t *g)
{
	static const char *const attrs[][3] = {
		{"G", "rankdir", "LR"},
		{"G", "fontname", "Helvetica"},
		{"G", "bgcolor", "transparent"},
		{"G", "nodesep", "0.3"},
		{"N", "shape", "box"},
		{"N", "style", "rounded,filled"},
		{"N", "fillcolor", "white"},
		{"N", "fontname", "Helvetica"},
		{"N", "fontsize", "10"},
		{"N", "label", "\\N"},
		{"N", "height", "0.5"},
		{"N", "color", "black"},
		{"N", "id", ""},
		{"N", "tooltip", ""},
		{"N", "penwidth", "1.5"},
		{"E", "fontname", "Helvetica"},
		{"E", "fontsize", "8"},
		{"E", "penwidth", "1"},
		{"E", "label", ""},
		{"E", "id", ""},
		{"E", "color", "black"},
		{"E", "tooltip", ""},
		{"E", "fontcolor", "#444444"},
	};
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(attrs); i++) {
		int kind = attrs[i][0][0] == 'G'   ? AGRAPH
			   : attrs[i][0][0] == 'N' ? AGNODE
						   : AGEDGE;

		if (!agattr(g, kind, (char *)attrs[i][1], (char *)attrs[i][2]))
			return cw_error("graphviz: unable to set a default");
	}
	return 0;
}

static const char *node_color(const struct serve_graph *sg,
			      const struct serve_node *x)
{
	if (x->external)
		return "#555555";
	return cw_viz_color(x->comm[0] ? x->comm : x->name);
}

/* A label without the "@host" the next line shows anyway. */
static int short_len(const struct serve_node *x)
{
	size_t n = strlen(x->label), h = strlen(x->host);

	if (n > h + 1 && x->label[n - h - 1] == '@' &&
	    !strcmp(x->label + n - h, x->host))
		n -= h + 1;
	return (int)(n > 200 ? 200 : n);
}

/* The largest memory and CPU among the nodes: the scales' tops. */
static void usage_max_of(const struct serve_graph *sg, const bool *keep,
			 uint64_t *rss, double *cpu)
{
	size_t i;

	*rss = 0, *cpu = 0;
	for (i = 0; i < sg->nn; i++) {
		const struct cw_usage_stats *u = &sg->nodes[i].usage;

		if (!keep[i] || !u->known)
			continue;
		if (u->rss_bytes > *rss)
			*rss = u->rss_bytes;
		if (u->cpu_cores > *cpu)
			*cpu = u->cpu_cores;
	}
}

/*
 * The SAC'20 encoding, with viz/'s scales so that the page and `causeway
 * render` draw alike: height from memory, line width from CPU, both in
 * the label.  Nodes the agents said nothing of keep their bytes' height.
 */
static int usage_attrs(const struct serve_node *x, Agnode_t *node,
		       uint64_t max_rss, double max_cpu, char *label,
		       size_t len)
{
	const struct cw_usage_stats *u = &x->usage;
	char buf[32], rss[32];
	size_t n = strlen(label);

	if (!u->known)
		return 0;
	snprintf(label + n, len - n, "\nCPU %.2f cores, RAM %s", u->cpu_cores,
		 cw_fmt_bytes(u->rss_bytes, rss, sizeof(rss)));
	snprintf(buf, sizeof(buf), "%.2f",
		 cw_viz_height_of_rss(u->rss_bytes, max_rss));
	if (set(node, "height", buf))
		return -1;
	snprintf(buf, sizeof(buf), "%.2f",
		 cw_viz_width_of_cpu(u->cpu_cores, max_cpu));
	return set(node, "penwidth", buf);
}

/* The scales, under the picture: only when some node has resources. */
static int legend(Agraph_t *g, uint64_t max_rss, double max_cpu)
{
	char text[256], rss[32];

	snprintf(text, sizeof(text),
		 "node height: memory (2.5 in = %s, by square root); node "
		 "line: CPU (8 pt = %.2f cores); edge width: bytes; edge "
		 "colour: command",
		 cw_fmt_bytes(max_rss, rss, sizeof(rss)), max_cpu);
	if (!agattr(g, AGRAPH, "label", text) ||
	    !agattr(g, AGRAPH, "labelloc", "b") ||
	    !agattr(g, AGRAPH, "fontsize", "10"))
		return cw_error("graphviz: unable to set the legend");
	return 0;
}

static int add_nodes(const struct serve_graph *sg, const bool *keep,
		     Agraph_t *g, Agnode_t **nodes)
{
	char name[32], label[700], bytes[32], buf[32];
	uint64_t max = 1, max_rss;
	double max_cpu;
	size_t i;

	usage_max_of(sg, keep, &max_rss, &max_cpu);
	if (max_rss && legend(g, max_rss, max_cpu))
		return -1;
	for (i = 0; i < sg->nn; i++)
		if (keep[i] &&
		    sg->nodes[i].bytes_out + sg->nodes[i].bytes_in > max)
			max = sg->nodes[i].bytes_out + sg->nodes[i].bytes_in;
	for (i = 0; i < sg->nn; i++) {
		const struct serve_node *x = &sg->nodes[i];
		uint64_t b = x->bytes_out + x->bytes_in;

		if (!keep[i])
			continue;
		snprintf(name, sizeof(name), "n%zu", i);
		nodes[i] = agnode(g, name, 1);
		if (!nodes[i])
			return cw_error("graphviz: unable to add a node");
		cw_fmt_bytes(b, bytes, sizeof(bytes));
		if (sg->by == CW_SERVE_BY_HOST || x->external)
			snprintf(label, sizeof(label), "%.200s\n%s", x->label,
				 bytes);
		else if (x->host[0])
			snprintf(label, sizeof(label), "%.*s\n%.16s\n%s",
				 short_len(x), x->label, x->host, bytes);
		else
			snprintf(label, sizeof(label),
				 "%.200s\n%llu processes, several hosts\n%s",
				 x->label, (unsigned long long)x->members,
				 bytes);
		snprintf(buf, sizeof(buf), "%.2f",
			 0.5 + 1.0 * sqrt((double)b / (double)max));
		if (set(nodes[i], "height", buf) ||
		    usage_attrs(x, nodes[i], max_rss, max_cpu, label,
				sizeof(label)) ||
		    set(nodes[i], "label", label) ||
		    set(nodes[i], "id", name) ||
		    set(nodes[i], "tooltip", x->name) ||
		    set(nodes[i], "color", node_color(sg, x)) ||
		    (x->external && set(nodes[i], "style", "rounded,dashed")))
			return -1;
	}
	return 0;
}

static int add_edges(const struct serve_graph *sg, Agraph_t *g,
		     Agnode_t **nodes)
{
	char a[32], b[32], label[96], width[16], id[32];
	double share, total = 0;
	Agedge_t *e;
	size_t i;

	for (i = 0; i < sg->ne; i++)
		total += (double)(sg->edges[i].bytes_c2s +
				  sg->edges[i].bytes_s2c);
	for (i = 0; i < sg->ne; i++) {
		const struct serve_edge *x = &sg->edges[i];

		snprintf(id, sizeof(id), "e%zu", i);
		e = agedge(g, nodes[x->from], nodes[x->to], id, 1);
		if (!e)
			return cw_error("graphviz: unable to add an edge");
		share = total > 0 ? (x->bytes_c2s + x->bytes_s2c) / total : 0;
		snprintf(width, sizeof(width), "%.2f", 1 + 9 * sqrt(share));
		snprintf(label, sizeof(label), "%s / %s",
			 cw_fmt_bytes(x->bytes_c2s, a, sizeof(a)),
			 cw_fmt_bytes(x->bytes_s2c, b, sizeof(b)));
		if (set(e, "penwidth", width) || set(e, "label", label) ||
		    set(e, "id", id) || set(e, "tooltip", label) ||
		    set(e, "color", node_color(sg, &sg->nodes[x->from])))
			return -1;
	}
	return 0;
}

/* A line under the picture when edges were left out. */
static int trimmed_label(Agraph_t *g, size_t drawn, size_t total)
{
	char text[512], *old = agget(g, "label");

	snprintf(text, sizeof(text), "%s%sthe %zu largest of %zu edges drawn",
		 old && *old ? old : "", old && *old ? "\n" : "", drawn,
		 total);
	if (!agattr(g, AGRAPH, "label", text) ||
	    !agattr(g, AGRAPH, "labelloc", "b") ||
	    !agattr(g, AGRAPH, "fontsize", "10"))
		return cw_error("graphviz: unable to set the graph's label");
	return 0;
}

int serve_render_dot(const struct serve_graph *sg, size_t max_edges,
		     char **dot, size_t *len)
{
	Agnode_t **nodes = calloc(sg->nn + 1, sizeof(*nodes));
	struct serve_graph part = *sg;
	bool *keep = calloc(sg->nn + 1, sizeof(*keep));
	Agraph_t *g = NULL;
	FILE *fp = NULL;
	size_t i;
	int ret = -1;

	*dot = NULL, *len = 0;
	if (!nodes || !keep) {
		cw_error("out of memory");
		goto out;
	}
	/* The edges are largest first: the top ones and their nodes. */
	if (max_edges && part.ne > max_edges)
		part.ne = max_edges;
	for (i = 0; i < part.ne; i++)
		keep[part.edges[i].from] = keep[part.edges[i].to] = true;
	pthread_mutex_lock(&gv_lock);
	agseterr(AGMAX);
	g = agopen("causeway", Agdirected, NULL);
	if (!g) {
		cw_error("graphviz: unable to create a graph");
		goto unlock;
	}
	if (defaults(g) || add_nodes(&part, keep, g, nodes) ||
	    add_edges(&part, g, nodes) ||
	    (part.ne < sg->ne && trimmed_label(g, part.ne, sg->ne)))
		goto unlock;
	fp = open_memstream(dot, len);
	if (!fp) {
		cw_error("out of memory");
		goto unlock;
	}
	ret = agwrite(g, fp) ? -1 : 0;
	if (fclose(fp) || ret)
		ret = cw_error("graphviz: unable to write the DOT source");
unlock:
	if (g)
		agclose(g);
	pthread_mutex_unlock(&gv_lock);
out:
	if (ret) {
		free(*dot);
		*dot = NULL, *len = 0;
	}
	free(nodes);
	free(keep);
	return ret;
}
