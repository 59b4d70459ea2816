// SPDX-License-Identifier: MIT
/*
 * The placement instance and the one evaluation every method's plan goes
 * through, so their numbers compare.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "place/place.h"
#include "place/place_int.h"

void cw_place_init(struct cw_place *p)
{
	memset(p, 0, sizeof(*p));
	p->max_moves = -1;
	p->seed = 1;
}

void cw_place_release(struct cw_place *p)
{
	size_t i;

	for (i = 0; i < p->nhosts; i++)
		free(p->hosts[i].name);
	for (i = 0; i < p->nunits; i++)
		free(p->units[i].name);
	free(p->hosts);
	free(p->units);
	free(p->links);
	free(p->adj_off);
	free(p->adj_to);
	free(p->adj_bytes);
	memset(p, 0, sizeof(*p));
}

long cw_place_add_host(struct cw_place *p, const char *name, double cpu,
		       double memory)
{
	struct cw_place_host *h;

	if (CW_GROW(p->hosts, p->cap_hosts, p->nhosts + 1, 16))
		return cw_error("out of memory for hosts");
	h = &p->hosts[p->nhosts];
	h->name = strdup(name);
	if (!h->name)
		return cw_error("out of memory for hosts");
	h->cpu = cpu;
	h->memory = memory;
	return (long)p->nhosts++;
}

long cw_place_add_unit(struct cw_place *p, const char *name, uint32_t host,
		       double cpu, double memory, bool movable)
{
	struct cw_place_unit *u;

	if (CW_GROW(p->units, p->cap_units, p->nunits + 1, 64))
		return cw_error("out of memory for units");
	u = &p->units[p->nunits];
	u->name = strdup(name);
	if (!u->name)
		return cw_error("out of memory for units");
	u->host = host;
	u->cpu = cpu;
	u->memory = memory;
	u->movable = movable;
	return (long)p->nunits++;
}

int cw_place_add_traffic(struct cw_place *p, uint32_t a, uint32_t b,
			 uint64_t bytes)
{
	struct cw_place_link *l;

	if (a == b || !bytes)
		return 0;
	if (CW_GROW(p->links, p->cap_links, p->nlinks + 1, 64))
		return cw_error("out of memory for traffic");
	l = &p->links[p->nlinks++];
	l->a = a < b ? a : b;
	l->b = a < b ? b : a;
	l->bytes = bytes;
	return 0;
}

long cw_place_host_index(const struct cw_place *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nhosts; i++)
		if (!strcmp(p->hosts[i].name, name))
			return (long)i;
	return -1;
}

static int link_cmp(const void *x, const void *y)
{
	const struct cw_place_link *a = x, *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return 0;
}

/* Merge duplicate pairs and build the adjacency both ways. */
int place_build(struct cw_place *p)
{
	size_t i, n = 0, *fill;

	if (p->nlinks)
		qsort(p->links, p->nlinks, sizeof(*p->links), link_cmp);
	for (i = 0; i < p->nlinks; i++) {
		if (n && p->links[n - 1].a == p->links[i].a &&
		    p->links[n - 1].b == p->links[i].b)
			p->links[n - 1].bytes += p->links[i].bytes;
		else
			p->links[n++] = p->links[i];
	}
	p->nlinks = n;
	free(p->adj_off);
	free(p->adj_to);
	free(p->adj_bytes);
	p->adj_off = calloc(p->nunits + 1, sizeof(*p->adj_off));
	p->adj_to = malloc((2 * n + 1) * sizeof(*p->adj_to));
	p->adj_bytes = malloc((2 * n + 1) * sizeof(*p->adj_bytes));
	fill = calloc(p->nunits + 1, sizeof(*fill));
	if (!p->adj_off || !p->adj_to || !p->adj_bytes || !fill) {
		free(fill);
		return cw_error("out of memory for the traffic adjacency");
	}
	for (i = 0; i < n; i++) {
		p->adj_off[p->links[i].a + 1]++;
		p->adj_off[p->links[i].b + 1]++;
	}
	for (i = 0; i < p->nunits; i++)
		p->adj_off[i + 1] += p->adj_off[i];
	for (i = 0; i < n; i++) {
		const struct cw_place_link *l = &p->links[i];
		size_t ka = p->adj_off[l->a] + fill[l->a]++;
		size_t kb = p->adj_off[l->b] + fill[l->b]++;

		p->adj_to[ka] = l->b;
		p->adj_bytes[ka] = l->bytes;
		p->adj_to[kb] = l->a;
		p->adj_bytes[kb] = l->bytes;
	}
	free(fill);
	return 0;
}

/* Pinned units alone must fit their hosts. */
static int check_pinned(const struct cw_place *p)
{
	double *cpu = calloc(p->nhosts, sizeof(double)),
	       *mem = calloc(p->nhosts, sizeof(double));
	size_t i;
	int ret = 0;

	if (!cpu || !mem) {
		free(cpu);
		free(mem);
		return cw_error("out of memory");
	}
	for (i = 0; i < p->nunits; i++) {
		if (p->units[i].movable)
			continue;
		cpu[p->units[i].host] += p->units[i].cpu;
		mem[p->units[i].host] += p->units[i].memory;
	}
	for (i = 0; i < p->nhosts && !ret; i++)
		if (cpu[i] > place_cap_cpu(p, i) + PLACE_EPS ||
		    mem[i] > place_cap_mem(p, i) + PLACE_EPS)
			ret = cw_error("host '%s': the units that cannot move "
				       "(outside containers) need %.2f cpu and "
				       "%.0f bytes, over its capacity less "
				       "headroom (%.2f cpu, %.0f bytes)",
				       p->hosts[i].name, cpu[i], mem[i],
				       place_cap_cpu(p, i),
				       place_cap_mem(p, i));
	free(cpu);
	free(mem);
	return ret;
}

/* Each unit must fit some host it may go to. */
static int check_units(const struct cw_place *p, size_t nallowed,
		       const uint32_t *order)
{
	double sc = 0, sm = 0, cc = 0, cm = 0, bc = 0, bm = 0;
	size_t i;

	for (i = 0; i < nallowed; i++) {
		double c = place_cap_cpu(p, order[i]),
		       m = place_cap_mem(p, order[i]);

		cc += c;
		cm += m;
		bc = c > bc ? c : bc;
		bm = m > bm ? m : bm;
	}
	for (i = 0; i < p->nunits; i++) {
		const struct cw_place_unit *u = &p->units[i];

		if (u->movable &&
		    (u->cpu > bc + PLACE_EPS || u->memory > bm + PLACE_EPS))
			return cw_error(
				"unit '%s' fits no host: it needs %.2f cpu and "
				"%.0f bytes of memory, the largest host offers "
				"%.2f cpu and %.0f bytes after %.0f%% headroom",
				u->name, u->cpu, u->memory, bc, bm,
				p->headroom * 100);
		sc += u->cpu;
		sm += u->memory;
	}
	if (sc > cc + PLACE_EPS || sm > cm + PLACE_EPS)
		return cw_error(
			"the units need %.2f cpu and %.0f bytes in all, "
			"the hosts offer %.2f cpu and %.0f bytes after "
			"%.0f%% headroom",
			sc, sm, cc, cm, p->headroom * 100);
	return 0;
}

int cw_place_check(struct cw_place *p)
{
	uint32_t *order;
	size_t n;
	int ret;

	if (!p->nunits)
		return cw_error("no units to place");
	if (!p->nhosts)
		return cw_error("no hosts to place units on");
	if (place_build(p))
		return -1;
	if (check_pinned(p))
		return -1;
	order = malloc(p->nhosts * sizeof(*order));
	if (!order)
		return cw_error("out of memory");
	n = cw_place_host_order(p, order);
	if (p->host_limit && n > p->host_limit)
		cw_warn("the host limit (%zu) is below the %zu hosts that hold "
			"units which cannot move: the plan may use those %zu",
			p->host_limit, n, n);
	ret = check_units(p, n, order);
	free(order);
	return ret;
}

uint64_t cw_place_cross_bytes(const struct cw_place *p, const uint32_t *host)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nlinks; i++)
		if (host[p->links[i].a] != host[p->links[i].b])
			sum += p->links[i].bytes;
	return sum;
}

uint64_t place_cross_now(const struct cw_place *p)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nlinks; i++)
		if (p->units[p->links[i].a].host !=
		    p->units[p->links[i].b].host)
			sum += p->links[i].bytes;
	return sum;
}

bool place_keeps_bytes(const struct cw_place *p)
{
	return !p->consolidate && !p->fixed_hosts && p->max_moves < 0;
}

size_t cw_place_moved(const struct cw_place *p, const uint32_t *host)
{
	size_t i, n = 0;

	for (i = 0; i < p->nunits; i++)
		n += host[i] != p->units[i].host;
	return n;
}

uint64_t cw_place_local_bytes(const struct cw_place *p, const uint32_t *host,
			      uint32_t u)
{
	uint64_t sum = 0;
	size_t k;

	for (k = p->adj_off[u]; k < p->adj_off[u + 1]; k++)
		if (host[p->adj_to[k]] == host[u])
			sum += p->adj_bytes[k];
	return sum;
}

/* The moves of a plan, applied one by one in the order of most gain. */
static int score_moves(const struct cw_place *p, struct cw_place_plan *plan)
{
	uint32_t *cur = malloc(p->nunits * sizeof(*cur));
	size_t i, n = 0;

	free(plan->moves);
	plan->moves = NULL;
	plan->nmoves = 0;
	for (i = 0; i < p->nunits; i++)
		n += plan->host[i] != p->units[i].host;
	plan->moves = calloc(n + 1, sizeof(*plan->moves));
	if (!cur || !plan->moves) {
		free(cur);
		return cw_error("out of memory for moves");
	}
	for (i = 0; i < p->nunits; i++)
		cur[i] = p->units[i].host;
	while (plan->nmoves < n) {
		int64_t best = INT64_MIN, g;
		size_t bu = 0;

		for (i = 0; i < p->nunits; i++) {
			if (cur[i] == plan->host[i])
				continue;
			g = place_move_gain(p, cur, (uint32_t)i, plan->host[i]);
			if (g > best)
				best = g, bu = i;
		}
		plan->moves[plan->nmoves++] = (struct cw_place_move){
			.unit = (uint32_t)bu,
			.from = cur[bu],
			.to = plan->host[bu],
			.gain = best,
		};
		cur[bu] = plan->host[bu];
	}
	free(cur);
	return 0;
}

int cw_place_plan_score(const struct cw_place *p, struct cw_place_plan *plan)
{
	struct place_load ld;
	size_t i;

	if (place_load_init(&ld, p, plan->host))
		return -1;
	plan->cross_bytes = cw_place_cross_bytes(p, plan->host);
	plan->hosts_used = 0;
	plan->fits = true;
	for (i = 0; i < p->nhosts; i++) {
		plan->hosts_used += ld.count[i] > 0;
		if (ld.cpu[i] > place_cap_cpu(p, i) + PLACE_EPS ||
		    ld.mem[i] > place_cap_mem(p, i) + PLACE_EPS)
			plan->fits = false;
	}
	place_load_release(&ld);
	if (p->max_moves >= 0 || p->nunits <= 20000)
		return score_moves(p, plan);
	return 0;
}

void cw_place_plan_release(struct cw_place_plan *plan)
{
	free(plan->host);
	free(plan->moves);
	memset(plan, 0, sizeof(*plan));
}

int cw_place_method_parse(const char *s, enum cw_place_method *out)
{
	if (!strcmp(s, "ga"))
		*out = CW_PLACE_GA;
	else if (!strcmp(s, "partition"))
		*out = CW_PLACE_PARTITION;
	else if (!strcmp(s, "ilp"))
		*out = CW_PLACE_ILP;
	else
		return -1;
	return 0;
}

const char *cw_place_method_name(enum cw_place_method m)
{
	return m == CW_PLACE_GA	   ? "ga"
	       : m == CW_PLACE_ILP ? "ilp"
				   : "partition";
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_method(struct cw_place *p, enum cw_place_method m,
		      struct cw_place_plan *plan)
{
	if (m == CW_PLACE_GA)
		return place_ga(p, plan);
	if (m == CW_PLACE_ILP)
		return place_ilp(p, plan);
	return place_partition(p, plan);
}

/* Whether the current placement is a plan: within capacity, on hosts
 * the host limit allows. */
static bool current_fits(const struct cw_place *p, uint32_t *cur)
{
	uint32_t *order = malloc((p->nhosts + 1) * sizeof(*order));
	uint8_t *allowed = calloc(p->nhosts + 1, 1);
	struct place_load ld;
	bool ok = order && allowed;
	size_t i, n;

	n = ok ? cw_place_host_order(p, order) : 0;
	for (i = 0; i < n; i++)
		allowed[order[i]] = 1;
	for (i = 0; ok && i < p->nunits; i++) {
		cur[i] = p->units[i].host;
		ok = allowed[cur[i]];
	}
	if (ok && !place_load_init(&ld, p, cur)) {
		for (i = 0; i < p->nhosts; i++)
			ok = ok &&
			     ld.cpu[i] <= place_cap_cpu(p, i) + PLACE_EPS &&
			     ld.mem[i] <= place_cap_mem(p, i) + PLACE_EPS;
		place_load_release(&ld);
	} else {
		ok = false;
	}
	free(order);
	free(allowed);
	return ok;
}

/*
 * A plan that raises the cross-host bytes above the current placement's
 * where consolidation was not asked for: with the fewest hosts, the fewest
 * bytes on the hosts there are instead; if that still raises them (a
 * heuristic's miss), the current placement when it is a plan.  The
 * integer program keeps the bound itself, exactly.
 */
static int keep_bytes(struct cw_place *p, enum cw_place_method m,
		      struct cw_place_plan *plan)
{
	uint64_t now = place_cross_now(p);
	uint32_t *cur;

	if (p->consolidate || m == CW_PLACE_ILP ||
	    cw_place_cross_bytes(p, plan->host) <= now)
		return 0;
	if (place_keeps_bytes(p)) {
		p->fixed_hosts = true;
		if (run_method(p, m, plan)) {
			p->fixed_hosts = false;
			return -1;
		}
		p->fixed_hosts = false;
		if (cw_place_cross_bytes(p, plan->host) <= now)
			return 0;
	}
	cur = malloc((p->nunits + 1) * sizeof(*cur));
	if (!cur)
		return cw_error("out of memory for the plan");
	if (current_fits(p, cur))
		memcpy(plan->host, cur, p->nunits * sizeof(*cur));
	free(cur);
	return 0;
}

int cw_place_solve(struct cw_place *p, enum cw_place_method m,
		   struct cw_place_plan *plan)
{
	double t0 = cpu_seconds();
	size_t moved;
	int ret;

	memset(plan, 0, sizeof(*plan));
	plan->nunits = p->nunits;
	plan->host = malloc((p->nunits + 1) * sizeof(*plan->host));
	if (!plan->host)
		return cw_error("out of memory for the plan");
	ret = run_method(p, m, plan);
	if (!ret)
		ret = keep_bytes(p, m, plan);
	if (!ret) {
		moved = cw_place_moved(p, plan->host);
		ret = cw_place_relabel(p, plan->host) ||
		      place_settle(p, plan->host);
		plan->moves_saved = moved - cw_place_moved(p, plan->host);
	}
	plan->seconds = cpu_seconds() - t0;
	if (!ret)
		ret = cw_place_plan_score(p, plan);
	if (!ret && !plan->fits)
		ret = cw_error("%s: no plan within capacity found",
			       cw_place_method_name(m));
	if (ret)
		cw_place_plan_release(plan);
	return ret;
}
