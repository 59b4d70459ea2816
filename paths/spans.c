// SPDX-License-Identifier: MIT
/*
 * Span traces with parent links, turned into message observations between
 * services and into the ground truth those messages should yield.  A span
 * whose parent ran in another pod is a call parent -> child: the client
 * sends at the parent span's start, the server receives at the child's
 * start, answers at the child's end and the client hears back at the
 * parent's end.  Trace ids are dropped on the way.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/paths.h"

#define CLIENT_NODE "client"

struct span {
	char *id, *parent; /* parent NULL for a request's root */
	uint32_t pod, svc;
	uint64_t start, end;
	long parent_idx;
};

struct span_set {
	struct span *s;
	size_t n, cap;
	struct cw_msgtrace pods; /* only its name index is used */
};

static void span_set_release(struct span_set *ss)
{
	size_t i;

	for (i = 0; i < ss->n; i++) {
		free(ss->s[i].id);
		free(ss->s[i].parent);
	}
	free(ss->s);
	cw_msgtrace_release(&ss->pods);
}

static bool alnum_run(const char *s, size_t lo, size_t hi)
{
	size_t n = strlen(s);

	if (n < lo || n > hi)
		return false;
	while (*s)
		if (!isalnum((unsigned char)*s++))
			return false;
	return true;
}

/*
 * "cartservice-579f59597d-wc2lz" -> "cartservice" (a Deployment's pod:
 * ReplicaSet hash, then a 5-character suffix); "db-0" -> "db" (a
 * StatefulSet's ordinal); anything else is kept whole.
 */
static void service_of(const char *pod, char *svc, size_t len)
{
	char *last, *prev;

	snprintf(svc, len, "%s", pod);
	last = strrchr(svc, '-');
	if (!last || last == svc)
		return;
	*last = '\0';
	prev = strrchr(svc, '-');
	if (prev && prev != svc && alnum_run(last + 1, 5, 5) &&
	    alnum_run(prev + 1, 6, 10)) {
		*prev = '\0';
		return;
	}
	if (last[1] && strspn(last + 1, "0123456789") == strlen(last + 1))
		return;
	*last = '-'; /* not a replica suffix */
}

static int span_add(struct span_set *ss, struct cw_msgtrace *t, const char *id,
		    const char *parent, const char *pod, const char *svc_name,
		    uint64_t start, uint64_t end)
{
	struct span *s;
	int p, v;

	if (CW_GROW(ss->s, ss->cap, ss->n + 1, 1024))
		return cw_error("out of memory for spans");
	p = cw_msgtrace_node(&ss->pods, pod);
	v = cw_msgtrace_node(t, svc_name);
	s = &ss->s[ss->n];
	memset(s, 0, sizeof(*s));
	s->id = strdup(id);
	s->parent = parent && *parent && strcmp(parent, "root") ? strdup(parent)
								: NULL;
	if (p < 0 || v < 0 || !s->id ||
	    (parent && *parent && !s->parent && strcmp(parent, "root"))) {
		free(s->id);
		free(s->parent);
		return cw_error("out of memory");
	}
	s->pod = (uint32_t)p;
	s->svc = (uint32_t)v;
	s->start = start;
	s->end = end < start ? start : end;
	ss->n++;
	return 0;
}

/* The rows, in file order, as spans of services. */
static int spans_of(struct span_set *ss, struct cw_msgtrace *t,
		    const struct cw_span_rows *r)
{
	char svc[256];
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct cw_span_row *x = &r->rows[i];

		if (!x->service)
			service_of(x->pod, svc, sizeof(svc));
		if (span_add(ss, t, x->id, x->parent, x->pod,
			     x->service ? x->service : svc, x->start_ns,
			     x->end_ns))
			return -1;
	}
	return 0;
}

/* ---- spans to messages and truth ---------------------------------------- */

static int id_cmp(const void *a, const void *b)
{
	return strcmp(((const struct span *)a)->id,
		      ((const struct span *)b)->id);
}

static void link_parents(struct span_set *ss)
{
	struct span key, *hit;
	size_t i;

	qsort(ss->s, ss->n, sizeof(*ss->s), id_cmp);
	for (i = 0; i < ss->n; i++) {
		ss->s[i].parent_idx = -1;
		if (!ss->s[i].parent)
			continue;
		key.id = ss->s[i].parent;
		hit = bsearch(&key, ss->s, ss->n, sizeof(*ss->s), id_cmp);
		if (hit)
			ss->s[i].parent_idx = hit - ss->s;
	}
}

/* One call: four observations, each on the clock of the node that sees it. */
static int add_call(struct cw_msgtrace *t, uint32_t cli, uint32_t srv,
		    uint64_t send, uint64_t recv, uint64_t reply, uint64_t back)
{
	if (cw_msgtrace_add(t, send, cli, srv, CW_MSG_OUT, 0) ||
	    cw_msgtrace_add(t, recv, srv, cli, CW_MSG_IN, 0) ||
	    cw_msgtrace_add(t, reply, srv, cli, CW_MSG_OUT, 0))
		return -1;
	return cw_msgtrace_add(t, back, cli, srv, CW_MSG_IN, 0);
}

/* The span in the same pod where the request entered it, walking up. */
static const struct span *entry_of(const struct span_set *ss,
				   const struct span *s)
{
	size_t guard = 0;

	while (s->parent_idx >= 0 && ss->s[s->parent_idx].pod == s->pod &&
	       guard++ < ss->n)
		s = &ss->s[s->parent_idx];
	return s;
}

static int truth_edge(struct cw_truth *tr, uint32_t a, uint32_t b)
{
	size_t i;

	for (i = 0; i < tr->n_edges; i++)
		if (tr->edges[2 * i] == a && tr->edges[2 * i + 1] == b)
			return 0;
	if (tr->n_edges == tr->cap_edges) {
		/* Two ends per edge: grow in ends, keep the count in edges. */
		size_t ends = tr->cap_edges * 2;

		if (CW_GROW(tr->edges, ends, 2 * tr->n_edges + 2, 128))
			return cw_error("out of memory for edges");
		tr->cap_edges = ends / 2;
	}
	tr->edges[2 * tr->n_edges] = a;
	tr->edges[2 * tr->n_edges++ + 1] = b;
	return 0;
}

static struct cw_truth_triple *truth_triple(struct cw_truth *tr, uint32_t i,
					    uint32_t j, uint32_t k)
{
	struct cw_truth_triple *x;
	size_t n;

	for (n = 0; n < tr->n_triples; n++) {
		x = &tr->triples[n];
		if (x->i == i && x->j == j && x->k == k)
			return x;
	}
	if (CW_GROW(tr->triples, tr->cap_triples, tr->n_triples + 1, 64))
		return NULL;
	x = &tr->triples[tr->n_triples++];
	memset(x, 0, sizeof(*x));
	x->i = i, x->j = j, x->k = k;
	return x;
}

static int triple_sample(struct cw_truth_triple *x, double us)
{
	if (CW_GROW(x->samples, x->cap, x->n + 1, 16))
		return cw_error("out of memory for samples");
	x->samples[x->n++] = us;
	return 0;
}

/* The caller of the request that entered pod of `e`: a service or client. */
static uint32_t caller_of(const struct span_set *ss, const struct span *e,
			  uint32_t client)
{
	return e->parent_idx >= 0 ? ss->s[e->parent_idx].svc : client;
}

static int record_truth(struct cw_truth *tr, const struct span_set *ss,
			const struct span *s, uint32_t client)
{
	const struct span *p = &ss->s[s->parent_idx], *e = entry_of(ss, p);
	struct cw_truth_triple *x;

	if (truth_edge(tr, p->svc, s->svc))
		return -1;
	x = truth_triple(tr, caller_of(ss, e, client), p->svc, s->svc);
	if (!x)
		return cw_error("out of memory");
	return triple_sample(x, (double)(p->start - e->start) / 1e3);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int spans_to_messages(struct span_set *ss, struct cw_msgtrace *t,
			     struct cw_truth *tr)
{
	int client = cw_msgtrace_node(t, CLIENT_NODE);
	size_t i;

	if (client < 0)
		return cw_error("out of memory");
	link_parents(ss);
	for (i = 0; i < ss->n; i++) {
		const struct span *s = &ss->s[i], *p;

		if (s->parent_idx < 0) {
			if (!s->parent &&
			    add_call(t, (uint32_t)client, s->svc, s->start,
				     s->start, s->end, s->end))
				return -1;
			continue;
		}
		p = &ss->s[s->parent_idx];
		if (p->pod == s->pod || p->svc == s->svc)
			continue;
		if (add_call(t, p->svc, s->svc, p->start, s->start, s->end,
			     p->end))
			return -1;
		if (tr && record_truth(tr, ss, s, (uint32_t)client))
			return -1;
		if (tr)
			tr->n_calls++;
	}
	for (i = 0; tr && i < tr->n_triples; i++) {
		struct cw_truth_triple *x = &tr->triples[i];

		qsort(x->samples, x->n, sizeof(double), dbl_cmp);
		x->delay_us = x->samples[x->n / 2];
	}
	return 0;
}

void cw_truth_init(struct cw_truth *tr)
{
	memset(tr, 0, sizeof(*tr));
}

void cw_truth_release(struct cw_truth *tr)
{
	size_t i;

	for (i = 0; i < tr->n_triples; i++)
		free(tr->triples[i].samples);
	free(tr->triples);
	free(tr->edges);
	cw_truth_init(tr);
}

int cw_spans_read(struct cw_msgtrace *t, struct cw_truth *tr, FILE *fp,
		  const char *what)
{
	struct cw_span_rows rows = {0};
	struct span_set ss = {0};
	int err = cw_span_rows_read(&rows, fp, what);

	if (!err)
		err = spans_of(&ss, t, &rows);
	cw_span_rows_release(&rows);
	if (!err)
		err = spans_to_messages(&ss, t, tr);
	if (tr)
		tr->n_spans = ss.n;
	span_set_release(&ss);
	return err;
}

int cw_spans_read_file(struct cw_msgtrace *t, struct cw_truth *tr,
		       const char *path)
{
	FILE *fp = fopen(path, "r");
	int err;

	if (!fp)
		return cw_error("unable to open '%s': %m", path);
	err = cw_spans_read(t, tr, fp, path);
	fclose(fp);
	return err ? err : cw_msgtrace_finish(t, path);
}
