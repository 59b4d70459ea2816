// SPDX-License-Identifier: MIT
/*
 * Choosing a plan for 'causeway place': the current placement scored as
 * the baseline, then one method or all of them, the best kept.
 */
#include <stdlib.h>

#include "common/log.h"
#include "place/place.h"

static bool better(const struct cw_place_plan *a, const struct cw_place_plan *b,
		   bool fixed)
{
	if (!fixed && a->hosts_used != b->hosts_used)
		return a->hosts_used < b->hosts_used;
	return a->cross_bytes < b->cross_bytes;
}

/* Solve by the chosen method(s); the best plan's method, or -1. */
static long solve(struct cw_place *p, struct cw_place_result *res)
{
	long best = -1;
	int m;

	for (m = 0; m < 3; m++) {
		if (!res->all && m != (int)res->method)
			continue;
		res->ok[m] = cw_place_solve(p, m, &res->plans[m]) == 0;
		if (res->ok[m] &&
		    (best < 0 || better(&res->plans[m], &res->plans[best],
					p->fixed_hosts || p->max_moves >= 0)))
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
