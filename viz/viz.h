/* SPDX-License-Identifier: MIT */
/*
 * Views of the traffic graph for people: Graphviz DOT text (the source for
 * `dot -Tsvg`), edge width from bytes, colours stable per command, processes
 * grouped per host and network namespace.
 */
#ifndef CW_VIZ_H
#define CW_VIZ_H

#include <stdio.h>

#include "graph/graph.h"

struct cw_viz_opts {
	size_t sz;
	/* Drop edges carrying less than this share of all bytes (0..1). */
	double min_share;
};

/* Write g as a DOT digraph; 0, or -1 if the stream failed. */
int cw_viz_write_dot(const struct cw_graph *g, FILE *fp,
		     const struct cw_viz_opts *opts);
/* A colour for a command, the same for the same command in every view. */
const char *cw_viz_color(const char *comm);

#endif
