// SPDX-License-Identifier: MIT
/*
 * The baseline: the genetic algorithm of Neves, Vilaca and Pereira (SAC
 * 2020).  A chromosome is the host of every unit; its fitness multiplies
 * three factors in (0, 1]: CPU and RAM use of the hosts in use near their
 * capacity (a penalty for under-use, a larger one for over-use) and the
 * share of bytes kept inside hosts.  Tournament selection, uniform
 * crossover, random-host mutation, elitism; seeded, so the same seed gives
 * the same plan.  The best chromosome within capacity is the plan.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "place/place_int.h"

#define POP	  48
#define ELITE	  2
#define TOURNMENT 3

struct ga {
	struct cw_place *p;
	uint32_t *hosts; /* allowed hosts */
	size_t nallowed;
	uint64_t rng;
	uint64_t total; /* all bytes */
	struct place_load ld;
};

/* Use u of a capacity: 1 at full, less below, much less above. */
static double use_factor(double u, bool fixed)
{
	if (u <= 1.0 + PLACE_EPS)
		return fixed ? 1.0 : 0.5 + 0.5 * u;
	return 0.25 / (1.0 + 8.0 * (u - 1.0));
}

static double fitness(struct ga *g, const uint32_t *x, bool *fits)
{
	struct cw_place *p = g->p;
	double fc = 0, fm = 0;
	size_t i, used = 0;

	for (i = 0; i < g->nallowed; i++) {
		uint32_t h = g->hosts[i];

		g->ld.cpu[h] = g->ld.mem[h] = 0;
		g->ld.count[h] = 0;
	}
	for (i = 0; i < p->nunits; i++) {
		g->ld.cpu[x[i]] += p->units[i].cpu;
		g->ld.mem[x[i]] += p->units[i].memory;
		g->ld.count[x[i]]++;
	}
	*fits = true;
	for (i = 0; i < g->nallowed; i++) {
		uint32_t h = g->hosts[i];
		double uc, um;

		if (!g->ld.count[h])
			continue;
		used++;
		uc = g->ld.cpu[h] / (place_cap_cpu(p, h) + PLACE_EPS);
		um = g->ld.mem[h] / (place_cap_mem(p, h) + PLACE_EPS);
		*fits = *fits && uc <= 1 + PLACE_EPS && um <= 1 + PLACE_EPS;
		/* Geometric means, so a product over hosts stays in (0, 1]. */
		fc += log(use_factor(uc, p->fixed_hosts));
		fm += log(use_factor(um, p->fixed_hosts));
	}
	fc = exp(fc / (double)(used ? used : 1));
	fm = exp(fm / (double)(used ? used : 1));
	return fc * fm *
	       (1.0 -
		(double)cw_place_cross_bytes(p, x) / (double)(g->total + 1));
}

/* At most max_moves units away from home: send the excess back. */
static void repair(struct ga *g, uint32_t *x)
{
	struct cw_place *p = g->p;
	size_t i, moved = 0;

	if (p->max_moves < 0)
		return;
	for (i = 0; i < p->nunits; i++)
		moved += x[i] != p->units[i].host;
	while (moved > (size_t)p->max_moves) {
		i = place_rand(&g->rng) % p->nunits;
		if (x[i] != p->units[i].host) {
			x[i] = p->units[i].host;
			moved--;
		}
	}
}

static void random_chromosome(struct ga *g, uint32_t *x, int kind)
{
	struct cw_place *p = g->p;
	size_t i;

	for (i = 0; i < p->nunits; i++) {
		x[i] = p->units[i].host;
		if (!p->units[i].movable || kind == 0)
			continue;
		if (kind == 1 && place_rand(&g->rng) % 8)
			continue; /* the current placement, a few moved */
		x[i] = g->hosts[place_rand(&g->rng) % g->nallowed];
	}
	repair(g, x);
}

static uint32_t *tournament(struct ga *g, uint32_t **pop, const double *fit)
{
	size_t best = place_rand(&g->rng) % POP, i, c;

	for (i = 1; i < TOURNMENT; i++) {
		c = place_rand(&g->rng) % POP;
		if (fit[c] > fit[best])
			best = c;
	}
	return pop[best];
}

static void breed(struct ga *g, const uint32_t *a, const uint32_t *b,
		  uint32_t *child)
{
	struct cw_place *p = g->p;
	uint64_t r = 0;
	size_t i;
	/* About two mutations per child, whatever the size. */
	uint64_t rate = p->nunits > 2 ? (uint64_t)p->nunits / 2 : 1;

	for (i = 0; i < p->nunits; i++) {
		if (!(i & 63))
			r = place_rand(&g->rng);
		child[i] = (r >> (i & 63)) & 1 ? a[i] : b[i];
		if (p->units[i].movable && place_rand(&g->rng) % rate == 0)
			child[i] = g->hosts[place_rand(&g->rng) % g->nallowed];
	}
	repair(g, child);
}

/* Generations: fewer on large instances so the baseline ends. */
static size_t generations(const struct cw_place *p)
{
	size_t work = p->nunits + p->nlinks + 1, gens = 40000000 / work / POP;

	return gens > 400 ? 400 : gens < 20 ? 20 : gens;
}

static int sort_by_fitness(uint32_t **pop, double *fit)
{
	size_t i, j;

	/* Insertion sort, best first: POP is small. */
	for (i = 1; i < POP; i++)
		for (j = i; j > 0 && fit[j] > fit[j - 1]; j--) {
			double f = fit[j];
			uint32_t *x = pop[j];

			fit[j] = fit[j - 1], pop[j] = pop[j - 1];
			fit[j - 1] = f, pop[j - 1] = x;
		}
	return 0;
}

static void evolve(struct ga *g, uint32_t **pop, uint32_t **next, double *fit,
		   uint32_t *best, double *best_fit)
{
	size_t gen, i, n = g->p->nunits, gens = generations(g->p);
	bool fits;

	for (gen = 0; gen < gens; gen++) {
		for (i = 0; i < POP; i++) {
			fit[i] = fitness(g, pop[i], &fits);
			if (fits && fit[i] > *best_fit) {
				*best_fit = fit[i];
				memcpy(best, pop[i], n * sizeof(*best));
			}
			if (!fits)
				fit[i] *= 0.5; /* never above one that fits */
		}
		sort_by_fitness(pop, fit);
		for (i = 0; i < ELITE; i++)
			memcpy(next[i], pop[i], n * sizeof(**pop));
		for (; i < POP; i++)
			breed(g, tournament(g, pop, fit),
			      tournament(g, pop, fit), next[i]);
		for (i = 0; i < POP; i++) {
			uint32_t *t = pop[i];

			pop[i] = next[i];
			next[i] = t;
		}
	}
}

int place_ga(struct cw_place *p, struct cw_place_plan *plan)
{
	struct ga g = {.p = p, .rng = p->seed * 0x2545f4914f6cdd1dULL + 7};
	uint32_t *pop[POP] = {0}, *next[POP] = {0};
	double fit[POP], best_fit = -1;
	size_t i, n = p->nunits;
	int ret = -1;

	g.hosts = malloc((p->nhosts + 1) * sizeof(*g.hosts));
	if (!g.hosts || place_load_init(&g.ld, p, NULL))
		goto nomem;
	g.nallowed = cw_place_host_order(p, g.hosts);
	for (i = 0; i < p->nlinks; i++)
		g.total += p->links[i].bytes;
	for (i = 0; i < POP; i++) {
		pop[i] = malloc((n + 1) * sizeof(uint32_t));
		next[i] = malloc((n + 1) * sizeof(uint32_t));
		if (!pop[i] || !next[i])
			goto nomem;
		random_chromosome(&g, pop[i], i == 0 ? 0 : i < POP / 2 ? 1 : 2);
	}
	evolve(&g, pop, next, fit, plan->host, &best_fit);
	ret = best_fit < 0 ? cw_error("ga: no chromosome within the hosts' "
				      "capacities after %zu generations",
				      generations(p))
			   : 0;
	goto out;
nomem:
	cw_error("out of memory for the genetic algorithm");
out:
	for (i = 0; i < POP; i++) {
		free(pop[i]);
		free(next[i]);
	}
	place_load_release(&g.ld);
	free(g.hosts);
	return ret;
}
