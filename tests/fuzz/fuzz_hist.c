// fuzz-sources: common/hist.c common/util.c common/log.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the histogram's wire form: any bytes either decode
 * to a histogram whose bins are in range, increasing and non-zero, which
 * encodes back to the same bytes, or are refused with EINVAL and leave an
 * empty histogram.  A decoded histogram merged into itself keeps its bins.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	if (cw_hist_merge(&h, &h) || (h.n && h.bin[0].count < 2))
		abort();
	(void)cw_hist_quantile(&h, 0.5);
	free(out);
	cw_hist_release(&h);
	return 0;
}
