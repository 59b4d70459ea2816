// SPDX-License-Identifier: MIT
/*
 * Values that cannot poison a pairing.  Counters near 2^64: two ends that
 * each report 2^64 - 1 bytes, and connections whose sums pass 2^64 on one
 * edge, give edges of 2^64 - 1 (saturated), never a few bytes (wrapped);
 * a record whose counters sum past 2^64 is still the newer one.  Times
 * beyond the skew bound: cw_pairing_skewed() says which way, and a record
 * within it passes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/record.h"
#include "correlator/correlator.h"

#include "tests/unit/check.h"

#define NS  1000000000ULL
#define T0  (1767225600ULL * NS) /* 2026-01-01 */
#define MAX UINT64_MAX

static void end_rec(struct cw_conn_record *r, bool client, unsigned conn,
		    uint64_t sent, uint64_t got, uint64_t at)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", client ? "web" : "db");
	r->cookie = 100 + conn;
	r->protocol = 6;
	r->role = client ? CW_REC_ROLE_CLIENT : CW_REC_ROLE_SERVER;
	cw_addr_parse(&r->laddr, client ? "10.0.0.1" : "10.0.0.2");
	cw_addr_parse(&r->raddr, client ? "10.0.0.2" : "10.0.0.1");
	r->lport = client ? (uint16_t)(30000 + conn) : 80;
	r->rport = client ? 80 : (uint16_t)(30000 + conn);
	r->bytes_out = sent;
	r->bytes_in = got;
	r->msgs_out = sent;
	r->msgs_in = got;
	r->first_ns = T0;
	r->last_ns = at;
	r->proc.tgid = client ? 10 : 20;
	snprintf(r->proc.comm, sizeof(r->proc.comm), client ? "curl" : "serve");
}

/* Both ends of connection conn: the client sent c2s, the server s2c. */
static void add_conn(struct cw_pairing *p, unsigned conn, uint64_t c2s,
		     uint64_t s2c, uint64_t at)
{
	struct cw_conn_record r;

	end_rec(&r, true, conn, c2s, s2c, at);
	CHECK(!cw_pairing_add(p, &r));
	end_rec(&r, false, conn, s2c, c2s, at);
	CHECK(!cw_pairing_add(p, &r));
}

static int sum_edges(const struct cw_edge_node *client,
		     const struct cw_edge_node *server, uint8_t protocol,
		     uint64_t bucket_ns, const struct cw_edge_total *t,
		     void *arg)
{
	struct cw_edge_total *sum = arg;

	cw_edge_total_add(sum, t);
	return 0;
}

/* The one edge of p (all buckets, sealed and open) into *t. */
static void edge_of(struct cw_pairing *p, struct cw_edge_total *t)
{
	memset(t, 0, sizeof(*t));
	CHECK(!cw_pairing_edges(p, sum_edges, t));
}

static void test_helpers(void)
{
	CHECK(cw_count_add(MAX, MAX) == MAX);
	CHECK(cw_count_add(MAX - 1, 1) == MAX);
	CHECK(cw_count_add(MAX - 2, 1) == MAX - 1);
	CHECK(cw_count_delta(5, 7) == 0);
	CHECK(cw_count_delta(MAX, 0) == MAX);
	CHECK(cw_diff_add(INT64_MAX - 1, MAX, false) == INT64_MAX);
	CHECK(cw_diff_add(-5, MAX, true) == INT64_MIN);
	CHECK(cw_diff_add(-5, 3, false) == -2);
	CHECK(cw_count_of(1e30) == MAX);
	CHECK(cw_count_of(-3) == 0);
	CHECK(cw_count_of(2.5) == 3);
}

/* The case and its neighbours, in one bucket and over several. */
static void test_edges(uint64_t width)
{
	struct cw_pairing p;
	struct cw_edge_total t;

	cw_pairing_init(&p);
	cw_pairing_buckets(&p, width, CW_BUCKET_TTL_NS, CW_BUCKET_LATENESS_NS);
	/* Two ends of one connection that each say 2^64 - 1. */
	add_conn(&p, 1, MAX, MAX, T0 + NS);
	edge_of(&p, &t);
	CHECK(t.bytes_c2s == MAX && t.bytes_s2c == MAX);
	CHECK(t.msgs_c2s == MAX && t.msgs_s2c == MAX);
	CHECK(t.diff_c2s == 0 && t.diff_s2c == 0);
	/* Another connection on the same edge, near the wrap, later. */
	add_conn(&p, 2, MAX - 100, 13298, T0 + 5 * 60 * NS);
	edge_of(&p, &t);
	CHECK(t.bytes_c2s == MAX);
	CHECK(t.bytes_s2c == MAX);
	CHECK(t.conns == 2);
	CHECK(t.sampled_bytes == MAX);
	/* Sealed (a record past lateness), then summed again: still MAX. */
	add_conn(&p, 3, 10, 10, T0 + 20 * 60 * NS);
	if (p.bk.due)
		CHECK(!cw_pairing_seal(&p));
	edge_of(&p, &t);
	CHECK(t.bytes_c2s == MAX && t.bytes_s2c == MAX);
	CHECK(t.conns == 3);
	cw_pairing_release(&p);
}

/* A record whose counters sum past 2^64 replaces a small one. */
static void test_newer(void)
{
	struct cw_pairing p;
	struct cw_conn_record r;
	long i;

	cw_pairing_init(&p);
	end_rec(&r, true, 1, 100, 100, T0 + NS);
	CHECK(!cw_pairing_add(&p, &r));
	end_rec(&r, true, 1, MAX, 1, T0 + 2 * NS);
	CHECK(!cw_pairing_add(&p, &r));
	CHECK(p.st.stale == 0);
	i = cw_pairing_find(&p, "web", "", 101);
	CHECK(i >= 0 && cw_pairing_numbers(&p, (size_t)i)->bytes_out == MAX);
	cw_pairing_release(&p);
}

static void test_skew(void)
{
	struct cw_pairing p;
	struct cw_conn_record r;
	uint64_t now = T0 + 3600 * NS;
	char why[160];

	cw_pairing_init(&p);
	cw_pairing_buckets(&p, CW_BUCKET_WIDTH_NS, CW_BUCKET_TTL_NS,
			   CW_BUCKET_LATENESS_NS);
	end_rec(&r, true, 1, 10, 10, now);
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) == 0);
	r.last_ns = now + CW_SKEW_AHEAD_NS; /* at the bound: in */
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) == 0);
	r.last_ns = 4070908800ULL * NS; /* 2099 */
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) ==
	      CW_WIRE_EFUTURE);
	CHECK(strstr(why, "last_ns 4070908800000000000 is") != NULL);
	r.last_ns = now;
	r.first_ns = now + CW_SKEW_AHEAD_NS + 1;
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) ==
	      CW_WIRE_EFUTURE);
	CHECK(strstr(why, "first_ns") != NULL);
	r.first_ns = 1; /* a connection may be old: only last_ns counts */
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) == 0);
	r.last_ns = 631152000ULL * NS; /* 1990 */
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) ==
	      CW_WIRE_EPAST);
	/* A month before what the pairing has sealed. */
	r.last_ns = now;
	CHECK(!cw_pairing_add(&p, &r));
	if (p.bk.due)
		CHECK(!cw_pairing_seal(&p));
	r.last_ns = now - 30 * 86400 * NS;
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) ==
	      CW_WIRE_EPAST);
	r.last_ns = now - 86400 * NS; /* a day: late, but in */
	CHECK(cw_pairing_skewed(&p, &r, now, why, sizeof(why)) == 0);
	cw_pairing_release(&p);
}

int main(void)
{
	test_helpers();
	test_edges(CW_BUCKET_WIDTH_NS);
	test_newer();
	test_skew();
	return failures ? 1 : 0;
}
