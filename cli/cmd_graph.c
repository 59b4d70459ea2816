// SPDX-License-Identifier: MIT
/*
 * causeway graph: the traffic graph of agent records, by process, command
 * line, container or host, per time window and in total; top edges,
 * neighbours of a node, the traffic matrix; JSON, GraphML, DOT or CSV.
 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "correlator/query.h"

static const char *const format_names[] = {"table", "json", "graphml",
					   "dot",   "csv",  NULL};

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
	"buckets that start from --since (a duration back from now, @SECONDS,\n"
	"'YYYY-MM-DD HH:MM[:SS]' UTC or RFC 3339; default: all the topic keeps) up to\n"
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

	return f > 0 ? f : CW_QUERY_JSON;
}

/* -1: go on; else the exit status (help shown, or bad usage told). */
static int parse_args(int argc, char **argv, struct cw_graph_query *a)
{
	const char *since = NULL, *until = NULL;
	const struct cw_opt t[] = {
		CW_OPT_CALL("by", 'b', &a->by, cli_group_by),
		{.name = "window", .key = 'w', .kind = CW_OPT_KDUR,
		 .to = &a->window_ns, .min = NSEC_PER_MSEC,
		 .max = 7 * 24 * 3600 * NSEC_PER_SEC, .flags = CW_OPT_ZERO_OFF},
		CW_OPT_U64("top", 't', &a->top, 1, 100000000),
		CW_OPT_STR("neighbours", 'n', &a->neighbours),
		CW_OPT_STR("neighbors", 0, &a->neighbours),
		CW_OPT_FLAG("matrix", 'm', &a->matrix),
		CW_OPT_ENUM("format", 'f', &a->format, format_names),
		CW_OPT_STR("out", 'o', &a->out),
		CW_OPT_FLAG("skip-bad", 0, &a->skip_bad),
		CW_OPT_FLAG("bench", 0, &a->bench),
		CLI_KAFKA(&a->kc),
		CW_OPT_STR("group", 'g', &a->kc.group),
		CW_OPT_STR("since", 0, &since),
		CW_OPT_STR("until", 0, &until),
		{0}};
	int rc;

	memset(a, 0, sizeof(*a));
	a->window_ns = 60 * NSEC_PER_SEC;
	a->by = CLI_BY_UNSET;
	a->format = -1;
	rc = cw_opts_parse("graph", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (a->kc.brokers && optind < argc)
		return cw_error("--kafka reads the edge buckets: no INPUT "
				"files"),
		       2;
	if (!a->kc.brokers && (since || until || a->kc.group))
		return cw_error("--since, --until and --group go with "
				"--kafka"),
		       2;
	if (cw_time_range(since, until, &a->since_ns, &a->until_ns))
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
		a->format = a->out ? format_of_path(a->out) : CW_QUERY_TABLE;
	return -1;
}

int cmd_graph(int argc, char **argv)
{
	struct cw_graph_query a;
	int ret = parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	a.inputs = argv + optind;
	a.ninputs = (size_t)(argc - optind);
	return cw_graph_query_run(&a) ? 1 : 0;
}
