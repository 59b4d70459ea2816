// SPDX-License-Identifier: MIT
/*
 * What Kafka brings besides connection records, kept for the handlers:
 * each agent's newest host metadata (its health counters), the newest
 * windows' causal paths and the newest sample runs, each bounded, and the
 * consumer's lag.  The source's thread writes, the HTTP thread reads, both
 * under the one lock.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sample_run.h"
#include "common/util.h"
#include "serve/serve_int.h"

struct serve_feed *serve_feed_new(bool kafka)
{
	struct serve_feed *f = calloc(1, sizeof(*f));

	if (!f) {
		cw_error("out of memory");
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->kafka = kafka;
	return f;
}

void serve_feed_free(struct serve_feed *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nwindows; i++)
		free(f->windows[i]);
	free(f->windows);
	for (i = 0; i < f->nruns; i++)
		cw_sample_run_free(f->runs[i].run);
	free(f->hosts);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void serve_feed_lock(struct serve_feed *f)
{
	pthread_mutex_lock(&f->lock);
}

void serve_feed_unlock(struct serve_feed *f)
{
	pthread_mutex_unlock(&f->lock);
}

/* The newest by the agent's clock: a restarted agent counts from 1 again. */
int serve_feed_host(struct serve_feed *f, const struct cw_host_meta *hm)
{
	size_t i;
	int err = 0;

	serve_feed_lock(f);
	f->meta_records++;
	for (i = 0; i < f->nhosts; i++)
		if (!strcmp(f->hosts[i].host, hm->host))
			break;
	if (i < f->nhosts) {
		if (hm->time_ns >= f->hosts[i].time_ns)
			f->hosts[i] = *hm;
	} else if (CW_GROW(f->hosts, f->cap_hosts, f->nhosts + 1, 16)) {
		err = cw_error("out of memory");
	} else {
		f->hosts[f->nhosts++] = *hm;
	}
	serve_feed_unlock(f);
	return err;
}

void serve_feed_window(struct serve_feed *f, char *line)
{
	serve_feed_lock(f);
	if (!f->windows)
		f->windows = calloc(SERVE_FEED_WINDOWS, sizeof(*f->windows));
	if (!f->windows) {
		free(line);
	} else {
		if (f->nwindows == SERVE_FEED_WINDOWS) {
			free(f->windows[0]);
			memmove(f->windows, f->windows + 1,
				(SERVE_FEED_WINDOWS - 1) * sizeof(*f->windows));
			f->nwindows--;
		}
		f->windows[f->nwindows++] = line;
	}
	serve_feed_unlock(f);
}

/* A name the page can pass back: no '/', nothing that needs escaping. */
static void run_name(char *buf, size_t len, const struct cw_sample_run *run)
{
	char *p;

	/* Cut to fit: with the start it stays unique per host and device. */
	snprintf(buf, len, "%.100s-%.100s-%llu", run->host, run->dev,
		 (unsigned long long)(run->start_real_ns / NSEC_PER_MSEC));
	for (p = buf; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			*p = '_';
}

void serve_feed_run(struct serve_feed *f, struct cw_sample_run *run,
		    uint64_t seq)
{
	struct serve_feed_run *r;

	serve_feed_lock(f);
	f->sample_runs++;
	if (f->nruns == SERVE_FEED_RUNS) {
		cw_sample_run_free(f->runs[0].run);
		memmove(f->runs, f->runs + 1,
			(SERVE_FEED_RUNS - 1) * sizeof(*f->runs));
		f->nruns--;
	}
	r = &f->runs[f->nruns++];
	memset(r, 0, sizeof(*r));
	run_name(r->name, sizeof(r->name), run);
	r->seq = seq;
	r->run = run;
	serve_feed_unlock(f);
}

void serve_feed_lags(struct serve_feed *f, const struct cw_kafka_lag *l,
		     size_t n)
{
	serve_feed_lock(f);
	if (n > SERVE_FEED_LAGS)
		n = SERVE_FEED_LAGS;
	memcpy(f->lags, l, n * sizeof(*l));
	f->nlags = n;
	serve_feed_unlock(f);
}

static const struct cw_sample_run *find_run(const struct serve_feed *f,
					    const char *name)
{
	size_t i = f->nruns;

	if (!strcmp(name, "latest"))
		return i ? f->runs[i - 1].run : NULL;
	/* Newest first: a run sent twice (a replay) is the same run. */
	while (i--)
		if (!strcmp(f->runs[i].name, name))
			return f->runs[i].run;
	return NULL;
}

/* Copied through its own encoding: the one way a run is copied whole. */
struct cw_sample_run *serve_feed_copy_run(struct serve_feed *f,
					  const char *name)
{
	const struct cw_sample_run *run;
	struct cw_sample_run *copy = NULL;
	uint8_t *buf = NULL;
	size_t len;
	char why[128];

	serve_feed_lock(f);
	run = find_run(f, name);
	if (run && !cw_sample_run_encode(run, &buf, &len) &&
	    cw_sample_run_decode(buf, len, &copy, why, sizeof(why)))
		copy = NULL;
	serve_feed_unlock(f);
	free(buf);
	return copy;
}
