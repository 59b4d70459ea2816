// SPDX-License-Identifier: MIT
/* causeway paths: causal paths and per-tier delays from message timing. */
#include <fftw3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "paths/paths.h"

enum { M_CONV = 1, M_NEST = 2 };

struct paths_args {
	struct cw_paths_opts o;
	const char *root, *truth, *input, *synthetic;
	int methods;
	bool json;
};

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

/* Index + 1: M_CONV, M_NEST, both. */
static const char *const methods[] = {"convolution", "nesting", "both", NULL};

static int parse_args(struct paths_args *a, int argc, char **argv)
{
	uint64_t threads = 0;
	const struct cli_opt t[] = {
		CLI_STR("root", 0, &a->root),
		{.name = "bin", .kind = CLI_KDUR, .to = &a->o.bin_ns,
		 .min = 1, .max = UINT64_MAX, .unit = NSEC_PER_USEC,
		 .want = "a duration such as 100us or 1ms"},
		{.name = "max-delay", .kind = CLI_KDUR, .to = &a->o.max_delay_ns,
		 .max = UINT64_MAX, .unit = NSEC_PER_MSEC,
		 .want = "a duration such as 500ms or 1s"},
		CLI_ENUM("method", 0, &a->methods, methods),
		{.name = "alpha", .kind = CLI_KREAL, .to = &a->o.alpha,
		 .lo = 0, .hi = 1, .flags = CLI_OPEN},
		CLI_U64("threads", 0, &threads, 1, 8),
		CLI_FLAG("json", 0, &a->json),
		CLI_STR("truth", 0, &a->truth),
		CLI_STR("synthetic", 0, &a->synthetic), /* hidden */
		CLI_FLAG("fft-only", 0, &a->o.fft_only), /* hidden */
		{0}};
	int rc;

	cw_paths_opts_default(&a->o);
	a->methods = 0;
	rc = cli_parse("paths", t, argc, argv, help);
	a->methods++;
	if (threads)
		a->o.threads = (int)threads;
	if (rc >= 0)
		return rc ? -1 : 1;
	if (cli_one_operand(argc, argv, &a->input))
		return -1;
	if (!a->synthetic && !a->input && !a->truth)
		return cw_error("no input (see 'causeway paths --help')");
	if (a->input && a->truth)
		return cw_error("give either INPUT or --truth SPANS, not both");
	return cw_paths_opts_check(&a->o);
}

static double now_s(void)
{
	return (double)cw_now_mono_ns() / 1e9;
}

static int infer(const struct cw_msgtrace *t, const struct paths_args *a,
		 int method, struct cw_pathset *ps)
{
	return method == M_CONV ? cw_paths_convolution(t, &a->o, ps)
				: cw_paths_nesting(t, &a->o, ps);
}

static const char *method_name(int m)
{
	return m == M_CONV ? "convolution" : "nesting";
}

static void warn_truncated(const struct cw_pathset *ps, int m)
{
	if (ps->truncated)
		cw_warn("%s: search stopped after %zu node visits (the "
			"budget): the paths shown are partial",
			method_name(m), ps->n_visits);
}

static void print_eval(const struct paths_args *a, int m,
		       const struct cw_paths_eval *ev, double secs)
{
	struct cw_jsonw w;

	if (!a->json) {
		printf("%-11s edges: precision %.3f recall %.3f (%zu of %zu "
		       "found right, %zu true)\n"
		       "%-11s triples: precision %.3f recall %.3f (%zu of %zu, "
		       "%zu true)\n"
		       "%-11s hop delay error: median %.1f%% (%.0fus) over %zu "
		       "hops; %.2fs\n",
		       method_name(m), ev->edge_precision, ev->edge_recall,
		       ev->edges_hit, ev->edges_found, ev->edges_true, "",
		       ev->triple_precision, ev->triple_recall, ev->triples_hit,
		       ev->triples_found, ev->triples_true, "",
		       100 * ev->delay_rel_err, ev->delay_abs_err_us,
		       ev->delay_n, secs);
		return;
	}
	cw_jsonw_init(&w, stdout);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "method", method_name(m));
	cw_jsonw_double(&w, "edge_precision", ev->edge_precision);
	cw_jsonw_double(&w, "edge_recall", ev->edge_recall);
	cw_jsonw_u64(&w, "edges_true", ev->edges_true);
	cw_jsonw_u64(&w, "edges_found", ev->edges_found);
	cw_jsonw_double(&w, "triple_precision", ev->triple_precision);
	cw_jsonw_double(&w, "triple_recall", ev->triple_recall);
	cw_jsonw_double(&w, "delay_rel_err", ev->delay_rel_err);
	cw_jsonw_double(&w, "delay_abs_err_us", ev->delay_abs_err_us);
	cw_jsonw_u64(&w, "delay_hops", ev->delay_n);
	cw_jsonw_double(&w, "seconds", secs);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

static int run_truth(const struct cw_msgtrace *t, const struct cw_truth *tr,
		     const struct paths_args *a)
{
	struct cw_pathset ps;
	struct cw_paths_eval ev;
	double t0;
	int m;

	if (!a->json)
		printf("truth: '%s': %zu spans, %zu calls, %zu caller->callee "
		       "edges, %zu causal triples\n",
		       a->truth, tr->n_spans, tr->n_calls, tr->n_edges,
		       tr->n_triples);
	for (m = M_CONV; m <= M_NEST; m <<= 1) {
		if (!(a->methods & m))
			continue;
		t0 = now_s();
		if (infer(t, a, m, &ps))
			return -1;
		warn_truncated(&ps, m);
		cw_paths_evaluate(t, tr, &ps, &ev);
		if (cw_log_level >= CW_LOG_DEBUG) /* -v: the trees too */
			cw_pathset_print_text(stderr, t, &ps);
		print_eval(a, m, &ev, now_s() - t0);
		cw_pathset_release(&ps);
	}
	return 0;
}

static int run_paths(const struct cw_msgtrace *t, const struct paths_args *a)
{
	struct cw_pathset ps;
	int m;

	for (m = M_CONV; m <= M_NEST; m <<= 1) {
		if (!(a->methods & m))
			continue;
		if (infer(t, a, m, &ps))
			return -1;
		warn_truncated(&ps, m);
		if (!a->json && a->methods == (M_CONV | M_NEST))
			printf("== %s\n", method_name(m));
		if (a->json)
			cw_pathset_print_json(stdout, t, &ps);
		else
			cw_pathset_print_text(stdout, t, &ps);
		cw_pathset_release(&ps);
	}
	return 0;
}

static int resolve_root(const struct cw_msgtrace *t, struct paths_args *a)
{
	if (!a->root)
		return 0;
	a->o.root = cw_msgtrace_find(t, a->root);
	if (a->o.root < 0)
		return cw_error("unknown --root '%s': no such node in the "
				"input",
				a->root);
	return 0;
}

int cmd_paths(int argc, char **argv)
{
	struct paths_args a = {0};
	struct cw_msgtrace t;
	struct cw_truth tr;
	int rc;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (a.synthetic)
		return cw_paths_synthetic(a.synthetic, stdout) ? 1 : 0;
	cw_msgtrace_init(&t);
	cw_truth_init(&tr);
	rc = a.truth ? cw_spans_read_file(&t, &tr, a.truth)
		     : cw_msgtrace_read_file(&t, a.input);
	if (!rc)
		rc = resolve_root(&t, &a);
	if (!rc)
		rc = a.truth ? run_truth(&t, &tr, &a) : run_paths(&t, &a);
	if (!rc && fflush(stdout))
		rc = cw_error("unable to write the output: %m");
	cw_truth_release(&tr);
	cw_msgtrace_release(&t);
	fftw_cleanup();
	return rc ? 1 : 0;
}
