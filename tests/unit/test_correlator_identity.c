// SPDX-License-Identifier: MIT
/*
 * Which ends may pair: a loopback or link-local tuple names a connection
 * inside one host and network namespace, so two hosts (or two namespaces)
 * using the same 127.0.0.1 ports make two connections, never a pair across
 * them; a routable tuple pairs across hosts as before.  Checked for the
 * pairing of connection records and for the pairing of timing windows.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/live.h"
#include "tests/unit/check.h"

#define T0 1767225600000000000ULL

static void end(struct cw_conn_record *r, const char *host, uint32_t netns,
		uint64_t cookie, int role, const char *l, uint16_t lport,
		const char *rm, uint16_t rport)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->netns = netns;
	r->cookie = cookie;
	r->protocol = 6;
	r->role = (uint8_t)role;
	CHECK(!cw_addr_parse(&r->laddr, l));
	CHECK(!cw_addr_parse(&r->raddr, rm));
	r->lport = lport;
	r->rport = rport;
	r->first_ns = T0;
	r->last_ns = T0 + NSEC_PER_SEC;
	r->bytes_out = 100;
	r->bytes_in = 200;
	r->proc.tgid = (uint32_t)cookie;
	snprintf(r->proc.comm, sizeof(r->proc.comm), "p%llu",
		 (unsigned long long)cookie);
}

/* A connection l:lport -> r:rport seen from both ends on one host. */
static void conn(struct cw_conn_record *c, struct cw_conn_record *s,
		 const char *host, uint32_t netns, uint64_t cookie,
		 const char *ip)
{
	end(c, host, netns, cookie, CW_REC_ROLE_CLIENT, ip, 40000, ip, 6379);
	end(s, host, netns, cookie + 1, CW_REC_ROLE_SERVER, ip, 6379, ip,
	    40000);
}

/* Pairs among n records: each end's partner on the same host and netns. */
static uint64_t pairs(const struct cw_conn_record *r, size_t n)
{
	struct cw_pairing p;
	const struct cw_conn_record *x, *y;
	uint64_t paired;
	size_t i;

	cw_pairing_init(&p);
	CHECK(!cw_pairing_add_many(&p, r, n));
	CHECK(!cw_pairing_pair(&p));
	for (i = 0; i < p.st.ends; i++) {
		if (p.partner[i] < 0)
			continue;
		x = cw_pairing_end(&p, i);
		y = cw_pairing_end(&p, (size_t)p.partner[i]);
		if (cw_addr_is_local(&x->laddr))
			CHECK(!strcmp(x->host, y->host) &&
			      x->netns == y->netns);
	}
	paired = p.st.paired;
	cw_pairing_release(&p);
	return paired;
}

static void test_records(void)
{
	struct cw_conn_record r[8];

	/* Two hosts, each a loopback connection on the same ports. */
	conn(&r[0], &r[1], "host-a", 1, 10, "127.0.0.1");
	conn(&r[2], &r[3], "host-b", 1, 10, "127.0.0.1");
	CHECK(pairs(r, 4) == 2);
	/* Only the client of host-a and the server of host-b: no pair. */
	r[1] = r[3];
	CHECK(pairs(r, 2) == 0);
	/* Two namespaces of one host: the same. */
	conn(&r[0], &r[1], "host-a", 1, 10, "::1");
	conn(&r[2], &r[3], "host-a", 2, 20, "::1");
	CHECK(pairs(r, 4) == 2);
	r[1] = r[3];
	CHECK(pairs(r, 2) == 0);
	/* Link-local, IPv4 and IPv6. */
	conn(&r[0], &r[1], "host-a", 1, 10, "169.254.1.1");
	conn(&r[2], &r[3], "host-b", 1, 10, "fe80::1");
	r[1] = r[3];
	CHECK(pairs(r, 2) == 0);
	/* A routable tuple pairs across hosts. */
	end(&r[0], "host-a", 1, 10, CW_REC_ROLE_CLIENT, "10.0.0.1", 40000,
	    "10.0.0.2", 80);
	end(&r[1], "host-b", 1, 10, CW_REC_ROLE_SERVER, "10.0.0.2", 80,
	    "10.0.0.1", 40000);
	CHECK(pairs(r, 2) == 1);
	CHECK(cw_addr_is_local(&(struct cw_addr){4, {127, 1, 2, 3}}));
	CHECK(!cw_addr_is_local(&(struct cw_addr){4, {10, 0, 0, 1}}));
	CHECK(!cw_addr_is_local(&(struct cw_addr){4, {169, 253, 0, 1}}));
}

/* Timing windows of loopback connections on two hosts: two connections. */
static void test_windows(void)
{
	struct cw_conn_record c[4];
	struct cw_timing_record t[4];
	struct cw_msg_obs m[4][2];
	struct cw_live_stats st;
	struct cw_msgtrace tr;
	size_t i;

	conn(&c[0], &c[1], "host-a", 1, 10, "127.0.0.1");
	conn(&c[2], &c[3], "host-b", 1, 10, "127.0.0.1");
	for (i = 0; i < 4; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		memcpy(t[i].host, c[i].host, sizeof(t[i].host));
		t[i].cookie = c[i].cookie;
		t[i].slot_ns = T0;
		t[i].window_start_ns = T0;
		t[i].window_ns = NSEC_PER_SEC;
		cw_timing_record_set_conn(&t[i], &c[i]);
		t[i].has_conn = true;
		/* A request and its answer, as each end saw them. */
		m[i][0] = (struct cw_msg_obs){.ts_ns = T0 + 1000,
					      .bytes = 10,
					      .dir = i % 2 ? CW_OBS_IN
							   : CW_OBS_OUT};
		m[i][1] = (struct cw_msg_obs){.ts_ns = T0 + 5000,
					      .bytes = 20,
					      .dir = i % 2 ? CW_OBS_OUT
							   : CW_OBS_IN};
		t[i].msgs = m[i];
		t[i].n = 2;
	}
	cw_msgtrace_init(&tr);
	CHECK(!cw_live_trace_windows(t, 4, true, &tr, &st));
	CHECK(st.ends == 4 && st.paired == 4 && st.unpaired == 0);
	CHECK(st.ambiguous == 0);
	cw_msgtrace_release(&tr);
	/* host-a's client and host-b's server alone: no pair. */
	t[1] = t[3];
	cw_msgtrace_init(&tr);
	CHECK(!cw_live_trace_windows(t, 2, true, &tr, &st));
	CHECK(st.ends == 2 && st.paired == 0 && st.unpaired == 2);
	cw_msgtrace_release(&tr);
}

int main(void)
{
	test_records();
	test_windows();
	if (!failures)
		printf("test_correlator_identity: all checks passed\n");
	return failures ? 1 : 0;
}
