// fuzz-sources: common/log.c common/util.c common/sample_run.c common/jsonw.c
// fuzz-sources: samples/bursts.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the `samples bursts --conns` loader: JSON lines of
 * connection records are read into edges or refused naming the line;
 * what is read is attributed to a burst of a small run without reading
 * out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "samples/samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct cw_burst_edge *edges;
	struct cw_sample_run *run;
	struct cw_burst b = {.first = 0, .last = 3};
	size_t n, k, i, *idx;
	FILE *fp;

	if (!path[0])
		snprintf(path, sizeof(path), "/dev/shm/cw-fuzz-%d.jsonl",
			 (int)getpid());
	fp = fopen(path, "w");
	if (!fp)
		return 0;
	fwrite(data, 1, size, fp);
	fclose(fp);
	if (!cw_burst_edges_load(path, &edges, &n)) {
		run = cw_sample_run_new(4);
		idx = calloc(n + 1, sizeof(*idx));
		if (run && idx) {
			run->nbins = run->samples = 4;
			run->interval_ns = 1000000;
			run->start_real_ns = 1700000000000000000ULL;
			k = cw_burst_attribute(run, &b, edges, n, idx);
			if (k > n)
				abort();
			for (i = 0; i < k; i++)
				if (idx[i] >= n)
					abort();
		}
		free(idx);
		cw_sample_run_free(run);
		free(edges);
	}
	unlink(path);
	return 0;
}
