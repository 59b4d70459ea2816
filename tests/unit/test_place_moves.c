// SPDX-License-Identifier: MIT
/*
 * Plans that move no more than they must: instances whose optimum and
 * whose fewest moves are known by construction, for each method; the
 * relabelling against every permutation of the hosts on small random
 * instances; plans that keep the cross-host bytes unless consolidating;
 * and the order --method all chooses by.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/log.h"
#include "place/place.h"

static const enum cw_place_method methods[] = {
	CW_PLACE_GA,
	CW_PLACE_PARTITION,
	CW_PLACE_ILP,
};

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static size_t moved(const struct cw_place *p, const uint32_t *host)
{
	return cw_place_moved(p, host);
}

/*
 * Three clusters of three units (a, b, c) that talk only inside, on four
 * hosts of room for three: a1 a2 b1 | b2 b3 c1 | c2 c3 | a3.  The optimum
 * is each cluster on a host of its own (3 hosts, 0 bytes), and the fewest
 * moves 3: a to h0, b to h1, c to h2 (b1, c1 and a3 move); any other
 * naming keeps fewer units.
 */
static void clusters(struct cw_place *p)
{
	static const char *const names[] = {"a1", "a2", "b1", "b2", "b3",
					    "c1", "c2", "c3", "a3"};
	static const uint32_t at[] = {0, 0, 0, 1, 1, 1, 2, 2, 3};
	size_t i;

	cw_place_init(p);
	for (i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "h%zu", i);
		cw_place_add_host(p, name, 3, 8e9);
	}
	for (i = 0; i < 9; i++)
		cw_place_add_unit(p, names[i], at[i], 1, 1e9, true);
	/* a: 0 1 8; b: 2 3 4; c: 5 6 7 */
	cw_place_add_traffic(p, 0, 1, 500);
	cw_place_add_traffic(p, 1, 8, 400);
	cw_place_add_traffic(p, 0, 8, 300);
	cw_place_add_traffic(p, 2, 3, 200);
	cw_place_add_traffic(p, 3, 4, 700);
	cw_place_add_traffic(p, 2, 4, 100);
	cw_place_add_traffic(p, 5, 6, 900);
	cw_place_add_traffic(p, 6, 7, 50);
	cw_place_add_traffic(p, 5, 7, 60);
}

static void test_clusters(void)
{
	static const uint32_t want[] = {0, 0, 1, 1, 1, 2, 2, 2, 0};
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m, mode, i;

	for (mode = 0; mode < 2; mode++)
		for (m = 0; m < 3; m++) {
			clusters(&p);
			p.fixed_hosts = mode == 1;
			CHECK(cw_place_check(&p) == 0);
			CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
			CHECK(plan.cross_bytes == 0);
			CHECK(plan.hosts_used == 3);
			CHECK(plan.nmoves == 3);
			for (i = 0; i < 9; i++)
				CHECK(plan.host[i] == want[i]);
			if (getenv("PLACE_DEBUG"))
				fprintf(stderr,
					"clusters %s%s: %zu moves, %zu saved\n",
					cw_place_method_name(methods[m]),
					mode ? " fixed" : "", plan.nmoves,
					plan.moves_saved);
			cw_place_plan_release(&plan);
			cw_place_release(&p);
		}
}

/*
 * Units with no traffic stay where they are: a and b talk, i1 and i2 do
 * not; hosts of room for three, so two hosts: a and b together with one
 * of the idle ones, one move.
 */
static void test_idle_units_stay(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m, mode;

	for (mode = 0; mode < 2; mode++)
		for (m = 0; m < 3; m++) {
			cw_place_init(&p);
			cw_place_add_host(&p, "h0", 3, 8e9);
			cw_place_add_host(&p, "h1", 3, 8e9);
			cw_place_add_unit(&p, "a", 0, 1, 1e9, true);
			cw_place_add_unit(&p, "b", 1, 1, 1e9, true);
			cw_place_add_unit(&p, "i1", 0, 1, 1e9, true);
			cw_place_add_unit(&p, "i2", 1, 1, 1e9, true);
			cw_place_add_traffic(&p, 0, 1, 1000);
			p.headroom = 0;
			p.fixed_hosts = mode == 1;
			CHECK(cw_place_check(&p) == 0);
			CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
			CHECK(plan.cross_bytes == 0);
			CHECK(plan.hosts_used == 2);
			CHECK(plan.nmoves == 1);
			CHECK(plan.host[2] == 0 && plan.host[3] == 1);
			cw_place_plan_release(&plan);
			cw_place_release(&p);
		}
}

/* The fewest moves over every permutation of the hosts that fits. */
static size_t brute_moves(const struct cw_place *p, const uint32_t *plan,
			  double cap)
{
	size_t nh = p->nhosts, i, best = SIZE_MAX, k;
	uint32_t perm[6], *to = malloc(p->nunits * sizeof(*to));
	double load[6];
	bool pinned[6];

	memset(load, 0, sizeof(load));
	memset(pinned, 0, sizeof(pinned));
	for (i = 0; i < p->nunits; i++) {
		load[plan[i]] += p->units[i].cpu;
		pinned[plan[i]] |= !p->units[i].movable;
	}
	for (i = 0; i < nh; i++)
		perm[i] = (uint32_t)i;
	for (;;) {
		bool ok = true;

		for (i = 0; i < nh && ok; i++)
			ok = load[i] <= cap * p->hosts[perm[i]].cpu + 1e-9 &&
			     (!pinned[i] || perm[i] == i);
		if (ok) {
			for (i = 0; i < p->nunits; i++)
				to[i] = perm[plan[i]];
			k = moved(p, to);
			best = k < best ? k : best;
		}
		/* next permutation, lexicographic */
		for (i = nh - 1; i > 0 && perm[i - 1] > perm[i]; i--)
			;
		if (!i)
			break;
		for (k = nh - 1; perm[k] < perm[i - 1]; k--)
			;
		uint32_t t = perm[i - 1];
		perm[i - 1] = perm[k], perm[k] = t;
		for (k = nh - 1; i < k; i++, k--)
			t = perm[i], perm[i] = perm[k], perm[k] = t;
	}
	free(to);
	return best;
}

/* Whether b groups the units as a does (the same units share a host). */
static bool same_groups(const uint32_t *a, const uint32_t *b, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if ((a[i] == a[j]) != (b[i] == b[j]))
				return false;
	return true;
}

/*
 * Random small instances, hosts of other sizes, some units pinned: the
 * relabelled plan groups the units as the plan did, keeps its bytes, host
 * count and fit, and moves exactly as few units as the best permutation.
 */
static void test_relabel_brute(void)
{
	uint64_t s = 7;
	int round, better = 0, rounds = 0;

	for (round = 0; round < 300; round++) {
		struct cw_place p;
		struct cw_place_plan a = {0}, b = {0};
		size_t i, nh = 3 + rng_next(&s) % 4, nu = 4 + rng_next(&s) % 8;
		double *cap = calloc(nh, sizeof(*cap)), *load;
		char name[24];
		int tries;

		cw_place_init(&p);
		p.headroom = 0;
		for (i = 0; i < nh; i++) {
			snprintf(name, sizeof(name), "h%zu", i);
			cap[i] = 2 + (double)(rng_next(&s) % 5);
			cw_place_add_host(&p, name, cap[i], 1e12);
		}
		load = calloc(nh, sizeof(*load));
		/* Where they run now fits: a unit goes where it has room. */
		for (i = 0; i < nu; i++) {
			double cpu = 0.5 * (double)(1 + rng_next(&s) % 3);
			uint32_t h = (uint32_t)(rng_next(&s) % nh), k;

			for (k = 0; k < nh && load[h] + cpu > cap[h]; k++)
				h = (h + 1) % (uint32_t)nh;
			if (k == nh)
				break;
			load[h] += cpu;
			snprintf(name, sizeof(name), "u%zu", i);
			cw_place_add_unit(&p, name, h, cpu, 1e6,
					  rng_next(&s) % 6 != 0);
		}
		nu = p.nunits;
		for (i = 0; i < nu; i++)
			cw_place_add_traffic(&p, (uint32_t)(rng_next(&s) % nu),
					     (uint32_t)(rng_next(&s) % nu),
					     1 + rng_next(&s) % 100);
		CHECK(cw_place_check(&p) == 0);
		a.host = malloc(nu * sizeof(*a.host));
		b.host = malloc(nu * sizeof(*b.host));
		a.nunits = b.nunits = nu;
		/* A random plan within capacity, pinned units at home. */
		for (tries = 0; tries < 1000; tries++) {
			bool fits = true;

			memset(load, 0, nh * sizeof(*load));
			for (i = 0; i < nu; i++) {
				uint32_t r = (uint32_t)(rng_next(&s) % nh);

				a.host[i] = p.units[i].movable ? r
							       : p.units[i].host;
				load[a.host[i]] += p.units[i].cpu;
			}
			for (i = 0; i < nh; i++)
				fits = fits && load[i] <= cap[i];
			if (fits)
				break;
		}
		if (tries == 1000)
			goto next;
		rounds++;
		memcpy(b.host, a.host, nu * sizeof(*a.host));
		CHECK(cw_place_relabel(&p, b.host) == 0);
		CHECK(cw_place_plan_score(&p, &a) == 0);
		CHECK(cw_place_plan_score(&p, &b) == 0);
		CHECK(b.fits);
		CHECK(b.cross_bytes == a.cross_bytes);
		CHECK(b.hosts_used == a.hosts_used);
		CHECK(same_groups(a.host, b.host, nu));
		for (i = 0; i < nu; i++)
			if (!p.units[i].movable)
				CHECK(b.host[i] == p.units[i].host);
		CHECK(b.nmoves == brute_moves(&p, a.host, 1.0));
		CHECK(b.nmoves <= a.nmoves);
		better += b.nmoves < a.nmoves;
next:
		cw_place_plan_release(&a);
		cw_place_plan_release(&b);
		cw_place_release(&p);
		free(cap);
		free(load);
	}
	/* the check has teeth: most plans were relabelled */
	CHECK(rounds > 250 && better > rounds / 2);
	if (getenv("PLACE_DEBUG"))
		fprintf(stderr, "relabel: %d of %d random plans moved fewer\n",
			better, rounds);
}

/*
 * Four pairs that talk a lot inside (1000) and a little round a ring
 * (10), each pair on a host of room for three now.  Keeping the bytes
 * needs four hosts and no move; three hosts split a pair.
 */
static void pairs(struct cw_place *p)
{
	size_t i;

	cw_place_init(p);
	p->headroom = 0;
	for (i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "h%zu", i);
		cw_place_add_host(p, name, 3, 8e9);
	}
	for (i = 0; i < 8; i++) {
		char name[8];

		snprintf(name, sizeof(name), "%c%zu", (int)('a' + i / 2),
			 i % 2 + 1);
		cw_place_add_unit(p, name, (uint32_t)(i / 2), 1, 1e9, true);
	}
	for (i = 0; i < 4; i++) {
		cw_place_add_traffic(p, (uint32_t)(2 * i),
				     (uint32_t)(2 * i + 1), 1000);
		cw_place_add_traffic(p, (uint32_t)(2 * i + 1),
				     (uint32_t)((2 * i + 2) % 8), 10);
	}
}

static void test_keeps_bytes(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		pairs(&p);
		CHECK(cw_place_check(&p) == 0);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.hosts_used == 4);
		CHECK(plan.cross_bytes == 40);
		CHECK(plan.nmoves == 0);
		cw_place_plan_release(&plan);
		/* Asked to consolidate: three hosts, a pair split. */
		p.consolidate = true;
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		if (methods[m] != CW_PLACE_GA) {
			CHECK(plan.hosts_used == 3);
			CHECK(plan.cross_bytes >= 1000);
		}
		if (methods[m] == CW_PLACE_ILP) {
			CHECK(plan.optimal);
			/* one pair split, the ring cut twice at least */
			CHECK(plan.cross_bytes == 1020);
		}
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

/*
 * The current placement over capacity: no plan keeps its bytes, so the
 * fewest bytes within capacity, more than now.
 */
static void test_over_capacity(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		cw_place_init(&p);
		p.headroom = 0;
		cw_place_add_host(&p, "h0", 2, 8e9);
		cw_place_add_host(&p, "h1", 2, 8e9);
		cw_place_add_unit(&p, "a", 0, 1, 1e9, true);
		cw_place_add_unit(&p, "b", 0, 1, 1e9, true);
		cw_place_add_unit(&p, "c", 0, 1, 1e9, true);
		cw_place_add_traffic(&p, 0, 1, 100);
		cw_place_add_traffic(&p, 1, 2, 10);
		CHECK(cw_place_check(&p) == 0);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.fits);
		CHECK(plan.cross_bytes == 10);
		CHECK(plan.nmoves == 1 && plan.host[2] == 1);
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

/* The order --method all chooses by. */
static void test_better(void)
{
	struct cw_place p;
	struct cw_place_plan a = {0}, b = {0};

	pairs(&p);
	CHECK(cw_place_check(&p) == 0);
	/* now: 4 hosts, 40 bytes */
	a.hosts_used = 3, a.cross_bytes = 1020, a.nmoves = 2;
	b.hosts_used = 4, b.cross_bytes = 40, b.nmoves = 0;
	CHECK(cw_place_plan_better(&p, &b, &a));
	CHECK(!cw_place_plan_better(&p, &a, &b));
	p.consolidate = true;
	CHECK(cw_place_plan_better(&p, &a, &b));
	/* a tie on hosts and bytes: the fewer moves */
	a = b;
	a.nmoves = 5;
	CHECK(cw_place_plan_better(&p, &b, &a));
	CHECK(!cw_place_plan_better(&p, &a, &b));
	CHECK(!cw_place_plan_better(&p, &b, &b));
	p.consolidate = false;
	p.fixed_hosts = true;
	a.hosts_used = 2, a.cross_bytes = 30, a.nmoves = 0;
	b.hosts_used = 1, b.cross_bytes = 30, b.nmoves = 1;
	CHECK(cw_place_plan_better(&p, &a, &b));
	cw_place_release(&p);
}

int main(void)
{
	cw_log_level = CW_LOG_ERROR;
	test_clusters();
	test_idle_units_stay();
	test_relabel_brute();
	test_keeps_bytes();
	test_over_capacity();
	test_better();
	return failures ? 1 : 0;
}
