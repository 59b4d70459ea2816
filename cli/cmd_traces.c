// SPDX-License-Identifier: MIT
/* causeway traces: per-request traces from black boxes. */

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "traces/cmd.h"

static const char help[] =
	"usage: causeway traces [options] INPUT\n"
	"       causeway traces [options] --kafka BROKERS\n"
	"       causeway traces [options] --truth SPANS\n"
	"\n"
	"Link each outgoing call of a service to the request it served\n"
	"(thread evidence, else timing) and write the traces.\n"
	"\n"
	"  INPUT             messages CSV (start_ns,end_ns,node,peer,conn,dir,role[,bytes,thread])\n"
	"                    a pcap, or a wire stream file of 'causeway agent\n"
	"                    --traces' records\n"
	"  --kafka BROKERS   read those records from the timing topic (all of it,\n"
	"                    until no record came for --idle)\n"
	"  --topic-prefix P  topics' prefix (default causeway)\n"
	"  --idle D          with --kafka: stop after D with no record (default 3s)\n"
	"  --truth SPANS     span CSV: infer from its messages, score against its parents\n"
	"  --truth-links F   score the input (a pcap, a messages CSV with ports,\n"
	"                    or the agents' records) against the services' own records\n"
	"                    of which request made which call (docs/causeway-traces.md)\n"
	"  -o, --output FILE write the traces (OTLP/JSON unless --format jaeger)\n"
	"  --format F        otlp or jaeger (default otlp)\n"
	"  --otlp URL        POST the OTLP/JSON to an OTLP/HTTP endpoint\n"
	"  --trace ID        print this trace's waterfall (default: the slowest)\n"
	"  --waterfall       print the waterfall of --trace or the slowest\n"
	"  --window N        calls per assignment window (default 24)\n"
	"  --candidates N    requests kept per call (default 8)\n"
	"  --rounds N        timing rounds at most, to a fixed point (default 8)\n"
	"  --refine N        soft refinement steps of each model (default 5)\n"
	"  --no-thread       ignore thread evidence\n"
	"  --fold-replicas   with --truth: name services by pod without its replica\n"
	"                    suffix (default: as the data names them)\n"
	"\n"
	"Examples:\n"
	"  causeway traces --truth spans.csv   (a span trace with parent ids)\n"
	"  causeway traces --truth-links truth.csv capture.pcap\n"
	"  causeway traces -o traces.json --waterfall msgs.csv\n"
	"  causeway traces --otlp http://127.0.0.1:4318/v1/traces msgs.csv\n";

static const char *const formats[] = {"otlp", "jaeger", NULL};

static int parse_args(struct cw_traces_cmd *a, int argc, char **argv)
{
	uint64_t window = 0, cands = 0, rounds = 0, refine = 5;
	int format = 0;
	const struct cw_opt t[] = {
		CW_OPT_STR("truth", 0, &a->truth),
		CW_OPT_STR("truth-links", 0, &a->links),
		CW_OPT_STR("output", 'o', &a->output),
		CW_OPT_ENUM("format", 0, &format, formats),
		CW_OPT_CALL("otlp", 0, &a->otlp, cli_otlp_url),
		CW_OPT_STR("trace", 0, &a->trace),
		CW_OPT_FLAG("waterfall", 0, &a->waterfall),
		CW_OPT_U64("window", 0, &window, 1, 256),
		CW_OPT_U64("candidates", 0, &cands, 1, 16),
		CW_OPT_U64("rounds", 0, &rounds, 1, 20),
		CW_OPT_U64("refine", 0, &refine, 0, 50),
		CW_OPT_FLAG("no-thread", 0, &a->o.no_thread),
		CW_OPT_FLAG("fold-replicas", 0, &a->fold_replicas),
		CW_OPT_STR("kafka", 'k', &a->kc.brokers),
		CW_OPT_STR("topic-prefix", 0, &a->kc.topic_prefix),
		CW_OPT_DUR("idle", 0, &a->idle_ns, NSEC_PER_MSEC,
			3600 * NSEC_PER_SEC),
		{0}};
	int rc;

	cw_traces_opts_default(&a->o);
	a->idle_ns = 3 * NSEC_PER_SEC;
	rc = cw_opts_parse("traces", t, argc, argv, help);
	a->format = formats[format];
	a->waterfall |= a->trace != NULL;
	a->o.window = window ? window : a->o.window;
	a->o.max_cands = cands ? cands : a->o.max_cands;
	a->o.rounds = rounds ? (int)rounds : a->o.rounds;
	a->o.refine = (int)refine;
	if (rc >= 0)
		return rc ? -1 : 1;
	if (cw_opts_one_operand(argc, argv, &a->input))
		return -1;
	if (!a->input && !a->truth && !a->kc.brokers)
		return cw_error("no input (see 'causeway traces --help')");
	if (!!a->input + !!a->truth + !!a->kc.brokers > 1)
		return cw_error("give one of INPUT, --kafka BROKERS or --truth "
				"SPANS");
	if (a->links && a->truth)
		return cw_error("--truth-links needs an INPUT or --kafka to "
				"score");
	return 0;
}

int cmd_traces(int argc, char **argv)
{
	struct cw_traces_cmd a = {0};
	struct cw_traces t;
	int rc;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	cw_traces_init(&t);
	rc = cw_traces_cmd_run(&t, &a);
	cw_traces_release(&t);
	return rc ? 1 : 0;
}
