// SPDX-License-Identifier: MIT
/*
 * The node memo of the EdgeSet writer (struct cw_wire_memo,
 * common/wire_put.c): edge sets written with one memo over many records
 * give the same bytes as without, whether nodes repeat, collide in the
 * memo's slots, differ only past what it hashes, or are so many that it
 * starts again.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

#include "tests/unit/check.h"

#define NODES 15000

static struct cw_edge_node nodes[NODES];

/* Node i: processes on a few hosts; every 7th differs from the one
 * before only in its command line (hashed alike, encoded apart); every
 * 11th an external address. */
static void make_nodes(void)
{
	size_t i;

	memset(nodes, 0, sizeof(nodes));
	for (i = 0; i < NODES; i++) {
		struct cw_edge_node *n = &nodes[i];

		if (i % 11 == 10) {
			n->kind = CW_EDGE_NODE_EXTERNAL;
			n->addr.family = 4;
			n->addr.bytes[0] = 10;
			n->addr.bytes[3] = (uint8_t)i;
			n->port = (uint16_t)(i % 900 + 1);
			continue;
		}
		n->kind = CW_EDGE_NODE_PROCESS;
		snprintf(n->host, sizeof(n->host), "host-%zu", i % 37);
		n->netns = 4026531840u;
		n->proc.tgid = (uint32_t)(i % 7 == 6 ? i - 1 : i);
		n->proc.start_ns = 1000 * (i % 7 == 6 ? i - 1 : i);
		snprintf(n->proc.comm, sizeof(n->proc.comm), "srv%zu", i % 5);
		/* Long enough that the memo's bytes fill and start again. */
		memset(n->proc.cmdline, 'a' + (int)(i % 26),
		       sizeof(n->proc.cmdline) - 1);
		n->proc.cmdline[i % (sizeof(n->proc.cmdline) - 1)] = 'X';
	}
}

/*
 * Edges (client, server) drawn from the nodes, written as sets of
 * `per` edges each into out (records one after the other, each as
 * long as lens[k]); with a memo shared by all the records, or none.
 * The records' count.
 */
static size_t write_sets(const size_t (*pairs)[2], size_t n, size_t per,
			 struct cw_wire_memo *memo, uint8_t *out,
			 size_t *lens)
{
	static uint8_t buf[CW_WIRE_EDGES_BYTES];
	struct cw_wire_edges_put p;
	struct cw_wire_edge e;
	size_t i, k = 0, len;

	memset(&e, 0, sizeof(e));
	strcpy(e.group, "g");
	strcpy(e.topic, "causeway.conns");
	e.width_ns = 60000000000ULL;
	for (i = 0; i < n; i += per) {
		size_t j;

		e.bucket_ns = 60000000000ULL * (i / per + 1);
		e.set_size = (uint32_t)per;
		e.set_index = 0;
		cw_wire_edges_begin(&p, buf, sizeof(buf), &e);
		p.memo = memo;
		for (j = i; j < i + per && j < n; j++) {
			e.protocol = 6;
			e.t.conns = j + 1;
			e.t.bytes_c2s = 100 * j;
			CHECK(cw_wire_edges_add_nodes(&p, &e, &nodes[pairs[j][0]],
						      &nodes[pairs[j][1]]) ==
			      0);
		}
		len = cw_wire_edges_end(&p);
		CHECK(len > 0);
		memcpy(out, buf, len);
		out += len;
		lens[k++] = len;
	}
	return k;
}

static void check_same(const size_t (*pairs)[2], size_t n, size_t per)
{
	size_t records = (n + per - 1) / per, ka, kb;
	size_t *la = calloc(records, sizeof(*la)),
	       *lb = calloc(records, sizeof(*lb));
	/* An edge with two such nodes takes under 1 KiB. */
	uint8_t *a = malloc(n * 1024 + 4096), *b = malloc(n * 1024 + 4096);
	struct cw_wire_memo memo = {0};
	size_t i, at = 0;

	CHECK(la && lb && a && b);
	if (!la || !lb || !a || !b)
		goto out;
	ka = write_sets(pairs, n, per, NULL, a, la);
	kb = write_sets(pairs, n, per, &memo, b, lb);
	CHECK(ka == kb && ka == records);
	for (i = 0; i < ka && i < kb; i++) {
		CHECK(la[i] == lb[i]);
		if (la[i] != lb[i])
			break;
		CHECK(memcmp(a + at, b + at, la[i]) == 0);
		at += la[i];
	}
out:
	cw_wire_memo_release(&memo);
	CHECK(!memo.slot && !memo.bytes && !memo.len);
	free(a);
	free(b);
	free(la);
	free(lb);
}

int main(void)
{
	static size_t pairs[3 * NODES][2];
	size_t i, n = 0;

	make_nodes();
	/* A few nodes over and over (the memo's case). */
	for (i = 0; i < 400; i++, n++) {
		pairs[n][0] = i % 9;
		pairs[n][1] = 9 + i % 4;
	}
	check_same((const size_t(*)[2])pairs, n, 40);
	/* Near twins: hashed alike, their command lines apart. */
	for (n = 0, i = 0; i < 300; i++, n++) {
		pairs[n][0] = 5 + 7 * (i % 20);
		pairs[n][1] = 6 + 7 * (i % 20);
	}
	check_same((const size_t(*)[2])pairs, n, 25);
	/* Every node, several times, more than the memo's slots and bytes
	 * hold: collisions, replacements and a fresh start. */
	for (n = 0, i = 0; i < 3 * NODES; i++, n++) {
		pairs[n][0] = (i * 7919) % NODES;
		pairs[n][1] = (i * 104729 + 3) % NODES;
	}
	check_same((const size_t(*)[2])pairs, n, 100);
	return failures ? 1 : 0;
}
