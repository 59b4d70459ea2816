// fuzz-sources: common/hist.c common/util.c common/log.c
// fuzz-sources: common/record.c common/jsonw.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the histogram's wire form: any bytes either decode
 * to a histogram whose bins are in range, increasing and non-zero, which
 * encodes back to the same bytes, or are refused with EINVAL and leave an
 * empty histogram.  A decoded histogram merged into itself keeps its bins.
 * Kept in a record's fixed room it keeps its count (coarsened if need
 * be), and the gain of the doubled one over it is it again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* h in a record's room: its count kept; twice it, less it, is it. */
static void rec_hist(const struct cw_hist *h)
{
	struct cw_rec_hist r, two;
	struct cw_hist back = CW_HIST_INIT, d = CW_HIST_INIT;

	if (cw_rec_hist_set(&r, h) || r.len > CW_REC_HIST_MAX ||
	    cw_rec_hist_get(&r, &back) || back.count != h->count)
		abort();
	two = r;
	if (cw_rec_hist_merge(&two, &r) || cw_rec_hist_delta(&d, &two, &r))
		abort();
	/* Counts saturate at 2^64 - 1: then the gain is what is left. */
	if (h->count < UINT64_MAX / 2 && d.count != h->count)
		abort();
	cw_hist_release(&back);
	cw_hist_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_hist h = CW_HIST_INIT;
	uint8_t *out;
	size_t i, len;

	if (cw_hist_decode(&h, data, size)) {
		if (errno != EINVAL || h.n || h.count)
			abort();
		cw_hist_release(&h);
		return 0;
	}
	for (i = 0; i < h.n; i++)
		if (!h.bin[i].count || h.bin[i].idx >= CW_HIST_BINS ||
		    (i && h.bin[i].idx <= h.bin[i - 1].idx))
			abort();
	out = malloc(cw_hist_encoded_max(&h));
	len = cw_hist_encode(&h, out);
	/* Varints may be written longer than needed: the re-encoding is the
	 * canonical form, so it is never longer and decodes the same. */
	if (len > size)
		abort();
	if (len == size && memcmp(out, data, size))
		abort();
	rec_hist(&h);
	if (cw_hist_merge(&h, &h) || (h.n && h.bin[0].count < 2))
		abort();
	(void)cw_hist_quantile(&h, 0.5);
	free(out);
	cw_hist_release(&h);
	return 0;
}
