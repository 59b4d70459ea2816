// SPDX-License-Identifier: MIT
/*
 * What the methods share: host loads, move gains, the host order, and the
 * greedy refinement (Fiduccia-Mattheyses moves under capacities, taking
 * only moves that save bytes, so it ends).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "place/place_int.h"

#define SWAP_MAX_UNITS 400

uint64_t place_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int place_load_init(struct place_load *ld, const struct cw_place *p,
		    const uint32_t *host)
{
	size_t i;

	ld->cpu = calloc(p->nhosts + 1, sizeof(*ld->cpu));
	ld->mem = calloc(p->nhosts + 1, sizeof(*ld->mem));
	ld->count = calloc(p->nhosts + 1, sizeof(*ld->count));
	if (!ld->cpu || !ld->mem || !ld->count) {
		place_load_release(ld);
		return cw_error("out of memory for host loads");
	}
	for (i = 0; host && i < p->nunits; i++) {
		ld->cpu[host[i]] += p->units[i].cpu;
		ld->mem[host[i]] += p->units[i].memory;
		ld->count[host[i]]++;
	}
	return 0;
}

void place_load_release(struct place_load *ld)
{
	free(ld->cpu);
	free(ld->mem);
	free(ld->count);
	memset(ld, 0, sizeof(*ld));
}

int place_fits(const struct cw_place *p, const struct place_load *ld,
	       uint32_t u, uint32_t h)
{
	return ld->cpu[h] + p->units[u].cpu <=
		       place_cap_cpu(p, h) + PLACE_EPS &&
	       ld->mem[h] + p->units[u].memory <=
		       place_cap_mem(p, h) + PLACE_EPS;
}

void place_load_move(const struct cw_place *p, struct place_load *ld,
		     uint32_t u, uint32_t from, uint32_t to)
{
	ld->cpu[from] -= p->units[u].cpu;
	ld->mem[from] -= p->units[u].memory;
	ld->count[from]--;
	ld->cpu[to] += p->units[u].cpu;
	ld->mem[to] += p->units[u].memory;
	ld->count[to]++;
}

int64_t place_move_gain(const struct cw_place *p, const uint32_t *host,
			uint32_t u, uint32_t h)
{
	int64_t g = 0;
	size_t k;

	for (k = p->adj_off[u]; k < p->adj_off[u + 1]; k++) {
		uint32_t o = host[p->adj_to[k]];

		if (o == h)
			g += (int64_t)p->adj_bytes[k];
		else if (o == host[u])
			g -= (int64_t)p->adj_bytes[k];
	}
	return g;
}

static const struct cw_place *order_p;
static double *order_key;

static int host_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (order_key[a] != order_key[b])
		return order_key[a] > order_key[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/*
 * Hosts holding units that cannot move come first (they are in use
 * whatever the plan), then the largest, then those holding most units now
 * (fewer moves); host_limit keeps the first ones.
 */
size_t cw_place_host_order(const struct cw_place *p, uint32_t *order)
{
	double maxc = 0, maxm = 0, *key = calloc(p->nhosts + 1, sizeof(*key));
	size_t i, pinned = 0, n = p->nhosts;

	for (i = 0; i < p->nhosts; i++) {
		order[i] = (uint32_t)i;
		maxc = p->hosts[i].cpu > maxc ? p->hosts[i].cpu : maxc;
		maxm = p->hosts[i].memory > maxm ? p->hosts[i].memory : maxm;
	}
	if (!key)
		return n; /* index order: still a valid order */
	for (i = 0; i < p->nunits; i++)
		key[p->units[i].host] += p->units[i].movable ? 1e-6 : 1e6;
	for (i = 0; i < p->nhosts; i++) {
		pinned += key[i] >= 1e6;
		key[i] += (maxc > 0 ? p->hosts[i].cpu / maxc : 0) +
			  (maxm > 0 ? p->hosts[i].memory / maxm : 0);
	}
	order_p = p;
	order_key = key;
	qsort(order, p->nhosts, sizeof(*order), host_cmp);
	free(key);
	if (p->host_limit && p->host_limit < n)
		n = p->host_limit > pinned ? p->host_limit : pinned;
	return n;
}

struct refine_scratch {
	uint64_t *hb;	   /* bytes from the unit to each host */
	uint32_t *touched; /* hosts with hb != 0 */
	size_t ntouched;
};

/* The best allowed host for u that fits and saves bytes, or host[u]. */
static uint32_t best_move(const struct cw_place *p, const uint32_t *host,
			  const struct place_load *ld, const uint8_t *allowed,
			  uint32_t u, struct refine_scratch *s)
{
	uint32_t cur = host[u], best = cur, h;
	uint64_t best_b;
	size_t k;

	s->ntouched = 0;
	for (k = p->adj_off[u]; k < p->adj_off[u + 1]; k++) {
		h = host[p->adj_to[k]];
		if (!s->hb[h])
			s->touched[s->ntouched++] = h;
		s->hb[h] += p->adj_bytes[k];
	}
	best_b = s->hb[cur];
	for (k = 0; k < s->ntouched; k++) {
		h = s->touched[k];
		if (h != cur && allowed[h] && s->hb[h] > best_b &&
		    place_fits(p, ld, u, h))
			best = h, best_b = s->hb[h];
	}
	for (k = 0; k < s->ntouched; k++)
		s->hb[s->touched[k]] = 0;
	return best;
}

/* Bytes between u and w (both directions are one link). */
static uint64_t link_bytes(const struct cw_place *p, uint32_t u, uint32_t w)
{
	size_t k;

	for (k = p->adj_off[u]; k < p->adj_off[u + 1]; k++)
		if (p->adj_to[k] == w)
			return p->adj_bytes[k];
	return 0;
}

static int swap_fits(const struct cw_place *p, const struct place_load *ld,
		     uint32_t u, uint32_t w, uint32_t hu, uint32_t hw)
{
	const struct cw_place_unit *a = &p->units[u], *b = &p->units[w];

	return ld->cpu[hw] - b->cpu + a->cpu <=
		       place_cap_cpu(p, hw) + PLACE_EPS &&
	       ld->mem[hw] - b->memory + a->memory <=
		       place_cap_mem(p, hw) + PLACE_EPS &&
	       ld->cpu[hu] - a->cpu + b->cpu <=
		       place_cap_cpu(p, hu) + PLACE_EPS &&
	       ld->mem[hu] - a->memory + b->memory <=
		       place_cap_mem(p, hu) + PLACE_EPS;
}

/*
 * Pairwise exchanges, for hosts too full for single moves: small
 * instances only (every pair is looked at).
 */
static int swaps(const struct cw_place *p, uint32_t *host,
		 struct place_load *ld, const uint8_t *allowed, int passes)
{
	uint32_t u, w, hu, hw;
	int64_t g;
	int changed = 1, any = 0;

	while (changed && passes-- > 0) {
		changed = 0;
		for (u = 0; u < p->nunits; u++)
			for (w = u + 1; w < p->nunits; w++) {
				hu = host[u], hw = host[w];
				if (hu == hw || !p->units[u].movable ||
				    !p->units[w].movable || !allowed[hu] ||
				    !allowed[hw] ||
				    !swap_fits(p, ld, u, w, hu, hw))
					continue;
				g = place_move_gain(p, host, u, hw) +
				    place_move_gain(p, host, w, hu) -
				    2 * (int64_t)link_bytes(p, u, w);
				if (g <= 0)
					continue;
				place_load_move(p, ld, u, hu, hw);
				place_load_move(p, ld, w, hw, hu);
				host[u] = hw, host[w] = hu;
				changed = any = 1;
			}
	}
	return any;
}

int place_refine(const struct cw_place *p, uint32_t *host,
		 const uint8_t *allowed, const uint32_t *home, int passes)
{
	struct refine_scratch s = {0};
	struct place_load ld;
	size_t i, moved = 0, changed = 1;
	int swap_rounds = 8;
	uint32_t h;

	if (place_load_init(&ld, p, host))
		return -1;
	s.hb = calloc(p->nhosts + 1, sizeof(*s.hb));
	s.touched = malloc((p->nhosts + 1) * sizeof(*s.touched));
	if (!s.hb || !s.touched) {
		free(s.hb);
		free(s.touched);
		place_load_release(&ld);
		return cw_error("out of memory for refinement");
	}
	for (i = 0; home && i < p->nunits; i++)
		moved += host[i] != home[i];
again:
	while (changed && passes-- > 0) {
		changed = 0;
		for (i = 0; i < p->nunits; i++) {
			if (!p->units[i].movable)
				continue;
			h = best_move(p, host, &ld, allowed, (uint32_t)i, &s);
			if (h == host[i])
				continue;
			if (home && p->max_moves >= 0 && host[i] == home[i] &&
			    moved >= (size_t)p->max_moves)
				continue;
			if (home)
				moved += (h != home[i]) - (host[i] != home[i]);
			place_load_move(p, &ld, (uint32_t)i, host[i], h);
			host[i] = h;
			changed++;
		}
	}
	/* Swaps open room for moves: alternate while they help. */
	if (p->nunits <= SWAP_MAX_UNITS && !home && swap_rounds-- > 0 &&
	    swaps(p, host, &ld, allowed, 8)) {
		changed = 1;
		passes = 8;
		goto again;
	}
	free(s.hb);
	free(s.touched);
	place_load_release(&ld);
	return 0;
}

/* The single move of most gain over all units, within the moves budget. */
static int64_t best_global(const struct cw_place *p, const uint32_t *host,
			   const struct place_load *ld, const uint8_t *allowed,
			   const uint32_t *home, size_t moved,
			   struct refine_scratch *s, uint32_t *bu, uint32_t *bh)
{
	int64_t best = 0, g;
	size_t i;
	uint32_t h;

	for (i = 0; i < p->nunits; i++) {
		if (!p->units[i].movable)
			continue;
		if (host[i] == home[i] && moved >= (size_t)p->max_moves)
			continue;
		h = best_move(p, host, ld, allowed, (uint32_t)i, s);
		if (h == host[i])
			continue;
		g = place_move_gain(p, host, (uint32_t)i, h);
		if (g > best)
			best = g, *bu = (uint32_t)i, *bh = h;
	}
	return best;
}

int place_greedy_moves(const struct cw_place *p, uint32_t *host,
		       const uint8_t *allowed, const uint32_t *home)
{
	struct refine_scratch s = {0};
	struct place_load ld;
	size_t moved = 0;
	uint32_t u = 0, h = 0;

	if (place_load_init(&ld, p, host))
		return -1;
	s.hb = calloc(p->nhosts + 1, sizeof(*s.hb));
	s.touched = malloc((p->nhosts + 1) * sizeof(*s.touched));
	if (!s.hb || !s.touched) {
		free(s.hb);
		free(s.touched);
		place_load_release(&ld);
		return cw_error("out of memory for refinement");
	}
	/* Each move saves bytes, so this ends. */
	while (best_global(p, host, &ld, allowed, home, moved, &s, &u, &h) >
	       0) {
		moved += (h != home[u]) - (host[u] != home[u]);
		place_load_move(p, &ld, u, host[u], h);
		host[u] = h;
	}
	free(s.hb);
	free(s.touched);
	place_load_release(&ld);
	return 0;
}
