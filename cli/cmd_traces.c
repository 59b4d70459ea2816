// SPDX-License-Identifier: MIT
/* causeway traces: per-request traces from black boxes. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "traces/traces.h"

struct traces_args {
	struct cw_traces_opts o;
	const char *input, *truth, *output, *otlp, *trace, *format;
	bool waterfall;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway traces [options] INPUT\n"
		"       causeway traces [options] --truth SPANS\n\n"
		"Link each outgoing call of a service to the request it "
		"served\n"
		"(thread evidence, else timing) and write the traces.\n\n"
		"  INPUT             messages CSV (start_ns,end_ns,node,peer,"
		"conn,dir,role[,bytes,thread])\n"
		"                    or a pcap\n"
		"  --truth SPANS     span CSV: infer from its messages, score "
		"against its parents\n"
		"  -o, --output FILE write the traces (OTLP/JSON unless "
		"--format jaeger)\n"
		"  --format F        otlp or jaeger (default otlp)\n"
		"  --otlp URL        POST the OTLP/JSON to an OTLP/HTTP "
		"endpoint\n"
		"  --trace ID        print this trace's waterfall (default: "
		"the "
		"slowest)\n"
		"  --waterfall       print the waterfall of --trace or the "
		"slowest\n"
		"  --window N        calls per assignment window (default 24)\n"
		"  --candidates N    requests kept per call (default 8)\n"
		"  --rounds N        timing-only learning rounds (default 1)\n"
		"  --no-thread       ignore thread evidence\n"
		"\nExamples:\n"
		"  causeway traces --truth ../shared/data/spans/x.csv\n"
		"  causeway traces -o traces.json --waterfall msgs.csv\n"
		"  causeway traces --otlp http://127.0.0.1:4318/v1/traces "
		"msgs.csv\n");
}

static int parse_num(const char *arg, const char *name, uint64_t max,
		     uint64_t *v)
{
	if (cw_parse_u64(arg, 1, max, v))
		return cw_error("%s must be 1 to %llu, not '%s'", name,
				(unsigned long long)max, arg);
	return 0;
}

static int parse_opt(struct traces_args *a, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case 'T':
		a->truth = arg;
		return 0;
	case 'o':
		a->output = arg;
		return 0;
	case 'f':
		if (strcmp(arg, "otlp") && strcmp(arg, "jaeger"))
			return cw_error("--format must be otlp or jaeger, not "
					"'%s'",
					arg);
		a->format = arg;
		return 0;
	case 'U':
		if (strncmp(arg, "http://", 7))
			return cw_error("--otlp wants an http:// URL, not '%s'",
					arg);
		a->otlp = arg;
		return 0;
	case 'i':
		a->trace = arg, a->waterfall = true;
		return 0;
	case 'w':
		a->waterfall = true;
		return 0;
	case 'W':
		if (parse_num(arg, "--window", 256, &v))
			return -1;
		a->o.window = v;
		return 0;
	case 'C':
		if (parse_num(arg, "--candidates", 16, &v))
			return -1;
		a->o.max_cands = v;
		return 0;
	case 'R':
		if (parse_num(arg, "--rounds", 20, &v))
			return -1;
		a->o.rounds = (int)v;
		return 0;
	case 'N':
		a->o.no_thread = true;
		return 0;
	}
	return -1;
}

static int parse_args(struct traces_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"truth", required_argument, NULL, 'T'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"otlp", required_argument, NULL, 'U'},
		{"trace", required_argument, NULL, 'i'},
		{"waterfall", no_argument, NULL, 'w'},
		{"window", required_argument, NULL, 'W'},
		{"candidates", required_argument, NULL, 'C'},
		{"rounds", required_argument, NULL, 'R'},
		{"no-thread", no_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	cw_traces_opts_default(&a->o);
	a->format = "otlp";
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || parse_opt(a, c, optarg))
			return -1;
	}
	if (optind < argc)
		a->input = argv[optind++];
	if (optind < argc)
		return cw_error("unexpected argument '%s'", argv[optind]);
	if (!a->input && !a->truth)
		return cw_error("no input (see 'causeway traces --help')");
	if (a->input && a->truth)
		return cw_error("give either INPUT or --truth SPANS, not both");
	return 0;
}

static void print_scores(const struct cw_traces *t,
			 const struct cw_traces_eval *ev)
{
	size_t v;

	printf("%-28s %8s %9s %9s %9s %9s %9s\n", "service", "requests",
	       "right", "fcfs", "top5", "link-P", "link-R");
	for (v = 0; v <= t->n_names; v++) {
		const struct cw_traces_score *s = &ev->node[v];
		double n = s->requests ? (double)s->requests : 1;

		if (!s->requests)
			continue;
		printf("%-28s %8zu %9.3f %9.3f %9.3f %9.3f %9.3f\n",
		       v < t->n_names ? t->names[v] : "(all)", s->requests,
		       s->right / n, s->right_fcfs / n, s->top5 / n,
		       s->links_found ? (double)s->links_hit / s->links_found
				      : 0,
		       s->links_true ? (double)s->links_hit / s->links_true
				     : 0);
	}
	printf("traces right end to end: %.3f (FCFS %.3f) of %zu\n",
	       ev->traces ? (double)ev->traces_right / ev->traces : 0,
	       ev->traces ? (double)ev->traces_right_fcfs / ev->traces : 0,
	       ev->traces);
}

static int write_out(const struct cw_traces *t, const struct traces_args *a)
{
	struct cw_outfile of;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (a->output) {
		if (cw_outfile_open(&of, a->output))
			return -1;
		rc = !strcmp(a->format, "jaeger")
			     ? cw_traces_write_jaeger(t, of.fp)
			     : cw_traces_write_otlp(t, of.fp);
		if (rc) {
			cw_outfile_abort(&of);
			return -1;
		}
		if (cw_outfile_commit(&of))
			return -1;
	}
	if (!a->otlp)
		return 0;
	mem = open_memstream(&buf, &len);
	if (!mem)
		return cw_error("out of memory for the OTLP body");
	rc = cw_traces_write_otlp(t, mem);
	fclose(mem);
	if (!rc)
		rc = cw_traces_post(a->otlp, buf, len);
	free(buf);
	return rc;
}

static int run(struct cw_traces *t, const struct traces_args *a)
{
	struct cw_traces_eval ev;
	uint64_t t0;
	int32_t root;

	if (cw_traces_read_file(t, a->truth ? a->truth : a->input) ||
	    cw_traces_build(t))
		return -1;
	t0 = cw_now_mono_ns();
	if (cw_traces_infer(t, &a->o))
		return -1;
	fprintf(stderr,
		"causeway: %zu spans linked in %.6fs; %zu windows, %zu cut; "
		"%zu thread links, %zu ambiguous; %zu multiplexed "
		"connections\n",
		t->n_spans, (double)(cw_now_mono_ns() - t0) / 1e9, t->n_windows,
		t->n_cut, t->n_thread_links, t->n_ambiguous_thread,
		t->n_multiplexed);
	if (a->truth) {
		if (cw_traces_evaluate(t, &ev))
			return -1;
		print_scores(t, &ev);
		cw_traces_eval_release(&ev);
	}
	if (write_out(t, a))
		return -1;
	if (!a->waterfall)
		return 0;
	root = cw_traces_find(t, a->trace);
	if (root < 0)
		return cw_error("no trace '%s'", a->trace ? a->trace : "");
	cw_traces_print_waterfall(t, root, stdout);
	return 0;
}

int cmd_traces(int argc, char **argv)
{
	struct traces_args a = {0};
	struct cw_traces t;
	int rc;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	cw_traces_init(&t);
	rc = run(&t, &a);
	cw_traces_release(&t);
	return rc ? 1 : 0;
}
