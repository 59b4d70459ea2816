// SPDX-License-Identifier: MIT
/*
 * Choosing a plan for 'causeway place': the current placement scored as
 * the baseline, then one method or all of them, the best kept.
 */
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"
#include "place/place.h"
#include "place/place_int.h"

static bool better(const struct cw_place *p, const struct cw_place_plan *a,
		   const struct cw_place_plan *b, uint64_t now)
{
	bool fixed = p->fixed_hosts || p->max_moves >= 0;

	if (place_keeps_bytes(p) &&
	    (a->cross_bytes <= now) != (b->cross_bytes <= now))
		return a->cross_bytes <= now;
	if (!fixed && a->hosts_used != b->hosts_used)
		return a->hosts_used < b->hosts_used;
	if (a->cross_bytes != b->cross_bytes)
		return a->cross_bytes < b->cross_bytes;
	return a->nmoves < b->nmoves;
}

bool cw_place_plan_better(const struct cw_place *p,
			  const struct cw_place_plan *a,
			  const struct cw_place_plan *b)
{
	return better(p, a, b, place_cross_now(p));
}

/*
 * Solve by the chosen method(s); the best plan's method, or -1.  On a
 * whole tie the first in this order: ours, the proven optimum, the GA.
 */
static long solve(struct cw_place *p, struct cw_place_result *res)
{
	static const enum cw_place_method order[] = {
		CW_PLACE_PARTITION, CW_PLACE_ILP, CW_PLACE_GA};
	uint64_t now = place_cross_now(p);
	long best = -1;
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(order); i++) {
		enum cw_place_method m = order[i];

		if (!res->all && m != res->method)
			continue;
		res->ok[m] = cw_place_solve(p, m, &res->plans[m]) == 0;
		if (res->ok[m] &&
		    (best < 0 ||
		     better(p, &res->plans[m], &res->plans[best], now)))
			best = m;
	}
	return best;
}

int cw_place_choose(struct cw_place_input *in, struct cw_place_result *res)
{
	struct cw_place *p = &in->p;
	struct cw_place_plan *before = &res->before;
	size_t i;

	before->host = malloc((p->nunits + 1) * sizeof(*before->host));
	if (!before->host)
		return cw_error("out of memory");
	for (i = 0; i < p->nunits; i++)
		before->host[i] = p->units[i].host;
	before->nunits = p->nunits;
	if (cw_place_plan_score(p, before))
		return -1;
	res->best = solve(p, res);
	return res->best < 0 ? -1 : 0;
}

void cw_place_result_release(struct cw_place_result *res)
{
	int m;

	for (m = 0; m < 3; m++)
		cw_place_plan_release(&res->plans[m]);
	cw_place_plan_release(&res->before);
}
