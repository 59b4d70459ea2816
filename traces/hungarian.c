// SPDX-License-Identifier: MIT
/*
 * Minimum-cost assignment of n rows to distinct columns of an n x m cost
 * matrix (n <= m), by shortest augmenting paths with potentials (Kuhn-
 * Munkres, O(n^2 m)).  Written for the window sizes of traces linking.
 */
#include <float.h>
#include <stdlib.h>

#include "traces/traces.h"

int cw_traces_hungarian(const double *a, size_t n, size_t m, int32_t *match)
{
	double *u = calloc(n + 1, sizeof(double));
	double *v = calloc(m + 1, sizeof(double));
	double *minv = malloc((m + 1) * sizeof(double));
	size_t *p = calloc(m + 1, sizeof(size_t)),
	       *way = calloc(m + 1, sizeof(size_t));
	char *used = malloc(m + 1);
	size_t i, j, j0, j1;
	int rc = -1;

	if (!u || !v || !minv || !p || !way || !used || n > m)
		goto out;
	for (i = 1; i <= n; i++) {
		p[0] = i, j0 = 0;
		for (j = 0; j <= m; j++)
			minv[j] = DBL_MAX, used[j] = 0;
		do {
			size_t i0 = p[j0];
			double delta = DBL_MAX;

			used[j0] = 1, j1 = 0;
			for (j = 1; j <= m; j++) {
				double cur;

				if (used[j])
					continue;
				cur = a[(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
				if (cur < minv[j])
					minv[j] = cur, way[j] = j0;
				if (minv[j] < delta)
					delta = minv[j], j1 = j;
			}
			for (j = 0; j <= m; j++) {
				if (used[j])
					u[p[j]] += delta, v[j] -= delta;
				else
					minv[j] -= delta;
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (j = 1; j <= m; j++)
		if (p[j])
			match[p[j] - 1] = (int32_t)(j - 1);
	rc = 0;
out:
	free(u), free(v), free(minv), free(p), free(way), free(used);
	return rc;
}
