// fuzz-sources: common/log.c common/util.c common/sample_run.c common/jsonw.c
// fuzz-sources: samples/store.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the run-file parser: any buffer is refused or
 * decoded, never crashes; what decodes re-encodes to the same run.  Each
 * input is tried as is and with its checksum made right.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "samples/samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size)
{
	struct cw_sample_run *run, *again;
	char err[128];
	uint8_t *buf;
	size_t len;

	if (cw_sample_run_decode(data, size, &run, err, sizeof(err)))
		return;
	if (cw_sample_run_encode(run, &buf, &len))
		abort();
	if (cw_sample_run_decode(buf, len, &again, err, sizeof(err)))
		abort();
	if (again->nbins != run->nbins ||
	    memcmp(again->bins, run->bins, run->nbins * sizeof(*run->bins)))
		abort();
	free(buf);
	cw_sample_run_free(again);
	cw_sample_run_free(run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	uLong crc;

	one(data, size);
	/* Again with a valid checksum, to reach the parser behind it. */
	if (size < 4)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	crc = crc32(0, copy, size - 4);
	copy[size - 4] = crc;
	copy[size - 3] = crc >> 8;
	copy[size - 2] = crc >> 16;
	copy[size - 1] = crc >> 24;
	one(copy, size);
	free(copy);
	return 0;
}
