// SPDX-License-Identifier: MIT
/*
 * The snapshot writer's thread (cli/graph_writer.h).  The graph it writes
 * is its own (nodes hold copies of their names, not pointers into the
 * pairing), so nothing is shared with the consuming thread but the slot a
 * graph waits in, under the mutex.  cgraph is used by this thread alone
 * while it runs: the caller drains it before writing synchronously.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/graph_writer.h"
#include "cli/report.h"
#include "common/log.h"
#include "correlator/correlator.h"
#include "graph/graph.h"

struct cli_graph_writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a graph waits, the writer went idle, or stop */
	const char *dir;
	double min_share;
	struct cw_graph waiting;
	struct cw_pairing_stats ps;
	bool has_waiting, busy, stop, failed;
	uint64_t written, skipped;
	uint64_t cpu_ns; /* the writer thread's CPU time, so far */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *writer_main(void *arg)
{
	struct cli_graph_writer *w = arg;
	struct cw_pairing_stats ps;
	struct cw_graph g;
	int rc;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->has_waiting && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->has_waiting)
			break; /* stopped, nothing left */
		g = w->waiting;
		ps = w->ps;
		cw_graph_init(&w->waiting);
		w->has_waiting = false;
		w->busy = true;
		pthread_mutex_unlock(&w->mu);
		rc = cli_write_outputs(w->dir, &g, NULL, NULL, NULL, &ps,
				       w->min_share);
		cw_graph_release(&g);
		pthread_mutex_lock(&w->mu);
		w->cpu_ns = thread_cpu_ns();
		w->busy = false;
		w->failed |= rc != 0;
		w->written += !rc;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct cli_graph_writer *cli_graph_writer_start(const char *dir,
						double min_share)
{
	struct cli_graph_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w) {
		cw_error("out of memory");
		return NULL;
	}
	w->dir = dir;
	w->min_share = min_share;
	cw_graph_init(&w->waiting);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	err = pthread_create(&w->thread, NULL, writer_main, w);
	if (err) {
		cw_error("unable to start the snapshot writer: %s",
			 strerror(err));
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		return NULL;
	}
	return w;
}

static int failed(const struct cli_graph_writer *w)
{
	/* cli_write_outputs() printed what and where. */
	return w->failed ? cw_error("the snapshot's files were not written")
			 : 0;
}

int cli_graph_writer_put(struct cli_graph_writer *w, struct cw_graph *g,
			 const struct cw_pairing_stats *ps)
{
	struct cw_graph old;
	bool replaced;
	int rc;

	pthread_mutex_lock(&w->mu);
	old = w->waiting;
	replaced = w->has_waiting;
	w->waiting = *g;
	w->ps = *ps;
	w->has_waiting = true;
	w->skipped += replaced;
	rc = failed(w);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	cw_graph_init(g);
	cw_graph_release(&old); /* empty unless replaced */
	return rc;
}

int cli_graph_writer_drain(struct cli_graph_writer *w)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	while (w->has_waiting || w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	rc = failed(w);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int cli_graph_writer_stop(struct cli_graph_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = cli_graph_writer_drain(w);
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	cw_graph_release(&w->waiting);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return rc;
}

void cli_graph_writer_counts(struct cli_graph_writer *w, uint64_t *written,
			     uint64_t *skipped, uint64_t *cpu_ns)
{
	pthread_mutex_lock(&w->mu);
	*written = w->written;
	*skipped = w->skipped;
	*cpu_ns = w->cpu_ns;
	pthread_mutex_unlock(&w->mu);
}
