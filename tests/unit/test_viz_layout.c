// SPDX-License-Identifier: MIT
/*
 * viz/layout.c: a layout in a child process that is stopped at its
 * bounds.  A small graph is laid out; a bad source fails with Graphviz's
 * reason; a large one is stopped at its time bound, at the caller's
 * word and at its size bound; the child is reaped every time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/util.h"
#include "tests/unit/check.h"
#include "viz/viz.h"

/* A chain with labelled cross edges: slow for dot at n in the thousands. */
static char *big_dot(size_t n)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *fp = open_memstream(&buf, &len);

	if (!fp)
		return NULL;
	fputs("digraph g { rankdir=LR;\n", fp);
	for (i = 0; i < n; i++)
		fprintf(fp, "n%zu -> n%zu [label=\"%zu KiB / %zu KiB\"];\n",
			i % 97, (i * 31 + 7) % 101 + 100, i, i * 3);
	fputs("}\n", fp);
	fclose(fp);
	return buf;
}

static int asked;

static bool after_three(void *arg)
{
	return ++asked > 3;
}

/* No child of ours is left, running or a zombie. */
static bool no_child(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

int main(void)
{
	struct cw_viz_layout_opts o = {.timeout_ms = 20000};
	char err[256], *svg, *big = big_dot(3000);
	uint64_t t0;
	size_t len;

	CHECK(cw_viz_layout_svg("digraph { a -> b [label=\"x\"]; }", &o, &svg,
				&len, err, sizeof(err)) == CW_VIZ_LAYOUT_OK);
	CHECK(svg && len == strlen(svg) && strstr(svg, "<svg"));
	CHECK(svg && strstr(svg, "<title>a&#45;&gt;b</title>"));
	free(svg);
	CHECK(no_child());

	CHECK(cw_viz_layout_svg("digraph { a -> ; }", &o, &svg, &len, err,
				sizeof(err)) == CW_VIZ_LAYOUT_FAILED);
	CHECK(!svg && strstr(err, "graphviz: unable to read"));
	CHECK(no_child());

	CHECK(big);
	o.timeout_ms = 300;
	t0 = cw_now_mono_ns();
	CHECK(cw_viz_layout_svg(big, &o, &svg, &len, err, sizeof(err)) ==
	      CW_VIZ_LAYOUT_TIMEOUT);
	CHECK(!svg && strstr(err, "time bound"));
	CHECK(cw_now_mono_ns() - t0 < 10 * NSEC_PER_SEC);
	CHECK(no_child());

	o.timeout_ms = 0;
	o.cancelled = after_three;
	CHECK(cw_viz_layout_svg(big, &o, &svg, &len, err, sizeof(err)) ==
	      CW_VIZ_LAYOUT_CANCELLED);
	CHECK(!svg && asked == 4 && strstr(err, "nobody waits"));
	CHECK(no_child());

	o.cancelled = NULL;
	o.max_svg_bytes = 100;
	CHECK(cw_viz_layout_svg("digraph { a -> b -> c -> d; }", &o, &svg,
				&len, err, sizeof(err)) ==
	      CW_VIZ_LAYOUT_TOO_LARGE);
	CHECK(!svg && strstr(err, "size bound"));
	CHECK(no_child());
	free(big);
	return failures ? 1 : 0;
}
