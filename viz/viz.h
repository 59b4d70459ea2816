/* SPDX-License-Identifier: MIT */
/*
 * Views of the traffic graph for people, all made with Graphviz's libraries
 * (libcgraph builds the graph and writes DOT, libgvc lays it out): the
 * process graph as DOT source (graph.dot, for `dot -Tsvg`), and drawings
 * of a view, all in the house style (viz/style.c).  Edge width from bytes,
 * colours stable per command.  (The data export `causeway graph --format
 * dot` has every attribute and no style: graph/graph.h; every DOT is
 * written by its cw_dot_write.)
 */
#ifndef CW_VIZ_H
#define CW_VIZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"

struct cw_viz_opts {
	size_t sz;
	/* Drop edges carrying less than this share of all bytes (0..1). */
	double min_share;
};

/*
 * Write g as a DOT digraph: processes grouped per host and network
 * namespace, external peers dashed, edges under opts->min_share of all
 * bytes left out.  0, or -1 after a message.
 */
int cw_viz_write_dot(const struct cw_graph *g, FILE *fp,
		     const struct cw_viz_opts *opts);
/* A colour for a command, the same for the same command in every view. */
const char *cw_viz_color(const char *comm);
/* A colour for traffic from command `from` to command `to`, the same for
 * the same pair in every view (and usually another for `to` -> `from`). */
const char *cw_viz_pair_color(const char *from, const char *to);
/*
 * The SAC'20 encoding of a vertex's resources (graph/graph.h usage), for
 * every drawing: node height in inches from its mean resident memory, 0.5
 * to 2.5 by the square root of its share of the largest (area follows
 * memory); node line width in points from its mean CPU rate, 1 to 8
 * linear in its share of the busiest.  max_* are the largest in the
 * drawing (0: none has any).
 */
double cw_viz_height_of_rss(uint64_t rss_bytes, uint64_t max_rss_bytes);
double cw_viz_width_of_cpu(double cpu_cores, double max_cpu_cores);
/* The vertex's command, for colours: comm of its first member process,
 * else its name. */
const char *cw_viz_vertex_command(const struct cw_view *v, size_t i);

/*
 * Rendering through Graphviz's libraries (viz/render.c): a view of the
 * graph laid out by `dot` and written as SVG or PNG, or as DOT source (no
 * layout).  Edge width from bytes; edges under min_share of all bytes are
 * dropped, and the vertices left with no edge; vertices coloured by command
 * (cw_viz_color) and grouped per host when all their members are on one;
 * edges coloured by command pair (cw_viz_pair_color).  When the graph has
 * the agents' resources, node height is from memory and node line width
 * from CPU (cw_viz_height_of_rss, cw_viz_width_of_cpu) and a legend says
 * the scales (the SAC'20 picture); else node height is from the bytes a
 * vertex sent and received.
 */
struct cw_render_opts {
	size_t sz;
	double min_share;   /* 0..1 */
	const char *format; /* "svg" (default), "png" or "dot" */
	const char *layout; /* Graphviz engine, default "dot" */
};

/*
 * Render v to path, written to a temporary file renamed into place and
 * removed on failure.  0, or -1 after a message.  *drawn (may be NULL)
 * gets the number of edges drawn.
 */
int cw_render_view(const struct cw_view *v, const char *path,
		   const struct cw_render_opts *opts, size_t *drawn);

/*
 * The house style (viz/style.c), for every drawing made with cgraph:
 * `causeway render`'s and serve's page's.  Agraph_t is cgraph's
 * (<graphviz/cgraph.h>); a node, edge or graph is passed as void *.
 */
typedef struct Agraph_s Agraph_t;

/* Collect Graphviz's messages from now on, for cw_viz_fail(). */
void cw_viz_errors_begin(void);
/* "graphviz: WHAT: its last message"; returns -1. */
int cw_viz_fail(const char *what);
/* Set an attribute declared by cw_viz_defaults (or declare it); 0 or -1
 * after a message. */
int cw_viz_set(void *obj, const char *name, const char *val);
/* Declare the defaults of a drawing (page: the page's, with ids and
 * tooltips); 0 or -1 after a message. */
int cw_viz_defaults(Agraph_t *g, bool page);
/*
 * Text for a label: at most max bytes of s in whole characters, cleaned
 * (common/utf8.h), with the two characters Graphviz reads inside a label
 * spelled out: '\' starts an escape (\N, \n) and '&' an entity, which
 * Graphviz turns into bytes before it writes SVG (so "&#27;" in a name
 * would put an ESC into the XML).  Returns out.
 */
const char *cw_viz_text(char *out, size_t size, const char *s, size_t max);
/* Node height in inches from its bytes (0.5 to 2, by square root), edge
 * width in points from its share of all bytes (1 to 10). */
double cw_viz_height_of_bytes(uint64_t bytes, uint64_t max_bytes);
double cw_viz_width_of_share(double share);
/* A node's resources (u->known): height, line width and a line of label
 * (appended to label[len]).  0 or -1 after a message. */
int cw_viz_usage_attrs(void *node, const struct cw_usage_stats *u,
		       uint64_t max_rss, double max_cpu, char *label,
		       size_t len);
/* The scales under the picture, when it shows resources. */
int cw_viz_legend(Agraph_t *g, uint64_t max_rss, double max_cpu);
/* A line under the picture (the legend's place), after those already
 * there; 0 or -1 after a message. */
int cw_viz_caption(Agraph_t *g, const char *text);

/*
 * A layout that can be stopped (viz/layout.c): DOT source laid out by dot
 * and rendered as SVG in a child process, which is killed when it runs
 * past timeout_ms, writes more than max_svg_bytes, or cancelled(arg)
 * (asked every 100 ms) says nobody wants it any more; mem_bytes bounds
 * what the layout may allocate (RLIMIT_DATA above the copy of the caller).
 * 0 each means no bound.  The caller's threads are left alone: only the
 * calling thread waits.
 */
enum cw_viz_layout_status {
	CW_VIZ_LAYOUT_OK,
	CW_VIZ_LAYOUT_FAILED,	 /* Graphviz refused it, or no process */
	CW_VIZ_LAYOUT_TIMEOUT,	 /* stopped at its time bound */
	CW_VIZ_LAYOUT_CANCELLED, /* stopped: cancelled() said so */
	CW_VIZ_LAYOUT_TOO_LARGE, /* stopped at max_svg_bytes */
};

struct cw_viz_layout_opts {
	unsigned timeout_ms;
	size_t mem_bytes;
	size_t max_svg_bytes;
	bool (*cancelled)(void *arg);
	void *arg;
};

/*
 * Lay out dot (a NUL-terminated DOT graph): the SVG malloc'd into *svg
 * (NUL-terminated, *svglen bytes) and CW_VIZ_LAYOUT_OK, or another status
 * with the reason in err (no message).
 */
int cw_viz_layout_svg(const char *dot, const struct cw_viz_layout_opts *o,
		      char **svg, size_t *svglen, char *err, size_t errlen);

#endif
