// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/record.h"
#include "common/util.h"

#define SUB	 (1u << CW_HIST_SUB_BITS)
#define SUB_MASK (SUB - 1)

uint32_t cw_hist_index(uint64_t v)
{
	unsigned int e;

	if (v < SUB)
		return (uint32_t)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	return ((e - CW_HIST_SUB_BITS + 1) << CW_HIST_SUB_BITS) |
	       (uint32_t)((v >> (e - CW_HIST_SUB_BITS)) & SUB_MASK);
}

uint64_t cw_hist_lower(uint32_t idx)
{
	uint32_t g = idx >> CW_HIST_SUB_BITS;

	if (!g)
		return idx;
	return (uint64_t)(SUB | (idx & SUB_MASK)) << (g - 1);
}

uint64_t cw_hist_upper(uint32_t idx)
{
	uint32_t g = idx >> CW_HIST_SUB_BITS;

	if (!g)
		return idx;
	return cw_hist_lower(idx) + ((1ULL << (g - 1)) - 1);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The position of idx in h's bins, or where it would go. */
static size_t find(const struct cw_hist *h, uint32_t idx)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->bin[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int cw_hist_add(struct cw_hist *h, uint64_t v, uint64_t count)
{
	uint32_t idx = cw_hist_index(v);
	size_t at;

	if (!count)
		return 0;
	at = find(h, idx);
	if (at == h->n || h->bin[at].idx != idx) {
		if (CW_GROW(h->bin, h->cap, h->n + 1, 8))
			return -1;
		memmove(&h->bin[at + 1], &h->bin[at],
			(h->n - at) * sizeof(h->bin[0]));
		h->bin[at] = (struct cw_hist_bin){.idx = idx};
		h->n++;
	}
	h->bin[at].count = sat_add(h->bin[at].count, count);
	h->count = sat_add(h->count, count);
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	return 0;
}

int cw_hist_merge(struct cw_hist *dst, const struct cw_hist *src)
{
	struct cw_hist_bin *out;
	size_t i = 0, j = 0, n = 0;

	if (!src->n)
		return 0;
	out = malloc((dst->n + src->n) * sizeof(*out));
	if (!out)
		return -1;
	while (i < dst->n || j < src->n) {
		if (j == src->n ||
		    (i < dst->n && dst->bin[i].idx < src->bin[j].idx)) {
			out[n++] = dst->bin[i++];
		} else if (i == dst->n || src->bin[j].idx < dst->bin[i].idx) {
			out[n++] = src->bin[j++];
		} else {
			out[n] = dst->bin[i++];
			out[n].count =
				sat_add(out[n].count, src->bin[j++].count);
			n++;
		}
	}
	free(dst->bin);
	dst->bin = out;
	dst->n = dst->cap = n;
	dst->count = sat_add(dst->count, src->count);
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

uint64_t cw_hist_quantile(const struct cw_hist *h, double q)
{
	uint64_t rank, seen = 0, mid;
	size_t i;

	if (!h->count)
		return 0;
	if (!(q > 0))
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < h->n; i++) {
		seen = sat_add(seen, h->bin[i].count);
		if (seen >= rank)
			break;
	}
	if (i == h->n)
		i = h->n - 1;
	mid = cw_hist_lower(h->bin[i].idx) +
	      (cw_hist_upper(h->bin[i].idx) - cw_hist_lower(h->bin[i].idx)) / 2;
	if (mid < h->min)
		mid = h->min;
	if (mid > h->max)
		mid = h->max;
	return mid;
}

void cw_hist_reset(struct cw_hist *h)
{
	h->n = 0;
	h->count = 0;
	h->min = UINT64_MAX;
	h->max = 0;
}

void cw_hist_release(struct cw_hist *h)
{
	free(h->bin);
	*h = (struct cw_hist)CW_HIST_INIT;
}

size_t cw_hist_encoded_max(const struct cw_hist *h)
{
	return 10 + h->n * (2 + 10);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		if (shift == 63 && (b & 0x7e))
			return false; /* more than 64 bits */
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

size_t cw_hist_encode(const struct cw_hist *h, uint8_t *buf)
{
	size_t len = put_varint(buf, h->n), i;
	uint32_t prev = 0;

	for (i = 0; i < h->n; i++) {
		len += put_varint(buf + len, h->bin[i].idx - prev);
		len += put_varint(buf + len, h->bin[i].count);
		prev = h->bin[i].idx;
	}
	return len;
}

int cw_hist_decode(struct cw_hist *h, const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf, *end = buf + len;
	uint64_t n, delta, count, idx = 0;
	size_t i;

	cw_hist_reset(h);
	if (!get_varint(&p, end, &n) || n > CW_HIST_BINS)
		goto bad;
	if (n && CW_GROW(h->bin, h->cap, n, 8)) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!get_varint(&p, end, &delta) ||
		    !get_varint(&p, end, &count) || !count || (i && !delta) ||
		    delta >= CW_HIST_BINS || (idx += delta) >= CW_HIST_BINS)
			goto bad;
		h->bin[i] = (struct cw_hist_bin){(uint32_t)idx, count};
		h->count = sat_add(h->count, count);
	}
	if (p != end)
		goto bad;
	h->n = n;
	if (n) {
		h->min = cw_hist_lower(h->bin[0].idx);
		h->max = cw_hist_upper(h->bin[n - 1].idx);
	}
	return 0;
bad:
	cw_hist_reset(h);
	errno = EINVAL;
	return -1;
}

uint32_t cw_hist_coarse_index(uint32_t idx, unsigned int level)
{
	uint32_t g = idx >> CW_HIST_SUB_BITS, top = CW_HIST_BINS / SUB - 1;
	uint32_t m, t, c;

	if (!level)
		return idx;
	if (level <= CW_HIST_SUB_BITS)
		return (idx & ~((1u << level) - 1)) | (1u << (level - 1));
	if (!g)
		return SUB / 2;
	/* Runs of 2^m groups from group 1; the one past the middle keeps
	 * them (the last group when the run passes the end). */
	m = level - CW_HIST_SUB_BITS;
	t = (g - 1) >> m;
	c = 1 + (t << m) + (1u << (m - 1));
	if (c > top)
		c = top;
	return c << CW_HIST_SUB_BITS | SUB / 2;
}

void cw_hist_coarsen(struct cw_hist *h, unsigned int level)
{
	size_t i, n = 0;

	for (i = 0; i < h->n; i++) {
		uint32_t x = cw_hist_coarse_index(h->bin[i].idx, level);

		/* The map never goes down, so equal ones are neighbours. */
		if (n && h->bin[n - 1].idx == x) {
			h->bin[n - 1].count =
				sat_add(h->bin[n - 1].count, h->bin[i].count);
		} else {
			h->bin[n].idx = x;
			h->bin[n++].count = h->bin[i].count;
		}
	}
	h->n = n;
}

static int copy_hist(struct cw_hist *dst, const struct cw_hist *src)
{
	cw_hist_reset(dst);
	return cw_hist_merge(dst, src);
}

int cw_rec_hist_set_level(struct cw_rec_hist *r, const struct cw_hist *h,
			  unsigned int *level)
{
	struct cw_hist c = CW_HIST_INIT;
	uint8_t *buf;
	unsigned int lv = 0;
	size_t len;

	if (level)
		*level = 0;
	if (!h->n) {
		memset(r, 0, sizeof(*r));
		return 0;
	}
	buf = malloc(cw_hist_encoded_max(h));
	if (!buf)
		return -1;
	len = cw_hist_encode(h, buf);
	if (len > CW_REC_HIST_MAX) {
		if (copy_hist(&c, h)) {
			free(buf);
			return -1;
		}
		while (len > CW_REC_HIST_MAX && lv < CW_HIST_LEVEL_MAX) {
			cw_hist_coarsen(&c, ++lv);
			len = cw_hist_encode(&c, buf);
		}
		cw_hist_release(&c);
	}
	memcpy(r->b, buf, len);
	/* The tail zeroed: records and totals compare byte for byte. */
	memset(r->b + len, 0, CW_REC_HIST_MAX - len);
	r->len = (uint16_t)len;
	free(buf);
	if (level)
		*level = lv;
	return 0;
}

int cw_rec_hist_set(struct cw_rec_hist *r, const struct cw_hist *h)
{
	return cw_rec_hist_set_level(r, h, NULL);
}

int cw_rec_hist_get(const struct cw_rec_hist *r, struct cw_hist *h)
{
	if (r->len > CW_REC_HIST_MAX) {
		cw_hist_reset(h);
		errno = EINVAL;
		return -1;
	}
	if (!r->len) {
		cw_hist_reset(h);
		return 0;
	}
	return cw_hist_decode(h, r->b, r->len);
}

int cw_rec_hist_valid(const uint8_t *b, size_t len)
{
	struct cw_hist h = CW_HIST_INIT;
	int ok;

	if (len > CW_REC_HIST_MAX)
		return 0;
	if (!len)
		return 1;
	ok = !cw_hist_decode(&h, b, len);
	cw_hist_release(&h);
	return ok;
}

int cw_rec_hist_merge(struct cw_rec_hist *dst, const struct cw_rec_hist *src)
{
	struct cw_hist a = CW_HIST_INIT, b = CW_HIST_INIT;
	int ret = -1;

	if (!src->len)
		return 0;
	if (!cw_rec_hist_get(dst, &a) && !cw_rec_hist_get(src, &b) &&
	    !cw_hist_merge(&a, &b))
		ret = cw_rec_hist_set(dst, &a);
	cw_hist_release(&a);
	cw_hist_release(&b);
	return ret;
}

/* Does every bin of b lie in a with at least its count? */
static bool hist_under(const struct cw_hist *b, const struct cw_hist *a)
{
	size_t i, j = 0;

	for (i = 0; i < b->n; i++) {
		while (j < a->n && a->bin[j].idx < b->bin[i].idx)
			j++;
		if (j == a->n || a->bin[j].idx != b->bin[i].idx ||
		    a->bin[j].count < b->bin[i].count)
			return false;
	}
	return true;
}

int cw_rec_hist_delta(struct cw_hist *out, const struct cw_rec_hist *now,
		      const struct cw_rec_hist *before)
{
	struct cw_hist a = CW_HIST_INIT, b = CW_HIST_INIT;
	unsigned int lv = 0;
	size_t i, j = 0;
	int ret = -1;

	if (!now->len)
		return 0;
	if (cw_rec_hist_get(now, &a) || cw_rec_hist_get(before, &b))
		goto out;
	while (!hist_under(&b, &a) && lv < CW_HIST_LEVEL_MAX)
		cw_hist_coarsen(&b, ++lv);
	for (i = 0; i < a.n; i++) {
		uint64_t had = 0, v;

		while (j < b.n && b.bin[j].idx < a.bin[i].idx)
			j++;
		if (j < b.n && b.bin[j].idx == a.bin[i].idx)
			had = b.bin[j].count;
		if (a.bin[i].count <= had)
			continue;
		/* The bin's middle, which lands in the same bin. */
		v = cw_hist_lower(a.bin[i].idx) +
		    (cw_hist_upper(a.bin[i].idx) -
		     cw_hist_lower(a.bin[i].idx)) / 2;
		if (cw_hist_add(out, v, a.bin[i].count - had))
			goto out;
	}
	ret = 0;
out:
	cw_hist_release(&a);
	cw_hist_release(&b);
	return ret;
}
