// SPDX-License-Identifier: MIT
/*
 * Plans that move no more than they must.  A method decides which units
 * share a host, not which host each group is on: renaming the groups after
 * the hosts their units already run on keeps the host count, the
 * cross-host bytes and (where capacities allow) the fit, and moves fewer
 * units.  Choosing the names is an assignment problem between the plan's
 * groups and the hosts, solved exactly (the Hungarian method, shortest
 * augmenting paths with potentials).  Then moves that save nothing are
 * taken back.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "place/place_int.h"

#define COST_INF (INT64_MAX / 4)

struct relabel {
	const struct cw_place *p;
	size_t r, n;	   /* groups (hosts the plan uses), hosts */
	uint32_t *group;   /* row -> the plan's host */
	uint32_t *col;	   /* column -> host */
	int64_t *cost;	   /* r x n, row major */
	uint32_t *to;	   /* row -> column chosen */
};

static void relabel_release(struct relabel *rl)
{
	free(rl->group);
	free(rl->col);
	free(rl->cost);
	free(rl->to);
}

/*
 * Cost of naming group g after host h: minus r + 1 for each unit of g
 * already on h, minus one more when h is g's own name (the r names weigh
 * less than one unit: ties keep the plan's names); COST_INF when g does not fit h or holds a unit that cannot move
 * and h is not its host.
 */
static void fill_costs(struct relabel *rl, const uint32_t *host,
		       const uint32_t *row_of, const uint32_t *col_of,
		       const struct place_load *ld, const uint8_t *pinned)
{
	const struct cw_place *p = rl->p;
	size_t i, j;
	int64_t *c;

	for (i = 0; i < rl->r; i++) {
		uint32_t g = rl->group[i];

		for (j = 0; j < rl->n; j++) {
			uint32_t h = rl->col[j];
			bool fit =
				ld->cpu[g] <= place_cap_cpu(p, h) + PLACE_EPS &&
				ld->mem[g] <= place_cap_mem(p, h) + PLACE_EPS;

			rl->cost[i * rl->n + j] = !fit || (pinned[g] && h != g)
							  ? COST_INF
							  : -(int64_t)(h == g);
		}
	}
	for (i = 0; i < p->nunits; i++) {
		uint32_t h = p->units[i].host;

		if (!p->units[i].movable || col_of[h] == UINT32_MAX)
			continue;
		c = &rl->cost[(size_t)row_of[host[i]] * rl->n + col_of[h]];
		if (*c != COST_INF)
			*c -= (int64_t)rl->r + 1;
	}
}

/*
 * The assignment of rows to distinct columns (r <= n) of least cost:
 * shortest augmenting paths with row and column potentials, O(r^2 n).
 */
static int hungarian(struct relabel *rl)
{
	size_t r = rl->r, n = rl->n, i, j, j0, j1 = 0, i0;
	int64_t *u = calloc(r + 1, sizeof(*u)), *v = calloc(n + 1, sizeof(*v)),
		*minv = malloc((n + 1) * sizeof(*minv)), delta, cur;
	size_t *row = calloc(n + 1, sizeof(*row)),
	       *way = calloc(n + 1, sizeof(*way));
	uint8_t *used = malloc(n + 1);
	int ret = 0;

	if (!u || !v || !minv || !row || !way || !used) {
		ret = cw_error("out of memory for the relabelling");
		goto out;
	}
	/* 1-based: column 0 is the free end of the augmenting path. */
	for (i = 1; i <= r; i++) {
		row[0] = i;
		j0 = 0;
		for (j = 0; j <= n; j++)
			minv[j] = COST_INF * 2, used[j] = 0;
		do {
			used[j0] = 1;
			i0 = row[j0];
			delta = COST_INF * 2;
			for (j = 1; j <= n; j++) {
				if (used[j])
					continue;
				cur = rl->cost[(i0 - 1) * n + j - 1] - u[i0] -
				      v[j];
				if (cur < minv[j])
					minv[j] = cur, way[j] = j0;
				if (minv[j] < delta)
					delta = minv[j], j1 = j;
			}
			for (j = 0; j <= n; j++) {
				if (used[j]) {
					u[row[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (row[j0]);
		do {
			j1 = way[j0];
			row[j0] = row[j1];
			j0 = j1;
		} while (j0);
	}
	for (j = 1; j <= n; j++)
		if (row[j])
			rl->to[row[j] - 1] = (uint32_t)(j - 1);
out:
	free(u);
	free(v);
	free(minv);
	free(row);
	free(way);
	free(used);
	return ret;
}

/* Rows: the hosts the plan uses; columns: those and the allowed ones. */
static int relabel_setup(struct relabel *rl, const uint32_t *host,
			 const struct place_load *ld, uint32_t *row_of,
			 uint32_t *col_of)
{
	const struct cw_place *p = rl->p;
	size_t i, nallowed;
	uint32_t *order = malloc((p->nhosts + 1) * sizeof(*order));

	rl->group = malloc((p->nhosts + 1) * sizeof(*rl->group));
	rl->col = malloc((p->nhosts + 1) * sizeof(*rl->col));
	rl->to = malloc((p->nhosts + 1) * sizeof(*rl->to));
	if (!order || !rl->group || !rl->col || !rl->to) {
		free(order);
		return cw_error("out of memory for the relabelling");
	}
	nallowed = cw_place_host_order(p, order);
	for (i = 0; i < p->nhosts; i++)
		row_of[i] = col_of[i] = UINT32_MAX;
	for (i = 0; i < p->nhosts; i++)
		if (ld->count[i]) {
			row_of[i] = (uint32_t)rl->r;
			rl->group[rl->r++] = (uint32_t)i;
			col_of[i] = (uint32_t)rl->n;
			rl->col[rl->n++] = (uint32_t)i;
		}
	for (i = 0; i < nallowed; i++)
		if (col_of[order[i]] == UINT32_MAX) {
			col_of[order[i]] = (uint32_t)rl->n;
			rl->col[rl->n++] = order[i];
		}
	free(order);
	rl->cost = malloc((rl->r * rl->n + 1) * sizeof(*rl->cost));
	if (!rl->cost)
		return cw_error("out of memory for the relabelling");
	return 0;
}

int cw_place_relabel(const struct cw_place *p, uint32_t *host)
{
	struct relabel rl = {.p = p};
	struct place_load ld = {0};
	uint32_t *row_of = malloc((p->nhosts + 1) * sizeof(*row_of)),
		 *col_of = malloc((p->nhosts + 1) * sizeof(*col_of));
	uint8_t *pinned = calloc(p->nhosts + 1, 1);
	size_t i;
	int ret = -1;

	if (!row_of || !col_of || !pinned) {
		cw_error("out of memory for the relabelling");
		goto out;
	}
	if (place_load_init(&ld, p, host) ||
	    relabel_setup(&rl, host, &ld, row_of, col_of))
		goto out;
	for (i = 0; i < p->nhosts; i++)
		if (ld.cpu[i] > place_cap_cpu(p, i) + PLACE_EPS ||
		    ld.mem[i] > place_cap_mem(p, i) + PLACE_EPS) {
			ret = 0; /* a plan over capacity: left as it is */
			goto out;
		}
	for (i = 0; i < p->nunits; i++)
		if (!p->units[i].movable)
			pinned[host[i]] = 1;
	fill_costs(&rl, host, row_of, col_of, &ld, pinned);
	if (hungarian(&rl))
		goto out;
	/* The plan's own names fit, so the least cost never needs COST_INF. */
	for (i = 0; i < p->nunits; i++)
		host[i] = rl.col[rl.to[row_of[host[i]]]];
	ret = 0;
out:
	place_load_release(&ld);
	relabel_release(&rl);
	free(row_of);
	free(col_of);
	free(pinned);
	return ret;
}

int place_settle(const struct cw_place *p, uint32_t *host)
{
	bool open = p->fixed_hosts || p->max_moves >= 0;
	uint32_t *order = malloc((p->nhosts + 1) * sizeof(*order));
	uint8_t *allowed = calloc(p->nhosts + 1, 1);
	struct place_load ld = {0};
	size_t i, n, changed = 1;
	int passes = 16, ret = -1;

	if (!order || !allowed) {
		cw_error("out of memory for the plan");
		goto out;
	}
	n = cw_place_host_order(p, order);
	for (i = 0; i < n; i++)
		allowed[order[i]] = 1;
	if (place_load_init(&ld, p, host))
		goto out;
	while (changed && passes-- > 0) {
		changed = 0;
		for (i = 0; i < p->nunits; i++) {
			uint32_t u = (uint32_t)i, h = p->units[i].host;

			if (!p->units[i].movable || host[i] == h ||
			    !allowed[h] || (!open && !ld.count[h]) ||
			    !place_fits(p, &ld, u, h) ||
			    place_move_gain(p, host, u, h) < 0)
				continue;
			place_load_move(p, &ld, u, host[i], h);
			host[i] = h;
			changed++;
		}
	}
	ret = 0;
out:
	place_load_release(&ld);
	free(order);
	free(allowed);
	return ret;
}
