// SPDX-License-Identifier: MIT
/* `causeway paths` past its options (paths/cmd.h). */
#include <fftw3.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "paths/cmd.h"
#include "paths/paths.h"

static double now_s(void)
{
	return (double)cw_now_mono_ns() / 1e9;
}

static int infer(const struct cw_msgtrace *t, const struct cw_paths_cmd *a,
		 int method, struct cw_pathset *ps)
{
	return method == CW_PATHS_CONV ? cw_paths_convolution(t, &a->o, ps)
				: cw_paths_nesting(t, &a->o, ps);
}

static const char *method_name(int m)
{
	return m == CW_PATHS_CONV ? "convolution" : "nesting";
}

static void warn_truncated(const struct cw_pathset *ps, int m)
{
	if (ps->truncated)
		cw_warn("%s: search stopped after %zu node visits (the "
			"budget): the paths shown are partial",
			method_name(m), ps->n_visits);
}

static void print_eval(const struct cw_paths_cmd *a, int m,
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
		     const struct cw_paths_cmd *a)
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
	for (m = CW_PATHS_CONV; m <= CW_PATHS_NEST; m <<= 1) {
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

static int run_paths(const struct cw_msgtrace *t, const struct cw_paths_cmd *a)
{
	struct cw_pathset ps;
	int m;

	for (m = CW_PATHS_CONV; m <= CW_PATHS_NEST; m <<= 1) {
		if (!(a->methods & m))
			continue;
		if (infer(t, a, m, &ps))
			return -1;
		warn_truncated(&ps, m);
		if (!a->json && a->methods == (CW_PATHS_CONV | CW_PATHS_NEST))
			printf("== %s\n", method_name(m));
		if (a->json)
			cw_pathset_print_json(stdout, t, &ps);
		else
			cw_pathset_print_text(stdout, t, &ps);
		cw_pathset_release(&ps);
	}
	return 0;
}

static int resolve_root(const struct cw_msgtrace *t, struct cw_paths_cmd *a)
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

int cw_paths_cmd_run(struct cw_paths_cmd *a)
{
	struct cw_msgtrace t;
	struct cw_truth tr;
	int rc;

	if (a->synthetic)
		return cw_paths_synthetic(a->synthetic, stdout) ? -1 : 0;
	cw_msgtrace_init(&t);
	cw_truth_init(&tr);
	rc = a->truth ? cw_spans_read_file(&t, &tr, a->truth)
		     : cw_msgtrace_read_file(&t, a->input);
	if (!rc)
		rc = resolve_root(&t, a);
	if (!rc)
		rc = a->truth ? run_truth(&t, &tr, a) : run_paths(&t, a);
	if (!rc && fflush(stdout))
		rc = cw_error("unable to write the output: %m");
	cw_truth_release(&tr);
	cw_msgtrace_release(&t);
	fftw_cleanup();
	return rc ? -1 : 0;
}
