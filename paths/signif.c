// SPDX-License-Identifier: MIT
/*
 * Significance for the convolution method: chance is read from the
 * correlation at negative lags (a departure before its arrival cannot be
 * caused by it), which also cancels periodic traffic; counts are tested in
 * windows of several widths, with the false-alarm budget split across
 * widths and corrected for the number of windows examined.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "paths/conv.h"

static double log_poisson_tail(double s, double lambda)
{
	double term = 1, sum = 1;
	int i;

	if (s <= 0)
		return 0;
	if (lambda <= 0)
		return -INFINITY;
	if (s <= lambda)
		return 0;
	for (i = 1; i < 10000 && term > 1e-12 * sum; i++) {
		term *= lambda / (s + i);
		sum += term;
	}
	return -lambda + s * log(lambda) - lgamma(s + 1) + log(sum);
}

/* log P(Z >= z) for a standard normal Z, also far in the tail. */
static double log_normal_tail(double z)
{
	if (z < 30)
		return log(0.5 * erfc(z / M_SQRT2));
	return -z * z / 2 - log(z * sqrt(2 * M_PI));
}

struct scale_null {
	double mean, var;
};

/* The null at a window width: sums over negative lags, where a departure
 * precedes the arrival it is paired with and so cannot be caused by it.
 * Periodic traffic shows up there as much as at positive lags. */
static struct scale_null null_at(const double *c, size_t nfft, size_t lmax,
				 size_t w)
{
	struct scale_null z = {0, 0};
	double sum = 0, sq = 0, s = 0;
	size_t l, n = 0;

	for (l = 1; l <= lmax; l++) {
		s += c[nfft - l];
		if (l > w)
			s -= c[nfft - (l - w)];
		if (l < w)
			continue;
		sum += s;
		sq += s * s;
		n++;
	}
	if (n) {
		z.mean = sum / (double)n;
		z.var = sq / (double)n - z.mean * z.mean;
	}
	return z;
}

static double log_p_window(double s, struct scale_null z, double chance)
{
	double lambda = z.mean > chance ? z.mean : chance;

	/* Over-dispersed (bursty or periodic) traffic: judge against the
	 * spread actually seen, not against Poisson. */
	if (z.var > 1.5 * lambda && z.var > 0.25)
		return s <= z.mean
			       ? 0
			       : log_normal_tail((s - z.mean) / sqrt(z.var));
	return log_poisson_tail(s, lambda);
}

/* The smallest window count whose log p-value is under `log_limit`. */
static double least_significant(struct scale_null z, double chance,
				double log_limit)
{
	double lo = floor(z.mean > chance ? z.mean : chance), hi = lo + 1;

	while (log_p_window(hi, z, chance) >= log_limit) {
		lo = hi;
		hi = hi * 2 + 1;
		if (hi > 1e12)
			return INFINITY;
	}
	while (hi - lo > 1) {
		double mid = floor((lo + hi) / 2);

		if (log_p_window(mid, z, chance) < log_limit)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static void add_window(struct lag_window *win, size_t *n_win, size_t lo,
		       size_t hi)
{
	size_t i;

	for (i = 0; i < *n_win; i++) {
		struct lag_window *w = &win[i];

		if (lo <= w->hi + 1 && hi + 1 >= w->lo) {
			w->lo = lo < w->lo ? lo : w->lo;
			w->hi = hi > w->hi ? hi : w->hi;
			return;
		}
	}
	if (*n_win < MAX_WINDOWS)
		win[(*n_win)++] = (struct lag_window){lo, hi};
}

/*
 * Which lags explain messages: those of the finest width that found a
 * spike, widened by the next width (a jittered delay's tails), unless that
 * is the whole range, which would take any arrival for a cause.
 */
static void pick_windows(struct conv_job *jb, size_t n_w)
{
	size_t wi, i, lim;

	for (wi = 0; wi < n_w && !jb->n_scale_win[wi]; wi++)
		;
	if (wi == n_w)
		return;
	lim = wi + 2 < n_w ? wi + 2 : wi + 1;
	for (; wi < lim; wi++)
		for (i = 0; i < jb->n_scale_win[wi]; i++)
			add_window(jb->win, &jb->n_win, jb->scale_win[wi][i].lo,
				   jb->scale_win[wi][i].hi);
}

/*
 * Spikes in c[0..lmax] at widths of 1, 10, 100 and 1000 bins and the whole
 * range: a delay that varies needs a wide window to stand out, and a rare
 * edge only adds up over the whole range.  Each width gets an equal share
 * of alpha, and within a width the share is divided by the number of
 * independent windows (about 2 (lmax + 1) / w for sliding windows: a
 * scan-statistic style correction, like Bonferroni over disjoint windows).
 */
void find_spikes(struct conv_job *jb, const double *c, size_t nfft, size_t lmax,
		 double chance_per_lag, double alpha)
{
	size_t widths[N_WIDTHS] = {1, 10, 100, 1000, lmax + 1};
	double best = 0, s, lp, log_m, log_alpha;
	size_t wi, l, w, n_w = 0;

	while (n_w < CW_ARRAY_SIZE(widths) - 1 && widths[n_w] <= lmax)
		n_w++;
	widths[n_w++] = lmax + 1;
	log_alpha = log(alpha / (double)n_w);
	for (wi = 0; wi < n_w; wi++) {
		struct scale_null z;
		double chance, s_min;

		w = widths[wi];
		z = null_at(c, nfft, lmax, w);
		if (!wi)
			jb->base1 = fmax(z.mean, chance_per_lag);
		chance = chance_per_lag * (double)w;
		log_m = log(w > lmax ? 1.0
				     : 2.0 * (double)(lmax + 1) / (double)w);
		/* p falls as the count rises: find the least significant count
		 * once, and compare counts against it. */
		s_min = least_significant(z, chance, log_alpha - log_m);
		for (s = 0, l = 0; l <= lmax; l++) {
			s += c[l];
			if (l >= w)
				s -= c[l - w];
			if (l + 1 < w || s < s_min)
				continue;
			lp = log_p_window(s, z, chance) + log_m;
			add_window(jb->scale_win[wi], &jb->n_scale_win[wi],
				   l + 1 - w, l);
			lp += log((double)n_w); /* score: family-wise */
			best = -lp > best ? -lp : best;
		}
	}
	jb->score = isinf(best) ? 300 : best / M_LN10; /* 300: p underflowed */
	pick_windows(jb, n_w);
}

/*
 * The null of null_at() from a sparse correlation: the mean and variance
 * of the window sums over negative lags, from the nonzero lags alone (each
 * count is in a known number of windows, each pair of counts closer than
 * w in a known number together).
 */
static struct scale_null null_sparse(const struct lag_count *ent, size_t n,
				     size_t lmax, size_t w)
{
	struct scale_null z = {0, 0};
	double sum = 0, sq = 0, nw;
	size_t a, b, hi_m;

	if (w > lmax)
		return z;
	nw = (double)(lmax - w + 1);
	hi_m = lmax - w; /* window starts 0..hi_m over g[i] = c[-(i+1)] */
	/* negative lags come first, most negative first: i descending */
	for (a = 0; a < n && ent[a].lag < 0; a++) {
		size_t i = (size_t)(-ent[a].lag - 1);

		for (b = a; b < n && ent[b].lag < 0; b++) {
			size_t j = (size_t)(-ent[b].lag - 1); /* j <= i */
			size_t lo = i + 1 >= w ? i + 1 - w : 0;
			size_t top = j < hi_m ? j : hi_m;

			if (i - j >= w)
				break;
			if (top < lo)
				continue;
			if (a == b) {
				sum += ent[a].n * (double)(top - lo + 1);
				sq += ent[a].n * ent[a].n *
				      (double)(top - lo + 1);
			} else {
				sq += 2 * ent[a].n * ent[b].n *
				      (double)(top - lo + 1);
			}
		}
	}
	z.mean = sum / nw;
	z.var = sq / nw - z.mean * z.mean;
	return z;
}

/* Windows of width w whose sum reaches s_min, from the nonzero lags:
 * the sum only changes where a count enters (l) or leaves (l + w). */
static double spikes_sparse_at(struct conv_job *jb, size_t wi,
			       const struct lag_count *ent, size_t n,
			       size_t first, size_t lmax, size_t w,
			       double s_min)
{
	size_t p = first, q = first, pos, next, lo, hi;
	double cur = 0, best = 0;

	while (p < n || q < n) {
		pos = p < n ? (size_t)ent[p].lag : SIZE_MAX;
		if (q < n && (size_t)ent[q].lag + w < pos)
			pos = (size_t)ent[q].lag + w;
		while (p < n && (size_t)ent[p].lag == pos)
			cur += ent[p++].n;
		while (q < n && (size_t)ent[q].lag + w == pos)
			cur -= ent[q++].n;
		next = p < n ? (size_t)ent[p].lag : SIZE_MAX;
		if (q < n && (size_t)ent[q].lag + w < next)
			next = (size_t)ent[q].lag + w;
		if (cur < s_min || next == SIZE_MAX)
			continue;
		lo = pos > w - 1 ? pos : w - 1; /* window ends in [lo, hi] */
		hi = next - 1 < lmax ? next - 1 : lmax;
		if (lo > hi)
			continue;
		add_window(jb->scale_win[wi], &jb->n_scale_win[wi], lo + 1 - w,
			   hi);
		best = cur > best ? cur : best;
	}
	return best;
}

/* find_spikes() for a correlation given as its nonzero lags. */
void find_spikes_sparse(struct conv_job *jb, const struct lag_count *ent,
			size_t n, size_t lmax, double chance_per_lag,
			double alpha)
{
	size_t widths[N_WIDTHS] = {1, 10, 100, 1000, lmax + 1};
	double best = 0, log_m, log_alpha, chance, s_min, top;
	size_t wi, n_w = 0, first = 0;
	struct scale_null z;

	while (n_w < N_WIDTHS - 1 && widths[n_w] <= lmax)
		n_w++;
	widths[n_w++] = lmax + 1;
	log_alpha = log(alpha / (double)n_w);
	while (first < n && ent[first].lag < 0)
		first++;
	for (wi = 0; wi < n_w; wi++) {
		z = null_sparse(ent, n, lmax, widths[wi]);
		if (!wi)
			jb->base1 = fmax(z.mean, chance_per_lag);
		chance = chance_per_lag * (double)widths[wi];
		log_m = log(widths[wi] > lmax ? 1.0
					      : 2.0 * (double)(lmax + 1) /
							(double)widths[wi]);
		s_min = least_significant(z, chance, log_alpha - log_m);
		top = spikes_sparse_at(jb, wi, ent, n, first, lmax, widths[wi],
				       s_min);
		/* score: family-wise, over the widths too */
		if (top > 0)
			best = fmax(best, -(log_p_window(top, z, chance) +
					    log_m + log((double)n_w)));
	}
	jb->score = isinf(best) ? 300 : best / M_LN10;
	pick_windows(jb, n_w);
}
