// SPDX-License-Identifier: MIT
/*
 * NAT undoing (DNAT and SNAT) over a scripted conntrack: which ends are looked
 * up, how often, what a reply tuple does to a record, and the cache's bound.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "agent/nat.h"
#include "check.h"

/*
 * The scripted conntrack: one answer for every query, queries recorded.
 * The reply's destination is the question's source (no SNAT) unless
 * snat_to() set one.
 */
static struct {
	enum cw_ct_result res;
	struct cw_addr src, dst;
	uint16_t sport, dport;
	int calls;
	struct cw_ct_tuple last;
} ct;

static enum cw_ct_result fake(void *ctx, const struct cw_ct_tuple *orig,
			      struct cw_ct_reply *reply)
{
	ct.calls++;
	ct.last = *orig;
	if (ct.res == CW_CT_FOUND) {
		reply->src = ct.src;
		reply->sport = ct.sport;
		reply->dst = ct.dst.family ? ct.dst : orig->src;
		reply->dport = ct.dport ? ct.dport : orig->sport;
	}
	return ct.res;
}

static void snat_to(const char *addr, uint16_t port)
{
	memset(&ct.dst, 0, sizeof(ct.dst));
	if (addr)
		cw_addr_parse(&ct.dst, addr);
	ct.dport = port;
}

static void answer(enum cw_ct_result res, const char *addr, uint16_t port)
{
	ct.res = res;
	memset(&ct.src, 0, sizeof(ct.src));
	if (addr)
		cw_addr_parse(&ct.src, addr);
	ct.sport = port;
}

static struct cw_conn_record rec(uint64_t cookie, int role, int proto)
{
	struct cw_conn_record r;

	memset(&r, 0, sizeof(r));
	r.cookie = cookie;
	r.netns = 4026531840u;
	r.role = (uint8_t)role;
	r.protocol = (uint8_t)proto;
	cw_addr_parse(&r.laddr, "10.0.0.5");
	cw_addr_parse(&r.raddr, "10.96.0.10");
	r.lport = 40000;
	r.rport = 80;
	return r;
}

static int is_addr(const struct cw_addr *a, const char *s)
{
	struct cw_addr b;

	return !cw_addr_parse(&b, s) && !cw_addr_cmp(a, &b);
}

static void test_undo(void)
{
	struct cw_nat *n = cw_nat_new(fake, NULL, 0);
	struct cw_conn_record r;
	struct cw_nat_stats st;

	memset(&ct, 0, sizeof(ct));
	answer(CW_CT_FOUND, "10.244.1.7", 8080);
	r = rec(1, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 1);
	/* The question is the socket's original tuple, in its namespace. */
	CHECK(ct.last.protocol == IPPROTO_TCP);
	CHECK(ct.last.netns == 4026531840u);
	CHECK(is_addr(&ct.last.src, "10.0.0.5") && ct.last.sport == 40000);
	CHECK(is_addr(&ct.last.dst, "10.96.0.10") && ct.last.dport == 80);
	CHECK(is_addr(&r.raddr, "10.244.1.7") && r.rport == 8080);
	CHECK(r.flags & CW_REC_NAT);
	CHECK(is_addr(&r.laddr, "10.0.0.5") && r.lport == 40000);

	/* Later records of the end: the cached answer, no new query. */
	answer(CW_CT_NONE, NULL, 0);
	r = rec(1, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 1);
	CHECK(is_addr(&r.raddr, "10.244.1.7") && (r.flags & CW_REC_NAT));

	/* The close record: still undone, then forgotten. */
	r = rec(1, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	r.flags = CW_REC_CLOSED;
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 1);
	CHECK(r.rport == 8080 && (r.flags & CW_REC_NAT) &&
	      (r.flags & CW_REC_CLOSED));
	cw_nat_stats(n, &st);
	CHECK(st.cached == 0 && st.lookups == 1 && st.undone == 1);
	cw_nat_free(n);
}

static void test_no_nat(void)
{
	struct cw_nat *n = cw_nat_new(fake, NULL, 0);
	struct cw_conn_record r;
	struct cw_nat_stats st;

	memset(&ct, 0, sizeof(ct));
	/* Reply source is the original destination: no DNAT (SNAT maybe). */
	answer(CW_CT_FOUND, "10.96.0.10", 80);
	r = rec(2, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(!(r.flags & CW_REC_NAT) && is_addr(&r.raddr, "10.96.0.10"));
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 1);

	/* Only the port translated: DNAT too. */
	answer(CW_CT_FOUND, "10.96.0.10", 8080);
	r = rec(3, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK((r.flags & CW_REC_NAT) && r.rport == 8080);

	/* No entry, or a failed query: no NAT, and not asked again. */
	answer(CW_CT_NONE, NULL, 0);
	r = rec(4, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	cw_nat_apply(n, &r);
	CHECK(!(r.flags & CW_REC_NAT) && r.rport == 80);
	answer(CW_CT_ERROR, NULL, 0);
	r = rec(5, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	cw_nat_apply(n, &r);
	CHECK(!(r.flags & CW_REC_NAT) && r.rport == 80);
	CHECK(ct.calls == 4);

	/* Server ends, UDP, unknown roles: never asked. */
	answer(CW_CT_FOUND, "10.244.1.7", 8080);
	r = rec(6, CW_REC_ROLE_SERVER, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	r = rec(7, CW_REC_ROLE_CLIENT, IPPROTO_UDP);
	cw_nat_apply(n, &r);
	r = rec(8, CW_REC_ROLE_UNKNOWN, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 4 && !(r.flags & CW_REC_NAT));

	cw_nat_stats(n, &st);
	CHECK(st.lookups == 4 && st.undone == 1 && st.errors == 1);
	CHECK(st.cached == 4);
	/* A NULL handle (NAT off) leaves records alone. */
	cw_nat_apply(NULL, &r);
	cw_nat_resolve(NULL, &r);
	cw_nat_stats(NULL, &st);
	CHECK(st.lookups == 0);
	cw_nat_free(n);
	cw_nat_free(NULL);
}

/* A short connection: resolved when its close record arrives. */
static void test_close_first(void)
{
	struct cw_nat *n = cw_nat_new(fake, NULL, 0);
	struct cw_conn_record r;
	struct cw_nat_stats st;

	memset(&ct, 0, sizeof(ct));
	answer(CW_CT_FOUND, "fd00::7", 8080);
	r = rec(9, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_addr_parse(&r.laddr, "fd00::5");
	cw_addr_parse(&r.raddr, "fd00:96::10");
	r.flags = CW_REC_CLOSED;
	cw_nat_resolve(n, &r);
	CHECK(ct.calls == 1 && ct.last.dst.family == 6);
	CHECK(r.rport == 80); /* resolve does not rewrite */
	/* By the time the record is emitted the entry may be gone. */
	answer(CW_CT_NONE, NULL, 0);
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 1);
	CHECK(is_addr(&r.raddr, "fd00::7") && r.rport == 8080 &&
	      (r.flags & CW_REC_NAT));
	cw_nat_stats(n, &st);
	CHECK(st.cached == 0);
	cw_nat_free(n);
}

/* The bound: the least recently used half goes. */
static void test_bound(void)
{
	struct cw_nat *n = cw_nat_new(fake, NULL, 4);
	struct cw_conn_record r;
	struct cw_nat_stats st;
	uint64_t c;

	memset(&ct, 0, sizeof(ct));
	answer(CW_CT_FOUND, "10.244.1.7", 8080);
	for (c = 1; c <= 4; c++) {
		r = rec(c, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
		cw_nat_apply(n, &r);
	}
	r = rec(1, CW_REC_ROLE_CLIENT, IPPROTO_TCP); /* 1 is used again */
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 4);
	r = rec(5, CW_REC_ROLE_CLIENT, IPPROTO_TCP); /* full: 2 and 3 go */
	cw_nat_apply(n, &r);
	cw_nat_stats(n, &st);
	CHECK(st.evicted == 2 && st.cached == 3);
	for (c = 1; c <= 5; c++) {
		r = rec(c, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
		r.flags = CW_REC_CLOSED;
		cw_nat_apply(n, &r);
		CHECK(r.flags & CW_REC_NAT);
	}
	/* 1, 4, 5 answered from the cache; 2 and 3 asked again. */
	CHECK(ct.calls == 7);
	cw_nat_stats(n, &st);
	CHECK(st.cached == 0);
	cw_nat_free(n);

	/* Many ends, never closed: the cache stays within its bound. */
	n = cw_nat_new(fake, NULL, 1000);
	for (c = 1; c <= 100000; c++) {
		r = rec(c, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
		cw_nat_apply(n, &r);
	}
	cw_nat_stats(n, &st);
	CHECK(st.cached <= 1000 && st.cached + st.evicted == 100000);
	cw_nat_free(n);
}

/* The source translated (SNAT, or conntrack's port remap): the local side
 * becomes what the server sees; with DNAT as well, both sides. */
static void test_snat(void)
{
	struct cw_nat *n = cw_nat_new(fake, NULL, 0);
	struct cw_conn_record r;
	struct cw_nat_stats st;

	memset(&ct, 0, sizeof(ct));
	answer(CW_CT_FOUND, "10.96.0.10", 80);
	snat_to("192.0.2.1", 50001);
	r = rec(11, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(is_addr(&r.laddr, "192.0.2.1") && r.lport == 50001);
	CHECK(is_addr(&r.raddr, "10.96.0.10") && r.rport == 80);
	CHECK(r.flags & CW_REC_NAT);

	/* Only the port remapped (a clash with an entry in TIME_WAIT). */
	answer(CW_CT_FOUND, "10.244.1.7", 8080);
	snat_to("10.0.0.5", 40001);
	r = rec(12, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(is_addr(&r.laddr, "10.0.0.5") && r.lport == 40001);
	CHECK(is_addr(&r.raddr, "10.244.1.7") && r.rport == 8080);

	/* Cached like DNAT: a later record gets the same, no new query. */
	answer(CW_CT_NONE, NULL, 0);
	snat_to(NULL, 0);
	r = rec(12, CW_REC_ROLE_CLIENT, IPPROTO_TCP);
	cw_nat_apply(n, &r);
	CHECK(ct.calls == 2 && r.lport == 40001 && r.rport == 8080);
	cw_nat_stats(n, &st);
	CHECK(st.snat == 2 && st.undone == 1);
	cw_nat_free(n);
}

int main(void)
{
	test_undo();
	test_snat();
	test_no_nat();
	test_close_first();
	test_bound();
	if (failures)
		fprintf(stderr, "test_nat: %d checks failed\n", failures);
	return failures ? 1 : 0;
}
