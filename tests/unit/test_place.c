// SPDX-License-Identifier: MIT
/*
 * Placement on instances whose optimum is known by hand, for each of the
 * three methods, and random small ones where the integer program's optimum
 * bounds the other two.
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

/* Two pairs that talk a lot, a little between them; two hosts of 2 cpu. */
static void two_pairs(struct cw_place *p, bool fixed)
{
	cw_place_init(p);
	cw_place_add_host(p, "h0", 2, 4e9);
	cw_place_add_host(p, "h1", 2, 4e9);
	/* placed crosswise now: every heavy pair split */
	cw_place_add_unit(p, "a", 0, 1, 1e9, true);
	cw_place_add_unit(p, "b", 1, 1, 1e9, true);
	cw_place_add_unit(p, "c", 0, 1, 1e9, true);
	cw_place_add_unit(p, "d", 1, 1, 1e9, true);
	cw_place_add_traffic(p, 0, 1, 100);
	cw_place_add_traffic(p, 2, 3, 80);
	cw_place_add_traffic(p, 0, 2, 1);
	cw_place_add_traffic(p, 1, 0, 50); /* merged with a-b: 150 */
	p->fixed_hosts = fixed;
}

static void test_two_pairs(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		two_pairs(&p, m == 1);
		CHECK(cw_place_check(&p) == 0);
		CHECK(p.nlinks == 3);
		CHECK(cw_place_cross_bytes(&p, (uint32_t[]){0, 1, 0, 1}) ==
		      230);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.fits);
		CHECK(plan.hosts_used == 2);
		CHECK(plan.cross_bytes == 1);
		CHECK(plan.host[0] == plan.host[1]);
		CHECK(plan.host[2] == plan.host[3]);
		CHECK(plan.host[0] != plan.host[2]);
		if (methods[m] == CW_PLACE_ILP)
			CHECK(plan.optimal);
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

/* Four small units spread over three hosts fit on one: consolidate. */
static void test_consolidate(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		cw_place_init(&p);
		cw_place_add_host(&p, "h0", 4, 8e9);
		cw_place_add_host(&p, "h1", 4, 8e9);
		cw_place_add_host(&p, "h2", 4, 8e9);
		cw_place_add_unit(&p, "a", 0, 1, 1e9, true);
		cw_place_add_unit(&p, "b", 1, 1, 1e9, true);
		cw_place_add_unit(&p, "c", 2, 1, 1e9, true);
		cw_place_add_unit(&p, "d", 2, 0.5, 1e9, true);
		cw_place_add_traffic(&p, 0, 1, 10);
		cw_place_add_traffic(&p, 1, 2, 10);
		cw_place_add_traffic(&p, 2, 3, 10);
		p.headroom = 0.1; /* 3.6 cpu: 3.5 still fits */
		CHECK(cw_place_check(&p) == 0);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.hosts_used == 1);
		CHECK(plan.cross_bytes == 0);
		cw_place_plan_release(&plan);
		/* With 20% headroom (3.2 cpu) two hosts: cut the cheapest. */
		p.headroom = 0.2;
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.hosts_used == 2);
		CHECK(plan.cross_bytes == 10);
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

/* A unit outside containers stays; its chatty peer comes to it. */
static void test_pinned(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		cw_place_init(&p);
		cw_place_add_host(&p, "h0", 4, 8e9);
		cw_place_add_host(&p, "h1", 4, 8e9);
		cw_place_add_unit(&p, "db", 1, 2, 1e9, false);
		cw_place_add_unit(&p, "app", 0, 1, 1e9, true);
		cw_place_add_unit(&p, "web", 0, 1, 1e9, true);
		cw_place_add_traffic(&p, 0, 1, 1000);
		cw_place_add_traffic(&p, 1, 2, 10);
		p.fixed_hosts = true;
		CHECK(cw_place_check(&p) == 0);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.host[0] == 1);
		CHECK(plan.cross_bytes == 0);
		CHECK(plan.nmoves == 2);
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

/* At most one move: the one that saves most, its gain listed. */
static void test_max_moves(void)
{
	struct cw_place p;
	struct cw_place_plan plan;
	size_t m;

	for (m = 0; m < 3; m++) {
		two_pairs(&p, true);
		p.max_moves = 1;
		p.hosts[0].cpu = p.hosts[1].cpu = 3;
		CHECK(cw_place_check(&p) == 0);
		CHECK(cw_place_solve(&p, methods[m], &plan) == 0);
		CHECK(plan.nmoves == 1);
		/* moving a to h1 or b to h0 saves 150 - 1 or 150 */
		CHECK(plan.cross_bytes == 230 - 150);
		CHECK(plan.nmoves == 1 && plan.moves[0].gain == 150);
		CHECK(plan.nmoves == 1 && plan.moves[0].unit == 1);
		cw_place_plan_release(&plan);
		cw_place_release(&p);
	}
}

static void test_errors(void)
{
	struct cw_place p;

	cw_place_init(&p);
	cw_place_add_host(&p, "h0", 2, 4e9);
	CHECK(cw_place_check(&p) == -1); /* no units */
	cw_place_add_unit(&p, "big", 0, 3, 1e9, true);
	CHECK(cw_place_check(&p) == -1); /* fits no host */
	p.units[0].cpu = 1;
	p.units[0].movable = false;
	p.headroom = 0.6; /* 0.8 cpu left: the pinned unit is over */
	CHECK(cw_place_check(&p) == -1);
	p.headroom = 0;
	CHECK(cw_place_check(&p) == 0);
	cw_place_release(&p);
}

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

/* Random small instances: no method beats the proven optimum. */
static void test_random_vs_optimum(void)
{
	uint64_t s = 42;
	int round;

	for (round = 0; round < 12; round++) {
		struct cw_place p;
		struct cw_place_plan plan[3];
		size_t i, nu = 6 + rng_next(&s) % 5, nh = 3 + rng_next(&s) % 2;
		char name[24];
		size_t m;

		cw_place_init(&p);
		p.fixed_hosts = round % 3 == 0;
		p.seed = (uint64_t)round;
		for (i = 0; i < nh; i++) {
			snprintf(name, sizeof(name), "h%zu", i);
			cw_place_add_host(&p, name, 5, 8e9);
		}
		for (i = 0; i < nu; i++) {
			snprintf(name, sizeof(name), "u%zu", i);
			cw_place_add_unit(&p, name, (uint32_t)(i % nh),
					  0.5 + (double)(rng_next(&s) % 4) *
							  0.5,
					  1e9, i != 0);
		}
		for (i = 0; i < nu * 2; i++)
			cw_place_add_traffic(&p, (uint32_t)(rng_next(&s) % nu),
					     (uint32_t)(rng_next(&s) % nu),
					     1 + rng_next(&s) % 1000);
		CHECK(cw_place_check(&p) == 0);
		for (m = 0; m < 3; m++)
			CHECK(cw_place_solve(&p, methods[m], &plan[m]) == 0);
		CHECK(plan[2].optimal);
		for (m = 0; m < 2; m++) {
			CHECK(plan[m].fits);
			CHECK(plan[2].hosts_used <= plan[m].hosts_used);
			if (plan[2].hosts_used == plan[m].hosts_used)
				CHECK(plan[2].cross_bytes <=
				      plan[m].cross_bytes);
		}
		if (getenv("PLACE_DEBUG"))
			fprintf(stderr,
				"round %d: ga %zu/%llu part %zu/%llu ilp "
				"%zu/%llu\n",
				round, plan[0].hosts_used,
				(unsigned long long)plan[0].cross_bytes,
				plan[1].hosts_used,
				(unsigned long long)plan[1].cross_bytes,
				plan[2].hosts_used,
				(unsigned long long)plan[2].cross_bytes);
		/* ours on these: the optimum or within 5% of its bytes */
		CHECK(plan[1].hosts_used == plan[2].hosts_used);
		CHECK(plan[1].cross_bytes * 100 <= plan[2].cross_bytes * 105);
		for (m = 0; m < 3; m++)
			cw_place_plan_release(&plan[m]);
		cw_place_release(&p);
	}
}

static void test_ga_deterministic(void)
{
	struct cw_place p;
	struct cw_place_plan a, b;

	two_pairs(&p, false);
	p.seed = 7;
	CHECK(cw_place_check(&p) == 0);
	CHECK(cw_place_solve(&p, CW_PLACE_GA, &a) == 0);
	CHECK(cw_place_solve(&p, CW_PLACE_GA, &b) == 0);
	CHECK(!memcmp(a.host, b.host, p.nunits * sizeof(*a.host)));
	cw_place_plan_release(&a);
	cw_place_plan_release(&b);
	cw_place_release(&p);
}

static int parse(const char *text, bool units, struct cw_place_table *t,
		 char *err)
{
	return cw_place_table_parse(t, text, strlen(text), units, err, 128);
}

static void test_tables(void)
{
	struct cw_place_table t;
	char err[128];
	double v;

	CHECK(cw_place_parse_cpu("500m", &v) == 0 && v == 0.5);
	CHECK(cw_place_parse_cpu("2", &v) == 0 && v == 2);
	CHECK(cw_place_parse_cpu("-1", &v) == -1);
	CHECK(cw_place_parse_cpu("1x", &v) == -1);
	CHECK(cw_place_parse_memory("2Gi", &v) == 0 && v == 2147483648.0);
	CHECK(cw_place_parse_memory("3M", &v) == 0 && v == 3e6);
	CHECK(cw_place_parse_memory("3MB", &v) == -1);
	CHECK(parse("# fleet\nhost,cpu,memory\nn1,16,64Gi\r\n\nn2, 8 ,32G\n",
		    false, &t, err) == 0);
	if (getenv("PLACE_DEBUG"))
		fprintf(stderr, "%s\n", err);
	CHECK(t.nrows == 2 && t.cpu[1] == 8 && t.memory[1] == 32e9);
	CHECK(!strcmp(t.rows[1].f[CW_PCOL_NAME], "n2"));
	cw_place_table_release(&t);
	CHECK(parse("memory,host,cpu\n1G,a,1\n", false, &t, err) == 0);
	cw_place_table_release(&t);
	CHECK(parse("host,cpu\nn1,16\n", false, &t, err) == -1);
	CHECK(strstr(err, "no 'memory' column") != NULL);
	CHECK(parse("host,cpu,memory\nn1,16,64Gi\nn1,1,1\n", false, &t, err) ==
	      -1);
	CHECK(!strcmp(err, "line 3: 'n1' named twice"));
	CHECK(parse("host,cpu,memory\nn1,lots,64Gi\n", false, &t, err) == -1);
	CHECK(!strncmp(err, "line 2: 'n1': bad cpu 'lots'", 28));
	CHECK(parse("host,cpu,memory\nn1,1\n", false, &t, err) == -1);
	CHECK(parse("host,cpu,memory\n", false, &t, err) == -1);
	CHECK(parse("unit,cpu,memory,workload,host\nc1,250m,1Gi,web,n1\n", true,
		    &t, err) == 0);
	CHECK(t.nrows == 1 && !strcmp(t.rows[0].f[CW_PCOL_WORKLOAD], "web"));
	CHECK(!strcmp(t.rows[0].f[CW_PCOL_HOST], "n1"));
	cw_place_table_release(&t);
}

int main(void)
{
	cw_log_level = CW_LOG_ERROR;
	test_two_pairs();
	test_consolidate();
	test_pinned();
	test_max_moves();
	test_errors();
	test_random_vs_optimum();
	test_ga_deterministic();
	test_tables();
	return failures ? 1 : 0;
}
