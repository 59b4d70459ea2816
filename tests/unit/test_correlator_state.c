// SPDX-License-Identifier: MIT
/*
 * A checkpoint's pieces: a pairing copied end by end into another (the
 * merged view, and a restore) pairs and counts as the original does; a
 * StateChunk survives the wire with every end's record; chunks no writer
 * makes are refused.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "tests/unit/check.h"

#define T0 1767225600000000000ULL

static void end(struct cw_conn_record *r, uint64_t i, bool client)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "host-%llu",
		 (unsigned long long)(client ? i % 7 : 100 + i % 3));
	snprintf(r->boot_id, sizeof(r->boot_id), "boot-%d", client);
	r->netns = 1;
	r->cookie = i;
	r->protocol = 6;
	r->role = client ? CW_REC_ROLE_CLIENT : CW_REC_ROLE_SERVER;
	r->laddr = (struct cw_addr){4, {10, 0, client ? 1 : 2, 1}};
	r->raddr = (struct cw_addr){4, {10, 0, client ? 2 : 1, 1}};
	r->lport = client ? (uint16_t)(30000 + i) : 80;
	r->rport = client ? 80 : (uint16_t)(30000 + i);
	r->first_ns = T0 + i;
	r->last_ns = T0 + i + NSEC_PER_SEC;
	r->bytes_out = 100 * i + client;
	r->bytes_in = 7 * i;
	r->seq = i;
	r->proc.tgid = (uint32_t)(client ? 1000 + i % 5 : 80);
	snprintf(r->proc.comm, sizeof(r->proc.comm), client ? "cli" : "srv");
	snprintf(r->proc.cmdline, sizeof(r->proc.cmdline), "run %llu",
		 (unsigned long long)i);
}

static void test_add_all(void)
{
	struct cw_conn_record r[200];
	struct cw_pairing a, b;
	size_t i;

	for (i = 0; i < 100; i++) {
		end(&r[2 * i], i, true);
		end(&r[2 * i + 1], i, false);
	}
	cw_pairing_init(&a);
	cw_pairing_init(&b);
	CHECK(!cw_pairing_add_many(&a, r, 200));
	/* A stale one: counted in a, never copied. */
	r[10].bytes_out = 1;
	CHECK(!cw_pairing_add_many(&a, &r[10], 1));
	CHECK(a.st.stale == 1);
	CHECK(!cw_pairing_add_all(&b, &a));
	CHECK(!cw_pairing_pair(&a) && !cw_pairing_pair(&b));
	CHECK(b.st.ends == a.st.ends && b.st.ends == 200);
	CHECK(b.st.paired == a.st.paired && a.st.paired == 100);
	CHECK(cw_pairing_owners(&b) == cw_pairing_owners(&a));
	for (i = 0; i < a.st.ends; i++) {
		const struct cw_conn_record *x = cw_pairing_end(&a, i);
		const struct cw_conn_record *y = cw_pairing_end(&b, i);

		CHECK(!memcmp(x, y, sizeof(*x)));
		CHECK(a.partner[i] == b.partner[i]);
	}
	cw_pairing_release(&a);
	cw_pairing_release(&b);
}

static void test_chunk_wire(void)
{
	static struct cw_wire_msg m, d;
	uint8_t *buf;
	size_t i, len;
	char err[128];

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_STATE;
	snprintf(m.state.group, sizeof(m.state.group), "g");
	snprintf(m.state.topic, sizeof(m.state.topic), "causeway.conns");
	m.state.partition = 3;
	m.state.offset = 12345;
	m.state.checkpoint = T0;
	m.state.chunk = 1;
	m.state.chunks = 2;
	m.state.records = 999;
	m.state.stale = 7;
	m.state.lost = 5;
	m.state.n = 3;
	m.state.ends = calloc(3, sizeof(*m.state.ends));
	CHECK(m.state.ends != NULL);
	for (i = 0; i < 3; i++)
		end(&m.state.ends[i], i + 1, i % 2);
	CHECK(!cw_wire_encode(&m, &buf, &len));
	CHECK(cw_wire_decode(buf, len, &d, err, sizeof(err)) == CW_WIRE_STATE);
	CHECK(!strcmp(d.state.group, "g"));
	CHECK(!strcmp(d.state.topic, "causeway.conns"));
	CHECK(d.state.partition == 3 && d.state.offset == 12345);
	CHECK(d.state.checkpoint == T0 && d.state.chunk == 1);
	CHECK(d.state.chunks == 2 && d.state.records == 999);
	CHECK(d.state.stale == 7 && d.state.lost == 5 && d.state.n == 3);
	for (i = 0; i < 3 && d.state.n == 3; i++)
		CHECK(!memcmp(&d.state.ends[i], &m.state.ends[i],
			      sizeof(m.state.ends[i])));
	CHECK(!strcmp(cw_wire_kind_name(CW_WIRE_STATE), "state"));
	cw_wire_msg_release(&d);
	free(buf);
	/* A chunk index past the count: no writer makes it. */
	m.state.chunk = 2;
	CHECK(!cw_wire_encode(&m, &buf, &len));
	CHECK(cw_wire_decode(buf, len, &d, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	free(buf);
	free(m.state.ends);
}

int main(void)
{
	test_add_all();
	test_chunk_wire();
	if (!failures)
		printf("test_correlator_state: all checks passed\n");
	return failures ? 1 : 0;
}
