// SPDX-License-Identifier: MIT
/*
 * Our method: multilevel graph partitioning with capacities.  Units are
 * coarsened by matching each with its heaviest-traffic neighbour (while the
 * pair still fits the smallest host), the coarsest clusters are packed
 * (first fit decreasing, drawn to the host they already talk to most), and
 * each level is refined with capacity-respecting moves on the way back
 * down.  Fewest hosts: try the lower bound on the host count first and
 * grow it until the packing succeeds.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "place/place_int.h"

#define MAX_LEVELS 24

struct level {
	struct cw_place q; /* clusters as units */
	uint32_t *map;	   /* finer unit -> cluster here */
};

static void levels_release(struct level *lv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(lv[i].map);
		lv[i].q.hosts = NULL; /* the fine instance's */
		lv[i].q.nhosts = 0;
		cw_place_release(&lv[i].q);
	}
}

/* Whether a and b may become one cluster no larger than the limits. */
static int can_merge(const struct cw_place *f, uint32_t a, uint32_t b,
		     double lc, double lm)
{
	const struct cw_place_unit *x = &f->units[a], *y = &f->units[b];

	if (!x->movable && !y->movable && x->host != y->host)
		return 0;
	return x->cpu + y->cpu <= lc && x->memory + y->memory <= lm;
}

/* Heavy-edge matching: each unit's partner, or itself. */
static void match(const struct cw_place *f, uint32_t *mate, uint64_t *rng,
		  double lc, double lm)
{
	size_t i, k, n = f->nunits;

	for (i = 0; i < n; i++)
		mate[i] = UINT32_MAX;
	for (i = 0; i < n; i++) {
		/* A seeded start and a prime stride visit each unit once. */
		uint32_t u = (uint32_t)((i * 2654435761ULL + *rng) % n), best;
		uint64_t bb = 0;

		if (mate[u] != UINT32_MAX)
			continue;
		best = u;
		for (k = f->adj_off[u]; k < f->adj_off[u + 1]; k++) {
			uint32_t v = f->adj_to[k];

			if (mate[v] == UINT32_MAX && f->adj_bytes[k] > bb &&
			    can_merge(f, u, v, lc, lm))
				best = v, bb = f->adj_bytes[k];
		}
		mate[u] = best;
		mate[best] = u;
	}
}

/* Build the next level from f; 0, 1 when it hardly shrinks, or -1. */
static int coarsen(const struct cw_place *f, struct level *lv, uint64_t *rng,
		   double lc, double lm)
{
	uint32_t *mate = malloc((f->nunits + 1) * sizeof(*mate));
	size_t i, k;
	long c;

	cw_place_init(&lv->q);
	lv->q.headroom = f->headroom;
	lv->map = malloc((f->nunits + 1) * sizeof(*lv->map));
	if (!mate || !lv->map)
		goto nomem;
	match(f, mate, rng, lc, lm);
	for (i = 0; i < f->nunits; i++)
		lv->map[i] = UINT32_MAX;
	for (i = 0; i < f->nunits; i++) {
		const struct cw_place_unit *u = &f->units[i], *v;

		if (lv->map[i] != UINT32_MAX)
			continue;
		v = &f->units[mate[i]];
		c = cw_place_add_unit(&lv->q, "",
				      u->movable ? v->host : u->host, u->cpu,
				      u->memory, u->movable && v->movable);
		if (c < 0)
			goto fail;
		lv->map[i] = lv->map[mate[i]] = (uint32_t)c;
		if (mate[i] != i) {
			lv->q.units[c].cpu += v->cpu;
			lv->q.units[c].memory += v->memory;
		}
	}
	for (k = 0; k < f->nlinks; k++)
		if (cw_place_add_traffic(&lv->q, lv->map[f->links[k].a],
					 lv->map[f->links[k].b],
					 f->links[k].bytes))
			goto fail;
	lv->q.hosts = f->hosts; /* shared, never freed through q */
	lv->q.nhosts = f->nhosts;
	free(mate);
	if (place_build(&lv->q))
		return -1;
	return lv->q.nunits * 10 > f->nunits * 9;
nomem:
	cw_error("out of memory for coarsening");
fail:
	free(mate);
	return -1;
}

static double unit_size(const struct cw_place *q, uint32_t u, double ac,
			double am)
{
	double c = q->units[u].cpu / ac, m = q->units[u].memory / am;

	return c > m ? c : m;
}

static const struct cw_place *size_q;
static double size_ac, size_am;

static int size_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	double sa = unit_size(size_q, a, size_ac, size_am),
	       sb = unit_size(size_q, b, size_ac, size_am);

	if (size_q->units[a].movable != size_q->units[b].movable)
		return size_q->units[a].movable ? 1 : -1;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The fitting host among hosts[0..k) that u talks to most, else first fit. */
static long pick_host(const struct cw_place *q, const uint32_t *host,
		      const struct place_load *ld, const uint32_t *hosts,
		      size_t k, const uint8_t *allowed, uint32_t u)
{
	long best = -1;
	uint64_t bb = 0;
	size_t i;

	for (i = q->adj_off[u]; i < q->adj_off[u + 1]; i++) {
		uint32_t h = host[q->adj_to[i]];

		if (h != UINT32_MAX && allowed[h] && q->adj_bytes[i] > bb &&
		    place_fits(q, ld, u, h))
			best = h, bb = q->adj_bytes[i];
	}
	for (i = 0; best < 0 && i < k; i++)
		if (place_fits(q, ld, u, hosts[i]))
			best = hosts[i];
	return best;
}

/* First fit decreasing drawn by traffic; 0, 1 when something does not fit. */
static int pack(const struct cw_place *q, uint32_t *host, const uint32_t *hosts,
		size_t k, const uint8_t *allowed)
{
	uint32_t *order = malloc((q->nunits + 1) * sizeof(*order));
	struct place_load ld = {0};
	size_t i;
	long h;
	int ret = 0;

	ld.cpu = calloc(q->nhosts + 1, sizeof(double));
	ld.mem = calloc(q->nhosts + 1, sizeof(double));
	ld.count = calloc(q->nhosts + 1, sizeof(uint32_t));
	if (!order || !ld.cpu || !ld.mem || !ld.count) {
		ret = cw_error("out of memory for packing");
		goto out;
	}
	size_q = q;
	size_ac = q->hosts[hosts[0]].cpu + PLACE_EPS;
	size_am = q->hosts[hosts[0]].memory + PLACE_EPS;
	for (i = 0; i < q->nunits; i++) {
		order[i] = (uint32_t)i;
		host[i] = UINT32_MAX;
	}
	qsort(order, q->nunits, sizeof(*order), size_cmp);
	for (i = 0; i < q->nunits && !ret; i++) {
		uint32_t u = order[i];

		h = q->units[u].movable
			    ? pick_host(q, host, &ld, hosts, k, allowed, u)
			    : (long)q->units[u].host;
		if (h < 0) {
			ret = 1;
			break;
		}
		host[u] = (uint32_t)h;
		ld.cpu[h] += q->units[u].cpu;
		ld.mem[h] += q->units[u].memory;
		ld.count[h]++;
	}
out:
	free(order);
	place_load_release(&ld);
	return ret;
}

/* Pack at the coarsest level that packs, then refine back down to units. */
static int solve_k(struct cw_place *p, struct level *lv, size_t nlv,
		   const uint32_t *hosts, size_t k, uint8_t *allowed,
		   uint32_t *host)
{
	uint32_t *buf[MAX_LEVELS + 1] = {0};
	long top;
	size_t i, j;
	int ret = 1;

	memset(allowed, 0, p->nhosts);
	for (i = 0; i < k; i++)
		allowed[hosts[i]] = 1;
	for (top = (long)nlv; top >= 0 && ret == 1; top--) {
		const struct cw_place *q = top ? &lv[top - 1].q : p;

		free(buf[top]);
		buf[top] = malloc((q->nunits + 1) * sizeof(uint32_t));
		if (!buf[top]) {
			ret = cw_error("out of memory for the plan");
			break;
		}
		ret = pack(q, buf[top], hosts, k, allowed);
		if (ret)
			continue;
		for (j = (size_t)top; ret == 0; j--) {
			const struct cw_place *f = j ? &lv[j - 1].q : p;

			ret = place_refine(f, buf[j], allowed, NULL, 8);
			if (ret || !j)
				break;
			buf[j - 1] = malloc(
				((j > 1 ? lv[j - 2].q.nunits : p->nunits) + 1) *
				sizeof(uint32_t));
			if (!buf[j - 1]) {
				ret = cw_error("out of memory for the plan");
				break;
			}
			for (i = 0;
			     i < (j > 1 ? lv[j - 2].q.nunits : p->nunits); i++)
				buf[j - 1][i] = buf[j][lv[j - 1].map[i]];
		}
		if (!ret)
			memcpy(host, buf[0], p->nunits * sizeof(*host));
		break;
	}
	for (i = 0; i <= MAX_LEVELS; i++)
		free(buf[i]);
	return ret;
}

/* Fewest hosts the demand could fit, taking hosts in order (those of
 * pinned units come first and are in use anyway). */
static size_t lower_bound(const struct cw_place *p, const uint32_t *hosts,
			  size_t n)
{
	double dc = 0, dm = 0, c = 0, m = 0;
	size_t i, k, pinned = 0;

	for (i = 0; i < p->nunits; i++) {
		dc += p->units[i].cpu;
		dm += p->units[i].memory;
	}
	for (k = 0; k < n; k++) {
		c += place_cap_cpu(p, hosts[k]);
		m += place_cap_mem(p, hosts[k]);
		if (c + PLACE_EPS >= dc && m + PLACE_EPS >= dm)
			break;
	}
	for (i = 0; i < n; i++)
		for (size_t u = 0; u < p->nunits; u++)
			if (!p->units[u].movable &&
			    p->units[u].host == hosts[i]) {
				pinned = i + 1;
				break;
			}
	k = k + 1 > pinned ? k + 1 : pinned;
	return k < n ? k : n;
}

static int build_levels(struct cw_place *p, struct level *lv, size_t *nlv,
			const uint32_t *hosts, size_t n, uint64_t seed)
{
	const struct cw_place *f = p;
	double lc = 1e300, lm = 1e300;
	uint64_t rng = seed;
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		lc = place_cap_cpu(p, hosts[i]) < lc
			     ? place_cap_cpu(p, hosts[i])
			     : lc;
		lm = place_cap_mem(p, hosts[i]) < lm
			     ? place_cap_mem(p, hosts[i])
			     : lm;
	}
	*nlv = 0;
	while (*nlv < MAX_LEVELS && f->nunits > 2) {
		r = coarsen(f, &lv[*nlv], &rng, lc, lm);
		if (r < 0) {
			levels_release(lv, *nlv + 1);
			return -1;
		}
		f = &lv[(*nlv)++].q;
		if (r)
			break;
	}
	return 0;
}

/* Hosts in use by an assignment. */
static size_t used_hosts(const struct cw_place *p, const uint32_t *host,
			 uint8_t *mark)
{
	size_t i, n = 0;

	memset(mark, 0, p->nhosts);
	for (i = 0; i < p->nunits; i++) {
		n += !mark[host[i]];
		mark[host[i]] = 1;
	}
	return n;
}

/* best = x when x uses fewer hosts (unless fixed) or, as many, fewer bytes. */
static void keep_if_better(const struct cw_place *p, const uint32_t *x,
			   uint32_t *best, uint8_t *mark, size_t *bu,
			   uint64_t *bb)
{
	size_t u = used_hosts(p, x, mark);
	uint64_t b = cw_place_cross_bytes(p, x);

	if ((!p->fixed_hosts && u < *bu) ||
	    ((p->fixed_hosts || u == *bu) && b < *bb)) {
		memcpy(best, x, p->nunits * sizeof(*x));
		*bb = b;
		*bu = u;
	}
}

/* Move a few random units to random hosts among the k, where they fit. */
static int kick(const struct cw_place *p, uint32_t *x, const uint32_t *hosts,
		size_t k, uint64_t *rng)
{
	struct place_load ld;
	size_t j, n = 2 + p->nunits / 10;

	if (place_load_init(&ld, p, x))
		return -1;
	for (j = 0; j < (n > 50 ? 50 : n); j++) {
		uint32_t u = (uint32_t)(place_rand(rng) % p->nunits),
			 h = hosts[place_rand(rng) % k];

		if (!p->units[u].movable || !place_fits(p, &ld, u, h))
			continue;
		place_load_move(p, &ld, u, x[u], h);
		x[u] = h;
	}
	place_load_release(&ld);
	return 0;
}

/*
 * Iterated local search from the best plan: kick it, refine, keep it when
 * better; as many rounds as the size allows (at most 64).  0 or -1.
 */
static int iterate(struct cw_place *p, const uint32_t *hosts, size_t k,
		   const uint8_t *allowed, uint32_t *best, size_t rounds)
{
	uint32_t *x = malloc((p->nunits + 1) * sizeof(*x));
	uint8_t *mark = malloc(p->nhosts + 1);
	uint64_t rng = p->seed ^ 0x1157ULL, bb;
	size_t r, bu;
	int ret = 0;

	if (!x || !mark) {
		free(x);
		free(mark);
		return cw_error("out of memory for the plan");
	}
	bb = cw_place_cross_bytes(p, best);
	bu = used_hosts(p, best, mark);
	for (r = 0; r < (rounds > 256 ? 256 : rounds) && !ret; r++) {
		memcpy(x, best, p->nunits * sizeof(*x));
		ret = kick(p, x, hosts, k, &rng) ||
		      place_refine(p, x, allowed, NULL, 8);
		if (!ret)
			keep_if_better(p, x, best, mark, &bu, &bb);
	}
	free(x);
	free(mark);
	return ret ? -1 : 0;
}

/*
 * Other matchings give other partitions: on small and middle instances try
 * a few more (the number shrinks with the size) on the same k hosts and
 * keep the best.  0 or -1.
 */
static int restarts(struct cw_place *p, const uint32_t *hosts, size_t k,
		    uint8_t *allowed, uint32_t *best)
{
	size_t tries = 2000000 / (p->nunits + p->nlinks + 1), t, nlv, bu;
	uint32_t *x = malloc((p->nunits + 1) * sizeof(*x));
	uint8_t *mark = malloc(p->nhosts + 1);
	struct level lv[MAX_LEVELS];
	uint64_t bb;
	int ret = 0, r;

	if (!x || !mark) {
		free(x);
		free(mark);
		return cw_error("out of memory for the plan");
	}
	bb = cw_place_cross_bytes(p, best);
	bu = used_hosts(p, best, mark);
	for (t = 1; t <= (tries > 16 ? 16 : tries) && !ret; t++) {
		if (build_levels(p, lv, &nlv, hosts, k, p->seed + t * 7919)) {
			ret = -1;
			break;
		}
		r = solve_k(p, lv, nlv, hosts, k, allowed, x);
		levels_release(lv, nlv);
		if (r < 0)
			ret = -1;
		if (r)
			continue;
		keep_if_better(p, x, best, mark, &bu, &bb);
	}
	free(x);
	free(mark);
	return ret ? ret : iterate(p, hosts, k, allowed, best, tries);
}

/*
 * Fixed hosts: the current placement refined, when it fits, against the
 * packing (when packed): the one with fewer cross-host bytes.  0, or 1
 * when neither is there.
 */
static int keep_better_current(struct cw_place *p, uint32_t *host,
			       const uint8_t *allowed, int packed)
{
	uint32_t *cur = malloc((p->nunits + 1) * sizeof(*cur));
	struct place_load ld;
	size_t i;
	int ok = 1;

	if (!cur)
		return cw_error("out of memory for the plan");
	for (i = 0; i < p->nunits; i++) {
		cur[i] = p->units[i].host;
		ok &= allowed[cur[i]];
	}
	if (ok && !place_load_init(&ld, p, cur)) {
		for (i = 0; i < p->nhosts; i++)
			ok &= ld.cpu[i] <= place_cap_cpu(p, i) + PLACE_EPS &&
			      ld.mem[i] <= place_cap_mem(p, i) + PLACE_EPS;
		place_load_release(&ld);
	}
	if (ok && place_refine(p, cur, allowed, NULL, 16))
		ok = 0;
	if (ok && (!packed || cw_place_cross_bytes(p, cur) <
				      cw_place_cross_bytes(p, host)))
		memcpy(host, cur, p->nunits * sizeof(*host));
	free(cur);
	return ok || packed ? 0 : 1;
}

int place_partition(struct cw_place *p, struct cw_place_plan *plan)
{
	struct level lv[MAX_LEVELS];
	uint32_t *hosts = malloc((p->nhosts + 1) * sizeof(*hosts));
	uint8_t *allowed = calloc(p->nhosts + 1, 1);
	size_t n, k, nlv = 0, i;
	int ret = -1;

	if (!hosts || !allowed) {
		cw_error("out of memory for the plan");
		goto out;
	}
	n = cw_place_host_order(p, hosts);
	if (p->max_moves >= 0) {
		uint32_t *home = malloc((p->nunits + 1) * sizeof(*home));

		for (i = 0; i < n; i++)
			allowed[hosts[i]] = 1;
		for (i = 0; home && i < p->nunits; i++)
			home[i] = plan->host[i] = p->units[i].host;
		ret = home ? place_greedy_moves(p, plan->host, allowed, home)
			   : cw_error("out of memory for the plan");
		free(home);
		goto out;
	}
	if (build_levels(p, lv, &nlv, hosts, n, p->seed))
		goto out;
	k = p->fixed_hosts ? n : lower_bound(p, hosts, n);
	for (;;) {
		ret = solve_k(p, lv, nlv, hosts, k, allowed, plan->host);
		if (ret != 1 || k == n)
			break;
		/* Small steps first; on a thousand hosts a few at a time. */
		k = k + 1 + k / 256 < n ? k + 1 + k / 256 : n;
	}
	levels_release(lv, nlv);
	if (ret == 0)
		ret = restarts(p, hosts, k, allowed, plan->host);
	if (p->fixed_hosts && ret >= 0)
		ret = keep_better_current(p, plan->host, allowed, ret == 0);
	if (ret == 1)
		ret = cw_error("partition: found no packing of the units "
			       "within the hosts' capacities");
out:
	free(hosts);
	free(allowed);
	return ret;
}
