// SPDX-License-Identifier: MIT
/*
 * A serve_graph as DOT source in the page's style, for the layout worker
 * (serve/layout.c) to lay out.  At most a bounded number of edges are
 * drawn (the largest; the graph's label says how many were left out), so
 * that no view of a fleet asks dot for a layout it cannot finish.  The
 * style is viz/'s (viz/style.c), the page's variant: ids and tooltips for
 * its script.  Edge labels are dot's own `label`s, which dot lays out as
 * objects of their own (virtual nodes of the ranking), so they never sit on a
 * node; hosts are therefore not drawn as clusters (dot 2.42 mishandles
 * labelled edges between nodes of one rank inside clusters): the host is
 * in each node's label instead.
 */
#include <graphviz/cgraph.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"
#include "viz/viz.h"

/* Graphviz keeps global state: one layout at a time. */
static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Its command, for colours: as cw_viz_vertex_command() says of a view. */
static const char *command_of(const struct serve_graph *sg,
			      const struct serve_node *x)
{
	return sg->by == CW_SERVE_BY_HOST || !x->comm[0] ? x->name : x->comm;
}

/* The label: name (without the "@host" the next line shows), host or
 * members, bytes; cleaned and escaped for Graphviz. */
static void node_label(const struct serve_graph *sg, const struct serve_node *x,
		       char *label, size_t len)
{
	char text[2][512], bytes[32];

	cw_fmt_bytes(x->bytes_out + x->bytes_in, bytes, sizeof(bytes));
	cw_viz_text(text[0], sizeof(text[0]), x->label, 200);
	if (sg->by == CW_SERVE_BY_HOST || x->external) {
		snprintf(label, len, "%s\n%s", text[0], bytes);
		return;
	}
	if (x->host[0]) {
		char name[256];

		snprintf(name, sizeof(name), "%.*s", short_len(x), x->label);
		snprintf(label, len, "%s\n%s\n%s",
			 cw_viz_text(text[0], sizeof(text[0]), name, 200),
			 cw_viz_text(text[1], sizeof(text[1]), x->host, 16),
			 bytes);
		return;
	}
	snprintf(label, len, "%s\n%llu processes, several hosts\n%s", text[0],
		 (unsigned long long)x->members, bytes);
}

/* Its name, and its RED summary (serve_red_of) where it has one. */
static const char *node_tip(const struct serve_graph *sg, size_t i, char *tip,
			    size_t len)
{
	char p50[32], p99[32];
	struct serve_red red;
	size_t n;

	cw_viz_text(tip, len, sg->nodes[i].name, 400);
	serve_red_of(sg, i, &red);
	n = strlen(tip);
	if (red.known)
		snprintf(tip + n, len - n,
			 "\nrate %.2f/s, errors %.2f/s (%llu), duration p50 "
			 "%s p99 %s",
			 red.rate, red.error_rate,
			 (unsigned long long)red.errors,
			 cw_fmt_duration(red.p50_ns, p50, sizeof(p50)),
			 cw_fmt_duration(red.p99_ns, p99, sizeof(p99)));
	return tip;
}

static int add_nodes(const struct serve_graph *sg, const bool *keep,
		     Agraph_t *g, Agnode_t **nodes)
{
	char name[32], label[1400], buf[32], tip[512];
	uint64_t max = 1, max_rss;
	double max_cpu;
	size_t i;

	usage_max_of(sg, keep, &max_rss, &max_cpu);
	if (max_rss && cw_viz_legend(g, max_rss, max_cpu))
		return -1;
	for (i = 0; i < sg->nn; i++)
		if (keep[i] &&
		    sg->nodes[i].bytes_out + sg->nodes[i].bytes_in > max)
			max = sg->nodes[i].bytes_out + sg->nodes[i].bytes_in;
	for (i = 0; i < sg->nn; i++) {
		const struct serve_node *x = &sg->nodes[i];

		if (!keep[i])
			continue;
		snprintf(name, sizeof(name), "n%zu", i);
		nodes[i] = agnode(g, name, 1);
		if (!nodes[i])
			return cw_viz_fail("unable to add a node");
		node_label(sg, x, label, sizeof(label));
		snprintf(buf, sizeof(buf), "%.2f",
			 cw_viz_height_of_bytes(x->bytes_out + x->bytes_in,
						max));
		if (cw_viz_set(nodes[i], "height", buf) ||
		    cw_viz_usage_attrs(nodes[i], &x->usage, max_rss, max_cpu,
				       label, sizeof(label)) ||
		    cw_viz_set(nodes[i], "label", label) ||
		    cw_viz_set(nodes[i], "id", name) ||
		    cw_viz_set(nodes[i], "tooltip",
			       node_tip(sg, i, tip, sizeof(tip))) ||
		    cw_viz_set(nodes[i], "color",
			       x->external ? "#555555"
					   : cw_viz_color(command_of(sg, x))) ||
		    (x->external &&
		     cw_viz_set(nodes[i], "style", "rounded,dashed")))
			return -1;
	}
	return 0;
}

/*
 * Edge health on the drawing: an edge whose exchanges were timed is
 * coloured by the client's p99 (the server's where no client end timed
 * them), from green under 1 ms to red at 100 ms and over; an edge whose
 * every connection failed is red and dashed; the label adds the p99 and
 * the failures and resets.
 */
static const struct {
	uint64_t under_ns;
	const char *color;
} latency_colors[] = {
	{1000000, "#2e7d32"},	 /* < 1 ms */
	{10000000, "#9e9d24"},	 /* < 10 ms */
	{100000000, "#ef6c00"},	 /* < 100 ms */
	{UINT64_MAX, "#c62828"}, /* >= 100 ms */
};

#define LATENCY_CAPTION                                                        \
	"edge colour: client p99 (green < 1 ms, olive < 10 ms, orange < "      \
	"100 ms, red above); red dashed: every connection failed"

/* The p99 that colours an edge, ns; 0: none timed. */
static uint64_t edge_p99(const struct cw_edge_health *h)
{
	struct cw_hist x = CW_HIST_INIT;
	uint64_t p = 0;

	if (!cw_rec_hist_get(h->client.len ? &h->client : &h->server, &x))
		p = cw_hist_quantile(&x, 0.99);
	cw_hist_release(&x);
	return p;
}

/* Colour, style and the health line of the label, where there is
 * health; 0 or -1 after a message. */
static int edge_health_attrs(Agedge_t *e, const struct serve_edge *x,
			     char *label, size_t len)
{
	const struct cw_edge_health *h = x->health;
	uint64_t failed, resets, p99;
	size_t n = strlen(label), k = 0;
	char d[32];

	if (!h)
		return 0;
	failed = cw_count_add(h->conns_refused, h->conns_timeout);
	resets = cw_count_add(h->resets_by_client, h->resets_by_server);
	if (x->conns && failed >= x->conns) {
		snprintf(label + n, len - n, "\nfailed: %llu",
			 (unsigned long long)failed);
		return cw_viz_set(e, "color", latency_colors[3].color) ||
		       cw_viz_set(e, "style", "dashed");
	}
	p99 = edge_p99(h);
	if (p99) {
		while (p99 >= latency_colors[k].under_ns)
			k++;
		n += (size_t)snprintf(label + n, len - n, "\np99 %s",
				      cw_fmt_duration(p99, d, sizeof(d)));
	}
	if ((failed || resets) && n < len)
		snprintf(label + n, len - n, "%s%llu failed, %llu reset",
			 p99 ? ", " : "\n", (unsigned long long)failed,
			 (unsigned long long)resets);
	return p99 ? cw_viz_set(e, "color", latency_colors[k].color) : 0;
}

static int add_edges(const struct serve_graph *sg, Agraph_t *g,
		     Agnode_t **nodes)
{
	char a[32], b[32], label[192], width[16], id[32];
	double share, total = 0;
	bool health = false;
	Agedge_t *e;
	size_t i;

	for (i = 0; i < sg->ne; i++) {
		total += (double)(sg->edges[i].bytes_c2s +
				  sg->edges[i].bytes_s2c);
		health |= sg->edges[i].health != NULL;
	}
	if (health && cw_viz_caption(g, LATENCY_CAPTION))
		return -1;
	for (i = 0; i < sg->ne; i++) {
		const struct serve_edge *x = &sg->edges[i];

		snprintf(id, sizeof(id), "e%zu", i);
		e = agedge(g, nodes[x->from], nodes[x->to], id, 1);
		if (!e)
			return cw_viz_fail("unable to add an edge");
		share = total > 0 ? (x->bytes_c2s + x->bytes_s2c) / total : 0;
		snprintf(width, sizeof(width), "%.2f",
			 cw_viz_width_of_share(share));
		snprintf(label, sizeof(label), "%s / %s",
			 cw_fmt_bytes(x->bytes_c2s, a, sizeof(a)),
			 cw_fmt_bytes(x->bytes_s2c, b, sizeof(b)));
		if (cw_viz_set(e, "color",
			       cw_viz_pair_color(
				       command_of(sg, &sg->nodes[x->from]),
				       command_of(sg, &sg->nodes[x->to]))) ||
		    edge_health_attrs(e, x, label, sizeof(label)) ||
		    cw_viz_set(e, "penwidth", width) ||
		    cw_viz_set(e, "label", label) || cw_viz_set(e, "id", id) ||
		    cw_viz_set(e, "tooltip", label))
			return -1;
	}
	return 0;
}

/* A line under the picture when edges were left out. */
static int trimmed_label(Agraph_t *g, size_t drawn, size_t total)
{
	char text[128];

	snprintf(text, sizeof(text), "the %zu largest of %zu edges drawn",
		 drawn, total);
	return cw_viz_caption(g, text);
}

int serve_render_dot(const struct serve_graph *sg, size_t max_edges, char **dot,
		     size_t *len)
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
	cw_viz_errors_begin();
	g = agopen("causeway", Agdirected, NULL);
	if (!g) {
		cw_error("graphviz: unable to create a graph");
		goto unlock;
	}
	if (cw_viz_defaults(g, true) || add_nodes(&part, keep, g, nodes) ||
	    add_edges(&part, g, nodes) ||
	    (part.ne < sg->ne && trimmed_label(g, part.ne, sg->ne)))
		goto unlock;
	fp = open_memstream(dot, len);
	if (!fp) {
		cw_error("out of memory");
		goto unlock;
	}
	ret = cw_dot_write(g, fp);
	if (fclose(fp) && !ret)
		ret = cw_error("out of memory for the DOT source");
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
