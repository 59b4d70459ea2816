// SPDX-License-Identifier: MIT
/*
 * The wire codec's direct reader and writer (common/wire_fast.c,
 * common/wire_put.c) against protobuf-c's way: the same records, the same
 * bytes, and what the reader must leave to protobuf-c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "common/wire_pb.h"

#include "tests/unit/check.h"
#include "tests/unit/wire_fill.h"


/* An Envelope (version 1) around a ConnRecord's bytes; its length. */
static size_t envelope(const uint8_t *conn, size_t n, uint8_t *out)
{
	size_t at = 0, left = n;

	out[at++] = 0x08; /* version */
	out[at++] = 1;
	out[at++] = 0x52; /* conn, length-delimited */
	do {
		out[at++] = (uint8_t)((left & 0x7f) | (left > 0x7f ? 0x80 : 0));
	} while ((left >>= 7));
	memcpy(out + at, conn, n);
	return at + n;
}

/* The ConnRecord inside an encoded Envelope: its bytes, their count. */
static const uint8_t *conn_of(const uint8_t *buf, size_t *n)
{
	size_t at = 3, len = 0;
	unsigned int shift = 0;

	CHECK(buf[0] == 0x08 && buf[1] == 1 && buf[2] == 0x52);
	do {
		len |= (size_t)(buf[at] & 0x7f) << shift;
		shift += 7;
	} while (buf[at++] & 0x80);
	*n = len;
	return buf + at;
}

/*
 * The direct reader (common/wire_fast.c) takes what agents write and
 * gives protobuf-c's bytes; what needs protobuf's judgment it declines,
 * and cw_wire_decode() still decodes or refuses it as before.
 */
static void test_fast(void)
{
	static struct cw_wire_msg a, b;
	static uint8_t msg[4096], body[4096];
	struct cw_conn_record r;
	const uint8_t *c;
	uint8_t *buf;
	size_t len, n, at;

	fill(&r);
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode_conn_fast(buf, len, &a) == CW_WIRE_CONN);
	CHECK(cw_wire_decode_pb(buf, len, &b, NULL, 0) == CW_WIRE_CONN);
	CHECK(a.version == b.version &&
	      memcmp(&a.conn, &b.conn, sizeof(a.conn)) == 0);
	CHECK(memcmp(&a.conn, &r, sizeof(r)) == 0);

	/* An unknown field (a newer agent's) is skipped by both. */
	c = conn_of(buf, &n);
	memcpy(body, c, n);
	body[n] = 0xc0; /* field 40, varint */
	body[n + 1] = 0x02;
	body[n + 2] = 0x05;
	at = envelope(body, n + 3, msg);
	CHECK(cw_wire_decode_conn_fast(msg, at, &a) == CW_WIRE_CONN);
	CHECK(cw_wire_decode_pb(msg, at, &b, NULL, 0) == CW_WIRE_CONN);
	CHECK(memcmp(&a.conn, &b.conn, sizeof(a.conn)) == 0);

	/* A field given twice is protobuf's to merge: declined, and the
	 * last host wins through cw_wire_decode(). */
	memcpy(body, c, n);
	memcpy(body + n, "\x0a\x03h-2", 5);
	at = envelope(body, n + 5, msg);
	CHECK(cw_wire_decode_conn_fast(msg, at, &a) == 0);
	CHECK(cw_wire_decode(msg, at, &a, NULL, 0) == CW_WIRE_CONN);
	CHECK(strcmp(a.conn.host, "h-2") == 0);
	/* A wrong wire type for a known field: declined, and refused. */
	memcpy(body, c, n);
	memcpy(body + n, "\x11\x01\x02\x03\x04\x05\x06\x07\x08", 9);
	at = envelope(body, n + 9, msg);
	CHECK(cw_wire_decode_conn_fast(msg, at, &a) == 0);
	CHECK(cw_wire_decode(msg, at, &a, NULL, 0) ==
	      CW_WIRE_EMALFORMED);
	free(buf);

	/* A name that is not plain ASCII is cleaned by the full decoder. */
	fill(&r);
	strcpy(r.proc.comm, "na\xc3\xafve\x01");
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode_conn_fast(buf, len, &a) == 0);
	CHECK(cw_wire_decode(buf, len, &a, NULL, 0) == CW_WIRE_CONN);
	CHECK(strcmp(a.conn.proc.comm, "na\xc3\xafve?") == 0);
	free(buf);

	/* A non-canonical varint (1 as two bytes): declined, yet valid. */
	msg[0] = 0x08;
	msg[1] = 0x81;
	msg[2] = 0x00;
	msg[3] = 0x52;
	msg[4] = 0x00;
	CHECK(cw_wire_decode_conn_fast(msg, 5, &a) == 0);
	CHECK(cw_wire_decode(msg, 5, &a, NULL, 0) == CW_WIRE_CONN);
	/* Another kind is never the direct reader's. */
	msg[3] = 0x5a; /* host */
	CHECK(cw_wire_decode_conn_fast(msg, 5, &a) == 0);
	CHECK(cw_wire_decode(msg, 5, &a, NULL, 0) == CW_WIRE_HOST);
}

/* Does the direct reader take msg exactly when its every name byte is
 * printable, and then give protobuf-c's record? */
static void check_agrees(const uint8_t *msg, size_t n, bool take)
{
	static struct cw_wire_msg a, b;
	int fast = cw_wire_decode_conn_fast(msg, n, &a);

	CHECK(fast == (take ? CW_WIRE_CONN : 0));
	if (fast == CW_WIRE_CONN) {
		CHECK(cw_wire_decode_pb(msg, n, &b, NULL, 0) == CW_WIRE_CONN);
		CHECK(memcmp(&a.conn, &b.conn, sizeof(a.conn)) == 0);
	}
}

/*
 * Names are checked eight bytes at a time: every byte value at every
 * place of names of 1 to 20 bytes (a word, a tail, both), so that a byte
 * just outside the printable range (0x1f, 0x7f) or far outside (0x00,
 * 0x80, 0xff) is caught wherever it is, beside neighbours that borrow or
 * carry.
 */
static void test_fast_names(void)
{
	uint8_t body[64], msg[80];
	size_t len, at, i;
	unsigned int v;

	for (len = 1; len <= 20; len++)
		for (i = 0; i < len; i++)
			for (v = 0; v < 256; v++) {
				body[0] = 0x0a; /* host */
				body[1] = (uint8_t)len;
				memset(body + 2, i % 2 ? 0x7e : 0x20, len);
				body[2 + i] = (uint8_t)v;
				at = envelope(body, len + 2, msg);
				check_agrees(msg, at, v >= 0x20 && v <= 0x7e);
			}
}

/*
 * Varints of every length, taken with room for the longest behind them
 * and without: canonical ones read as protobuf-c reads them, a needless
 * zero byte or an eleventh byte declined.
 */
static void test_fast_varints(void)
{
	uint8_t body[64], msg[80];
	size_t at, k, i, pad;
	uint64_t v;

	for (k = 1; k <= 10; k++)
		for (pad = 0; pad <= 10; pad += 10) {
			/* bytes_out (field 11) with k bytes: 2^(7(k-1)) + 5 */
			v = k == 1 ? 5 : (1ULL << (7 * (k - 1))) + 5;
			at = 0;
			body[at++] = 0x58;
			for (i = 0; i < k; i++, v >>= 7)
				body[at++] = (uint8_t)((v & 0x7f) |
						       (i + 1 < k ? 0x80 : 0));
			if (pad) { /* an unknown field 40 of pad bytes */
				body[at++] = 0xc2;
				body[at++] = 0x02;
				body[at++] = (uint8_t)pad;
				memset(body + at, 'x', pad);
				at += pad;
			}
			check_agrees(msg, envelope(body, at, msg), true);
			/* The same value with a needless zero byte after. */
			if (k < 10) {
				body[k] |= 0x80;
				memmove(body + k + 2, body + k + 1, at - k - 1);
				body[k + 1] = 0;
				check_agrees(msg, envelope(body, at + 1, msg),
					     false);
			}
		}
	/* Ten bytes whose last is over 1, and eleven bytes: too long. */
	at = 0;
	body[at++] = 0x58;
	for (i = 0; i < 9; i++)
		body[at++] = 0xff;
	body[at++] = 0x02;
	for (pad = 0; pad < 12; pad++)
		body[at + pad] = 0x20; /* unread: the varint fails first */
	check_agrees(msg, envelope(body, at, msg), false);
	body[at - 1] = 0xff;
	body[at++] = 0x01;
	check_agrees(msg, envelope(body, at, msg), false);
}

/* Both writers give m the same bytes. */
static void check_same_bytes(const struct cw_wire_msg *m)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;

	CHECK((m->kind == CW_WIRE_CONN
		       ? cw_wire_encode_conn_fast(&m->conn, &a, &na)
	       : m->kind == CW_WIRE_EDGE
		       ? cw_wire_encode_edge_fast(&m->edge, &a, &na)
	       : m->kind == CW_WIRE_EDGES
		       ? cw_wire_encode_edges_fast(&m->edges, &a, &na)
		       : cw_wire_encode_state_fast(&m->state, &a, &na)) == 0);
	CHECK(cw_wire_encode_pb(m, &b, &nb) == 0);
	CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
	if (m->kind == CW_WIRE_EDGE) {
		/* Into the caller's buffer: the same bytes. */
		static uint8_t to[CW_WIRE_EDGE_ROOM];
		size_t nt = 0;

		CHECK(cw_wire_encode_edge_to(&m->edge, to, &nt) == 0);
		CHECK(b && nt == nb && memcmp(to, b, nb) == 0);
	}
	free(a);
	free(b);
}

/* Checkpoint chunks: ends, their flags, deltas, edges, bucket state. */
static void test_put_state(const struct cw_wire_edge *edge)
{
	static struct cw_conn_record ends[300];
	static struct cw_wire_msg m;
	struct cw_wire_edge edges[2];
	struct cw_end_delta d[2] = {
		{.end = 0, .bucket_ns = 60, .bytes_out = UINT64_MAX},
		{.end = 299, .msgs_in = 4, .last_ns = 99}};
	uint32_t flags[300];
	size_t i;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_STATE;
	check_same_bytes(&m); /* nothing in it */
	for (i = 0; i < 300; i++) {
		fill(&ends[i]);
		ends[i].cookie = i;
		flags[i] = (uint32_t)(i % 4) << (i % 30);
	}
	strcpy(m.state.group, "g");
	memset(m.state.topic, 't', sizeof(m.state.topic)); /* no NUL */
	m.state.partition = 7;
	m.state.offset = 123456;
	m.state.checkpoint = 1764000000123456789ULL;
	m.state.chunk = 1;
	m.state.chunks = 3;
	m.state.records = 10;
	m.state.stale = 2;
	m.state.lost = 1;
	m.state.ends = ends;
	m.state.n = 300; /* a body far over 16 KiB */
	check_same_bytes(&m);
	m.state.end_flags = flags;
	m.state.deltas = d;
	m.state.ndeltas = 2;
	d[1].connect_us = 5;
	d[1].fail = CW_REC_FAIL_REFUSED;
	d[1].resets_out = 2;
	d[1].xchg_pipelined = 9;
	d[1].xchg = ends[0].xchg;
	edges[0] = edges[1] = *edge;
	edges[1].t.conns = 0;
	m.state.edges = edges;
	m.state.nedges = 2;
	m.state.bk.width_ns = 60000000000ULL;
	m.state.bk.watermark_ns = 5;
	m.state.bk.sealed_records = 77;
	check_same_bytes(&m);
}

/* e as decoded from an EdgeBucket record of its own. */
static void edge_alone(const struct cw_wire_edge *e, struct cw_wire_msg *out)
{
	static struct cw_wire_msg m;
	uint8_t *b = NULL;
	size_t n = 0;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGE;
	m.edge = *e;
	CHECK(cw_wire_encode(&m, &b, &n) == 0);
	CHECK(cw_wire_decode(b, n, out, NULL, 0) == CW_WIRE_EDGE);
	free(b);
}

/*
 * EdgeSet records: both writers and the one built edge by edge give the
 * same bytes; each edge decodes as its EdgeBucket record would, with the
 * set's fields and its index; a record that could be a whole set when
 * it is not is refused.
 */
static void test_put_edges(const struct cw_wire_edge *edge)
{
	static struct cw_wire_edge e[3];
	static struct cw_wire_msg m, d, one;
	static uint8_t buf[CW_WIRE_EDGES_ROOM + 2 * CW_WIRE_EDGE_ROOM];
	struct cw_wire_edges_put p;
	uint8_t *b = NULL;
	size_t i, n = 0, len;
	char err[256];

	static const uint8_t empty[] = {0x08, 0x01, 0x9a, 0x01, 0x05,
					0x0a, 0x01, 'g',  0x40, 0x01};

	e[0] = e[1] = e[2] = *edge;
	e[0].partition = 2; /* decodable: no negative partition, offset */
	e[0].offset = 5;
	e[0].set_size = 7;
	e[0].set_index = 4;
	e[1].t.conns = 0;
	e[1].partition = 99; /* the set's fields are e[0]'s */
	e[2].client.kind = CW_EDGE_NODE_UNKNOWN;
	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGES;
	m.edges.e = e;
	m.edges.n = 3;
	check_same_bytes(&m);
	m.edges.n = 1;
	check_same_bytes(&m);
	/* Edge by edge into a buffer of just the room three take: a
	 * fourth does not fit, and the bytes are the same. */
	m.edges.n = 3;
	CHECK(cw_wire_encode_pb(&m, &b, &n) == 0);
	cw_wire_edges_begin(&p, buf, n + 16, &e[0]); /* and room to write */
	for (i = 0; i < 3; i++)
		CHECK(cw_wire_edges_add(&p, &e[i]) == 0);
	CHECK(cw_wire_edges_add(&p, &e[0]) == 1);
	len = cw_wire_edges_end(&p);
	CHECK(p.n == 3 && len == n && b && memcmp(buf, b, n) == 0);
	CHECK(cw_wire_decode(buf, len, &d, err, sizeof(err)) == CW_WIRE_EDGES);
	CHECK(d.edges.n == 3);
	for (i = 0; i < 3 && d.edges.n == 3; i++) {
		struct cw_wire_edge want = e[i];

		memcpy(want.group, e[0].group, sizeof(want.group));
		memcpy(want.topic, e[0].topic, sizeof(want.topic));
		want.partition = e[0].partition;
		want.offset = e[0].offset;
		want.bucket_ns = e[0].bucket_ns;
		want.width_ns = e[0].width_ns;
		want.sealed = e[0].sealed;
		want.set_size = 7;
		want.set_index = 4 + (uint32_t)i;
		edge_alone(&want, &one);
		CHECK(memcmp(&d.edges.e[i], &one.edge, sizeof(one.edge)) == 0);
	}
	cw_wire_msg_release(&d);
	free(b);
	/* Past the set's size, or an empty set: refused. */
	e[0].set_size = 6;
	m.edges.n = 3;
	CHECK(cw_wire_encode(&m, &b, &n) == 0);
	CHECK(cw_wire_decode(b, n, &d, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "edges 4 + 3 of 6") != NULL);
	free(b);
	m.edges.n = 0;
	CHECK(cw_wire_encode(&m, &b, &n) == -1);
	CHECK(cw_wire_decode(empty, sizeof(empty), &d, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
}

/* The widest edge: both writers agree, and the least room holds it. */
static void test_put_edges_widest(const struct cw_wire_edge *edge)
{
	static uint8_t buf[CW_WIRE_EDGES_ROOM];
	static struct cw_wire_msg m;
	struct cw_wire_edges_put p;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGES;
	m.edges.e = (struct cw_wire_edge *)edge;
	m.edges.n = 1;
	check_same_bytes(&m);
	cw_wire_edges_begin(&p, buf, sizeof(buf), edge);
	CHECK(cw_wire_edges_add(&p, edge) == 0);
	CHECK(cw_wire_edges_end(&p) > 0);
}

/*
 * Too little room for even the set's own fields: no edge is added and
 * the end makes no record (not a truncated one).  An EdgeSet whose edges
 * carry fields of their own that the record's stand for (1-7: written by
 * no writer of ours, ignored by a reader, docs/wire.md) decodes with the
 * record's, however out of range the edge's.
 */
static void test_put_edges_bounds(void)
{
	static uint8_t buf[CW_WIRE_EDGES_ROOM];
	static struct cw_wire_edge one;
	static struct cw_wire_msg m;
	const struct cw_wire_edge *edge = &one;
	struct cw_wire_edges_put p;
	pb_envelope *env;
	uint8_t *out;
	size_t len;

	strcpy(one.group, "correlators");
	strcpy(one.topic, "causeway.conns");
	one.partition = 3, one.offset = 77;
	one.protocol = 6;
	one.client.kind = CW_EDGE_NODE_PROCESS;
	strcpy(one.client.host, "node-1");
	one.server.kind = CW_EDGE_NODE_EXTERNAL;
	CHECK(!cw_addr_parse(&one.server.addr, "2001:db8::7"));
	one.server.port = 443;
	one.t.conns = 2;
	one.set_size = 1;

	cw_wire_edges_begin(&p, buf, 8, edge);
	CHECK(cw_wire_edges_add(&p, edge) == 1);
	CHECK(p.n == 0 && cw_wire_edges_end(&p) == 0);
	cw_wire_edges_begin(&p, buf, sizeof(buf), edge);
	CHECK(cw_wire_edges_end(&p) == 0);

	cw_wire_edges_begin(&p, buf, sizeof(buf), edge);
	CHECK(cw_wire_edges_add(&p, edge) == 0);
	len = cw_wire_edges_end(&p);
	env = len ? causeway__wire__envelope__unpack(NULL, len, buf) : NULL;
	CHECK(env && env->kind_case == CAUSEWAY__WIRE__ENVELOPE__KIND_EDGES &&
	      env->edges->n_edges == 1);
	if (!env || env->kind_case != CAUSEWAY__WIRE__ENVELOPE__KIND_EDGES ||
	    env->edges->n_edges != 1) {
		if (env)
			causeway__wire__envelope__free_unpacked(env, NULL);
		return;
	}
	env->edges->edges[0]->group = (char *)"another-group";
	env->edges->edges[0]->partition = 1U << 31;
	env->edges->edges[0]->offset = -1;
	len = causeway__wire__envelope__get_packed_size(env);
	out = malloc(len);
	CHECK(out != NULL);
	if (out) {
		causeway__wire__envelope__pack(env, out);
		CHECK(cw_wire_decode(out, len, &m, NULL, 0) == CW_WIRE_EDGES);
		CHECK(m.edges.n == 1 &&
		      m.edges.e[0].partition == edge->partition &&
		      m.edges.e[0].offset == edge->offset &&
		      !strcmp(m.edges.e[0].group, edge->group));
		cw_wire_msg_release(&m);
		free(out);
	}
	env->edges->edges[0]->group = NULL; /* not ours to free */
	causeway__wire__envelope__free_unpacked(env, NULL);
}

/*
 * The direct writer (common/wire_put.c) gives protobuf-c's bytes for
 * records and edge buckets of every shape: all fields set, none, names
 * without a terminator, negative numbers, each kind of node.
 */
static void test_put(void)
{
	static struct cw_wire_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_CONN;
	fill(&m.conn);
	check_same_bytes(&m);
	memset(m.conn.host, 'h', sizeof(m.conn.host)); /* no NUL */
	memset(m.conn.proc.cmdline, 'c', sizeof(m.conn.proc.cmdline));
	check_same_bytes(&m);
	memset(&m.conn, 0, sizeof(m.conn));
	check_same_bytes(&m);

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGE;
	check_same_bytes(&m); /* every field at its default */
	strcpy(m.edge.group, "correlators");
	strcpy(m.edge.topic, "causeway.conns");
	m.edge.partition = 3;
	m.edge.offset = -1;
	m.edge.bucket_ns = 1764000000000000000ULL;
	m.edge.width_ns = 60000000000ULL;
	m.edge.sealed = true;
	m.edge.protocol = 6;
	m.edge.client.kind = CW_EDGE_NODE_PROCESS;
	strcpy(m.edge.client.host, "node-1");
	fill(&m.conn); /* a process with every name */
	m.edge.client.proc = m.conn.proc;
	m.edge.server.kind = CW_EDGE_NODE_EXTERNAL;
	cw_addr_parse(&m.edge.server.addr, "2001:db8::7");
	m.edge.server.port = 443;
	m.edge.t.conns = 2;
	m.edge.t.paired = 1;
	m.edge.t.bytes_c2s = UINT64_MAX;
	m.edge.t.diff_c2s = -5;
	m.edge.t.diff_s2c = INT64_MIN;
	m.edge.t.first_ns = 1;
	m.edge.t.last_ns = UINT64_MAX;
	m.edge.t.has_sampled = 7;
	m.edge.set_size = 300;
	m.edge.set_index = 299;
	check_same_bytes(&m);
	/* The health block (EdgeBucket 27-36). */
	m.edge.h.conns_refused = 1;
	m.edge.h.conns_timeout = UINT64_MAX;
	m.edge.h.resets_by_server = 3;
	m.edge.h.xchg_pipelined = 4;
	m.edge.h.connect = m.conn.rtt;
	m.edge.h.client = m.conn.xchg;
	m.edge.h.server = m.conn.xchg_first;
	check_same_bytes(&m);
	m.edge.server.kind = CW_EDGE_NODE_UNKNOWN;
	strcpy(m.edge.server.host, "node-2");
	m.edge.server.netns = 4026531840U;
	m.edge.partition = -2;
	check_same_bytes(&m);
	test_put_edges(&m.edge);
	test_put_state(&m.edge);
	/* The largest edge bucket there is: every name full, with no NUL,
	 * every number at its widest (CW_WIRE_EDGE_ROOM must hold it). */
	memset(&m.edge, 0xff, sizeof(m.edge));
	m.edge.client.kind = m.edge.server.kind = CW_EDGE_NODE_PROCESS;
	m.edge.client.addr.family = m.edge.server.addr.family = 6;
	m.edge.sealed = true;
	m.edge.t.has_sampled = 1;
	m.edge.h.connect.len = m.edge.h.rtt.len = CW_REC_HIST_MAX;
	m.edge.h.client.len = m.edge.h.client_first.len = CW_REC_HIST_MAX;
	m.edge.h.server.len = CW_REC_HIST_MAX;
	check_same_bytes(&m);
	test_put_edges_widest(&m.edge);
}

int main(void)
{
	test_fast();
	test_fast_names();
	test_fast_varints();
	test_put();
	test_put_edges_bounds();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_wire_direct: all checks passed\n");
	return 0;
}
