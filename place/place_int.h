/* SPDX-License-Identifier: MIT */
/* Inside place/: what the methods share.  Not part of the public face. */
#ifndef CW_PLACE_INT_H
#define CW_PLACE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "place/place.h"

#define PLACE_EPS 1e-9

static inline double place_cap_cpu(const struct cw_place *p, size_t h)
{
	return p->hosts[h].cpu * (1.0 - p->headroom);
}

static inline double place_cap_mem(const struct cw_place *p, size_t h)
{
	return p->hosts[h].memory * (1.0 - p->headroom);
}

/* What each host holds under an assignment (host NULL: nothing). */
struct place_load {
	double *cpu, *mem;
	uint32_t *count;
};

int place_load_init(struct place_load *ld, const struct cw_place *p,
		    const uint32_t *host);
void place_load_release(struct place_load *ld);
/* Whether unit u fits on host h as the load stands (u not counted there). */
int place_fits(const struct cw_place *p, const struct place_load *ld,
	       uint32_t u, uint32_t h);
void place_load_move(const struct cw_place *p, struct place_load *ld,
		     uint32_t u, uint32_t from, uint32_t to);
/* Cross-host bytes saved by moving u from host[u] to h (may be < 0). */
int64_t place_move_gain(const struct cw_place *p, const uint32_t *host,
			uint32_t u, uint32_t h);

/* splitmix64, seeded: the same plan for the same seed. */
uint64_t place_rand(uint64_t *state);

/* Merge links and build the adjacency (no capacity checks). */
int place_build(struct cw_place *p);

/*
 * Greedy improvement: move units (to hosts with allowed[h]) while some move
 * saves bytes and fits; with p->max_moves >= 0 keep at most that many units
 * away from their home (home[u]).  0 or -1 (out of memory).
 */
int place_refine(const struct cw_place *p, uint32_t *host,
		 const uint8_t *allowed, const uint32_t *home, int passes);

/* With p->max_moves >= 0: best single moves from home, one at a time. */
int place_greedy_moves(const struct cw_place *p, uint32_t *host,
		       const uint8_t *allowed, const uint32_t *home);

/*
 * Units and hosts from the graph (place/derive.c), when no units or hosts
 * file was given: rows as the files would have them.  0 or -1 (message).
 */
struct json_object;
int place_units_from_graph(struct cw_place_input *in, struct json_object *nodes,
			   const bool *active, const uint64_t *seen_ns);
int place_hosts_from_graph(struct cw_place_input *in, struct json_object *root);

/*
 * Take back the moves that save nothing (place/relabel.c): a unit goes
 * home when its home has room, the cross-host bytes do not rise and,
 * unless the host count does not matter (fixed hosts, a moves limit), its
 * home is in use anyway.  0 or -1 (out of memory).
 */
int place_settle(const struct cw_place *p, uint32_t *host);
/* Cross-host bytes of the current placement. */
uint64_t place_cross_now(const struct cw_place *p);
/* Whether plans may not raise the cross-host bytes above the current
 * placement's (fewest hosts without --hosts consolidate). */
bool place_keeps_bytes(const struct cw_place *p);

int place_ga(struct cw_place *p, struct cw_place_plan *plan);
int place_partition(struct cw_place *p, struct cw_place_plan *plan);
int place_ilp(struct cw_place *p, struct cw_place_plan *plan);

#endif
