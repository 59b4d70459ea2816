// SPDX-License-Identifier: MIT
/*
 * causeway render: draw the traffic graph of agent records with Graphviz
 * (libcgraph + libgvc): SVG, PNG, or DOT source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"
#include "viz/viz.h"

static const char help[] =
	"usage: causeway render [--by process|cmdline|container|host|pod|workload]\n"
	"                       [--format svg|png|dot] [--min-share F]\n"
	"                       [--skip-bad] -o FILE INPUT...\n"
	"       causeway render --kafka BROKERS [--group G] [--since D|T]\n"
	"                       [--until T] [options as above] -o FILE\n"
	"\n"
	"Pair the connection ends in agent records (JSON lines or a wire\n"
	"stream file, as for 'causeway graph') and draw the traffic\n"
	"graph with Graphviz: edge width from bytes, colours stable per\n"
	"command, processes grouped per host, node height from bytes.\n"
	"\n"
	"  -b, --by G          group processes: process (default), cmdline,\n"
	"                      container, host, pod or workload\n"
	"  -f, --format F      svg, png or dot (DOT source, no layout);\n"
	"                      default from the extension of FILE, else svg\n"
	"  -s, --min-share F   drop edges carrying under F (0..1) of all bytes\n"
	"                      (default: the 40 heaviest edges, and any tied\n"
	"                      with the last; all of a smaller graph)\n"
	"  -o, --out FILE      the picture (required; whole or not at all)\n"
	"      --skip-bad      count and skip malformed lines instead of failing\n"
	"  -k, --kafka B       instead of INPUT: the fleet graph, every correlator\n"
	"                      member's buckets in P.edges, merged (see\n"
	"                      causeway-graph(1): --kafka-config, --topic-prefix,\n"
	"                      -g/--group, --since D|T, --until T)\n"
	"\n"
	"Exit status: 0 done, 1 bad input or a failure, 2 bad usage.\n"
	"\n"
	"Examples:\n"
	"  causeway render -o graph.svg out/conns.jsonl\n"
	"  causeway render --by host --min-share 0.01 -o hosts.png fleet.jsonl\n"
	"  causeway render --by cmdline --format dot -o tiers.dot fleet.jsonl\n"
	"  causeway render --kafka kafka1:9092 --since 1h -o fleet.svg\n";

static const char *format_of(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot && (!strcmp(dot, ".png") || !strcmp(dot, ".dot")))
		return dot + 1;
	return "svg";
}

/* Without --min-share, the HEAVIEST_EDGES heaviest edges are drawn:
 * all of a small graph, however uneven, and a fleet of many even edges
 * rather than an empty picture. */
#define HEAVIEST_EDGES 40

struct render_args {
	struct cw_render_opts ro;
	enum cw_group_by by;
	const char *out;
	bool skip_bad, share_given;
	/* --kafka: the fleet graph from the correlators' edge buckets */
	struct cw_kafka_conf kc;
	const char *since, *until;
	uint64_t since_ns, until_ns;
};

/* Inputs: files, or --kafka; -1 (go on), or 2 (bad usage, told). */
static int check_inputs(int argc, struct render_args *a)
{
	if (a->kc.brokers && optind < argc) {
		cw_error("--kafka reads the edge buckets: no INPUT files");
		return 2;
	}
	if (!a->kc.brokers && (a->since || a->until || a->kc.group)) {
		cw_error("--since, --until and --group go with --kafka");
		return 2;
	}
	if (cw_time_range(a->since, a->until, &a->since_ns, &a->until_ns))
		return 2;
	if (!a->kc.brokers && optind >= argc) {
		cw_error("no input (see 'causeway render --help')");
		return 2;
	}
	return -1;
}

static const char *const formats[] = {"svg", "png", "dot", NULL};

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct render_args *a)
{
	int format = -1;
	const struct cw_opt t[] = {
		CW_OPT_CALL("by", 'b', &a->by, cli_group_by),
		CW_OPT_ENUM("format", 'f', &format, formats),
		CW_OPT_REAL("min-share", 's', &a->ro.min_share, 0, 1),
		CW_OPT_STR("out", 'o', &a->out),
		CW_OPT_FLAG("skip-bad", 0, &a->skip_bad),
		CLI_KAFKA(&a->kc),
		CW_OPT_STR("group", 'g', &a->kc.group),
		CW_OPT_STR("since", 0, &a->since),
		CW_OPT_STR("until", 0, &a->until),
		{0}};
	int rc = cw_opts_parse("render", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	if (!a->out)
		return cw_error("-o FILE is required (see 'causeway render "
				"--help')"),
		       2;
	if (check_inputs(argc, a) >= 0)
		return 2;
	a->share_given = a->ro.min_share >= 0;
	if (!a->share_given)
		a->ro.min_share = 0;
	a->ro.format = format >= 0 ? formats[format] : format_of(a->out);
	return -1;
}

static int by_bytes_down(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Without --min-share: the share of the HEAVIEST_EDGES-th heaviest edge,
 * so that those edges (and any tied with the last) are drawn; all of
 * them in a graph with no more edges than that.  Edges that carried no
 * byte (connects that failed, silent connections) are not among the
 * heaviest of a larger graph: the share is then the lightest edge's that
 * carried any.
 */
static double share_to_draw(const struct cw_view *v)
{
	uint64_t *bytes;
	double total = 0, share = 0;
	size_t i, last = HEAVIEST_EDGES - 1, drawn;

	if (v->ne <= HEAVIEST_EDGES)
		return 0;
	bytes = malloc(v->ne * sizeof(*bytes));
	if (!bytes)
		return 0;
	for (i = 0; i < v->ne; i++) {
		bytes[i] = cw_view_edge_bytes(v, i);
		total += (double)bytes[i];
	}
	qsort(bytes, v->ne, sizeof(*bytes), by_bytes_down);
	while (last > 0 && !bytes[last])
		last--;
	if (total > 0 && bytes[last]) {
		share = bytes[last] / total;
		for (drawn = last + 1; drawn < v->ne; drawn++)
			if (bytes[drawn] != bytes[last])
				break;
		cw_info("drawing the %zu heaviest of %zu edges (--min-share to "
			"choose)",
			drawn, v->ne);
	}
	free(bytes);
	return share;
}

/* --kafka: the fleet's merged buckets of [--since, --until). */
static int read_kafka(const struct render_args *a, struct cw_pipeline *pl)
{
	return cw_pipeline_read_kafka(
		pl, &a->kc, a->kc.group ? a->kc.group : CW_KAFKA_GROUP,
		a->since_ns, a->until_ns);
}

int cmd_render(int argc, char **argv)
{
	struct render_args a = {
		.ro = {.sz = sizeof(a.ro), .min_share = -1},
		.by = CW_BY_PROCESS,
	};
	struct cw_pipeline pl;
	size_t drawn;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = 1;
	cw_pipeline_init(&pl, 0);
	if ((a.kc.brokers ? read_kafka(&a, &pl)
			  : cw_pipeline_read_files(&pl, argv + optind,
						   (size_t)(argc - optind),
						   a.skip_bad)) ||
	    cw_pipeline_finish(&pl, a.by))
		goto out;
	if (!a.share_given)
		a.ro.min_share = share_to_draw(&pl.view);
	if (cw_render_view(&pl.view, a.out, &a.ro, &drawn))
		goto out;
	if (!drawn && pl.view.ne)
		cw_warn("no edge carries %g of all bytes: '%s' is empty (try a "
			"lower --min-share)",
			a.ro.min_share, a.out);
	cw_debug("rendered %zu of %zu edges to '%s'", drawn, pl.view.ne, a.out);
	ret = 0;
out:
	cw_pipeline_release(&pl);
	return ret;
}
