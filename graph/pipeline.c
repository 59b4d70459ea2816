// SPDX-License-Identifier: MIT
/*
 * Records -> pairing -> traffic graph -> view, the one way every command
 * does it: ingest (pairing and windows), pair, build, place the windows,
 * free the ends, project.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "graph/graph.h"

static double secs_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

void cw_pipeline_init(struct cw_pipeline *pl, uint64_t window_ns)
{
	memset(pl, 0, sizeof(*pl));
	cw_pairing_init(&pl->pairing);
	cw_windows_init(&pl->windows, window_ns);
	cw_graph_init(&pl->graph);
}

void cw_pipeline_release(struct cw_pipeline *pl)
{
	cw_view_release(&pl->view);
	cw_graph_release(&pl->graph);
	cw_windows_release(&pl->windows);
	cw_pairing_release(&pl->pairing);
}

int cw_pipeline_add(struct cw_pipeline *pl, const struct cw_conn_record *r,
		    size_t n)
{
	size_t i;

	if (cw_pairing_add_many(&pl->pairing, r, n))
		return cw_error("out of memory");
	for (i = 0; i < n; i++)
		if (cw_windows_add(&pl->windows, &r[i]))
			return cw_error("out of memory");
	return 0;
}

static int on_records(const struct cw_conn_record *r, size_t n, void *arg)
{
	return cw_pipeline_add(arg, r, n);
}

int cw_pipeline_read_files(struct cw_pipeline *pl, char *const *paths, size_t n,
			   bool skip_bad)
{
	struct timespec t0;
	uint64_t guess = 0;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		guess += cw_record_file_guess(paths[i]);
	/* Sized once from the files' sizes: no copies as the tables grow. */
	if (guess && guess < 1000000000 &&
	    cw_pairing_reserve(&pl->pairing, (size_t)guess))
		return cw_error("out of memory for %llu records",
				(unsigned long long)guess);
	if (cw_record_read_files_many(paths, n, skip_bad, on_records, pl,
				      &pl->read))
		return -1;
	pl->t_read = secs_since(&t0);
	return 0;
}

int cw_pipeline_finish(struct cw_pipeline *pl, enum cw_group_by by)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cw_graph_build(&pl->graph, &pl->pairing) ||
	    (pl->windows.width_ns &&
	     cw_windows_place(&pl->windows, &pl->graph, &pl->pairing)))
		return cw_error("out of memory pairing connection ends");
	pl->t_pair = secs_since(&t0);
	/* The view needs the graph only: its memory can have the ends'. */
	pl->pairs = pl->pairing.st;
	cw_pairing_release(&pl->pairing);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cw_view_build(&pl->view, &pl->graph, by, &pl->windows))
		return -1;
	pl->t_view = secs_since(&t0);
	if (pl->windows.lumped)
		cw_warn("per-window traffic: %llu changes spanned more than "
			"%u windows, or came past %llu entries, and were put "
			"whole in their last window",
			(unsigned long long)pl->windows.lumped,
			CW_WINDOWS_SPAN_MAX,
			(unsigned long long)pl->windows.max_deltas);
	return 0;
}
