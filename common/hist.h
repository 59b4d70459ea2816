/* SPDX-License-Identifier: MIT */
/*
 * A log-linear histogram of durations (or any uint64 value), mergeable
 * exactly: two histograms merged hold the same bins as one that saw both
 * streams, so buckets, partitions and correlator members can each keep
 * their own and add them up.  Values below 32 get a bin each; above, each
 * power of two is split into 32 bins, so a quantile read from a bin's
 * middle is within 1/64 (1.6%) of a value that really fell in it.
 *
 * Bins are kept sparse (sorted by index): a latency distribution touches
 * tens of bins, not the 1,920 the range holds.
 *
 *	struct cw_hist h = CW_HIST_INIT;
 *	cw_hist_add(&h, rtt_ns, 1);
 *	cw_hist_merge(&total, &h);
 *	uint64_t p99 = cw_hist_quantile(&total, 0.99);
 *	cw_hist_release(&h);
 *
 * The wire form (cw_hist_encode / cw_hist_decode) is a varint list of
 * (index delta, count) pairs after the count of pairs; the decoder takes
 * any bytes and refuses what is not a well-formed histogram.
 */
#ifndef CW_HIST_H
#define CW_HIST_H

#include <stddef.h>
#include <stdint.h>

#define CW_HIST_SUB_BITS 5
#define CW_HIST_BINS	 ((64 - CW_HIST_SUB_BITS + 1) << CW_HIST_SUB_BITS)

struct cw_hist_bin {
	uint32_t idx;
	uint64_t count;
};

struct cw_hist {
	struct cw_hist_bin *bin; /* sorted by idx, no count of 0 */
	size_t n, cap;
	uint64_t count;	   /* sum of the bins' counts (saturating) */
	uint64_t min, max; /* of the values added; min > max if empty */
};

#define CW_HIST_INIT                                                           \
	{                                                                      \
		.min = UINT64_MAX                                              \
	}

/* The bin a value falls in, and the lowest and highest value of a bin. */
uint32_t cw_hist_index(uint64_t v);
uint64_t cw_hist_lower(uint32_t idx);
uint64_t cw_hist_upper(uint32_t idx);

/* Add count samples of v; 0 or -1 (out of memory, h unchanged). */
int cw_hist_add(struct cw_hist *h, uint64_t v, uint64_t count);
/* Add every sample of src to dst; 0 or -1 (out of memory, dst unchanged). */
int cw_hist_merge(struct cw_hist *dst, const struct cw_hist *src);
/*
 * The q-quantile (0 <= q <= 1) by the nearest-rank rule: the middle of the
 * bin holding the ceil(q * count)-th smallest sample, clamped to
 * [min, max]; 0 when empty.
 */
uint64_t cw_hist_quantile(const struct cw_hist *h, double q);
void cw_hist_reset(struct cw_hist *h);
void cw_hist_release(struct cw_hist *h);

/* Bytes cw_hist_encode writes at most for h. */
size_t cw_hist_encoded_max(const struct cw_hist *h);
/* Write h to buf (room for cw_hist_encoded_max); the bytes written. */
size_t cw_hist_encode(const struct cw_hist *h, uint8_t *buf);
/*
 * Read a histogram from len bytes into h (reset first); 0, or -1 with
 * errno EINVAL (malformed: truncated, an index out of range or not
 * increasing, a count of 0, trailing bytes) or ENOMEM.  min and max are
 * not on the wire: they come back as the lowest bin's lower bound and
 * the highest bin's upper bound.
 */
int cw_hist_decode(struct cw_hist *h, const uint8_t *buf, size_t len);

/*
 * Coarser resolutions, for a histogram that must fit a fixed room.  Level
 * 1 to 5 merges each run of 2^level neighbouring bins of a power of two
 * into one (level 5: one bin per power of two), levels 6 to 11 merge runs
 * of 2^(level - 5) powers of two; a run's samples go to the bin nearest
 * its middle.  Counts stay exact; the quantiles' error grows to about
 * half a run.  Coarsening is composable: at level a then b (a <= b) is at
 * level b, so histograms coarsened to one level merge exactly.
 */
#define CW_HIST_LEVEL_MAX 11
uint32_t cw_hist_coarse_index(uint32_t idx, unsigned int level);
/* h's bins at that level, in place (min and max kept). */
void cw_hist_coarsen(struct cw_hist *h, unsigned int level);

/*
 * A histogram in a fixed room (struct cw_rec_hist, common/record.h).
 * cw_rec_hist_set stores h's encoding, coarsened level by level until it
 * fits (never past CW_HIST_LEVEL_MAX, which always fits); an empty h is
 * len 0.  0 (its level in *level if not NULL), or -1 out of memory (r
 * unchanged).
 */
struct cw_rec_hist;
int cw_rec_hist_set(struct cw_rec_hist *r, const struct cw_hist *h);
int cw_rec_hist_set_level(struct cw_rec_hist *r, const struct cw_hist *h,
			  unsigned int *level);
/* Decode into h (reset first); 0, or -1 with errno EINVAL or ENOMEM. */
int cw_rec_hist_get(const struct cw_rec_hist *r, struct cw_hist *h);
/* Is it a well-formed encoding (what a decoder checks)? */
int cw_rec_hist_valid(const uint8_t *b, size_t len);
/*
 * Add src's samples to *dst (coarsening to fit); 0 or -1 (out of memory
 * or a malformed one: dst unchanged).
 */
int cw_rec_hist_merge(struct cw_rec_hist *dst, const struct cw_rec_hist *src);
/*
 * What a cumulative histogram gained: add now minus before, bin by bin,
 * to out.  When now was coarsened further than before, before is taken
 * to now's level first (the lowest level at which it lies under now); a
 * bin that went back adds nothing.  0 or -1 (out of memory, malformed).
 */
int cw_rec_hist_delta(struct cw_hist *out, const struct cw_rec_hist *now,
		      const struct cw_rec_hist *before);

#endif
