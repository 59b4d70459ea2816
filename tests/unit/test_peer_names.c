// SPDX-License-Identifier: MIT
/*
 * The correlator's names of external peers: the newest record per address
 * stands, ties broken by host then name, so any order of the same records
 * gives the same map; disagreements counted; the bound holds, evictions
 * counted; the graph's external nodes (only they) are named.
 */
#include <stdio.h>
#include <string.h>

#include "correlator/pipeline.h"

#include "tests/unit/check.h"

static struct cw_wire_dns rec(const char *host, const char *name, uint8_t last,
			      uint64_t t)
{
	struct cw_wire_dns d;

	memset(&d, 0, sizeof(d));
	snprintf(d.host, sizeof(d.host), "%s", host);
	snprintf(d.name, sizeof(d.name), "%s", name);
	d.addr.family = 4;
	d.addr.bytes[0] = 10;
	d.addr.bytes[3] = last;
	d.ttl_s = 60;
	d.time_ns = t;
	return d;
}

static void test_order(void)
{
	struct cw_wire_dns r[4] = {rec("h2", "old.test", 1, 100),
				   rec("h1", "new.test", 1, 200),
				   rec("h3", "tie-b.test", 2, 300),
				   rec("h2", "tie-a.test", 2, 300)};
	static const int orders[4][4] = {
		{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
	struct cw_addr a1 = {.family = 4, .bytes = {10, 0, 0, 1}};
	struct cw_addr a2 = {.family = 4, .bytes = {10, 0, 0, 2}};

	for (int o = 0; o < 4; o++) {
		struct cw_peer_names n;

		cw_peer_names_init(&n, 0);
		for (int i = 0; i < 4; i++)
			CHECK(cw_peer_names_add(&n, &r[orders[o][i]]) == 0);
		CHECK(!strcmp(cw_peer_names_get(&n, &a1), "new.test"));
		/* Same time: h2 < h3, whichever came first. */
		CHECK(!strcmp(cw_peer_names_get(&n, &a2), "tie-a.test"));
		CHECK(n.records == 4 && n.disagreed == 2);
		cw_peer_names_release(&n);
	}
}

static void test_bound_and_graph(void)
{
	struct cw_peer_names n;
	struct cw_graph g;
	struct cw_process p = {.tgid = 7, .start_ns = 1};
	struct cw_addr a = {.family = 4, .bytes = {10, 0, 0, 9}};
	struct cw_wire_dns d;
	long c, s, s2;

	cw_peer_names_init(&n, 3);
	for (uint8_t i = 1; i <= 10; i++) {
		d = rec("h1", "many.test", i, i);
		CHECK(cw_peer_names_add(&n, &d) == 0);
		CHECK(n.map.len <= 3);
	}
	CHECK(n.evicted == 7);
	d = rec("h1", "api.example.test", 9, 100);
	cw_peer_names_add(&n, &d);
	cw_graph_init(&g);
	c = cw_graph_node_for_proc(&g, "h1", 1, false, &p);
	s = cw_graph_node_external(&g, &a, 443);
	a.bytes[3] = 200;
	s2 = cw_graph_node_external(&g, &a, 80);
	CHECK(c >= 0 && s >= 0 && s2 >= 0);
	CHECK(cw_peer_names_apply(&n, &g) == 1);
	CHECK(!strcmp(g.nodes[s].name, "api.example.test"));
	CHECK(g.nodes[s2].name[0] == 0 && g.nodes[c].name[0] == 0);
	cw_graph_release(&g);
	cw_peer_names_release(&n);
}

int main(void)
{
	test_order();
	test_bound_and_graph();
	return failures ? 1 : 0;
}
