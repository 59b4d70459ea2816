// SPDX-License-Identifier: MIT
/*
 * A reboot: socket cookies (and pids) restart, so a host reuses cookies
 * under a new boot id.  The ends of the new boot must be new ends that
 * pair with their own partners and carry the new processes; the old
 * boot's ends stay as they were; records with no boot id (older agents)
 * still pair.  Checked through the wire codec (the boot id travels in
 * ConnRecord 23 and TimingWindow 19), the pairing and the window pairing.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/live.h"
#include "tests/unit/check.h"

#define T0     1767225600000000000ULL
#define BOOT_1 "0b5c1e2a-6f7d-4d39-9a1e-3f1f6f0a0001"
#define BOOT_2 "0b5c1e2a-6f7d-4d39-9a1e-3f1f6f0a0002"

static void end(struct cw_conn_record *r, const char *host, const char *boot,
		uint64_t cookie, int role, uint16_t lport, uint16_t rport,
		uint32_t tgid, const char *comm, uint64_t first_ns)
{
	bool client = role == CW_REC_ROLE_CLIENT;

	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->boot_id, sizeof(r->boot_id), "%s", boot);
	r->netns = 1;
	r->cookie = cookie;
	r->protocol = 6;
	r->role = (uint8_t)role;
	CHECK(!cw_addr_parse(&r->laddr, client ? "10.0.0.1" : "10.0.0.2"));
	CHECK(!cw_addr_parse(&r->raddr, client ? "10.0.0.2" : "10.0.0.1"));
	r->lport = lport;
	r->rport = rport;
	r->first_ns = first_ns;
	r->last_ns = first_ns + NSEC_PER_SEC;
	r->bytes_out = client ? 100 : 5000;
	r->bytes_in = client ? 5000 : 100;
	r->flags = CW_REC_CLOSED;
	r->proc.tgid = tgid;
	r->proc.start_ns = 1000;
	snprintf(r->proc.comm, sizeof(r->proc.comm), "%s", comm);
}

/* Through the wire and back, as the correlator gets it. */
static void wire_trip(struct cw_conn_record *r)
{
	struct cw_wire_msg m;
	uint8_t *buf;
	size_t len;

	CHECK(!cw_wire_encode_conn(r, &buf, &len));
	CHECK(cw_wire_decode(buf, len, &m, NULL, 0) == CW_WIRE_CONN);
	CHECK(!strcmp(m.conn.boot_id, r->boot_id));
	*r = m.conn;
	free(buf);
}

/*
 * host-a talks to host-b; host-a reboots and its new process reuses the
 * cookie, the pid and the very same 4-tuple 100 s later.
 */
static void test_reboot_records(void)
{
	struct cw_conn_record r[4];
	const struct cw_conn_record *a, *b;
	struct cw_pairing p;
	long i, j;
	size_t k;

	end(&r[0], "host-a", BOOT_1, 7, CW_REC_ROLE_CLIENT, 40000, 80, 300,
	    "old", T0);
	end(&r[1], "host-b", BOOT_1, 70, CW_REC_ROLE_SERVER, 80, 40000, 900,
	    "srv", T0);
	/* The new boot: fewer bytes, so "newer" would have called it stale. */
	end(&r[2], "host-a", BOOT_2, 7, CW_REC_ROLE_CLIENT, 40000, 80, 300,
	    "new", T0 + 100 * NSEC_PER_SEC);
	r[2].bytes_out = 10;
	r[2].bytes_in = 20;
	r[2].proc.start_ns = 999;
	end(&r[3], "host-b", BOOT_1, 71, CW_REC_ROLE_SERVER, 80, 40000, 900,
	    "srv", T0 + 100 * NSEC_PER_SEC);
	r[3].bytes_out = 20;
	r[3].bytes_in = 10;
	for (k = 0; k < 4; k++)
		wire_trip(&r[k]);
	cw_pairing_init(&p);
	CHECK(!cw_pairing_add_many(&p, r, 4));
	CHECK(!cw_pairing_pair(&p));
	CHECK(p.st.ends == 4 && p.st.stale == 0);
	CHECK(p.st.paired == 2 && p.st.unpaired == 0 && p.st.ambiguous == 0);
	/* Two processes on host-a, one on host-b: three graph nodes. */
	CHECK(cw_pairing_owners(&p) == 3);
	i = cw_pairing_find(&p, "host-a", BOOT_2, 7);
	j = cw_pairing_find(&p, "host-a", BOOT_1, 7);
	CHECK(i >= 0 && j >= 0 && i != j);
	CHECK(cw_pairing_find(&p, "host-a", "", 7) == -1);
	if (i >= 0 && j >= 0) {
		a = cw_pairing_end(&p, (size_t)i);
		CHECK(!strcmp(a->proc.comm, "new") && a->bytes_out == 10);
		CHECK(!strcmp(a->boot_id, BOOT_2));
		CHECK(p.partner[i] >= 0);
		b = cw_pairing_end(&p, (size_t)p.partner[i]);
		CHECK(b->cookie == 71);
		a = cw_pairing_end(&p, (size_t)j);
		CHECK(!strcmp(a->proc.comm, "old") && a->bytes_out == 100);
		b = cw_pairing_end(&p, (size_t)p.partner[j]);
		CHECK(b->cookie == 70);
	}
	cw_pairing_release(&p);
}

/* Records of agents that send no boot id pair as before. */
static void test_no_boot_id(void)
{
	struct cw_conn_record r[2];
	struct cw_pairing p;

	end(&r[0], "host-a", "", 7, CW_REC_ROLE_CLIENT, 40000, 80, 300, "c",
	    T0);
	end(&r[1], "host-b", "", 70, CW_REC_ROLE_SERVER, 80, 40000, 900, "s",
	    T0);
	wire_trip(&r[0]);
	wire_trip(&r[1]);
	cw_pairing_init(&p);
	CHECK(!cw_pairing_add_many(&p, r, 2));
	CHECK(!cw_pairing_pair(&p));
	CHECK(p.st.paired == 1);
	CHECK(cw_pairing_find(&p, "host-a", "", 7) >= 0);
	cw_pairing_release(&p);
}

/* A loopback connection before and after a reboot: never a pair across. */
static void test_reboot_loopback(void)
{
	struct cw_conn_record r[2];
	struct cw_pairing p;

	end(&r[0], "host-a", BOOT_1, 7, CW_REC_ROLE_CLIENT, 40000, 80, 1, "c",
	    T0);
	end(&r[1], "host-a", BOOT_2, 8, CW_REC_ROLE_SERVER, 80, 40000, 2, "s",
	    T0);
	CHECK(!cw_addr_parse(&r[0].laddr, "127.0.0.1"));
	CHECK(!cw_addr_parse(&r[0].raddr, "127.0.0.1"));
	r[1].laddr = r[0].laddr;
	r[1].raddr = r[0].laddr;
	cw_pairing_init(&p);
	CHECK(!cw_pairing_add_many(&p, r, 2));
	CHECK(!cw_pairing_pair(&p));
	CHECK(p.st.paired == 0 && p.st.unpaired == 2);
	snprintf(r[1].boot_id, sizeof(r[1].boot_id), "%s", BOOT_1);
	CHECK(!cw_pairing_add_many(&p, &r[1], 1));
	CHECK(!cw_pairing_pair(&p));
	CHECK(p.st.paired == 1);
	cw_pairing_release(&p);
}

/* One window: the same cookie on host-a in two boots is two ends. */
static void test_reboot_windows(void)
{
	struct cw_conn_record c[4];
	struct cw_timing_record t[4];
	struct cw_msg_obs m[4][2];
	struct cw_live_stats st;
	struct cw_msgtrace tr;
	struct cw_wire_msg wm;
	uint8_t *buf;
	size_t i, len;

	end(&c[0], "host-a", BOOT_1, 7, CW_REC_ROLE_CLIENT, 40000, 80, 300,
	    "old", T0);
	end(&c[1], "host-b", BOOT_1, 70, CW_REC_ROLE_SERVER, 80, 40000, 900,
	    "srv", T0);
	end(&c[2], "host-a", BOOT_2, 7, CW_REC_ROLE_CLIENT, 40001, 80, 300,
	    "new", T0);
	end(&c[3], "host-b", BOOT_1, 71, CW_REC_ROLE_SERVER, 80, 40001, 900,
	    "srv", T0);
	for (i = 0; i < 4; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		memcpy(t[i].host, c[i].host, sizeof(t[i].host));
		t[i].cookie = c[i].cookie;
		t[i].seq = 1; /* both boots' agents start their seq again */
		t[i].slot_ns = T0;
		t[i].window_start_ns = T0;
		t[i].window_ns = NSEC_PER_SEC;
		cw_timing_record_set_conn(&t[i], &c[i]);
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
		CHECK(!cw_wire_encode_timing(&t[i], &buf, &len));
		CHECK(cw_wire_decode(buf, len, &wm, NULL, 0) == CW_WIRE_TIMING);
		CHECK(!strcmp(wm.timing.boot_id, c[i].boot_id));
		cw_wire_msg_release(&wm);
		free(buf);
	}
	cw_msgtrace_init(&tr);
	CHECK(!cw_live_trace_windows(t, 4, true, &tr, &st));
	CHECK(st.duplicates == 0);
	CHECK(st.ends == 4 && st.paired == 4 && st.unpaired == 0);
	cw_msgtrace_release(&tr);
}

/* HostMeta carries the boot id too. */
static void test_host_meta(void)
{
	struct cw_wire_msg m = {.kind = CW_WIRE_HOST}, d;
	uint8_t *buf;
	size_t len;

	snprintf(m.host.host, sizeof(m.host.host), "host-a");
	snprintf(m.host.boot_id, sizeof(m.host.boot_id), "%s", BOOT_2);
	CHECK(!cw_wire_encode(&m, &buf, &len));
	CHECK(cw_wire_decode(buf, len, &d, NULL, 0) == CW_WIRE_HOST);
	CHECK(!strcmp(d.host.boot_id, BOOT_2));
	free(buf);
}

int main(void)
{
	test_reboot_records();
	test_no_boot_id();
	test_reboot_loopback();
	test_reboot_windows();
	test_host_meta();
	if (!failures)
		printf("test_correlator_boot: all checks passed\n");
	return failures ? 1 : 0;
}
