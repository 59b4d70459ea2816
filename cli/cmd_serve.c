// SPDX-License-Identifier: MIT
/*
 * causeway serve: the live page, the HTTP API and Prometheus metrics over
 * record files, run folders or the fleet's Kafka topics.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "serve/serve.h"

static const char help[] =
	"usage: causeway serve [--listen ADDR:PORT] [--window D] [--poll D]\n"
	"                      [--paths FILE] [--samples DIR] [--plan FILE]\n"
	"                      [--traces FILE] [--skip-bad]\n"
	"                      INPUT...\n"
	"       causeway serve --kafka BROKERS [--kafka-config FILE]\n"
	"                      [--topic-prefix P] [--group G] [--listen ADDR:PORT]\n"
	"\n"
	"Serve the traffic graph to people and programs, read-only: a page\n"
	"(graph, host heatmap, causal paths, sample runs, traces), a JSON API under\n"
	"/api/ and Prometheus metrics at /metrics.  INPUT is a record file\n"
	"(JSON lines or a wire stream, as 'causeway graph' reads) or the\n"
	"output folder of 'causeway run -o' (its conns.jsonl and paths.json);\n"
	"inputs are read again whenever one changes.  With --kafka, serve\n"
	"follows the conns, meta, timing and samples topics instead, from\n"
	"the beginning.\n"
	"\n"
	"  -l, --listen A:P     address to bind (default 127.0.0.1:8080;\n"
	"                       only loopback unless you say so)\n"
	"  -w, --window D       time buckets for ranges (default 10s)\n"
	"      --poll D         check the inputs every D (default 1s)\n"
	"      --paths FILE     causal paths, one pathset (JSON) a line\n"
	"      --samples DIR    sample run store ('causeway samples record')\n"
	"      --plan FILE      placement plan ('causeway place --format json')\n"
	"      --traces FILE    per-request traces ('causeway traces -o FILE',\n"
	"                       OTLP/JSON), read again when it changes\n"
	"      --skip-bad       count and skip malformed records\n"
	"  -k, --kafka B        follow Kafka at bootstrap servers B\n"
	"      --kafka-config F librdkafka properties file\n"
	"      --topic-prefix P topics P.conns ... (default causeway)\n"
	"      --group G        consumer group (default causeway-serve)\n"
	"\n"
	"Exit status: 0 after SIGINT or SIGTERM, 1 when the inputs cannot\n"
	"be read at start or the address cannot be bound, 2 bad usage.\n"
	"\n"
	"Examples:\n"
	"  causeway serve out/\n"
	"  causeway serve --listen 127.0.0.1:9900 --samples /var/lib/causeway/samples a.jsonl b.jsonl\n"
	"  causeway serve --kafka 10.0.0.5:9092\n"
	"  causeway serve --traces traces.json out/\n"
	"  curl 'http://127.0.0.1:8080/api/graph?by=host&since=-5m'\n";

static int parse_args(int argc, char **argv, struct cw_serve_opts *o)
{
	const struct cw_opt t[] = {
		CW_OPT_STR("listen", 'l', &o->listen),
		CW_OPT_DUR("window", 'w', &o->window_ns, NSEC_PER_SEC,
			86400 * NSEC_PER_SEC),
		CW_OPT_DUR("poll", 0, &o->poll_ns, 10 * NSEC_PER_MSEC,
			3600 * NSEC_PER_SEC),
		CW_OPT_STR("paths", 0, &o->paths),
		CW_OPT_STR("samples", 0, &o->samples_dir),
		CW_OPT_STR("plan", 0, &o->plan),
		CW_OPT_STR("traces", 0, &o->traces),
		CW_OPT_FLAG("skip-bad", 0, &o->skip_bad),
		CW_OPT_STR("kafka", 'k', &o->brokers),
		CW_OPT_STR("kafka-config", 0, &o->kafka_properties),
		CW_OPT_STR("topic-prefix", 0, &o->topic_prefix),
		CW_OPT_STR("group", 0, &o->group),
		{0}};
	int rc = cw_opts_parse("serve", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	o->inputs = argv + optind;
	o->ninputs = (size_t)(argc - optind);
	if (!o->brokers && !o->ninputs && !o->samples_dir && !o->paths &&
	    !o->plan && !o->traces)
		return cw_error("no input (see 'causeway serve --help')"), 2;
	if (o->brokers && o->ninputs)
		return cw_error("--kafka follows the topics: it takes no "
				"INPUT"),
		       2;
	return -1;
}

int cmd_serve(int argc, char **argv)
{
	struct cw_serve_opts o = {0};
	int ret = parse_args(argc, argv, &o);

	if (ret >= 0)
		return ret;
	cw_catch_signals();
	return cw_serve_run(&o, &cw_stop) ? 1 : 0;
}
