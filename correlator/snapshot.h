/* SPDX-License-Identifier: MIT */
/*
 * A correlator member's snapshots (`causeway correlate -o DIR`): at each
 * snapshot the member's fleet graph (correlator/pipeline.h) is built when
 * what it is made of moved, and handed to a thread of its own that writes
 * the files, so the thread that consumes records goes on while a large
 * graph is laid out (graph.dot through cgraph takes seconds for 100,000
 * edges).  The end's graph is written on the caller's thread and kept.
 *
 *	struct cw_snapshots s;
 *
 *	if (cw_snapshots_start(&s, dir, &kc, group, edges_topic, write, arg))
 *		return 1;
 *	c.snapshot = cw_snapshots_hook;		// the correlator's hook
 *	c.snapshot_arg = &s;
 *	cw_correlator_run(&c, ...);
 *	print(&s.fleet.graph);			// the end's graph
 *	cw_snapshots_stop(&s);			// waits, says what it did
 *
 * The writer holds one graph being written and one waiting; a newer one
 * replaces the one waiting (counted as skipped): the files always become
 * the newest graph handed over, and a writer slower than the snapshots
 * costs no memory beyond two graphs.  write() is the caller's (edges.json,
 * graph.dot: each whole or not at all); it runs on the writer's thread
 * alone while that runs.  At start, the temporary files (cw_outfile's
 * "NAME.tmp.PID.XXXXXX") that a writer killed mid-write left in dir are
 * removed, those of a process still running kept.  Functions returning
 * int give 0, or -1 after one "causeway: error: ..." line (a write that
 * failed earlier is reported by the next call).
 */
#ifndef CW_CORRELATOR_SNAPSHOT_H
#define CW_CORRELATOR_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "correlator/pipeline.h"

/* The files of one graph in dir: 0, or -1 after a message. */
typedef int (*cw_snapshot_write_fn)(const char *dir, const struct cw_graph *g,
				    const struct cw_pairing_stats *ps,
				    void *arg);

struct cw_snapshot_writer;

struct cw_snapshots {
	const char *dir; /* NULL: no files, the graph for the end alone */
	struct cw_fleet fleet;
	struct cw_snapshot_writer *writer;
	bool given; /* the graph went to the writer: rebuild for the end */
	cw_snapshot_write_fn write;
	void *arg;
};

int cw_snapshots_start(struct cw_snapshots *s, const char *dir,
		       const struct cw_kafka_conf *kc, const char *group,
		       const char *edges_topic, cw_snapshot_write_fn write,
		       void *arg);
/* The correlator's snapshot hook (struct cw_correlator .snapshot), with
 * arg the struct cw_snapshots. */
int cw_snapshots_hook(struct cw_correlator *c, bool final, void *arg);
/* Drains and stops the writer, saying what it did; frees the fleet. */
int cw_snapshots_stop(struct cw_snapshots *s);

/*
 * Remove dir/NAME.tmp.PID.* of each name (NULL-terminated) whose PID is
 * no running process; the count removed, or -1 after a message.
 */
int cw_snapshot_clean_stale(const char *dir, const char *const *names);

#endif
