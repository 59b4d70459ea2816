// SPDX-License-Identifier: MIT
/* What both inference methods share: the edge index, roots, path trees. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/paths.h"

struct keyed_ts {
	uint64_t key; /* from << 32 | to */
	uint64_t ts;
	uint8_t dir;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed_ts *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->dir != y->dir)
		return (int)y->dir - (int)x->dir; /* out first */
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Rank pairing is wrong once a message is lost, but the median of the
 * rank-paired offsets still tells the skew plus network delay. */
static int64_t median_offset(const struct cw_msg_edge *e)
{
	size_t n = e->n_out < e->n_in ? e->n_out : e->n_in, i;
	int64_t *d = malloc((n ? n : 1) * sizeof(*d)), m = 0;

	if (d && n) {
		for (i = 0; i < n; i++)
			d[i] = (int64_t)(e->in[i] - e->out[i]);
		qsort(d, n, sizeof(*d), i64_cmp);
		m = d[n / 2];
	}
	free(d);
	return m;
}

static int index_fill(struct cw_edge_index *ix, struct keyed_ts *k, size_t n)
{
	size_t i = 0, e = 0, j;

	while (i < n) {
		struct cw_msg_edge *ed = &ix->edges[e++];

		ed->from = (uint32_t)(k[i].key >> 32);
		ed->to = (uint32_t)k[i].key;
		ed->out = ix->ts + i;
		for (j = i; j < n && k[j].key == k[i].key; j++)
			ix->ts[j] = k[j].ts;
		while (i < j && k[i].dir == CW_MSG_OUT)
			i++, ed->n_out++;
		ed->in = ix->ts + i;
		ed->n_in = j - i;
		i = j;
		if (ed->n_out != ed->n_in)
			ed->offset_ns = median_offset(ed);
	}
	return (int)e;
}

static void index_nodes(struct cw_edge_index *ix, const struct cw_msgtrace *t)
{
	size_t i, e = 0;

	for (i = 0; i <= ix->n_nodes; i++) {
		while (e < ix->n_edges && ix->edges[e].from < i)
			e++;
		ix->out_first[i] = e;
	}
	for (i = 0; i < ix->n_nodes; i++)
		ix->node_t0[i] = UINT64_MAX;
	for (i = 0; i < t->n_msgs; i++) {
		const struct cw_msg *m = &t->msgs[i];

		if (m->ts_ns < ix->node_t0[m->node])
			ix->node_t0[m->node] = m->ts_ns;
		if (m->ts_ns > ix->node_t1[m->node])
			ix->node_t1[m->node] = m->ts_ns;
	}
	for (i = 0; i < ix->n_nodes; i++)
		if (ix->node_t0[i] != UINT64_MAX &&
		    ix->node_t1[i] - ix->node_t0[i] > ix->span_ns)
			ix->span_ns = ix->node_t1[i] - ix->node_t0[i];
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool known_call(const struct cw_edge_index *ix, uint32_t a, uint32_t b)
{
	uint64_t key = (uint64_t)a << 32 | b;

	return ix->n_calls &&
	       bsearch(&key, ix->calls, ix->n_calls, sizeof(key), u64_cmp);
}

/*
 * Whether `a` started the conversation with `b`.  The trace's own call
 * list decides when it knows one direction only (a live trace has each
 * connection's roles); else: on a's own clock, it sent to b before it
 * heard from b.  That guess fails when a window opens in the middle of a
 * call, with the reply seen first.  When a is never observed itself (an
 * outside client, only ever a peer), b's clock decides: b heard from a
 * before it answered.
 */
static bool initiates(const struct cw_edge_index *ix, uint32_t a, uint32_t b)
{
	const struct cw_msg_edge *ab = cw_edge_index_get(ix, a, b);
	const struct cw_msg_edge *ba = cw_edge_index_get(ix, b, a);
	bool ac, bc;

	if (!ab || (!ab->n_out && !ab->n_in))
		return false;
	ac = known_call(ix, a, b);
	bc = known_call(ix, b, a);
	if (ac != bc)
		return ac;
	if (!ab->n_out) /* a is only a peer (an outside client): b's view */
		return !ba || !ba->n_out || ab->in[0] <= ba->out[0];
	return !ba || !ba->n_in || ab->out[0] <= ba->in[0];
}

/* The trace's known calls, sorted and unique, for known_call(). */
static int index_calls(struct cw_edge_index *ix, const struct cw_msgtrace *t)
{
	size_t i, n = 0;

	if (!t->n_calls)
		return 0;
	ix->calls = malloc(t->n_calls * sizeof(*ix->calls));
	if (!ix->calls)
		return cw_error("out of memory for %zu calls", t->n_calls);
	memcpy(ix->calls, t->calls, t->n_calls * sizeof(*ix->calls));
	qsort(ix->calls, t->n_calls, sizeof(*ix->calls), u64_cmp);
	for (i = 0; i < t->n_calls; i++)
		if (!n || ix->calls[n - 1] != ix->calls[i])
			ix->calls[n++] = ix->calls[i];
	ix->n_calls = n;
	return 0;
}

static void mark_replies(struct cw_edge_index *ix)
{
	size_t e;

	for (e = 0; e < ix->n_edges; e++)
		ix->edges[e].reply =
			initiates(ix, ix->edges[e].to, ix->edges[e].from);
}

int cw_edge_index_build(struct cw_edge_index *ix, const struct cw_msgtrace *t)
{
	struct keyed_ts *k = malloc((t->n_msgs + 1) * sizeof(*k));
	size_t i, n = t->n_msgs, v = t->n_names;

	memset(ix, 0, sizeof(*ix));
	ix->n_nodes = v;
	ix->edges = calloc(n + 1, sizeof(*ix->edges));
	ix->ts = malloc((n + 1) * sizeof(*ix->ts));
	ix->out_first = calloc(v + 1, sizeof(*ix->out_first));
	ix->node_t0 = calloc(v + 1, sizeof(*ix->node_t0));
	ix->node_t1 = calloc(v + 1, sizeof(*ix->node_t1));
	if (!k || !ix->edges || !ix->ts || !ix->out_first || !ix->node_t0 ||
	    !ix->node_t1) {
		free(k);
		cw_edge_index_release(ix);
		return cw_error("out of memory for %zu messages", n);
	}
	for (i = 0; i < n; i++) {
		const struct cw_msg *m = &t->msgs[i];
		uint64_t a = m->dir == CW_MSG_OUT ? m->node : m->peer;
		uint64_t b = m->dir == CW_MSG_OUT ? m->peer : m->node;

		k[i] = (struct keyed_ts){a << 32 | b, m->ts_ns, m->dir};
	}
	qsort(k, n, sizeof(*k), keyed_cmp);
	ix->n_edges = (size_t)index_fill(ix, k, n);
	free(k);
	index_nodes(ix, t);
	if (index_calls(ix, t)) {
		cw_edge_index_release(ix);
		return -1;
	}
	mark_replies(ix);
	return 0;
}

void cw_edge_index_release(struct cw_edge_index *ix)
{
	free(ix->edges);
	free(ix->calls);
	free(ix->ts);
	free(ix->out_first);
	free(ix->node_t0);
	free(ix->node_t1);
	memset(ix, 0, sizeof(*ix));
}

const struct cw_msg_edge *cw_edge_index_get(const struct cw_edge_index *ix,
					    uint32_t from, uint32_t to)
{
	size_t i;

	if (from >= ix->n_nodes)
		return NULL;
	for (i = ix->out_first[from]; i < ix->out_first[from + 1]; i++)
		if (ix->edges[i].to == to)
			return &ix->edges[i];
	return NULL;
}

size_t cw_edge_arrival_of(const struct cw_msg_edge *e, size_t idx)
{
	uint64_t want;
	size_t lo = 0, hi = e->n_in;

	if (e->n_out == e->n_in)
		return idx;
	if (!e->n_in)
		return SIZE_MAX;
	want = e->out[idx] + (uint64_t)e->offset_ns;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->in[mid] < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == e->n_in)
		return e->n_in - 1;
	if (lo > 0 && want - e->in[lo - 1] < e->in[lo] - want)
		return lo - 1;
	return lo;
}

double cw_quantile(const double *sorted, size_t n, double q)
{
	double pos, frac;
	size_t i;

	if (!n)
		return 0;
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	frac = pos - (double)i;
	return i + 1 < n ? sorted[i] * (1 - frac) + sorted[i + 1] * frac
			 : sorted[i];
}

int cw_paths_roots(const struct cw_msgtrace *t, int *roots, size_t max)
{
	struct cw_edge_index ix;
	size_t n = 0, v, e;

	if (cw_edge_index_build(&ix, t))
		return -1;
	for (v = 0; v < ix.n_nodes && n + 1 < max; v++) {
		bool root = ix.out_first[v] < ix.out_first[v + 1];

		/* Called by nobody: it opens every conversation it is in. */
		for (e = 0; root && e < ix.n_edges; e++)
			if (ix.edges[e].to == v &&
			    !initiates(&ix, (uint32_t)v, ix.edges[e].from))
				root = false;
		if (root)
			roots[n++] = (int)v;
	}
	roots[n] = -1;
	cw_edge_index_release(&ix);
	return (int)n;
}

void cw_paths_opts_default(struct cw_paths_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->bin_ns = 100 * NSEC_PER_USEC;
	o->max_delay_ns = NSEC_PER_SEC;
	o->root = -1;
	o->alpha = 0.01;
	o->threads = 2;
	o->max_depth = 16;
	o->max_visits = CW_PATHS_MAX_VISITS;
}

int cw_paths_opts_check(const struct cw_paths_opts *o)
{
	if (!o->bin_ns)
		return cw_error("--bin must be longer than 0");
	if (o->max_delay_ns < o->bin_ns)
		return cw_error("--max-delay must be at least one --bin");
	/* Lags and signal share one transform of at most CW_PATHS_MAX_BINS. */
	if (o->max_delay_ns / o->bin_ns >= CW_PATHS_MAX_BINS / 2)
		return cw_error(
			"--max-delay %lluns is %llu bins of %lluns: at "
			"most %u fit (use a larger --bin or a smaller "
			"--max-delay)",
			(unsigned long long)o->max_delay_ns,
			(unsigned long long)(o->max_delay_ns / o->bin_ns),
			(unsigned long long)o->bin_ns,
			CW_PATHS_MAX_BINS / 2 - 1);
	return 0;
}

void cw_pathset_init(struct cw_pathset *ps)
{
	memset(ps, 0, sizeof(*ps));
}

void cw_pathset_release(struct cw_pathset *ps)
{
	size_t i;

	for (i = 0; i < ps->n_paths; i++)
		free(ps->paths[i].hops);
	free(ps->paths);
	cw_pathset_init(ps);
}

struct cw_path *cw_pathset_add(struct cw_pathset *ps, uint32_t root)
{
	struct cw_path *p;

	if (CW_GROW(ps->paths, ps->cap_paths, ps->n_paths + 1, 8))
		return NULL;
	p = &ps->paths[ps->n_paths++];
	memset(p, 0, sizeof(*p));
	p->root = root;
	return p;
}

int cw_path_add_hop(struct cw_path *p, const struct cw_hop *h)
{
	if (CW_GROW(p->hops, p->cap_hops, p->n_hops + 1, 8))
		return cw_error("out of memory for a path's hops");
	p->hops[p->n_hops] = *h;
	p->hops[p->n_hops].id = (int)p->n_hops;
	return (int)p->n_hops++;
}
