// SPDX-License-Identifier: MIT
/*
 * A member's edge buckets through the edges topic (librdkafka's mock
 * cluster) in EdgeSet records: sets of 1,200 edges with long names and
 * 1,100 short ones are cut into records of at most 512 edges (the byte
 * bound is test_wire_direct's), and the merge reads back every edge,
 * bucket by bucket, as the member's pairing holds it.  A newer set of
 * that partition made of an EdgeSet record and an older writer's
 * EdgeBucket record then wins when whole, and with one of its records
 * missing the set before it stays.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kafka.h"
#include "common/wire.h"
#include "correlator/correlator.h"

#include "tests/unit/check.h"

#define NS     1000000000ULL
#define T0     (1700000000ULL * NS)
#define NLONG  1200
#define NSHORT 1100

static void fill(char *s, size_t cap, size_t i)
{
	memset(s, 'a' + (int)(i % 26), cap - 1);
	s[cap - 1] = 0;
}

/* Client end i (its own process) to an address nobody watched. */
static void client(struct cw_conn_record *r, size_t i, uint64_t at)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "web");
	snprintf(r->boot_id, sizeof(r->boot_id), "boot-1");
	r->cookie = 1000 + i;
	r->protocol = 6;
	r->role = CW_REC_ROLE_CLIENT;
	cw_addr_parse(&r->laddr, "10.0.0.1");
	cw_addr_parse(&r->raddr, "10.0.0.2");
	r->lport = (uint16_t)(20000 + i);
	r->rport = 5432;
	r->bytes_out = 100 + i;
	r->first_ns = r->last_ns = at;
	r->flags = CW_REC_CLOSED;
	r->proc.tgid = (uint32_t)(100 + i);
	r->proc.start_ns = 11;
	snprintf(r->proc.comm, sizeof(r->proc.comm), "app");
	if (i < NLONG) { /* every name long: about 1 KB an edge */
		fill(r->proc.cmdline, sizeof(r->proc.cmdline), i);
		fill(r->proc.container_name, sizeof(r->proc.container_name), i);
		fill(r->proc.pod_name, sizeof(r->proc.pod_name), i);
		fill(r->proc.workload, sizeof(r->proc.workload), i);
		fill(r->proc.pod_ns, sizeof(r->proc.pod_ns), i);
	}
	r->seq = i;
}

struct sum {
	uint64_t edges, bytes, bucket_bytes[2];
};

static int summed(const struct cw_edge_node *c, const struct cw_edge_node *s,
		  uint8_t protocol, uint64_t bucket_ns,
		  const struct cw_edge_total *t, void *arg)
{
	struct sum *x = arg;

	(void)c;
	(void)s;
	(void)protocol;
	x->edges++;
	x->bytes += t->bytes_c2s;
	x->bucket_bytes[bucket_ns > T0] += t->bytes_c2s;
	return 0;
}

/* The topic's records: each within both bounds; edges in all. */
struct records {
	size_t n, edges, most;
};

static int record(void *arg, int64_t at, const char *key, size_t key_len,
		  const uint8_t *v, size_t len)
{
	static struct cw_wire_msg m;
	struct records *r = arg;

	(void)at;
	(void)key;
	(void)key_len;
	CHECK(len <= CW_WIRE_EDGES_BYTES);
	CHECK(cw_wire_decode(v, len, &m, NULL, 0) == CW_WIRE_EDGES);
	CHECK(m.edges.n <= CW_WIRE_EDGES_CHUNK);
	r->n++;
	r->edges += m.edges.n;
	if (m.edges.n > r->most)
		r->most = m.edges.n;
	cw_wire_msg_release(&m);
	return 0;
}

/* The merge of the topic, and what it kept. */
static struct sum merged(const struct cw_kafka_conf *kc)
{
	struct cw_edge_merge m;
	struct sum s = {0};

	cw_edge_merge_init(&m, "g", 0, 0);
	CHECK(cw_edge_merge_read(&m, kc, "cwtest.edges") == 0);
	CHECK(cw_edge_merge_each(&m, true, summed, &s) == 0);
	cw_edge_merge_release(&m);
	return s;
}

/* A set of two edges of bucket T0 at offset `off`: index 0 in an EdgeSet
 * record, index 1 (unless `cut`) in an EdgeBucket record. */
static void newer_set(struct cw_kafka_log *l, int64_t off, bool cut)
{
	static struct cw_wire_msg m;
	struct cw_wire_edge e[2];
	uint8_t *buf;
	size_t len, i;

	for (i = 0; i < 2; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		snprintf(e[i].group, sizeof(e[i].group), "g");
		e[i].partition = 3;
		e[i].offset = off;
		e[i].bucket_ns = T0;
		e[i].width_ns = NS;
		e[i].set_size = 2;
		e[i].set_index = (uint32_t)i;
		e[i].protocol = 6;
		e[i].client.kind = CW_EDGE_NODE_EXTERNAL;
		cw_addr_parse(&e[i].client.addr, "10.9.9.9");
		e[i].server.kind = CW_EDGE_NODE_EXTERNAL;
		cw_addr_parse(&e[i].server.addr, i ? "10.8.8.8" : "10.7.7.7");
		e[i].t.conns = 1;
		e[i].t.bytes_c2s = 5;
	}
	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGES;
	m.edges.e = e;
	m.edges.n = 1;
	CHECK(cw_wire_encode(&m, &buf, &len) == 0);
	CHECK(cw_kafka_log_put(l, 0, "g/1700000000000000000/3", buf, len) == 0);
	free(buf);
	if (!cut) {
		m.kind = CW_WIRE_EDGE;
		m.edge = e[1];
		CHECK(cw_wire_encode(&m, &buf, &len) == 0);
		CHECK(cw_kafka_log_put(l, 0, "g/1700000000000000000/3", buf,
				       len) == 0);
		free(buf);
	}
	CHECK(cw_kafka_log_flush(l, 10000) == 0);
}

int main(void)
{
	static struct cw_correlator c;
	static struct cw_part_state ps;
	static struct cw_conn_record r;
	struct cw_kafka_conf kc = {.topic_prefix = "cwtest"};
	struct records recs = {0};
	struct sum want = {0}, got;
	char boot[256];
	size_t i;

	CHECK(cw_kafka_mock_start(1, boot, sizeof(boot)) == 0);
	kc.brokers = boot;
	c.o.group = "g";
	c.o.conns_topic = "cwtest.conns";
	c.o.bucket_ns = NS;
	c.edges_log = cw_kafka_log_new(&kc, "cwtest.edges");
	CHECK(c.edges_log != NULL);
	if (!c.edges_log)
		return 1;
	ps.partition = 3;
	ps.next = 1000;
	cw_pairing_init(&ps.pairing);
	cw_pairing_buckets(&ps.pairing, NS, 10 * NS, NS);
	c.parts = &ps;
	c.nparts = 1;
	/* Bucket T0: the long names; bucket T0 + 1 s: the short ones. */
	for (i = 0; i < NLONG + NSHORT; i++) {
		client(&r, i, T0 + (i < NLONG ? 0 : NS) + 1000);
		CHECK(!cw_pairing_add(&ps.pairing, &r));
	}
	CHECK(!cw_pairing_buckets_each(&ps.pairing, true, summed, &want));
	CHECK(want.edges == NLONG + NSHORT);
	CHECK(cw_correlator_write_edges(&c, true) == 0);
	CHECK(c.edge_records == NLONG + NSHORT);
	CHECK(cw_kafka_log_read(c.edges_log, 3 % c.edges_partitions, 0, record,
				&recs) == 0);
	printf("edge sets: %zu edges in %zu records, at most %zu a record\n",
	       recs.edges, recs.n, recs.most);
	/* 512, 512, 176 and 512, 512, 76 (long names make 330 bytes an
	 * edge: 512 of them are 170 KB, under the byte bound). */
	CHECK(recs.edges == NLONG + NSHORT && recs.n == 6);
	CHECK(recs.most == CW_WIRE_EDGES_CHUNK);
	got = merged(&kc);
	CHECK(got.edges == want.edges && got.bytes == want.bytes);
	CHECK(got.bucket_bytes[0] == want.bucket_bytes[0]);
	/* A newer set of T0 cut short: the one before stays. */
	newer_set(c.edges_log, 2000, true);
	got = merged(&kc);
	CHECK(got.edges == want.edges && got.bytes == want.bytes);
	/* Whole, from two kinds of records: T0 is its two edges. */
	newer_set(c.edges_log, 3000, false);
	got = merged(&kc);
	CHECK(got.edges == NSHORT + 2 && got.bucket_bytes[0] == 10);
	CHECK(got.bucket_bytes[1] == want.bucket_bytes[1]);
	cw_pairing_release(&ps.pairing);
	cw_kafka_log_free(c.edges_log);
	cw_kafka_mock_stop();
	return failures ? 1 : 0;
}
