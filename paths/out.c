// SPDX-License-Identifier: MIT
/* Path trees for people (text), for programs (JSON), and against truth. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "paths/paths.h"

/* The direct return of hop h (j->i after i->j), or NULL. */
static const struct cw_hop *return_of(const struct cw_path *p,
				      const struct cw_hop *h)
{
	size_t i;

	for (i = 0; i < p->n_hops; i++)
		if (p->hops[i].parent == h->id && p->hops[i].is_return &&
		    p->hops[i].to == h->from)
			return &p->hops[i];
	return NULL;
}

/*
 * The time a tier adds while serving hop h: with a reply, the time from
 * request to reply less the replies it waited for; without one (one-way
 * traffic), the longest wait before passing a message on.
 */
static double added_at(const struct cw_path *p, const struct cw_hop *h)
{
	const struct cw_hop *ret = return_of(p, h), *r;
	double inner = 0, longest = 0;
	size_t i;

	for (i = 0; i < p->n_hops; i++) {
		const struct cw_hop *c = &p->hops[i];

		if (c->parent != h->id || c->is_return)
			continue;
		r = return_of(p, c);
		inner += r ? r->median_us : 0;
		longest = c->median_us > longest ? c->median_us : longest;
	}
	if (ret)
		return ret->median_us > inner ? ret->median_us - inner : 0;
	return longest;
}

/* The longest chain of median delays below hop h. */
static double chain_us(const struct cw_path *p, const struct cw_hop *h)
{
	double best = 0, d;
	size_t i;

	for (i = 0; i < p->n_hops; i++) {
		if (p->hops[i].parent != h->id)
			continue;
		d = p->hops[i].median_us +
		    (p->hops[i].is_return ? 0 : chain_us(p, &p->hops[i]));
		best = d > best ? d : best;
	}
	return best;
}

static double end_to_end_us(const struct cw_path *p)
{
	const struct cw_hop *ret = return_of(p, &p->hops[0]);

	return ret ? ret->median_us : chain_us(p, &p->hops[0]);
}

/* The node adding the most time on any one hop; -1 if none. */
static int slowest_tier(const struct cw_path *p, double *us)
{
	double best = 0, d;
	size_t i;
	int node = -1;

	for (i = 0; i < p->n_hops; i++) {
		if (p->hops[i].is_return)
			continue;
		d = added_at(p, &p->hops[i]);
		if (d > best) {
			best = d;
			node = (int)p->hops[i].to;
		}
	}
	*us = best;
	return node;
}

static void fmt_us(double us, char *buf, size_t len)
{
	if (us >= 1e6)
		snprintf(buf, len, "%.2fs", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.2fms", us / 1e3);
	else
		snprintf(buf, len, "%.0fus", us);
}

static void print_hop(FILE *fp, const struct cw_msgtrace *t,
		      const struct cw_path *p, const struct cw_hop *h,
		      int depth)
{
	char a[32], b[32], c[32];
	size_t i;

	fprintf(fp, "  %*s%s -> %s%s  %zu msgs", 2 * depth, "",
		t->names[h->from], t->names[h->to],
		h->is_return ? " (reply)" : "", h->messages);
	if (h->parent >= 0) {
		fmt_us(h->p10_us, a, sizeof(a));
		fmt_us(h->median_us, b, sizeof(b));
		fmt_us(h->p90_us, c, sizeof(c));
		fprintf(fp, "  +%s at %s (p10 %s, p90 %s)  score %.1f", b,
			t->names[h->from], a, c, h->score);
	}
	fputc('\n', fp);
	for (i = 0; i < p->n_hops; i++)
		if (p->hops[i].parent == h->id)
			print_hop(fp, t, p, &p->hops[i], depth + 1);
}

void cw_pathset_print_text(FILE *fp, const struct cw_msgtrace *t,
			   const struct cw_pathset *ps)
{
	char buf[32], buf2[32];
	double us;
	size_t i;
	int tier;

	if (!ps->n_paths)
		fprintf(fp,
			"no causal paths found (%zu edge pairs "
			"correlated)\n",
			ps->n_correlations);
	for (i = 0; i < ps->n_paths; i++) {
		const struct cw_path *p = &ps->paths[i];

		fprintf(fp, "path %zu from %s:\n", i + 1, t->names[p->root]);
		print_hop(fp, t, p, &p->hops[0], 0);
		fmt_us(end_to_end_us(p), buf, sizeof(buf));
		tier = slowest_tier(p, &us);
		fmt_us(us, buf2, sizeof(buf2));
		fprintf(fp, "  end-to-end latency %s", buf);
		if (tier >= 0)
			fprintf(fp, "; %s adds the most (%s)", t->names[tier],
				buf2);
		fprintf(fp, "\n\n");
	}
}

static void json_hop(struct cw_jsonw *w, const struct cw_msgtrace *t,
		     const struct cw_hop *h)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_i64(w, "id", h->id);
	if (h->parent < 0)
		cw_jsonw_null(w, "parent");
	else
		cw_jsonw_i64(w, "parent", h->parent);
	cw_jsonw_str(w, "from", t->names[h->from]);
	cw_jsonw_str(w, "to", t->names[h->to]);
	cw_jsonw_u64(w, "messages", h->messages);
	cw_jsonw_obj_open(w, "delay_us");
	cw_jsonw_double(w, "p10", h->p10_us);
	cw_jsonw_double(w, "median", h->median_us);
	cw_jsonw_double(w, "p90", h->p90_us);
	cw_jsonw_obj_close(w);
	cw_jsonw_double(w, "score", h->score);
	cw_jsonw_bool(w, "reply", h->is_return);
	cw_jsonw_obj_close(w);
}

void cw_pathset_print_json(FILE *fp, const struct cw_msgtrace *t,
			   const struct cw_pathset *ps)
{
	struct cw_jsonw w;
	size_t i, k;
	double us;
	int tier;

	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "method",
		     ps->method == CW_PATHS_NESTING ? "nesting"
						    : "convolution");
	cw_jsonw_arr_open(&w, "paths");
	for (i = 0; i < ps->n_paths; i++) {
		const struct cw_path *p = &ps->paths[i];

		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_str(&w, "root", t->names[p->root]);
		cw_jsonw_double(&w, "end_to_end_us", end_to_end_us(p));
		tier = slowest_tier(p, &us);
		if (tier >= 0)
			cw_jsonw_str(&w, "slowest_tier", t->names[tier]);
		cw_jsonw_arr_open(&w, "hops");
		for (k = 0; k < p->n_hops; k++)
			json_hop(&w, t, &p->hops[k]);
		cw_jsonw_arr_close(&w);
		cw_jsonw_obj_close(&w);
	}
	cw_jsonw_arr_close(&w);
	cw_jsonw_u64(&w, "correlations", ps->n_correlations);
	if (ps->truncated) /* only then, so complete answers keep their form */
		cw_jsonw_bool(&w, "truncated", true);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* ---- evaluation --------------------------------------------------------- */

static bool truth_has_edge(const struct cw_truth *tr, uint32_t a, uint32_t b)
{
	size_t i;

	for (i = 0; i < tr->n_edges; i++)
		if (tr->edges[2 * i] == a && tr->edges[2 * i + 1] == b)
			return true;
	return false;
}

static const struct cw_truth_triple *
truth_find(const struct cw_truth *tr, uint32_t i, uint32_t j, uint32_t k)
{
	size_t n;

	for (n = 0; n < tr->n_triples; n++)
		if (tr->triples[n].i == i && tr->triples[n].j == j &&
		    tr->triples[n].k == k)
			return &tr->triples[n];
	return NULL;
}

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t sort_unique(uint64_t *k, size_t n)
{
	size_t i, m = 0;

	qsort(k, n, sizeof(*k), u64cmp);
	for (i = 0; i < n; i++)
		if (!m || k[m - 1] != k[i])
			k[m++] = k[i];
	return m;
}

/* Distinct inferred caller->callee edges (hop from, to) and triples, as
 * keys of 21 bits per node. */
static void collect(const struct cw_pathset *ps, uint64_t *edge, size_t *ne,
		    uint64_t *triple, size_t *nt)
{
	size_t i, k;

	*ne = *nt = 0;
	for (i = 0; i < ps->n_paths; i++) {
		const struct cw_path *p = &ps->paths[i];

		for (k = 0; k < p->n_hops; k++) {
			const struct cw_hop *h = &p->hops[k], *up;

			if (h->parent < 0 || h->is_return)
				continue;
			up = &p->hops[h->parent];
			edge[(*ne)++] = (uint64_t)h->from << 21 | h->to;
			triple[(*nt)++] = ((uint64_t)up->from << 42) |
					  ((uint64_t)h->from << 21) | h->to;
		}
	}
	*ne = sort_unique(edge, *ne);
	*nt = sort_unique(triple, *nt);
}

static double ratio(size_t a, size_t b)
{
	return b ? (double)a / (double)b : 0;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void delay_errors(const struct cw_pathset *ps, const struct cw_truth *tr,
			 struct cw_paths_eval *ev)
{
	size_t i, k, n = 0, cap = 0;
	double *rel = NULL, *abs_ = NULL;

	for (i = 0; i < ps->n_paths; i++)
		cap += ps->paths[i].n_hops;
	rel = calloc(cap + 1, sizeof(*rel));
	abs_ = calloc(cap + 1, sizeof(*abs_));
	for (i = 0; rel && abs_ && i < ps->n_paths; i++) {
		const struct cw_path *p = &ps->paths[i];

		for (k = 0; k < p->n_hops; k++) {
			const struct cw_hop *h = &p->hops[k], *up;
			const struct cw_truth_triple *x;

			if (h->parent < 0 || h->is_return)
				continue;
			up = &p->hops[h->parent];
			x = truth_find(tr, up->from, h->from, h->to);
			if (!x)
				continue;
			abs_[n] = fabs(h->median_us - x->delay_us);
			/* a floor keeps sub-bin delays from dominating */
			rel[n] = abs_[n] /
				 (x->delay_us > 100 ? x->delay_us : 100);
			n++;
		}
	}
	qsort(rel, n, sizeof(double), dcmp);
	qsort(abs_, n, sizeof(double), dcmp);
	ev->delay_n = n;
	ev->delay_rel_err = cw_quantile(rel, n, 0.5);
	ev->delay_abs_err_us = cw_quantile(abs_, n, 0.5);
	free(rel);
	free(abs_);
}

void cw_paths_evaluate(const struct cw_msgtrace *t, const struct cw_truth *tr,
		       const struct cw_pathset *ps, struct cw_paths_eval *ev)
{
	size_t cap = 1, i, ne, nt;
	uint64_t *edge, *triple, m = (1u << 21) - 1;

	(void)t;
	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < ps->n_paths; i++)
		cap += ps->paths[i].n_hops;
	edge = malloc(cap * sizeof(*edge));
	triple = malloc(cap * sizeof(*triple));
	if (!edge || !triple)
		goto out;
	collect(ps, edge, &ne, triple, &nt);
	ev->edges_true = tr->n_edges;
	ev->triples_true = tr->n_triples;
	ev->edges_found = ne;
	ev->triples_found = nt;
	for (i = 0; i < ne; i++)
		ev->edges_hit += truth_has_edge(tr, (uint32_t)(edge[i] >> 21),
						(uint32_t)(edge[i] & m));
	for (i = 0; i < nt; i++)
		ev->triples_hit +=
			truth_find(tr, (uint32_t)(triple[i] >> 42),
				   (uint32_t)(triple[i] >> 21 & m),
				   (uint32_t)(triple[i] & m)) != NULL;
	ev->edge_precision = ratio(ev->edges_hit, ev->edges_found);
	ev->edge_recall = ratio(ev->edges_hit, ev->edges_true);
	ev->triple_precision = ratio(ev->triples_hit, ev->triples_found);
	ev->triple_recall = ratio(ev->triples_hit, ev->triples_true);
	delay_errors(ps, tr, ev);
out:
	free(edge);
	free(triple);
}
