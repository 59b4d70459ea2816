/* SPDX-License-Identifier: MIT */
/*
 * A snapshot's files (edges.json, graph.dot) written on a thread of their
 * own, so the thread that consumes records goes on while a large graph is
 * laid out (graph.dot through cgraph takes seconds for 100,000 edges).
 *
 *	struct cli_graph_writer *w = cli_graph_writer_start(dir, 0.01);
 *	cli_graph_writer_put(w, &g, &stats);	// takes g; g left empty
 *	...
 *	cli_graph_writer_stop(w);		// waits for the last one
 *
 * One graph is written at a time and one waits; a newer one replaces the
 * one waiting (counted as skipped): the files always become the newest
 * graph handed over, and a writer slower than the snapshots costs no
 * memory beyond two graphs.  Functions returning int give 0, or -1 after
 * one "causeway: error: ..." line (a write that failed earlier is
 * reported by the next call).
 */
#ifndef CLI_GRAPH_WRITER_H
#define CLI_GRAPH_WRITER_H

#include <stdint.h>

struct cw_graph;
struct cw_pairing_stats;
struct cli_graph_writer;

/* NULL (after an error line) when no thread could be started. */
struct cli_graph_writer *cli_graph_writer_start(const char *dir,
						double min_share);
/* Hands over *g (re-initialised empty) and a copy of *ps. */
int cli_graph_writer_put(struct cli_graph_writer *w, struct cw_graph *g,
			 const struct cw_pairing_stats *ps);
/* Waits until nothing waits or is being written. */
int cli_graph_writer_drain(struct cli_graph_writer *w);
/* Drains, ends the thread and frees w (NULL: nothing). */
int cli_graph_writer_stop(struct cli_graph_writer *w);
/* Graphs written, replaced before they were, and the CPU time the
 * writing took (its thread's: apart from the records' consumption). */
void cli_graph_writer_counts(struct cli_graph_writer *w, uint64_t *written,
			     uint64_t *skipped, uint64_t *cpu_ns);

#endif
