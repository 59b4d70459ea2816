// SPDX-License-Identifier: MIT
/* causeway paths: causal paths and per-tier delays from message timing. */

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "paths/cmd.h"

static const char help[] =
	"usage: causeway paths [options] INPUT\n"
	"       causeway paths [options] --truth SPANS\n"
	"\n"
	"Infer causal paths through black-box services from message timing\n"
	"(Aguilera et al., SOSP 2003).\n"
	"\n"
	"  INPUT                 observations CSV (ts_ns,node,peer,dir[,bytes]) or pcap\n"
	"  --root NODE           start paths at NODE (default: nodes nothing calls)\n"
	"  --bin DUR             signal bin width (default 100us)\n"
	"  --max-delay DUR       longest causal delay (default 1s)\n"
	"  --method M            convolution, nesting or both (default convolution)\n"
	"  --alpha P             false-alarm rate per edge pair (default 0.01)\n"
	"  --threads N           correlation workers (default 2)\n"
	"  --json                print JSON instead of text\n"
	"  --truth SPANS         spans (CSV or Jaeger JSON): infer from their messages\n"
	"                        and score against their parent links\n"
	"\n"
	"Examples:\n"
	"  causeway paths msgs.csv\n"
	"  causeway paths --root client --bin 1ms --json capture.pcap\n"
	"  causeway paths --method both --truth spans.csv\n";

/* Index + 1: CW_PATHS_CONV, M_NEST, both. */
static const char *const methods[] = {"convolution", "nesting", "both", NULL};

static int parse_args(struct cw_paths_cmd *a, int argc, char **argv)
{
	uint64_t threads = 0;
	const struct cw_opt t[] = {
		CW_OPT_STR("root", 0, &a->root),
		{.name = "bin", .kind = CW_OPT_KDUR, .to = &a->o.bin_ns,
		 .min = 1, .max = UINT64_MAX, .unit = NSEC_PER_USEC,
		 .want = "a duration such as 100us or 1ms"},
		{.name = "max-delay", .kind = CW_OPT_KDUR, .to = &a->o.max_delay_ns,
		 .max = UINT64_MAX, .unit = NSEC_PER_MSEC,
		 .want = "a duration such as 500ms or 1s"},
		CW_OPT_ENUM("method", 0, &a->methods, methods),
		{.name = "alpha", .kind = CW_OPT_KREAL, .to = &a->o.alpha,
		 .lo = 0, .hi = 1, .flags = CW_OPT_OPEN},
		CW_OPT_U64("threads", 0, &threads, 1, 8),
		CW_OPT_FLAG("json", 0, &a->json),
		CW_OPT_STR("truth", 0, &a->truth),
		CW_OPT_STR("synthetic", 0, &a->synthetic), /* hidden */
		CW_OPT_FLAG("fft-only", 0, &a->o.fft_only), /* hidden */
		{0}};
	int rc;

	cw_paths_opts_default(&a->o);
	a->methods = 0;
	rc = cw_opts_parse("paths", t, argc, argv, help);
	a->methods++;
	if (threads)
		a->o.threads = (int)threads;
	if (rc >= 0)
		return rc ? -1 : 1;
	if (cw_opts_one_operand(argc, argv, &a->input))
		return -1;
	if (!a->synthetic && !a->input && !a->truth)
		return cw_error("no input (see 'causeway paths --help')");
	if (a->input && a->truth)
		return cw_error("give either INPUT or --truth SPANS, not both");
	return cw_paths_opts_check(&a->o);
}

int cmd_paths(int argc, char **argv)
{
	struct cw_paths_cmd a = {0};
	int rc = parse_args(&a, argc, argv);

	if (rc)
		return rc > 0 ? 0 : 2;
	return cw_paths_cmd_run(&a) ? 1 : 0;
}
