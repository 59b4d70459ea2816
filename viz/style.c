// SPDX-License-Identifier: MIT
/*
 * The house style of every drawing, in one place: Graphviz's defaults,
 * label text, node and edge sizes, the resources' legend.  `causeway
 * render` (viz/render.c) and serve's page (serve/render.c) draw with it;
 * the page adds only what its script needs (ids, tooltips) and its own
 * background.
 */
#include <graphviz/cgraph.h>
#include <math.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"
#include "viz/viz.h"

/* Graphviz reports through agerr(); keep its last message for ours. */
static char gv_msg[256];

static int gv_error(char *msg)
{
	size_t n;

	snprintf(gv_msg, sizeof(gv_msg), "%s", msg);
	n = strlen(gv_msg);
	while (n && (gv_msg[n - 1] == '\n' || gv_msg[n - 1] == ' '))
		gv_msg[--n] = '\0';
	return 0;
}

void cw_viz_errors_begin(void)
{
	gv_msg[0] = '\0';
	agseterrf(gv_error);
	agseterr(AGERR);
}

int cw_viz_fail(const char *what)
{
	return cw_error("graphviz: %s%s%s", what, gv_msg[0] ? ": " : "",
			gv_msg);
}

int cw_viz_set(void *obj, const char *name, const char *val)
{
	if (agsafeset(obj, (char *)name, (char *)val, ""))
		return cw_viz_fail("unable to set an attribute");
	return 0;
}

/*
 * The defaults, in the order `causeway render` has always declared them
 * (its DOT source stays the same), each for the drawing and the page
 * (NULL: not declared there).
 */
static const struct {
	int kind;
	const char *name, *render, *page;
} house[] = {
	{AGRAPH, "rankdir", "LR", "LR"},
	{AGRAPH, "fontname", "Helvetica", "Helvetica"},
	{AGNODE, "shape", "box", "box"},
	{AGNODE, "style", "rounded", "rounded,filled"},
	{AGNODE, "fontname", "Helvetica", "Helvetica"},
	{AGNODE, "fontsize", "10", "10"},
	{AGEDGE, "fontname", "Helvetica", "Helvetica"},
	{AGEDGE, "fontsize", "8", "8"},
	{AGNODE, "label", "\\N", "\\N"},
	{AGNODE, "height", "0.5", "0.5"},
	{AGNODE, "color", "black", "black"},
	{AGNODE, "penwidth", "1", "1.5"},
	{AGEDGE, "penwidth", "1", "1"},
	{AGEDGE, "color", "black", "black"},
	{AGEDGE, "xlabel", "", NULL},
	/* The page: on its own background, filled so edges pass behind,
	 * with the ids and tooltips its script reads. */
	{AGRAPH, "bgcolor", NULL, "transparent"},
	{AGRAPH, "nodesep", NULL, "0.3"},
	{AGNODE, "fillcolor", NULL, "white"},
	{AGNODE, "id", NULL, ""},
	{AGNODE, "tooltip", NULL, ""},
	{AGEDGE, "label", NULL, ""},
	{AGEDGE, "id", NULL, ""},
	{AGEDGE, "tooltip", NULL, ""},
	{AGEDGE, "fontcolor", NULL, "#444444"},
};

int cw_viz_defaults(Agraph_t *g, bool page)
{
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(house); i++) {
		const char *val = page ? house[i].page : house[i].render;

		if (val && !agattr(g, house[i].kind, (char *)house[i].name,
				   (char *)val))
			return cw_viz_fail("unable to set a default attribute");
	}
	return 0;
}

const char *cw_viz_text(char *out, size_t size, const char *s, size_t max)
{
	char clean[512];
	size_t i, o = 0, ch, n;

	if (!size)
		return out;
	n = cw_utf8_clean(clean,
			  max + 1 < sizeof(clean) ? max + 1 : sizeof(clean), s,
			  strlen(s));
	for (i = 0; i < n; i += ch) {
		const char *put = clean + i;
		size_t len;

		ch = cw_utf8_next(clean + i, n - i);
		if (!ch) /* clean text always has one: defensive */
			break;
		len = ch;
		if (clean[i] == '\\')
			put = "\\\\", len = 2;
		else if (clean[i] == '&')
			put = "&amp;", len = 5;
		if (len >= size - o)
			break;
		memcpy(out + o, put, len);
		o += len;
	}
	out[o] = 0;
	return out;
}

double cw_viz_height_of_bytes(uint64_t bytes, uint64_t max_bytes)
{
	return 0.5 + 1.5 * sqrt((double)bytes /
				(double)(max_bytes ? max_bytes : 1));
}

double cw_viz_width_of_share(double share)
{
	return 1 + 9 * sqrt(share);
}

int cw_viz_usage_attrs(void *node, const struct cw_usage_stats *u,
		       uint64_t max_rss, double max_cpu, char *label,
		       size_t len)
{
	char buf[32], rss[32];
	size_t n = strlen(label);

	if (!u->known)
		return 0;
	snprintf(label + n, len - n, "\nCPU %.2f cores, RAM %s", u->cpu_cores,
		 cw_fmt_bytes(u->rss_bytes, rss, sizeof(rss)));
	snprintf(buf, sizeof(buf), "%.2f",
		 cw_viz_height_of_rss(u->rss_bytes, max_rss));
	if (cw_viz_set(node, "height", buf))
		return -1;
	snprintf(buf, sizeof(buf), "%.2f",
		 cw_viz_width_of_cpu(u->cpu_cores, max_cpu));
	return cw_viz_set(node, "penwidth", buf);
}

int cw_viz_legend(Agraph_t *g, uint64_t max_rss, double max_cpu)
{
	char text[256], rss[32];

	snprintf(text, sizeof(text),
		 "node height: memory (2.5 in = %s, by square root); node "
		 "line: CPU (8 pt = %.2f cores); edge width: bytes; edge "
		 "colour: command pair",
		 cw_fmt_bytes(max_rss, rss, sizeof(rss)), max_cpu);
	return cw_viz_caption(g, text);
}

int cw_viz_caption(Agraph_t *g, const char *text)
{
	char all[1024], *old = agget(g, "label");

	if (old && *old) {
		snprintf(all, sizeof(all), "%s\n%s", old, text);
		text = all;
	}
	if (!agattr(g, AGRAPH, "label", (char *)text) ||
	    !agattr(g, AGRAPH, "labelloc", "b") ||
	    !agattr(g, AGRAPH, "fontsize", "10"))
		return cw_viz_fail("unable to set the graph's label");
	return 0;
}
