// SPDX-License-Identifier: MIT
/*
 * The log-linear histogram against sorted arrays of the same samples:
 * every value lies in its bin and bins tile the range with no gap; each
 * quantile is within the bin's error of the exact nearest-rank value;
 * merging in any order gives the same bins as adding all samples to one;
 * counts saturate; and the wire form round-trips and refuses bad bytes.
 * A record's histogram (struct cw_rec_hist) round-trips exactly while it
 * fits, coarsens with exact counts when it does not, merges the same in
 * any order, and gives back a cumulative histogram's gain bin by bin.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/record.h"

#include "tests/unit/check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_bins(void)
{
	uint32_t i;

	CHECK(cw_hist_index(0) == 0 && cw_hist_index(31) == 31);
	CHECK(cw_hist_index(UINT64_MAX) == CW_HIST_BINS - 1);
	CHECK(cw_hist_upper(CW_HIST_BINS - 1) == UINT64_MAX);
	for (i = 0; i + 1 < CW_HIST_BINS; i++) {
		CHECK(cw_hist_lower(i) <= cw_hist_upper(i));
		CHECK(cw_hist_upper(i) + 1 == cw_hist_lower(i + 1));
		CHECK(cw_hist_index(cw_hist_lower(i)) == i);
		CHECK(cw_hist_index(cw_hist_upper(i)) == i);
	}
	for (i = 0; i < 100000; i++) {
		uint64_t v = next() >> (next() % 64);
		uint32_t x = cw_hist_index(v);

		CHECK(cw_hist_lower(x) <= v && v <= cw_hist_upper(x));
		/* A bin is at most 1/32 of its lower bound wide. */
		CHECK(cw_hist_upper(x) - cw_hist_lower(x) <=
		      cw_hist_lower(x) / 32);
	}
}

/* Latency-like samples: log-uniform from 1 us to 1 s. */
static uint64_t latency(void)
{
	return 1000 + (next() % 1000) * (1ULL << (next() % 20));
}

static void test_quantiles(void)
{
	static const double qs[] = {0.001, 0.1, 0.5, 0.9, 0.99, 0.999};
	struct cw_hist h = CW_HIST_INIT;
	enum { N = 20000 };
	uint64_t *v = malloc(N * sizeof(*v));
	size_t i, k;

	CHECK(cw_hist_quantile(&h, 0.5) == 0);
	for (i = 0; i < N; i++) {
		v[i] = latency();
		CHECK(cw_hist_add(&h, v[i], 1) == 0);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	CHECK(h.count == N && h.min == v[0] && h.max == v[N - 1]);
	CHECK(cw_hist_quantile(&h, 0) == v[0]);
	CHECK(cw_hist_quantile(&h, 1) == v[N - 1]);
	for (k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		size_t rank = (size_t)(qs[k] * N + 0.999999);
		uint64_t exact = v[rank - 1], got = cw_hist_quantile(&h, qs[k]);
		uint64_t err = got > exact ? got - exact : exact - got;

		CHECK(err <= exact / 64 + 1);
	}
	cw_hist_release(&h);
	free(v);
}

static bool same(const struct cw_hist *a, const struct cw_hist *b)
{
	size_t i;

	if (a->n != b->n || a->count != b->count)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->bin[i].idx != b->bin[i].idx ||
		    a->bin[i].count != b->bin[i].count)
			return false;
	return true;
}

static void test_merge(void)
{
	struct cw_hist part[4] = {CW_HIST_INIT, CW_HIST_INIT, CW_HIST_INIT,
				  CW_HIST_INIT};
	struct cw_hist all = CW_HIST_INIT, ab = CW_HIST_INIT, ba = CW_HIST_INIT;
	size_t i;

	for (i = 0; i < 5000; i++) {
		uint64_t v = latency();

		cw_hist_add(&part[i % 4], v, 1 + i % 3);
		cw_hist_add(&all, v, 1 + i % 3);
	}
	for (i = 0; i < 4; i++)
		CHECK(cw_hist_merge(&ab, &part[i]) == 0);
	for (i = 4; i-- > 0;)
		CHECK(cw_hist_merge(&ba, &part[i]) == 0);
	CHECK(same(&ab, &all) && same(&ba, &all));
	CHECK(ab.min == all.min && ab.max == all.max);
	/* Merging with itself doubles every bin. */
	CHECK(cw_hist_merge(&ab, &ab) == 0);
	CHECK(ab.count == 2 * all.count &&
	      ab.bin[0].count == 2 * all.bin[0].count);
	for (i = 0; i < 4; i++)
		cw_hist_release(&part[i]);
	cw_hist_release(&all);
	cw_hist_release(&ab);
	cw_hist_release(&ba);
}

static void test_saturate(void)
{
	struct cw_hist h = CW_HIST_INIT;

	cw_hist_add(&h, 5, UINT64_MAX - 1);
	cw_hist_add(&h, 5, 10);
	cw_hist_add(&h, 7, 10);
	CHECK(h.count == UINT64_MAX && h.bin[0].count == UINT64_MAX);
	CHECK(cw_hist_quantile(&h, 0.5) == 5);
	cw_hist_release(&h);
}

static void test_wire(void)
{
	struct cw_hist h = CW_HIST_INIT, back = CW_HIST_INIT;
	uint8_t *buf;
	size_t len, i;
	static const uint8_t bad[][6] = {
		{0x01},				/* a pair missing */
		{0x01, 0x05, 0x00},		/* a count of 0 */
		{0x02, 0x05, 0x01, 0x00, 0x01}, /* index not increasing */
		{0x01, 0x80, 0x0f, 0x01},	/* index 1920: out of range */
		{0x00, 0x00},			/* trailing byte */
	};
	static const size_t bad_len[] = {1, 3, 5, 4, 2};

	for (i = 0; i < 3000; i++)
		cw_hist_add(&h, latency(), 1 + next() % 1000);
	cw_hist_add(&h, UINT64_MAX, 1);
	cw_hist_add(&h, 0, 1);
	buf = malloc(cw_hist_encoded_max(&h));
	len = cw_hist_encode(&h, buf);
	CHECK(len <= cw_hist_encoded_max(&h));
	CHECK(cw_hist_decode(&back, buf, len) == 0 && same(&back, &h));
	CHECK(back.min == 0 && back.max == UINT64_MAX);
	for (i = 0; i < len; i++) /* every truncation is refused */
		CHECK(cw_hist_decode(&back, buf, i) == -1 && errno == EINVAL &&
		      back.n == 0);
	for (i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++)
		CHECK(cw_hist_decode(&back, bad[i], bad_len[i]) == -1 &&
		      errno == EINVAL);
	CHECK(cw_hist_decode(&back, (const uint8_t *)"\0", 1) == 0 &&
	      back.count == 0);
	free(buf);
	cw_hist_release(&h);
	cw_hist_release(&back);
}

/* Coarsening: composable, monotone, counts kept, and each level's run
 * of bins holds the run's middle. */
static void test_coarsen(void)
{
	struct cw_hist h = CW_HIST_INIT, a = CW_HIST_INIT, b = CW_HIST_INIT;
	unsigned int lv, lw;
	uint32_t i;

	for (i = 0; i + 1 < CW_HIST_BINS; i++)
		for (lv = 0; lv <= CW_HIST_LEVEL_MAX; lv++) {
			uint32_t x = cw_hist_coarse_index(i, lv);

			CHECK(x < CW_HIST_BINS);
			CHECK(x <= cw_hist_coarse_index(i + 1, lv));
			for (lw = lv; lw <= CW_HIST_LEVEL_MAX; lw++)
				CHECK(cw_hist_coarse_index(x, lw) ==
				      cw_hist_coarse_index(i, lw));
		}
	/* Level 5 keeps one bin per power of two, at its middle. */
	CHECK(cw_hist_coarse_index(cw_hist_index(1000), 5) ==
	      cw_hist_index(768));
	for (i = 0; i < 4000; i++)
		cw_hist_add(&h, latency(), 1 + next() % 5);
	for (lv = 1; lv <= CW_HIST_LEVEL_MAX; lv++) {
		cw_hist_reset(&a);
		cw_hist_merge(&a, &h);
		cw_hist_coarsen(&a, lv);
		CHECK(a.count == h.count);
		CHECK(a.n <= h.n);
	}
	CHECK(a.n <= 2);
	cw_hist_release(&h);
	cw_hist_release(&a);
	cw_hist_release(&b);
}

static void test_rec_hist(void)
{
	struct cw_hist h = CW_HIST_INIT, back = CW_HIST_INIT, p1 = CW_HIST_INIT,
		       p2 = CW_HIST_INIT, d = CW_HIST_INIT;
	struct cw_rec_hist r, r1, r2, all, before;
	unsigned int lv;
	size_t i;

	/* Empty: len 0 both ways. */
	CHECK(cw_rec_hist_set(&r, &h) == 0 && r.len == 0);
	CHECK(cw_rec_hist_get(&r, &back) == 0 && back.count == 0);
	/* Tens of bins fit whole: the same bins back. */
	for (i = 0; i < 500; i++)
		cw_hist_add(&h, 200000 + (next() % 40) * 1000, 1);
	CHECK(cw_rec_hist_set_level(&r, &h, &lv) == 0 && lv == 0);
	CHECK(cw_rec_hist_get(&r, &back) == 0 && same(&back, &h));
	/* Parts of one stream merged in either order: the one pass's bins. */
	for (i = 0; i < 500; i++) {
		uint64_t v = 200000 + (next() % 40) * 1000;

		cw_hist_add(i % 2 ? &p1 : &p2, v, 1);
	}
	cw_hist_merge(&h, &p1);
	cw_hist_merge(&h, &p2);
	cw_rec_hist_set(&all, &h);
	cw_rec_hist_set(&r1, &p1);
	cw_rec_hist_set(&r2, &p2);
	cw_rec_hist_set(&r, &h);
	CHECK(cw_rec_hist_delta(&d, &r, &r1) == 0);
	/* now - before, bin by bin: h minus p1 is p2 plus the first 500. */
	CHECK(d.count == h.count - p1.count);
	cw_rec_hist_set(&before, &d);
	CHECK(cw_rec_hist_merge(&before, &r1) == 0);
	CHECK(before.len == all.len && !memcmp(before.b, all.b, all.len));
	/* Wide ones coarsen, counts exact, still mergeable and readable. */
	cw_hist_reset(&h);
	for (i = 0; i < 20000; i++)
		cw_hist_add(&h, latency(), 1 + next() % 100000);
	CHECK(cw_rec_hist_set_level(&r, &h, &lv) == 0 && lv > 0);
	CHECK(r.len <= CW_REC_HIST_MAX);
	CHECK(cw_rec_hist_get(&r, &back) == 0 && back.count == h.count);
	{
		uint64_t exact = cw_hist_quantile(&h, 0.5),
			 got = cw_hist_quantile(&back, 0.5);
		uint64_t err = got > exact ? got - exact : exact - got;

		/* half a run of 2^lv bins of 1/32 each */
		CHECK(lv > CW_HIST_SUB_BITS ||
		      err <= exact / 64 * (1u << lv) + 1);
	}
	/* A gain across a coarsening: before taken to now's level. */
	cw_rec_hist_set(&r1, &p1);
	cw_hist_merge(&h, &p1);
	cw_rec_hist_set(&r2, &h);
	cw_hist_reset(&d);
	CHECK(cw_rec_hist_delta(&d, &r2, &r1) == 0);
	CHECK(d.count == h.count - p1.count);
	/* Malformed bytes are refused. */
	r.len = 2;
	r.b[0] = 1;
	r.b[1] = 0;
	CHECK(cw_rec_hist_get(&r, &back) == -1 && errno == EINVAL);
	CHECK(!cw_rec_hist_valid(r.b, r.len));
	CHECK(cw_rec_hist_merge(&all, &r) == -1);
	r.len = CW_REC_HIST_MAX + 1;
	CHECK(cw_rec_hist_get(&r, &back) == -1);
	cw_hist_release(&h);
	cw_hist_release(&back);
	cw_hist_release(&p1);
	cw_hist_release(&p2);
	cw_hist_release(&d);
}

int main(void)
{
	test_bins();
	test_quantiles();
	test_merge();
	test_saturate();
	test_wire();
	test_coarsen();
	test_rec_hist();
	return failures ? 1 : 0;
}
