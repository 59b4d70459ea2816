// fuzz-sources: common/log.c common/util.c place/input.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the tables of causeway place: the hosts file and
 * the units file.  Any buffer is read or refused with a "line N: why"
 * message, never crashes or leaks; what is read has a name, cpu and memory
 * on every row, numbers that are finite and not negative, no name twice.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "place/place.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cw_place_table *t)
{
	size_t i, j;

	for (i = 0; i < t->nrows; i++) {
		if (!t->rows[i].f[CW_PCOL_NAME] || !t->rows[i].f[CW_PCOL_CPU] ||
		    !t->rows[i].f[CW_PCOL_MEMORY] || !isfinite(t->cpu[i]) ||
		    t->cpu[i] < 0 || !isfinite(t->memory[i]) ||
		    t->memory[i] < 0)
			abort();
		for (j = 0; j < i && t->nrows < 64; j++)
			if (!strcmp(t->rows[i].f[CW_PCOL_NAME],
				    t->rows[j].f[CW_PCOL_NAME]))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_place_table t;
	char err[256];
	int units;

	for (units = 0; units < 2; units++) {
		err[0] = '\0';
		if (cw_place_table_parse(&t, (const char *)data, size, units,
					 err, sizeof(err)) == 0) {
			check(&t);
			cw_place_table_release(&t);
		} else if (strncmp(err, "line ", 5)) {
			abort();
		}
	}
	return 0;
}
