// SPDX-License-Identifier: MIT
/*
 * The layout worker: /api/graph.svg's layouts run off the HTTP threads,
 * one at a time, each in a child process (viz/layout.c) bounded in time
 * and memory, and are kept in a small cache keyed by their DOT source:
 * the same view of the same data is laid out once, and a change of either
 * makes another source, so another layout.  A request waits for its
 * layout at most SERVE_LAYOUT_WAIT_MS, then is told to ask again (the
 * page polls); a layout that nobody has asked for in SERVE_LAYOUT_IDLE_MS
 * and that nobody waits for is stopped, as is one past its time bound
 * (that failure is kept, so the same source is not tried again).  The
 * environment may change two bounds: CAUSEWAY_LAYOUT_EDGES (the most
 * edges one drawing has) and CAUSEWAY_LAYOUT_TIMEOUT (a duration).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"
#include "viz/viz.h"

#define CACHE_SLOTS 16

enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED };

struct job {
	enum job_state state;
	uint64_t key;	   /* hash of the DOT source */
	size_t dot_len;	   /* its length: part of the key */
	char *dot;	   /* until laid out */
	char *svg;	   /* JOB_DONE */
	size_t svg_len;
	char err[256];	   /* JOB_FAILED */
	unsigned waiters;  /* requests waiting on it now */
	uint64_t asked_ns; /* the last request for it (monotonic) */
	uint64_t ms;	   /* how long the layout took */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a job queued or finished */
	pthread_once_t once;
	bool started;
	size_t max_edges;    /* CAUSEWAY_LAYOUT_EDGES */
	unsigned timeout_ms; /* CAUSEWAY_LAYOUT_TIMEOUT */
	struct job jobs[CACHE_SLOTS];
	struct serve_layout_stats st;
} L = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
};

static void job_clear(struct job *j)
{
	free(j->dot);
	free(j->svg);
	memset(j, 0, sizeof(*j));
}

/* Nobody waits for it and nobody asked lately (the lock held). */
static bool unwanted(const struct job *j, uint64_t now)
{
	return !j->waiters &&
	       now - j->asked_ns > (uint64_t)SERVE_LAYOUT_IDLE_MS * 1000000;
}

static bool cancelled(void *arg)
{
	struct job *j = arg;
	bool ret;

	pthread_mutex_lock(&L.lock);
	ret = unwanted(j, cw_now_mono_ns());
	pthread_mutex_unlock(&L.lock);
	return ret;
}

/* The queued job asked for most recently, dropping unwanted ones. */
static struct job *next_job(void)
{
	uint64_t now = cw_now_mono_ns();
	struct job *best = NULL;
	size_t i;

	for (i = 0; i < CACHE_SLOTS; i++) {
		struct job *j = &L.jobs[i];

		if (j->state != JOB_QUEUED)
			continue;
		if (unwanted(j, now)) {
			L.st.cancelled++;
			job_clear(j);
		} else if (!best || j->asked_ns > best->asked_ns) {
			best = j;
		}
	}
	return best;
}

static void run(struct job *j)
{
	struct cw_viz_layout_opts o = {
		.timeout_ms = L.timeout_ms,
		.mem_bytes = SERVE_LAYOUT_MEM,
		.max_svg_bytes = SERVE_LAYOUT_MEM,
		.cancelled = cancelled,
		.arg = j,
	};
	uint64_t start = cw_now_mono_ns();
	char err[256], *svg;
	size_t len;
	int st;

	st = cw_viz_layout_svg(j->dot, &o, &svg, &len, err, sizeof(err));
	pthread_mutex_lock(&L.lock);
	j->ms = (cw_now_mono_ns() - start) / 1000000;
	L.st.last_ms = j->ms;
	L.st.running = false;
	if (st == CW_VIZ_LAYOUT_CANCELLED) {
		L.st.cancelled++;
		/* Someone asked again since it was stopped: once more. */
		if (unwanted(j, cw_now_mono_ns()))
			job_clear(j);
		else
			j->state = JOB_QUEUED;
		goto out;
	}
	free(j->dot);
	j->dot = NULL;
	if (st == CW_VIZ_LAYOUT_OK) {
		j->state = JOB_DONE;
		j->svg = svg, j->svg_len = len;
		L.st.done++;
	} else {
		cw_warn("graph layout: %s (%zu bytes of DOT)", err, j->dot_len);
		j->state = JOB_FAILED;
		snprintf(j->err, sizeof(j->err), "%s", err);
		if (st == CW_VIZ_LAYOUT_TIMEOUT)
			L.st.timeouts++;
		else
			L.st.failed++;
	}
out:
	pthread_cond_broadcast(&L.changed);
	pthread_mutex_unlock(&L.lock);
}

static void *worker(void *arg)
{
	struct job *j;

	pthread_setname_np(pthread_self(), "cw-layout");
	pthread_mutex_lock(&L.lock);
	for (;;) {
		while (!(j = next_job()))
			pthread_cond_wait(&L.changed, &L.lock);
		j->state = JOB_RUNNING;
		L.st.running = true;
		L.st.started++;
		pthread_mutex_unlock(&L.lock);
		run(j);
		pthread_mutex_lock(&L.lock);
	}
	return NULL;
}

/* The bounds, from the environment when it sets them. */
static void read_bounds(void)
{
	const char *e = getenv("CAUSEWAY_LAYOUT_EDGES");
	uint64_t v;

	L.max_edges = SERVE_LAYOUT_EDGES;
	L.timeout_ms = SERVE_LAYOUT_TIMEOUT_MS;
	if (e && !cw_parse_u64(e, 1, 100000, &v))
		L.max_edges = (size_t)v;
	else if (e)
		cw_warn("CAUSEWAY_LAYOUT_EDGES '%s': not 1..100000; %d kept",
			e, SERVE_LAYOUT_EDGES);
	e = getenv("CAUSEWAY_LAYOUT_TIMEOUT");
	if (e && !cw_parse_duration(e, NSEC_PER_SEC, &v) &&
	    v >= NSEC_PER_SEC / 10 && v <= 3600 * NSEC_PER_SEC)
		L.timeout_ms = (unsigned)(v / 1000000);
	else if (e)
		cw_warn("CAUSEWAY_LAYOUT_TIMEOUT '%s': not 100ms..1h; %ds kept",
			e, SERVE_LAYOUT_TIMEOUT_MS / 1000);
}

static void start_worker(void)
{
	pthread_t t;

	read_bounds();
	if (pthread_create(&t, NULL, worker, NULL)) {
		cw_error("unable to start the layout thread");
		return;
	}
	pthread_detach(t);
	L.started = true;
}

/* The job of this source, or a slot for it: a free one, else the least
 * recently asked finished one nobody waits for; NULL when all are busy.
 * The lock held. */
static struct job *slot_for(uint64_t key, size_t len, bool *found)
{
	struct job *free_slot = NULL, *old = NULL;
	size_t i;

	*found = false;
	for (i = 0; i < CACHE_SLOTS; i++) {
		struct job *j = &L.jobs[i];

		if (j->state != JOB_FREE && j->key == key &&
		    j->dot_len == len) {
			*found = true;
			return j;
		}
		if (j->state == JOB_FREE) {
			if (!free_slot)
				free_slot = j;
		} else if ((j->state == JOB_DONE || j->state == JOB_FAILED ||
			    j->state == JOB_QUEUED) &&
			   !j->waiters && (!old || j->asked_ns < old->asked_ns)) {
			old = j;
		}
	}
	if (free_slot)
		return free_slot;
	if (old)
		job_clear(old);
	return old;
}

/* Wait for j until it is laid out or the wait's end (the lock held). */
static void wait_for(struct job *j)
{
	uint64_t end = cw_now_real_ns() +
		       (uint64_t)SERVE_LAYOUT_WAIT_MS * 1000000;
	struct timespec ts = {.tv_sec = (time_t)(end / NSEC_PER_SEC),
			      .tv_nsec = (long)(end % NSEC_PER_SEC)};

	j->waiters++;
	while ((j->state == JOB_QUEUED || j->state == JOB_RUNNING) &&
	       pthread_cond_timedwait(&L.changed, &L.lock, &ts) != ETIMEDOUT)
		;
	j->waiters--;
	j->asked_ns = cw_now_mono_ns();
}

int serve_layout_svg(char *dot, size_t dot_len, char **svg, size_t *len,
		     char *err, size_t errlen)
{
	uint64_t key = cw_hash_bytes(dot, dot_len);
	struct job *j;
	bool found;
	int ret = SERVE_LAYOUT_PENDING;

	*svg = NULL, *len = 0;
	pthread_once(&L.once, start_worker);
	pthread_mutex_lock(&L.lock);
	if (!L.started) {
		snprintf(err, errlen, "no layout thread");
		ret = SERVE_LAYOUT_FAILED;
		goto out;
	}
	j = slot_for(key, dot_len, &found);
	if (!j) {
		snprintf(err, errlen, "every layout slot is busy: ask again");
		goto out;
	}
	if (found) {
		free(dot);
		L.st.hits += j->state == JOB_DONE;
	} else {
		j->state = JOB_QUEUED;
		j->key = key, j->dot_len = dot_len, j->dot = dot;
		L.st.misses++;
		pthread_cond_broadcast(&L.changed);
	}
	dot = NULL;
	j->asked_ns = cw_now_mono_ns();
	wait_for(j);
	if (j->state == JOB_DONE) {
		*svg = malloc(j->svg_len + 1);
		if (!*svg) {
			snprintf(err, errlen, "out of memory");
			ret = SERVE_LAYOUT_FAILED;
			goto out;
		}
		memcpy(*svg, j->svg, j->svg_len + 1);
		*len = j->svg_len;
		ret = SERVE_LAYOUT_READY;
	} else if (j->state == JOB_FAILED) {
		snprintf(err, errlen, "%s", j->err);
		ret = SERVE_LAYOUT_FAILED;
	} else {
		snprintf(err, errlen, "the layout is still running: ask again");
	}
out:
	pthread_mutex_unlock(&L.lock);
	free(dot);
	return ret;
}

void serve_layout_stats(struct serve_layout_stats *st)
{
	pthread_once(&L.once, start_worker);
	pthread_mutex_lock(&L.lock);
	*st = L.st;
	st->max_edges = L.max_edges;
	st->timeout_ms = L.timeout_ms;
	pthread_mutex_unlock(&L.lock);
}
