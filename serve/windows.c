// SPDX-License-Identifier: MIT
/*
 * Causal paths from the timing topic, for `serve --kafka`: records are
 * grouped into windows by correlator/timing.c and each complete window is
 * inferred from its records alone (correlator/live.h, paths/), with the
 * options `causeway correlate` uses by default, into the line that
 * correlate appends to paths.jsonl.  The page then shows the same paths
 * a correlator writes, with no file between them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/live.h"
#include "paths/paths.h"
#include "serve/serve_int.h"

/* As correlate's --window-grace default. */
#define GRACE_NS (2 * NSEC_PER_SEC)
/*
 * The newest window has no newer one to close it while the agents are
 * quiet: past this since its first record it is inferred anyway (every
 * agent's records of a window arrive within seconds of its end).
 */
#define MAX_AGE_NS (20 * NSEC_PER_SEC)
/*
 * Reading the topic from the beginning replays days of windows: the page
 * shows the newest 100, so windows older than this are counted and not
 * inferred (each costs a convolution).
 */
#define OLDEST_NS (3600 * NSEC_PER_SEC)

struct serve_windows {
	struct serve_feed *feed;
	struct cw_timing timing;
	struct cw_paths_opts po;
	uint64_t old; /* windows too old to infer */
};

struct serve_windows *serve_windows_new(struct serve_feed *f)
{
	struct serve_windows *w = calloc(1, sizeof(*w));

	if (!w) {
		cw_error("out of memory");
		return NULL;
	}
	w->feed = f;
	cw_timing_init(&w->timing, GRACE_NS);
	w->timing.max_age_ns = MAX_AGE_NS;
	cw_paths_opts_default(&w->po);
	return w;
}

void serve_windows_free(struct serve_windows *w)
{
	if (!w)
		return;
	cw_timing_release(&w->timing);
	free(w);
}

void serve_windows_add(struct serve_windows *w, struct cw_timing_record *t,
		       int32_t partition, int64_t offset)
{
	if (cw_timing_seen(&w->timing, partition, offset) ||
	    cw_timing_add(&w->timing, t, partition, offset, cw_now_mono_ns(),
			  cw_now_real_ns())) {
		free(t->msgs);
		t->msgs = NULL;
	}
}

/* correlate's paths.jsonl line: the window, what was paired, the paths. */
static char *window_line(const struct cw_timing_window *win,
			 const struct cw_live_stats *st,
			 const struct cw_msgtrace *t,
			 const struct cw_pathset *ps)
{
	char *paths = NULL, *line = NULL;
	size_t plen = 0, len = 0;
	FILE *mem = open_memstream(&paths, &plen);
	struct cw_jsonw j;

	if (!mem)
		return NULL;
	cw_pathset_print_json(mem, t, ps);
	if (fclose(mem) || plen < 3 || paths[0] != '{')
		goto out;
	mem = open_memstream(&line, &len);
	if (!mem)
		goto out;
	cw_jsonw_init(&j, mem);
	cw_jsonw_obj_open(&j, NULL);
	cw_jsonw_u64(&j, "slot_ns", win->slot);
	cw_jsonw_u64(&j, "window_start_ns", win->start_ns);
	cw_jsonw_u64(&j, "window_end_ns", win->end_ns);
	cw_jsonw_u64(&j, "records", st->records);
	cw_jsonw_u64(&j, "ends", st->ends);
	cw_jsonw_u64(&j, "paired", st->paired);
	cw_jsonw_u64(&j, "messages", st->messages);
	fputc(',', mem);
	fwrite(paths + 1, 1, plen - 1, mem);
	if (fclose(mem)) {
		free(line);
		line = NULL;
	}
out:
	free(paths);
	return line;
}

/* One window's paths to the feed; a window with none is counted. */
static void infer(struct serve_windows *w, const struct cw_timing_window *win)
{
	struct cw_live_stats st = {0};
	struct cw_msgtrace t;
	struct cw_pathset ps;
	char *line = NULL;

	cw_msgtrace_init(&t);
	cw_pathset_init(&ps);
	if (!cw_live_trace_windows(win->recs, win->n, true, &t, &st) &&
	    !cw_paths_convolution(&t, &w->po, &ps))
		line = window_line(win, &st, &t, &ps);
	if (line) {
		cw_debug("window %" PRIu64 ": %zu paths", win->slot,
			 ps.n_paths);
		serve_feed_window(w->feed, line);
	}
	serve_feed_lock(w->feed);
	if (line)
		w->feed->windows_inferred++;
	else
		w->feed->windows_failed++;
	serve_feed_unlock(w->feed);
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
}

void serve_windows_step(struct serve_windows *w)
{
	struct cw_timing_window *win;

	while ((win = cw_timing_ready(&w->timing, cw_now_mono_ns(), false))) {
		if (win->slot + OLDEST_NS >= cw_now_real_ns())
			infer(w, win);
		else
			w->old++;
		cw_timing_pop(&w->timing);
	}
	serve_feed_lock(w->feed);
	w->feed->timing_records = w->timing.records;
	w->feed->timing_late = w->timing.late;
	w->feed->timing_refused = w->timing.refused;
	w->feed->windows_old = w->old;
	serve_feed_unlock(w->feed);
}
