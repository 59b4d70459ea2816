/* SPDX-License-Identifier: MIT */
#include <time.h>
#include "correlator/lag.h"

#define FINE_MS 10000	/* 1 ms bins below */
#define COARSE_MS 600000 /* 100 ms bins below, one bin above */
#define NCOARSE ((COARSE_MS - FINE_MS) / 100)

static uint64_t fine[FINE_MS], coarse[NCOARSE], beyond, total;
static int64_t worst = -1;

void cw_lag_add_batch(const int64_t *ts_ms, size_t n)
{
	struct timespec ts;
	int64_t now, lag;
	size_t i;

	if (!n)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	for (i = 0; i < n; i++) {
		if (ts_ms[i] < 0)
			continue;
		lag = now > ts_ms[i] ? now - ts_ms[i] : 0;
		if (lag < FINE_MS)
			fine[lag]++;
		else if (lag < COARSE_MS)
			coarse[(lag - FINE_MS) / 100]++;
		else
			beyond++;
		worst = lag > worst ? lag : worst;
		total++;
	}
}

double cw_lag_quantile(double q)
{
	uint64_t want, seen = 0;
	size_t i;

	if (!total)
		return -1;
	want = (uint64_t)(q * (double)total);
	if (want >= total)
		want = total - 1;
	for (i = 0; i < FINE_MS; i++) /* a fine bin holds one value */
		if ((seen += fine[i]) > want)
			return (double)i;
	for (i = 0; i < NCOARSE; i++)
		if ((seen += coarse[i]) > want)
			return (double)(FINE_MS + 100 * (int64_t)(i + 1) < worst
						? FINE_MS + 100 * (int64_t)(i + 1)
						: worst);
	return (double)worst;
}

void cw_lag_json(struct cw_jsonw *w)
{
	cw_jsonw_obj_open(w, "lag_ms");
	cw_jsonw_u64(w, "records", total);
	cw_jsonw_double(w, "p50", cw_lag_quantile(0.5));
	cw_jsonw_double(w, "p99", cw_lag_quantile(0.99));
	cw_jsonw_double(w, "max", (double)worst);
	cw_jsonw_obj_close(w);
}
