// SPDX-License-Identifier: MIT
/*
 * The convolution method.  At node j the messages arriving from i and the
 * messages leaving for k are binned (both on j's clock) and cross-correlated
 * with FFTs; a lag whose coincidences beat chance is a causal delay.  The
 * recursion starts at a root's edges and, at each hop, keeps only the
 * messages the spike explains (FindPathsFromRoot / ProcessNode /
 * FindCausedMessages in the paper).
 *
 * Layout: pair counting (FFT, or directly for sparse pairs: same counts),
 * caused messages, then the recursion and its worker threads; deciding
 * which lags are significant is in paths_signif.c.
 */
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/conv.h"

static int get_plans(struct conv_ctx *c, int lg)
{
	size_t n = (size_t)1 << lg;
	double *r;
	fftw_complex *x;
	int err = 0;

	pthread_mutex_lock(&c->mu);
	if (!c->fwd[lg]) {
		r = fftw_malloc(n * sizeof(*r));
		x = fftw_malloc((n / 2 + 1) * sizeof(*x));
		if (r && x) {
			c->fwd[lg] = fftw_plan_dft_r2c_1d((int)n, r, x,
							  FFTW_ESTIMATE);
			c->inv[lg] = fftw_plan_dft_c2r_1d((int)n, x, r,
							  FFTW_ESTIMATE);
		}
		if (!c->fwd[lg] || !c->inv[lg])
			err = cw_error("unable to plan an FFT of %zu points",
				       n);
		fftw_free(r);
		fftw_free(x);
	}
	pthread_mutex_unlock(&c->mu);
	return err;
}

static void bin_signal(double *s, size_t n, const uint64_t *ts, size_t cnt,
		       uint64_t t0, uint64_t bin)
{
	size_t i, b;

	memset(s, 0, n * sizeof(*s));
	for (i = 0; i < cnt; i++) {
		if (ts[i] < t0)
			continue;
		b = (size_t)((ts[i] - t0) / bin);
		if (b < n)
			s[b] += 1;
	}
}

/* log P(X >= s) for X ~ Poisson(lambda). */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static bool in_windows(const struct conv_job *jb, uint64_t d, uint64_t bin)
{
	size_t i;

	for (i = 0; i < jb->n_win; i++) {
		uint64_t lo = jb->win[i].lo ? (jb->win[i].lo - 1) * bin : 0;
		uint64_t hi = (jb->win[i].hi + 1) * bin;

		if (d >= lo && d <= hi)
			return true;
	}
	return false;
}

/*
 * The arrival that caused departure `dep`: among those whose delay lies in
 * a spike, the one nearest the typical delay `target_ns` (or, before that
 * is known, the latest).  Under load another request's arrival often also
 * falls in the spike; the typical delay tells them apart.
 */
static long cause_of(const struct visit *v, const struct conv_job *jb,
		     uint64_t dep, uint64_t bin, double target_ns)
{
	size_t lo = 0, hi = v->n_arr, n = 0, i;
	uint64_t max_hi = 0, d;
	double best_gap = INFINITY, gap;
	long best = -1;

	for (i = 0; i < jb->n_win; i++)
		if ((jb->win[i].hi + 1) * bin > max_hi)
			max_hi = (jb->win[i].hi + 1) * bin;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v->arr[mid] <= dep)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0 && n++ < SCAN_LIMIT && dep - v->arr[lo] <= max_hi) {
		d = dep - v->arr[lo];
		if (!in_windows(jb, d, bin))
			continue;
		if (target_ns < 0)
			return (long)lo;
		gap = fabs((double)d - target_ns);
		if (gap >= best_gap)
			continue;
		best_gap = gap;
		best = (long)lo;
	}
	return best;
}

static void attribute(const struct visit *v, struct conv_job *jb,
		      double target_ns)
{
	const struct cw_msg_edge *e = jb->e;
	size_t i;
	long a;

	jb->n_caused = 0;
	for (i = 0; i < e->n_out; i++) {
		a = cause_of(v, jb, e->out[i], v->c->o->bin_ns, target_ns);
		if (a < 0)
			continue;
		jb->caused[jb->n_caused] = i;
		jb->delay_us[jb->n_caused++] =
			(double)(e->out[i] - v->arr[a]) / 1e3;
	}
	qsort(jb->delay_us, jb->n_caused, sizeof(double), dbl_cmp);
}

/* FindCausedMessages: each departure in a spike, to the arrival whose
 * delay is nearest the spike's center (failing that, the median delay of a
 * first pass that takes the latest arrival). */
static int find_caused(const struct visit *v, struct conv_job *jb)
{
	size_t n = jb->e->n_out + 1;

	jb->caused = malloc(n * sizeof(*jb->caused));
	jb->delay_us = malloc(n * sizeof(*jb->delay_us));
	if (!jb->caused || !jb->delay_us)
		return cw_error("out of memory");
	if (jb->center_ns >= 0) {
		attribute(v, jb, jb->center_ns);
		return 0;
	}
	attribute(v, jb, -1);
	if (jb->n_caused)
		attribute(v, jb,
			  1e3 * cw_quantile(jb->delay_us, jb->n_caused, 0.5));
	return 0;
}

/*
 * Sparse pairs (few messages against a long window) are cheaper to count
 * directly than through transforms of the whole window; both give the same
 * c[l], so the choice is only about time.
 */
static bool use_direct(const struct visit *v, const struct cw_msg_edge *e)
{
	double lags = 2.0 * (double)v->c->lmax + 1;
	double pairs =
		(double)v->n_arr * (double)e->n_out * lags / (double)v->nfft;

	if (v->c->o->fft_only)
		return false;
	return pairs + lags < 2.0 * (double)v->nfft * (double)v->log2n;
}

static size_t bin_of(const struct visit *v, uint64_t ts)
{
	return (size_t)((ts - v->t0) / v->c->o->bin_ns);
}

static int lag_cmp(const void *a, const void *b)
{
	long x = ((const struct lag_count *)a)->lag;
	long y = ((const struct lag_count *)b)->lag;

	return x < y ? -1 : x > y;
}

/*
 * c[l] for |l| <= lmax by walking the pairs (c[2 lmax + 1 - l] for l < 0,
 * the layout of a correlation by FFT), and the lags that got any, sorted
 * when few.  The buffer is all zeros before and after (clear_direct).
 */
static void correlate_direct(const struct visit *v, const struct cw_msg_edge *e,
			     struct scratch *sc)
{
	size_t lmax = v->c->lmax, n = 2 * lmax + 1, i, k = 0, m, ba, bd, idx;
	double *c = sc->lags;

	sc->n_ent = 0;
	for (i = 0; i < v->n_arr; i++) {
		ba = bin_of(v, v->arr[i]);
		while (k < e->n_out && bin_of(v, e->out[k]) + lmax < ba)
			k++;
		for (m = k; m < e->n_out; m++) {
			bd = bin_of(v, e->out[m]);
			if (bd > ba + lmax)
				break;
			idx = bd >= ba ? bd - ba : n - (ba - bd);
			if (!c[idx]++)
				sc->ent[sc->n_ent++].lag =
					bd >= ba ? (long)(bd - ba)
						 : -(long)(ba - bd);
		}
	}
	for (i = 0; i < sc->n_ent; i++) {
		long l = sc->ent[i].lag;

		sc->ent[i].n = c[l >= 0 ? (size_t)l : n - (size_t)-l];
	}
	if (sc->n_ent * 8 < v->c->lmax) /* only the sparse path reads it */
		qsort(sc->ent, sc->n_ent, sizeof(*sc->ent), lag_cmp);
}

/* Back to all zeros at the lags, cheaper than a memset when sparse. */
static void clear_direct(const struct visit *v, struct scratch *sc)
{
	size_t i;

	for (i = 0; i < sc->n_ent; i++) {
		long l = sc->ent[i].lag;

		sc->lags[l >= 0 ? (size_t)l : 2 * v->c->lmax + 1 - (size_t)-l] =
			0;
	}
}

static void correlate_fft(const struct visit *v, const struct cw_msg_edge *e,
			  double *sig, fftw_complex *D)
{
	size_t n = v->nfft, i;

	bin_signal(sig, n, e->out, e->n_out, v->t0, v->c->o->bin_ns);
	fftw_execute_dft_r2c(v->c->fwd[v->log2n], sig, D);
	/* conj(A) * D: c[l] counts arrivals followed l bins later. */
	for (i = 0; i < n / 2 + 1; i++) {
		double ar = v->A[i][0], ai = -v->A[i][1];
		double dr = D[i][0], di = D[i][1];

		D[i][0] = (ar * dr - ai * di) / (double)n;
		D[i][1] = (ar * di + ai * dr) / (double)n;
	}
	fftw_execute_dft_c2r(v->c->inv[v->log2n], D, sig);
	for (i = 0; i < n; i++)
		sig[i] = round(sig[i]); /* counts; drop FFT round-off */
}

/*
 * Where the causal delay sits: the mean lag of the spikes weighted by what
 * each lag has above chance.  Unlike the delays of the attributed pairs it
 * is not pulled toward short lags by other requests' arrivals.  `c` is
 * dense (c[l] for l >= 0) or, with `ent`, the sorted nonzero lags.
 */
static void spike_center(struct conv_job *jb, const double *c,
			 const struct lag_count *ent, size_t n_ent,
			 uint64_t bin)
{
	double sum = 0, wsum = 0, x;
	size_t i, l;

	for (i = 0; i < jb->n_win; i++) {
		for (l = jb->win[i].lo; c && l <= jb->win[i].hi; l++) {
			x = c[l] - jb->base1;
			sum += x > 0 ? x * ((double)l + 0.5) : 0;
			wsum += x > 0 ? x : 0;
		}
	}
	for (i = 0; ent && i < n_ent; i++) {
		if (ent[i].lag < 0 ||
		    !in_windows(jb, (uint64_t)ent[i].lag * bin + bin / 2, bin))
			continue;
		x = ent[i].n - jb->base1;
		sum += x > 0 ? x * ((double)ent[i].lag + 0.5) : 0;
		wsum += x > 0 ? x : 0;
	}
	jb->center_ns = wsum > 0 ? sum / wsum * (double)bin : -1;
}

static int correlate(struct visit *v, struct conv_job *jb, struct scratch *sc)
{
	struct conv_ctx *c = v->c;
	double chance;
	bool direct = !v->A || use_direct(v, jb->e);

	chance = (double)v->n_arr * (double)jb->e->n_out / c->total_bins;
	if (direct) {
		correlate_direct(v, jb->e, sc);
		if (sc->n_ent * 8 < c->lmax) {
			find_spikes_sparse(jb, sc->ent, sc->n_ent, c->lmax,
					   chance, c->o->alpha);
			spike_center(jb, NULL, sc->ent, sc->n_ent,
				     c->o->bin_ns);
		} else {
			find_spikes(jb, sc->lags, 2 * c->lmax + 1, c->lmax,
				    chance, c->o->alpha);
			spike_center(jb, sc->lags, NULL, 0, c->o->bin_ns);
		}
		clear_direct(v, sc);
	} else {
		correlate_fft(v, jb->e, sc->sig, sc->D);
		find_spikes(jb, sc->sig, v->nfft, c->lmax, chance, c->o->alpha);
		spike_center(jb, sc->sig, NULL, 0, c->o->bin_ns);
	}
	return jb->n_win ? find_caused(v, jb) : 0;
}

/* Buffers sized for this visit; the FFT ones only when a pair needs them. */
static int scratch_ready(struct scratch *sc, const struct visit *v)
{
	size_t lmax = v->c->lmax;

	if (!sc->lags) {
		sc->lags = calloc(2 * lmax + 1, sizeof(*sc->lags));
		sc->ent = malloc((2 * lmax + 2) * sizeof(*sc->ent));
		if (!sc->lags || !sc->ent)
			return cw_error("out of memory");
	}
	if (!v->A || sc->n_sig >= v->nfft)
		return 0;
	fftw_free(sc->sig);
	fftw_free(sc->D);
	sc->sig = fftw_malloc(v->nfft * sizeof(*sc->sig));
	sc->D = fftw_malloc((v->nfft / 2 + 1) * sizeof(*sc->D));
	sc->n_sig = sc->sig && sc->D ? v->nfft : 0;
	return sc->n_sig ? 0 : cw_error("out of memory for an FFT");
}

static void scratch_release(struct scratch *sc)
{
	free(sc->lags);
	free(sc->ent);
	fftw_free(sc->sig);
	fftw_free(sc->D);
	memset(sc, 0, sizeof(*sc));
}

struct worker {
	struct visit *v;
	struct scratch *sc;
};

static void *conv_worker(void *arg)
{
	struct worker *wk = arg;
	struct visit *v = wk->v;
	int err = scratch_ready(wk->sc, v);
	size_t k;

	for (;;) {
		pthread_mutex_lock(&v->mu);
		k = v->next++;
		pthread_mutex_unlock(&v->mu);
		if (k >= v->n_jobs)
			break;
		v->jobs[k].err = err ? err : correlate(v, &v->jobs[k], wk->sc);
	}
	return NULL;
}

/* Threads pay off only for visits with real work: many, or dense, pairs. */
static int workers_for(const struct visit *v)
{
	double work = 0;
	size_t k;
	int n = v->c->o->threads;

	for (k = 0; k < v->n_jobs; k++)
		work += (double)v->n_arr + (double)v->jobs[k].e->n_out +
			10.0 * (double)v->c->lmax;
	if (v->A)
		work *= 4;
	if (work < 2e6)
		n = 1;
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	return (size_t)n > v->n_jobs ? (int)v->n_jobs : n;
}

static int run_jobs(struct visit *v)
{
	int n = workers_for(v), i, started = 0;
	struct worker wk[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];

	for (i = 0; i < n; i++)
		wk[i] = (struct worker){v, &v->c->sc[i]};
	for (i = 1; i < n; i++)
		if (!pthread_create(&th[i], NULL, conv_worker, &wk[i]))
			started = i;
	conv_worker(&wk[0]);
	for (i = 1; i <= started; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < (int)v->n_jobs; i++)
		if (v->jobs[i].err)
			return -1;
	return 0;
}

static int visit_setup(struct visit *v)
{
	struct conv_ctx *c = v->c;
	uint64_t span = c->ix.node_t1[v->j] - c->ix.node_t0[v->j];
	uint64_t bins = span / c->o->bin_ns;
	size_t need, k;
	double *sig;

	/* Sizes checked before they are added: span / bin can be 2^64 - 1. */
	if (bins >= MAX_FFT || bins + 2 + c->lmax > MAX_FFT)
		return cw_error("node '%s' spans %llu bins of %lluns: too long "
				"(use a larger --bin)",
				c->t->names[v->j], (unsigned long long)bins,
				(unsigned long long)c->o->bin_ns);
	need = (size_t)bins + 1 + c->lmax + 1;
	v->t0 = c->ix.node_t0[v->j];
	for (v->log2n = 4; ((size_t)1 << v->log2n) < need; v->log2n++)
		;
	v->nfft = (size_t)1 << v->log2n;
	for (k = 0; k < v->n_jobs && use_direct(v, v->jobs[k].e); k++)
		;
	if (k == v->n_jobs)
		return 0; /* every pair is sparse: no transform needed */
	if (get_plans(c, v->log2n))
		return -1;
	sig = fftw_malloc(v->nfft * sizeof(*sig));
	v->A = fftw_malloc((v->nfft / 2 + 1) * sizeof(*v->A));
	if (!sig || !v->A) {
		fftw_free(sig);
		return cw_error("out of memory for an FFT of %zu", v->nfft);
	}
	bin_signal(sig, v->nfft, v->arr, v->n_arr, v->t0, c->o->bin_ns);
	fftw_execute_dft_r2c(c->fwd[v->log2n], sig, v->A);
	fftw_free(sig);
	return 0;
}

struct walk {
	struct conv_ctx *c;
	struct cw_path *path;
	uint32_t stack[64]; /* nodes on the way down, for the loop guard */
	int depth;
};

static bool on_stack(const struct walk *w, uint32_t k)
{
	int i;

	for (i = 0; i <= w->depth; i++)
		if (w->stack[i] == k)
			return true;
	return false;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int visit_node(struct walk *w, int parent, uint32_t j,
		      const uint64_t *arr, size_t n_arr);

/* The caused departures, as arrivals at the next node (its clock). */
static int descend(struct walk *w, int hop, const struct conv_job *jb)
{
	uint64_t *next = malloc((jb->n_caused + 1) * sizeof(*next));
	size_t i, n = 0, a;
	int err;

	if (!next)
		return cw_error("out of memory");
	for (i = 0; i < jb->n_caused; i++) {
		a = cw_edge_arrival_of(jb->e, jb->caused[i]);
		if (a < jb->e->n_in)
			next[n++] = jb->e->in[a];
	}
	qsort(next, n, sizeof(*next), u64_cmp);
	w->stack[++w->depth] = jb->e->to;
	err = n ? visit_node(w, hop, jb->e->to, next, n) : 0;
	w->depth--;
	free(next);
	return err;
}

static int add_hop(struct walk *w, int parent, const struct conv_job *jb)
{
	struct cw_hop h = {
		.parent = parent,
		.from = jb->e->from,
		.to = jb->e->to,
		.messages = jb->n_caused,
		.p10_us = cw_quantile(jb->delay_us, jb->n_caused, 0.1),
		.median_us = cw_quantile(jb->delay_us, jb->n_caused, 0.5),
		.p90_us = cw_quantile(jb->delay_us, jb->n_caused, 0.9),
		.score = jb->score,
		.is_return = jb->e->reply || on_stack(w, jb->e->to),
	};

	return cw_path_add_hop(w->path, &h);
}

static int visit_hops(struct walk *w, int parent, struct visit *v)
{
	size_t k;
	int hop, err = 0;

	for (k = 0; !err && k < v->n_jobs; k++) {
		struct conv_job *jb = &v->jobs[k];

		/* An answer to a caller that is not on this path cannot be
		 * caused by this request. */
		if (!jb->n_caused || (jb->e->reply && !on_stack(w, jb->e->to)))
			continue;
		hop = add_hop(w, parent, jb);
		if (hop < 0)
			return -1;
		if (!w->path->hops[hop].is_return &&
		    w->depth + 1 < w->c->o->max_depth &&
		    w->depth + 1 < (int)CW_ARRAY_SIZE(w->stack))
			err = descend(w, hop, jb);
	}
	return err;
}

static int visit_node(struct walk *w, int parent, uint32_t j,
		      const uint64_t *arr, size_t n_arr)
{
	struct conv_ctx *c = w->c;
	size_t first = c->ix.out_first[j], n = c->ix.out_first[j + 1] - first;
	struct visit v = {.c = c, .j = j, .arr = arr, .n_arr = n_arr};
	size_t k;
	int err;

	if (!n)
		return 0;
	if (c->n_visits >= cw_paths_max_visits(c->o)) {
		c->truncated = true;
		return 0;
	}
	c->n_visits++;
	v.jobs = calloc(n, sizeof(*v.jobs));
	if (!v.jobs)
		return cw_error("out of memory");
	for (k = 0; k < n; k++)
		v.jobs[k].e = &c->ix.edges[first + k];
	v.n_jobs = n;
	pthread_mutex_init(&v.mu, NULL);
	err = visit_setup(&v);
	if (!err)
		err = run_jobs(&v);
	c->n_corr += n;
	fftw_free(v.A);
	if (!err)
		err = visit_hops(w, parent, &v);
	for (k = 0; k < n; k++) {
		free(v.jobs[k].caused);
		free(v.jobs[k].delay_us);
	}
	free(v.jobs);
	pthread_mutex_destroy(&v.mu);
	return err;
}

/* A root edge r->j: the whole message set, then recurse at j. */
static int root_edge(struct conv_ctx *c, struct cw_pathset *ps,
		     const struct cw_msg_edge *e)
{
	struct walk w = {.c = c};
	struct cw_hop h = {.parent = -1,
			   .from = e->from,
			   .to = e->to,
			   .messages = e->n_out ? e->n_out : e->n_in};
	int err;

	w.path = cw_pathset_add(ps, e->from);
	if (!w.path || cw_path_add_hop(w.path, &h) < 0)
		return cw_error("out of memory");
	w.stack[0] = e->from;
	w.stack[1] = e->to;
	w.depth = 1;
	err = visit_node(&w, 0, e->to, e->in, e->n_in);
	if (!err && w.path->n_hops == 1) {
		/* nothing causal follows: not a path */
		free(w.path->hops);
		ps->n_paths--;
	}
	return err;
}

static int conv_roots(struct conv_ctx *c, struct cw_pathset *ps)
{
	int roots[4096], n, i, err = 0;
	size_t e;

	if (c->o->root >= 0) {
		roots[0] = c->o->root;
		n = 1;
	} else {
		n = cw_paths_roots(c->t, roots, CW_ARRAY_SIZE(roots));
		if (n < 0)
			return -1;
	}
	for (i = 0; !err && !c->truncated && i < n; i++) {
		uint32_t r = (uint32_t)roots[i];

		for (e = c->ix.out_first[r];
		     !err && !c->truncated && e < c->ix.out_first[r + 1]; e++)
			err = root_edge(c, ps, &c->ix.edges[e]);
	}
	return err;
}

int cw_paths_convolution(const struct cw_msgtrace *t,
			 const struct cw_paths_opts *o, struct cw_pathset *ps)
{
	struct conv_ctx c = {.t = t, .o = o};
	int err, i;

	cw_pathset_init(ps);
	if (cw_paths_opts_check(o))
		return -1;
	if (cw_edge_index_build(&c.ix, t))
		return -1;
	c.lmax = (size_t)(o->max_delay_ns / o->bin_ns);
	c.total_bins = (double)(c.ix.span_ns / o->bin_ns + 1);
	pthread_mutex_init(&c.mu, NULL);
	err = conv_roots(&c, ps);
	ps->n_correlations = c.n_corr;
	ps->n_visits = c.n_visits;
	ps->truncated = c.truncated;
	ps->method = CW_PATHS_CONVOLUTION;
	for (i = 0; i < N_PLANS; i++) {
		if (c.fwd[i])
			fftw_destroy_plan(c.fwd[i]);
		if (c.inv[i])
			fftw_destroy_plan(c.inv[i]);
	}
	pthread_mutex_destroy(&c.mu);
	for (i = 0; i < MAX_WORKERS; i++)
		scratch_release(&c.sc[i]);
	cw_edge_index_release(&c.ix);
	if (err)
		cw_pathset_release(ps);
	return err;
}
