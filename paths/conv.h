/* SPDX-License-Identifier: MIT */
/*
 * Private to correlator/paths_conv.c and paths_signif.c: the convolution's
 * working structures, and the significance tests that read spikes off a
 * cross-correlation.
 */
#ifndef CW_PATHS_CONV_H
#define CW_PATHS_CONV_H

#include <fftw3.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "paths/paths.h"

#define MAX_FFT	    CW_PATHS_MAX_BINS
#define N_PLANS	    25
#define MAX_WINDOWS 64
#define SCAN_LIMIT  256 /* arrivals examined per departure */
#define N_WIDTHS    5

struct lag_count {
	long lag; /* bins; negative: the departure came first */
	double n;
};

/* What a worker keeps from pair to pair and visit to visit. */
struct scratch {
	double *lags;	       /* direct counts: c[l], c[2 lmax + 1 - l] */
	struct lag_count *ent; /* nonzero lags of a direct count */
	size_t n_ent;
	double *sig; /* FFT signal and correlation */
	fftw_complex *D;
	size_t n_sig; /* size sig and D were made for */
};

#define MAX_WORKERS 8

struct conv_ctx {
	const struct cw_msgtrace *t;
	const struct cw_paths_opts *o;
	struct cw_edge_index ix;
	size_t lmax;	    /* lags examined, in bins */
	double total_bins;  /* the observation window in bins */
	pthread_mutex_t mu; /* FFTW planning is not thread-safe */
	fftw_plan fwd[N_PLANS], inv[N_PLANS];
	size_t n_corr;
	size_t n_visits; /* against o->max_visits */
	bool truncated;
	struct scratch sc[MAX_WORKERS];
};

struct lag_window {
	size_t lo, hi; /* bins, inclusive */
};

/* One pair: arrivals at j (the visit's) against departures j->k. */
struct conv_job {
	const struct cw_msg_edge *e;
	double score;
	double base1;	  /* what chance puts in one lag */
	double center_ns; /* excess-weighted mean lag of the spikes, or -1 */
	struct lag_window
		win[MAX_WINDOWS]; /* the lags FindCausedMessages uses */
	size_t n_win;
	struct lag_window scale_win[N_WIDTHS][MAX_WINDOWS];
	size_t n_scale_win[N_WIDTHS];
	size_t *caused; /* indices into e->out */
	double *delay_us;
	size_t n_caused;
	int err;
};

struct visit {
	struct conv_ctx *c;
	uint32_t j;
	const uint64_t *arr;
	size_t n_arr;
	uint64_t t0;
	size_t nfft;
	int log2n;
	fftw_complex *A; /* transform of the arrivals */
	struct conv_job *jobs;
	size_t n_jobs, next;
	pthread_mutex_t mu;
};

/*
 * Spikes in a cross-correlation c (nfft bins, lags [0, lmax]) computed by
 * FFT, or in the lag counts of a sparse pair: windows whose coincidences
 * beat what chance gives go to jb.
 */
void find_spikes(struct conv_job *jb, const double *c, size_t nfft, size_t lmax,
		 double chance_per_lag, double alpha);
void find_spikes_sparse(struct conv_job *jb, const struct lag_count *ent,
			size_t n, size_t lmax, double chance_per_lag,
			double alpha);

#endif
