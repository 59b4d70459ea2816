/* SPDX-License-Identifier: MIT */
/*
 * Nesting's private state, shared by paths_nest.c (candidates,
 * significance, parents, paths) and paths_nest_calls.c (pairing calls
 * with replies and linking the caller's and callee's views of a call).
 */
#ifndef CW_PATHS_NEST_H
#define CW_PATHS_NEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paths/paths.h"

#define SCAN_LIMIT 512 /* calls into j looked at, latest first */
#define MAX_CAND   32  /* candidate parents kept per call */

/* One call seen from one end: it starts (call sent or received) at s and
 * ends (reply received or sent) at e, on that end's clock. */
struct ival {
	uint64_t s, e;
	uint32_t conn;
};

/* Node a calls node b. */
struct relation {
	uint32_t a, b;
	struct ival *srv; /* at b, sorted by (conn, s) */
	struct ival *cli; /* at a, sorted by (conn, s) */
	size_t n_srv, n_cli;
	long *link;	    /* per cli call: the srv call it is, or -1 */
	long *par_rel;	    /* per cli call: its parent relation, or -1 */
	size_t *par_idx;    /* ... and the parent's srv index */
	size_t *cand_first; /* per cli call: candidates in the pool */
	uint32_t *cand_n;
	uint32_t *kids; /* per srv call: children given (scratch) */
	uint8_t *sig;	/* per relation p: (p, this) was kept */
};

struct cand {
	uint32_t rel, idx; /* a call into j: relation, srv index */
};

struct triple {
	size_t p, r; /* relation indices: p = (i, j), r = (j, k) */
	double score;
};

/* A call into a node, for the searches there. */
struct served {
	uint64_t s, e;
	uint32_t rel, idx;
};

struct nest_ctx {
	const struct cw_msgtrace *t;
	const struct cw_paths_opts *o;
	struct cw_edge_index ix;
	struct relation *rel;
	size_t n_rel;
	struct cand *pool;
	size_t n_pool, cap_pool;
	struct triple *tri;
	size_t n_tri, cap_tri, n_judged;
	size_t n_visits; /* against o->max_visits */
	bool truncated;
};

/* The relations (call edge + reply edge) of c's trace, with each call's
 * interval and both views linked; 0 or -1 with a message. */
int cw_nest_build_calls(struct nest_ctx *c);
void cw_nest_rel_free(struct relation *r);

#endif
