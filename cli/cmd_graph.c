// SPDX-License-Identifier: MIT
/*
 * causeway graph: the traffic graph of agent records, by process, command
 * line, container or host, per time window and in total; top edges,
 * neighbours of a node, the traffic matrix; JSON, GraphML, DOT or CSV.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

enum graph_format { FMT_TABLE, FMT_JSON, FMT_GRAPHML, FMT_DOT, FMT_CSV };

static const char *const format_names[] = {"table", "json", "graphml",
					   "dot",   "csv",  NULL};

struct graph_args {
	enum cw_group_by by;
	uint64_t window_ns;
	uint64_t top;
	const char *neighbours;
	bool matrix;
	int format; /* -1: from the file name, else table */
	const char *out;
	bool skip_bad;
	bool bench;
	/* --kafka: the fleet graph from the correlators' edge buckets */
	struct cw_kafka_conf kc;
	const char *since, *until;
	uint64_t since_ns, until_ns;
};

static const char help[] =
	"usage: causeway graph [--by process|cmdline|container|host|pod|workload]\n"
	"                      [--window D] [--top N] [--neighbours NODE]\n"
	"                      [--matrix] [--format table|json|graphml|dot|csv]\n"
	"                      [--skip-bad] [--bench] [-o FILE] INPUT...\n"
	"       causeway graph --kafka BROKERS [--group G] [--since D|T]\n"
	"                      [--until T] [--kafka-config F] [--topic-prefix P]\n"
	"                      [options as above]\n"
	"\n"
	"Pair the connection ends in agent records into the traffic graph and\n"
	"answer who talks to whom.  INPUT is JSON lines ('causeway agent',\n"
	"conns.jsonl of 'causeway run -o') or a wire stream file (protobuf\n"
	"envelopes as on Kafka: a spool segment, 'causeway simulate --format\n"
	"wire'), told apart by the file's first bytes.  Process and host\n"
	"metadata lines in the inputs give each node its CPU and memory.\n"
	"\n"
	"  -b, --by G           group processes: process (default), cmdline,\n"
	"                       container, host, pod or workload (processes\n"
	"                       outside containers: per host)\n"
	"  -w, --window D       per-window traffic in JSON (default 1m; 0: off)\n"
	"  -t, --top N          only the N edges carrying most bytes\n"
	"  -n, --neighbours V   only the edges of node V (its name or label,\n"
	"                       e.g. 'nginx[1234]' or a host id)\n"
	"  -m, --matrix         the traffic matrix as CSV: bytes sent from row\n"
	"                       to column, the diagonal inside a group\n"
	"                       (default --by host)\n"
	"  -f, --format F       table (default on stdout), json, graphml, dot,\n"
	"                       csv; with -o, taken from the file's extension\n"
	"  -o, --out FILE       write FILE (whole or not at all)\n"
	"      --skip-bad       count and skip malformed lines (wire: records)\n"
	"                       instead of failing\n"
	"      --bench          time each stage on stderr: ingest (read, decode,\n"
	"                       cw_pairing_add), pairing + graph build, view\n"
	"\n"
	"With --kafka, the graph is the fleet's: every correlator member's time\n"
	"buckets in P.edges (causeway correlate), merged, summed over the\n"
	"buckets that start from --since (a duration back from now, @SECONDS\n"
	"or 'YYYY-MM-DD HH:MM[:SS]' UTC; default: all the topic keeps) up to\n"
	"--until (the same forms; default: now); no per-window traffic.\n"
	"  -k, --kafka B        bootstrap brokers (host:port,...)\n"
	"      --kafka-config F librdkafka properties, key=value lines\n"
	"      --topic-prefix P read P.edges (default causeway)\n"
	"  -g, --group G        the correlators' group (default causeway-correlator)\n"
	"      --since D|T      buckets starting at or after\n"
	"      --until T        buckets starting before\n"
	"\n"
	"'-' reads standard input.  Exit status: 0 done, 1 bad input or a\n"
	"failure, 2 bad usage.\n"
	"\n"
	"Examples:\n"
	"  causeway graph out/conns.jsonl\n"
	"  causeway graph --by host --matrix -o matrix.csv a.jsonl b.jsonl\n"
	"  causeway graph --by container --top 20 --format json conns.jsonl\n"
	"  causeway graph --neighbours 'nginx[1234]' conns.jsonl\n"
	"  causeway graph --by cmdline -o graph.graphml conns.jsonl\n"
	"  causeway graph --bench --window 0 --top 1 fleet.cww\n"
	"  causeway graph --kafka kafka1:9092 --since 1h\n"
	"  causeway graph --kafka kafka1:9092 --since '2026-11-23 14:00' \\\n"
	"      --until '2026-11-23 15:00' --format json\n";

static int parse_format(const char *s)
{
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(format_names); i++)
		if (!strcmp(s, format_names[i]))
			return (int)i;
	return -1;
}

static int format_of_path(const char *path)
{
	const char *dot = strrchr(path, '.');
	int f = dot ? parse_format(dot + 1) : -1;

	return f > 0 ? f : FMT_JSON;
}

static void print_table(const struct cw_view *v, const size_t *edges, size_t n,
			FILE *fp)
{
	char b1[32], b2[32];
	size_t k;

	fprintf(fp, "%-36s %-36s %6s %12s %12s %9s %9s\n", "CLIENT", "SERVER",
		"CONNS", "BYTES C->S", "BYTES S->C", "MSGS C->S", "MSGS S->C");
	for (k = 0; k < n; k++) {
		const struct cw_view_edge *e = &v->e[edges[k]];

		fprintf(fp, "%-36.36s %-36.36s %6llu %12s %12s %9llu %9llu\n",
			v->v[e->from].label, v->v[e->to].label,
			(unsigned long long)e->conns,
			cw_fmt_bytes(e->bytes_c2s, b1, sizeof(b1)),
			cw_fmt_bytes(e->bytes_s2c, b2, sizeof(b2)),
			(unsigned long long)e->msgs_c2s,
			(unsigned long long)e->msgs_s2c);
	}
}

static int write_view(const struct graph_args *a, const struct cw_view *v,
		      const struct cw_pairing_stats *ps,
		      const struct cw_record_read_stats *rs,
		      const size_t *edges, size_t n, FILE *fp)
{
	struct cw_jsonw w;

	if (a->matrix)
		return cw_view_write_matrix(v, fp);
	switch (a->format) {
	case FMT_TABLE:
		print_table(v, edges, n, fp);
		return ferror(fp) ? cw_error("unable to write the table") : 0;
	case FMT_GRAPHML:
		return cw_view_write_graphml(v, fp, edges, n);
	case FMT_DOT:
		return cw_view_write_dot(v, fp, edges, n);
	case FMT_CSV:
		return cw_view_write_csv(v, fp, edges, n);
	default:
		break;
	}
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_view_json(v, &w, edges, n);
	cw_jsonw_obj_open(&w, "stats");
	cw_jsonw_u64(&w, "files", rs->files);
	cw_jsonw_u64(&w, "records", rs->records);
	cw_jsonw_u64(&w, "bad_lines", rs->bad);
	cw_jsonw_u64(&w, "stale", ps->stale);
	cw_jsonw_u64(&w, "ends", ps->ends);
	cw_jsonw_u64(&w, "paired", ps->paired);
	cw_jsonw_u64(&w, "unpaired", ps->unpaired);
	cw_jsonw_u64(&w, "ambiguous", ps->ambiguous);
	cw_jsonw_obj_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	return ferror(fp) ? cw_error("unable to write the JSON") : 0;
}

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct graph_args *a)
{
	const struct cli_opt t[] = {
		CLI_CALL("by", 'b', &a->by, cli_group_by),
		{.name = "window", .key = 'w', .kind = CLI_KDUR,
		 .to = &a->window_ns, .min = NSEC_PER_MSEC,
		 .max = 7 * 24 * 3600 * NSEC_PER_SEC, .flags = CLI_ZERO_OFF},
		CLI_U64("top", 't', &a->top, 1, 100000000),
		CLI_STR("neighbours", 'n', &a->neighbours),
		CLI_STR("neighbors", 0, &a->neighbours),
		CLI_FLAG("matrix", 'm', &a->matrix),
		CLI_ENUM("format", 'f', &a->format, format_names),
		CLI_STR("out", 'o', &a->out),
		CLI_FLAG("skip-bad", 0, &a->skip_bad),
		CLI_FLAG("bench", 0, &a->bench),
		CLI_KAFKA(&a->kc),
		CLI_STR("group", 'g', &a->kc.group),
		CLI_STR("since", 0, &a->since),
		CLI_STR("until", 0, &a->until),
		{0}};
	int rc;

	memset(a, 0, sizeof(*a));
	a->window_ns = 60 * NSEC_PER_SEC;
	a->by = CLI_BY_UNSET;
	a->format = -1;
	rc = cli_parse("graph", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (a->kc.brokers && optind < argc)
		return cw_error("--kafka reads the edge buckets: no INPUT "
				"files"),
		       2;
	if (!a->kc.brokers && (a->since || a->until || a->kc.group))
		return cw_error("--since, --until and --group go with "
				"--kafka"),
		       2;
	if (cw_time_range(a->since, a->until, &a->since_ns, &a->until_ns))
		return 2;
	if (!a->kc.brokers && optind >= argc)
		return cw_error("no input (see 'causeway graph --help')"), 2;
	if (a->by == CLI_BY_UNSET)
		a->by = a->matrix ? CW_BY_HOST : CW_BY_PROCESS;
	if (a->matrix && (a->neighbours || a->top))
		return cw_error("--matrix shows every group: it takes no --top "
				"or --neighbours"),
		       2;
	if (a->format < 0)
		a->format = a->out ? format_of_path(a->out) : FMT_TABLE;
	return -1;
}

/* --bench: each stage's time on stderr. */
static void print_bench(const struct graph_args *a,
			const struct cw_pipeline *pl)
{
	fprintf(stderr,
		"bench: records %llu read %.3fs (%.0f records/s) "
		"ends %llu nodes %zu edges %zu pair+build %.3fs "
		"project(%s) %.3fs build+project %.3fs vertices %zu "
		"edges %zu\n",
		(unsigned long long)pl->read.records, pl->t_read,
		pl->t_read > 0 ? (double)pl->read.records / pl->t_read : 0,
		(unsigned long long)pl->pairs.ends, pl->graph.nnodes,
		pl->graph.nedges, pl->t_pair, cw_group_by_name(a->by),
		pl->t_view, pl->t_pair + pl->t_view, pl->view.nv, pl->view.ne);
}

/* The edges asked for: --neighbours, --top.  0 or -1. */
static int select_edges(const struct graph_args *a, const struct cw_view *v,
			size_t **edges, size_t *n)
{
	long vid = -1;

	if (a->neighbours) {
		vid = cw_view_find(v, a->neighbours);
		if (vid < 0)
			return cw_error("--neighbours '%s': %s in the %s graph",
					a->neighbours,
					vid == -2 ? "several nodes match; give "
						    "the full name"
						  : "no such node",
					cw_group_by_name(a->by));
	}
	return cw_view_edges(v, vid, a->top, edges, n);
}

/* --kafka: the fleet's merged buckets of [--since, --until). */
static int read_kafka(const struct graph_args *a, struct cw_pipeline *pl)
{
	return cw_pipeline_read_kafka(
		pl, &a->kc, a->kc.group ? a->kc.group : CW_KAFKA_GROUP,
		a->since_ns, a->until_ns);
}

int cmd_graph(int argc, char **argv)
{
	struct cw_outfile of = {0};
	struct cw_pipeline pl;
	struct graph_args a;
	size_t *edges = NULL, n = 0;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = 1;
	cw_pipeline_init(&pl, a.window_ns);
	if (a.out && cw_outfile_open(&of, a.out))
		goto out;
	/*
	 * Big arrays come and go (tables that grow, sort buffers, the view,
	 * the igraph): keep freed memory for the next instead of giving it
	 * back, so that it is not mapped and zeroed again.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if ((a.kc.brokers ? read_kafka(&a, &pl)
			  : cw_pipeline_read_files(&pl, argv + optind,
						   (size_t)(argc - optind),
						   a.skip_bad)) ||
	    cw_pipeline_finish(&pl, a.by) ||
	    select_edges(&a, &pl.view, &edges, &n))
		goto out;
	if (a.bench)
		print_bench(&a, &pl);
	if (write_view(&a, &pl.view, &pl.pairs, &pl.read, edges, n,
		       a.out ? of.fp : stdout))
		goto out;
	if (a.out) {
		if (cw_outfile_commit(&of))
			goto out;
	} else if (fflush(stdout)) {
		cw_error("unable to write to standard output");
		goto out;
	}
	ret = 0;
out:
	if (of.fp)
		cw_outfile_abort(&of);
	free(edges);
	cw_pipeline_release(&pl);
	return ret;
}
