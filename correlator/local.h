/* SPDX-License-Identifier: MIT */
/*
 * One host's correlator in the agent's process (`causeway run`): the
 * agent's callbacks (agent/agent.h cw_agent_watch) feed a pairing, keep
 * the timing windows for causal paths, and write every record to DIR
 * (conns.jsonl, meta.jsonl, timing.jsonl: whole or not at all).
 *
 *	struct cw_local l;
 *
 *	cw_local_init(&l, paths);
 *	if (cw_local_open(&l, dir, windows) ||
 *	    cw_agent_watch(a, &wo, cw_local_on_record, cw_local_on_timing, &l))
 *		goto out;
 *	cw_local_graph(&l, &g);			// paired, edges sorted
 *	cw_local_paths(&l, dir);		// causal paths, if asked
 *	cw_local_commit(&l);			// the files, renamed in place
 *	out: cw_local_release(&l);
 */
#ifndef CW_CORRELATOR_LOCAL_H
#define CW_CORRELATOR_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

struct cw_local {
	struct cw_pairing pairing;
	struct cw_outfile records; /* conns.jsonl: every record collected */
	struct cw_jsonw w;
	struct cw_outfile timing; /* timing.jsonl: message starts per window */
	struct cw_jsonw tw;
	struct cw_outfile meta; /* meta.jsonl: processes' resources */
	struct cw_jsonw mw;
	uint64_t meta_seq;
	struct cw_peer_names names; /* --dns: what the agent learned */
	bool paths;		    /* keep windows for causal paths */
	struct cw_timing_record *windows;
	size_t nwindows, capwindows;
	int err;
};


/* Empty; paths: keep the windows for cw_local_paths(). */
void cw_local_init(struct cw_local *l, bool paths);
/* DIR/conns.jsonl, DIR/meta.jsonl, and DIR/timing.jsonl with timing
 * windows (dir NULL: none); 0 or -1 after a message. */
int cw_local_open(struct cw_local *l, const char *dir, bool timing);
/* The agent's callbacks, arg the struct cw_local: 0 or -1 (told). */
int cw_local_on_record(const struct cw_conn_record *r, void *arg);
int cw_local_on_timing(const struct cw_timing_record *t, void *arg);
int cw_local_on_meta(const struct cw_proc_meta *pm, void *arg);
/* A name the DNS capture learned (--dns): kept for the graph's external
 * nodes, and written to DIR/meta.jsonl. */
int cw_local_on_dns(const struct cw_wire_dns *n, void *arg);
/* The pairing's graph into g (initialised), edges sorted, external nodes
 * named; 0 or -1. */
int cw_local_graph(struct cw_local *l, struct cw_graph *g);
/* Causal paths from the windows: text on stdout, DIR/paths.json (dir
 * NULL: none); no window is a warning.  0 or -1 after a message. */
int cw_local_paths(struct cw_local *l, const char *dir);
/* The files opened, renamed in place; 0 or -1 after a message. */
int cw_local_commit(struct cw_local *l);
/* Files not committed removed, everything freed. */
void cw_local_release(struct cw_local *l);

#endif
