// SPDX-License-Identifier: MIT
/*
 * A correlator member's snapshots (correlator/snapshot.h).  The graph the
 * writer thread writes is its own (nodes hold copies of their names, not
 * pointers into the pairing), so nothing is shared with the consuming
 * thread but the slot a graph waits in, under the mutex.  cgraph is used
 * by the writer alone while it runs: the hook drains it before writing the
 * end's graph on its own thread.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/snapshot.h"
#include "graph/graph.h"

struct cw_snapshot_writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a graph waits, the writer went idle, or stop */
	const char *dir;
	cw_snapshot_write_fn write;
	void *arg;
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
	struct cw_snapshot_writer *w = arg;
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
		rc = w->write(w->dir, &g, &ps, w->arg);
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

static struct cw_snapshot_writer *
writer_start(const char *dir, cw_snapshot_write_fn write, void *arg)
{
	struct cw_snapshot_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w) {
		cw_error("out of memory");
		return NULL;
	}
	w->dir = dir;
	w->write = write;
	w->arg = arg;
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

static int failed(const struct cw_snapshot_writer *w)
{
	/* write() printed what and where. */
	return w->failed ? cw_error("the snapshot's files were not written")
			 : 0;
}

static int writer_put(struct cw_snapshot_writer *w, struct cw_graph *g,
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

static int writer_drain(struct cw_snapshot_writer *w)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	while (w->has_waiting || w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	rc = failed(w);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static int writer_stop(struct cw_snapshot_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = writer_drain(w);
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

static void writer_counts(struct cw_snapshot_writer *w, uint64_t *written,
			     uint64_t *skipped, uint64_t *cpu_ns)
{
	pthread_mutex_lock(&w->mu);
	*written = w->written;
	*skipped = w->skipped;
	*cpu_ns = w->cpu_ns;
	pthread_mutex_unlock(&w->mu);
}

/* The PID of "NAME.tmp.PID.XXXXXX" for one of names, or 0. */
static long tmp_pid(const char *file, const char *const *names)
{
	size_t i, n;
	char *end;
	long pid;

	for (i = 0; names[i]; i++) {
		n = strlen(names[i]);
		if (strncmp(file, names[i], n) || strncmp(file + n, ".tmp.", 5) ||
		    !isdigit((unsigned char)file[n + 5]))
			continue;
		pid = strtol(file + n + 5, &end, 10);
		if (*end == '.' && strlen(end + 1) == 6 && pid > 0)
			return pid;
	}
	return 0;
}

int cw_snapshot_clean_stale(const char *dir, const char *const *names)
{
	char path[4096];
	struct dirent *e;
	int removed = 0;
	long pid;
	DIR *d = opendir(dir);

	if (!d)
		return cw_error("unable to read '%s': %m", dir);
	while ((e = readdir(d))) {
		pid = tmp_pid(e->d_name, names);
		/* A process that runs (ours, or another's: EPERM) keeps its. */
		if (!pid || pid == getpid() || !kill((pid_t)pid, 0) ||
		    errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) && errno != ENOENT) {
			cw_warn("unable to remove '%s': %m", path);
			continue;
		}
		cw_info("removed '%s', left by a writer that died", path);
		removed++;
	}
	closedir(d);
	return removed;
}

int cw_snapshots_start(struct cw_snapshots *s, const char *dir,
		       const struct cw_kafka_conf *kc, const char *group,
		       const char *edges_topic, cw_snapshot_write_fn write,
		       void *arg)
{
	static const char *const names[] = {"edges.json", "graph.dot", NULL};

	memset(s, 0, sizeof(*s));
	s->dir = dir;
	s->write = write;
	s->arg = arg;
	cw_fleet_init(&s->fleet, kc, group, edges_topic);
	if (!dir)
		return 0;
	if (cw_snapshot_clean_stale(dir, names) < 0)
		return -1;
	s->writer = writer_start(dir, write, arg);
	return s->writer ? 0 : -1;
}

/*
 * Build the fleet graph and write it.  When nothing it is made of moved
 * since the last snapshot, the graph and its files stand: a member that
 * waits for records does not rewrite a large graph every snapshot.
 */
int cw_snapshots_hook(struct cw_correlator *c, bool final, void *arg)
{
	struct cw_snapshots *s = arg;
	struct cw_fleet *f = &s->fleet;

	if (cw_fleet_read(f, c))
		return -1;
	if (!s->dir && !final)
		return 0; /* no files: the graph is for the summary alone */
	if (!cw_fleet_moved(f, c) && !(final && s->given))
		return 0;
	/* The end's graph is written here, and kept for the summary. */
	if (final && s->writer && writer_drain(s->writer))
		return -1;
	if (cw_fleet_build(f, c))
		return -1;
	s->given = !final && s->writer;
	if (s->given)
		return writer_put(s->writer, &f->graph, &c->pairing.st);
	if (s->dir && s->write(s->dir, &f->graph, &c->pairing.st, s->arg))
		return -1;
	return 0;
}

int cw_snapshots_stop(struct cw_snapshots *s)
{
	uint64_t written, skipped, cpu;
	int rc = 0;

	if (s->writer) {
		writer_counts(s->writer, &written, &skipped, &cpu);
		cw_info("snapshots: %" PRIu64 " graphs written off the "
			"consuming thread (%.3f s of CPU), %" PRIu64
			" replaced by a newer one before their turn",
			written, (double)cpu / 1e9, skipped);
		rc = writer_stop(s->writer);
		s->writer = NULL;
	}
	cw_fleet_release(&s->fleet);
	return rc;
}
