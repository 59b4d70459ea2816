// SPDX-License-Identifier: MIT
/*
 * causeway: black-box traffic graphs and causal paths for Linux fleets.
 * Subcommands are dispatched from one table, like git and bpftool.
 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/log.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"run", cmd_run, "watch this host and print who talks to whom"},
	{"agent", cmd_agent, "long-running host agent: publish aggregates"},
	{"correlate", cmd_correlate,
	 "pair both ends from Kafka into the graph"},
	{"broker", cmd_broker, "an embedded Kafka broker for one machine"},
	{"probe", cmd_probe, "what this kernel supports, what auto picks"},
	{"paths", cmd_paths, "infer causal paths from message timing"},
	{"traces", cmd_traces, "per-request traces: link calls to requests"},
	{"samples", cmd_samples, "fine-timescale tc counters: record, show"},
	{"dump", cmd_dump, "print wire records from a file or topic as JSON"},
	{"graph", cmd_graph, "project, query and export the process graph"},
	{"render", cmd_render, "draw the graph with Graphviz (SVG, PNG, DOT)"},
	{"serve", cmd_serve, "live page, HTTP API and Prometheus metrics"},
	{"simulate", cmd_simulate,
	 "a synthetic fleet's records, for benchmarks"},
	{"place", cmd_place, "plan where containers run, from the traffic"},
};

static void usage(FILE *fp)
{
	size_t i;

	fprintf(fp, "usage: causeway [-v] <command> [<args>]\n\n"
		    "Commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(fp, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(fp, "\n'causeway <command> --help' describes a command.\n\n"
		    "Examples:\n"
		    "  causeway probe\n"
		    "  causeway run --duration 10s -o out/\n"
		    "  causeway paths --truth spans.csv\n");
}

int main(int argc, char **argv)
{
	size_t i;

	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose")) {
			cw_log_level = CW_LOG_DEBUG;
		} else if (!strcmp(argv[1], "-q") ||
			   !strcmp(argv[1], "--quiet")) {
			cw_log_level = CW_LOG_WARN;
		} else if (!strcmp(argv[1], "-h") ||
			   !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[1], "--version")) {
			printf("causeway %s\n", CW_VERSION);
			return 0;
		} else {
			cw_error("unknown option '%s'", argv[1]);
			usage(stderr);
			return 2;
		}
		argc--, argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	cw_error("unknown command '%s' (see 'causeway --help')", argv[1]);
	return 2;
}
