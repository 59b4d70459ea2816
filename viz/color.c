// SPDX-License-Identifier: MIT
/* The colours of commands, shared by every drawing. */
#include <math.h>
#include <string.h>

#include "common/htab.h"
#include "common/util.h"
#include "viz/viz.h"

/* Distinguishable on white; picked by hash so a command keeps its colour
 * across runs and views. */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

const char *cw_viz_color(const char *comm)
{
	return palette[cw_hash_bytes(comm, strlen(comm)) %
		       CW_ARRAY_SIZE(palette)];
}

const char *cw_viz_pair_color(const char *from, const char *to)
{
	/* "a>b", so a->b and b->a are told apart. */
	uint64_t h = cw_hash_bytes(from, strlen(from));

	h = (h ^ '>') * 0x100000001b3ULL;
	h ^= cw_hash_bytes(to, strlen(to));
	h *= 0x9e3779b97f4a7c15ULL;
	return palette[(h >> 32) % CW_ARRAY_SIZE(palette)];
}

double cw_viz_height_of_rss(uint64_t rss_bytes, uint64_t max_rss_bytes)
{
	if (!max_rss_bytes)
		return 0.5;
	return 0.5 + 2.0 * sqrt((double)rss_bytes / (double)max_rss_bytes);
}

double cw_viz_width_of_cpu(double cpu_cores, double max_cpu_cores)
{
	if (max_cpu_cores <= 0)
		return 1.0;
	return 1.0 + 7.0 * cpu_cores / max_cpu_cores;
}

const char *cw_viz_vertex_command(const struct cw_view *v, size_t i)
{
	const struct cw_node *n = v->v[i].node;

	if (v->by == CW_BY_HOST || n->kind != CW_NODE_PROCESS)
		return v->v[i].name;
	return n->proc.comm;
}
