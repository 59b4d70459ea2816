// SPDX-License-Identifier: MIT
/*
 * agent --traces to causeway traces, without a kernel: observations cut
 * into MsgWindow records of bounded size, through the wire codec, then
 * read back from two hosts and stitched into one trace across them.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "common/wire.h"
#include "tests/unit/check.h"
#include "traces/traces.h"

#define MS 1000000ULL

struct sink {
	struct cw_traces *t;
	size_t records, max_n, max_len, lasts;
};

/* Every record through the codec, then into the reader. */
static int on_record(const struct cw_wire_msgs *w, void *arg)
{
	static struct cw_wire_msg out;
	struct cw_wire_msg in = {.kind = CW_WIRE_MSGS};
	struct sink *s = arg;
	uint8_t *buf;
	size_t len;

	in.msgs = *w;
	CHECK(cw_wire_encode(&in, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &out, NULL, 0) == CW_WIRE_MSGS);
	CHECK(out.msgs.n == w->n && out.msgs.nsocks == w->nsocks);
	CHECK(!strcmp(out.msgs.host, w->host));
	CHECK(out.msgs.n == 0 ||
	      (out.msgs.msgs[0].start_ns == w->msgs[0].start_ns &&
	       out.msgs.msgs[0].tid == w->msgs[0].tid));
	s->records++;
	s->lasts += w->last;
	if (w->n > s->max_n)
		s->max_n = w->n;
	if (len > s->max_len)
		s->max_len = len;
	CHECK(cw_traces_add_wire(s->t, &out.msgs) == 0);
	cw_wire_msg_release(&out);
	free(buf);
	return 0;
}

static void sock(struct cw_msgs_sock *s, uint64_t cookie, const char *la,
		 uint16_t lp, const char *ra, uint16_t rp, uint8_t role)
{
	uint8_t raw[16] = {0};

	memset(s, 0, sizeof(*s));
	s->cookie = cookie;
	inet_pton(AF_INET, la, raw);
	cw_addr_from_raw(&s->laddr, AF_INET, raw);
	inet_pton(AF_INET, ra, raw);
	cw_addr_from_raw(&s->raddr, AF_INET, raw);
	s->lport = lp, s->rport = rp, s->role = role;
}

/* One message; seq: a request's number, or with ctx (a call) the number
 * of the request its thread held, the only one open. */
static void obs(struct cw_msgs_batch *b, const struct cw_msgs_sock *s,
		uint64_t start, uint64_t end, uint8_t dir, uint32_t tid,
		const struct cw_msgs_sock *ctx, uint32_t seq)
{
	struct cw_msgs_obs o = {.sock = s,
				.ctx = ctx,
				.ctx_seq = ctx ? seq : 0,
				.ctx_open = !!ctx,
				.seq = ctx ? 0 : seq,
				.start_ns = start,
				.end_ns = end,
				.bytes = 100,
				.tid = tid,
				.dir = dir};

	CHECK(cw_msgs_batch_add_fn(&o, b) == 0);
}

/*
 * Host "front" (10.0.0.1) serves requests from a client at 10.0.0.9 and
 * calls host "back" (10.0.0.2:80) for each, from the same thread; "back"
 * records the server end of those calls.  N requests in chunks of 8.
 */
static void test_two_hosts(void)
{
	struct cw_msgs_sock in, call, served, lo;
	struct cw_msgs_batch fb, bb;
	struct cw_traces t;
	struct cw_traces_opts o;
	struct sink s = {0};
	int32_t *roots;
	size_t n, i, linked = 0, paired = 0;
	uint64_t at = 1000 * MS;

	cw_traces_init(&t);
	s.t = &t;
	cw_msgs_batch_init(&fb, "front", "", 8, on_record, &s);
	cw_msgs_batch_init(&bb, "back", "", 8, on_record, &s);
	sock(&in, 1, "10.0.0.1", 80, "10.0.0.9", 40000, CW_MSGS_ROLE_ACCEPTED);
	sock(&call, 2, "10.0.0.1", 50000, "10.0.0.2", 80,
	     CW_MSGS_ROLE_CONNECTED);
	sock(&served, 7, "10.0.0.2", 80, "10.0.0.1", 50000,
	     CW_MSGS_ROLE_ACCEPTED);
	sock(&lo, 3, "127.0.0.1", 6379, "127.0.0.1", 41000,
	     CW_MSGS_ROLE_ACCEPTED);
	cw_msgs_batch_open(&fb, at, at);
	cw_msgs_batch_open(&bb, at, at);
	for (i = 0; i < 20; i++, at += 10 * MS) {
		uint32_t q = (uint32_t)i + 1;

		obs(&fb, &in, at, at + 1, CW_MSGS_DIR_IN, 11, NULL, q);
		obs(&fb, &call, at + 1 * MS, at + 1 * MS, CW_MSGS_DIR_OUT, 11,
		    &in, q);
		obs(&bb, &served, at + 2 * MS, at + 2 * MS, CW_MSGS_DIR_IN, 21,
		    NULL, q);
		obs(&bb, &served, at + 3 * MS, at + 3 * MS, CW_MSGS_DIR_OUT,
		    21, NULL, 0);
		obs(&fb, &call, at + 4 * MS, at + 4 * MS, CW_MSGS_DIR_IN, 11,
		    NULL, 0);
		obs(&fb, &in, at + 5 * MS, at + 5 * MS, CW_MSGS_DIR_OUT, 11,
		    NULL, 0);
		obs(&bb, &lo, at, at, CW_MSGS_DIR_IN, 22, NULL, q); /* loopback */
	}
	CHECK(cw_msgs_batch_close(&fb, at, 0) == 0);
	CHECK(cw_msgs_batch_close(&bb, at, 3) == 0);
	cw_traces_wire_done(&t);
	/* 80 messages at front, 60 at back, in chunks of at most 8. */
	CHECK(s.max_n == 8 && s.lasts == 2);
	CHECK(s.records == 10 + 1 + 7 + 1);
	CHECK(t.wire_hosts == 2 && t.wire_left_out == 20 && t.wire_lost == 3);
	CHECK(t.n_msgs == 120);
	CHECK(cw_traces_build(&t) == 0);
	CHECK(t.n_spans == 60);
	for (i = 0; i < t.n_spans; i++)
		paired += t.spans[i].peer_span >= 0;
	CHECK(paired == 40); /* front's calls and back's requests */
	cw_traces_opts_default(&o);
	CHECK(cw_traces_infer(&t, &o) == 0);
	for (i = 0; i < t.n_spans; i++)
		if (t.spans[i].role == CW_ROLE_CONNECTED)
			linked += t.spans[i].parent >= 0 &&
				  t.spans[i].method == CW_LINK_THREAD;
	/* By the kernel's context, each call to its own request. */
	CHECK(linked == 20 && t.has_ctx && !t.n_ctx_missing);
	/* Each trace's root is front's request from the client: 20 roots. */
	CHECK(cw_traces_roots(&t, &roots, &n) == 0);
	CHECK(n == 20);
	free(roots);
	cw_msgs_batch_release(&fb);
	cw_msgs_batch_release(&bb);
	cw_traces_release(&t);
}

/* The bound: a full chunk of the largest messages and sockets fits well
 * under Kafka's default message size. */
static void test_bound(void)
{
	struct cw_msgs_sock *socks =
		calloc(2 * CW_WIRE_MSGS_CHUNK, sizeof(*socks));
	struct cw_msgs_batch b;
	struct sink s = {0};
	struct cw_traces t;
	size_t i;

	cw_traces_init(&t);
	s.t = &t;
	CHECK(socks != NULL);
	if (!socks)
		return;
	cw_msgs_batch_init(&b, "h", "0123456789abcdef", CW_WIRE_MSGS_CHUNK,
			   on_record, &s);
	cw_msgs_batch_open(&b, UINT64_MAX / 2, UINT64_MAX / 2);
	for (i = 0; i < CW_WIRE_MSGS_CHUNK; i++) {
		struct cw_msgs_sock *a = &socks[2 * i], *c = &socks[2 * i + 1];
		struct cw_msgs_obs o = {.sock = a,
					.ctx = c,
					.ctx_seq = UINT32_MAX,
					.ctx_open = UINT32_MAX,
					.start_ns = UINT64_MAX / 2 + i,
					.end_ns = UINT64_MAX - 1,
					.bytes = UINT64_MAX,
					.tid = UINT32_MAX,
					.seq = UINT32_MAX,
					.dir = CW_MSGS_DIR_OUT};

		sock(a, UINT64_MAX - 2 * i, "10.255.255.255", 65535,
		     "10.255.255.254", 65534, CW_MSGS_ROLE_CONNECTED);
		sock(c, UINT64_MAX - 2 * i - 1, "10.255.255.253", 65533,
		     "10.255.255.252", 65532, CW_MSGS_ROLE_ACCEPTED);
		a->netns = c->netns = a->tgid = c->tgid = UINT32_MAX;
		CHECK(cw_msgs_batch_add_fn(&o, &b) == 0);
	}
	CHECK(cw_msgs_batch_close(&b, UINT64_MAX - 1, 0) == 0);
	cw_traces_wire_done(&t);
	printf("a full MsgWindow record at worst: %zu bytes\n", s.max_len);
	CHECK(s.records == 2 && s.max_n == CW_WIRE_MSGS_CHUNK);
	CHECK(s.max_len < 500000);
	cw_msgs_batch_release(&b);
	cw_traces_release(&t);
	free(socks);
}

/* Malformed records are refused with a reason, never half-read. */
static void test_refused(void)
{
	struct cw_wire_msock sk = {.role = CW_REC_ROLE_CLIENT};
	struct cw_wire_mmsg mm = {.start_ns = 5, .end_ns = 6, .sock = 1};
	struct cw_wire_msg m = {.kind = CW_WIRE_MSGS};
	uint8_t *buf;
	size_t len;

	m.msgs.start_ns = 5, m.msgs.end_ns = 10;
	m.msgs.socks = &sk, m.msgs.nsocks = 1;
	m.msgs.msgs = &mm, m.msgs.n = 1;
	/* The encoder refuses what the decoder would. */
	CHECK(cw_wire_encode(&m, &buf, &len) == -1);
	mm.sock = 0, mm.end_ns = 11;
	CHECK(cw_wire_encode(&m, &buf, &len) == -1);
	mm.end_ns = 6;
	CHECK(cw_wire_encode(&m, &buf, &len) == 0);
	free(buf);
}

int main(void)
{
	test_two_hosts();
	test_bound();
	test_refused();
	return failures ? 1 : 0;
}
