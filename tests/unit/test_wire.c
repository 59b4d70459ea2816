// SPDX-License-Identifier: MIT
/*
 * Wire codec: every field round trips, both ends of a connection get one
 * key, and bad input gives distinct, non-fatal errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

#include "tests/unit/check.h"

static void fill(struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "host-a.example");
	r->netns = 4026531992U;
	r->cookie = 0x1122334455667788ULL;
	r->protocol = 6;
	r->role = CW_REC_ROLE_CLIENT;
	r->flags = CW_REC_CLOSED | CW_REC_NAT;
	cw_addr_parse(&r->laddr, "10.77.0.1");
	cw_addr_parse(&r->raddr, "fd77::2");
	r->lport = 41234;
	r->rport = 443;
	r->bytes_out = UINT64_MAX;
	r->bytes_in = 1;
	r->calls_out = 3;
	r->calls_in = 4;
	r->msgs_out = 5;
	r->msgs_in = 6;
	r->first_ns = 1700000000123456789ULL;
	r->last_ns = 1700000001123456789ULL;
	r->retrans = 7;
	r->srtt_us = UINT32_MAX;
	r->seq = 99;
	r->proc.tgid = 4242;
	r->proc.start_ns = 123456789;
	r->proc.cgroup_id = 777;
	strcpy(r->proc.comm, "curl-long-name!"); /* 15 bytes: the maximum */
	memset(r->proc.cmdline, 'x', sizeof(r->proc.cmdline) - 1);
	strcpy(r->proc.container, "0123456789abcdef");
	strcpy(r->proc.pod, "pod-uid-1");
}

static void test_round_trip(void)
{
	struct cw_conn_record r;
	struct cw_wire_msg m;
	uint8_t *buf;
	size_t len;
	char err[128];

	fill(&r);
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) == CW_WIRE_CONN);
	CHECK(m.kind == CW_WIRE_CONN && m.version == CW_WIRE_VERSION);
	/* Both sides are zero-padded the same way: compare every byte. */
	CHECK(memcmp(&m.conn, &r, sizeof(r)) == 0);
	free(buf);

	/* Zero record (no addresses, empty strings) round trips too. */
	memset(&r, 0, sizeof(r));
	r.seq = 1;
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) == CW_WIRE_CONN);
	CHECK(memcmp(&m.conn, &r, sizeof(r)) == 0);
	free(buf);

	/* An unterminated string is cut, never read past. */
	fill(&r);
	memset(r.proc.comm, 'c', sizeof(r.proc.comm));
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) == CW_WIRE_CONN);
	CHECK(strlen(m.conn.proc.comm) == CW_COMM_MAX - 1);
	free(buf);
}

static void test_meta(void)
{
	struct cw_wire_msg in, out;
	uint8_t *buf;
	size_t len;

	memset(&in, 0, sizeof(in));
	in.kind = CW_WIRE_HOST;
	strcpy(in.host.host, "h1");
	strcpy(in.host.hostname, "h1.example");
	strcpy(in.host.kernel, "6.18.0");
	strcpy(in.host.agent_version, "0.1.0");
	in.host.cpus = 2;
	in.host.mem_bytes = 8ULL << 30;
	in.host.time_ns = 5;
	in.host.seq = 6;
	CHECK(cw_wire_encode(&in, &buf, &len) == 0);
	memset(&out, 0xaa, sizeof(out));
	CHECK(cw_wire_decode(buf, len, &out, NULL, 0) == CW_WIRE_HOST);
	CHECK(memcmp(&out.host, &in.host, sizeof(in.host)) == 0);
	free(buf);

	memset(&in, 0, sizeof(in));
	in.kind = CW_WIRE_PROC;
	strcpy(in.proc.host, "h1");
	in.proc.proc.tgid = 1;
	strcpy(in.proc.proc.comm, "nginx");
	in.proc.rss_bytes = 1 << 20;
	in.proc.cpu_ns = 3;
	in.proc.time_ns = 4;
	in.proc.seq = 5;
	CHECK(cw_wire_encode(&in, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &out, NULL, 0) == CW_WIRE_PROC);
	CHECK(memcmp(&out.proc, &in.proc, sizeof(in.proc)) == 0);
	free(buf);
}

static void test_key(void)
{
	struct cw_conn_record a, b;
	char ka[CW_WIRE_KEY_MAX], kb[CW_WIRE_KEY_MAX];

	/* Client end on 10.0.0.2:41234, server end on 10.0.0.1:80. */
	memset(&a, 0, sizeof(a));
	a.protocol = 6;
	cw_addr_parse(&a.laddr, "10.0.0.2");
	cw_addr_parse(&a.raddr, "10.0.0.1");
	a.lport = 41234;
	a.rport = 80;
	b = a;
	b.laddr = a.raddr, b.raddr = a.laddr;
	b.lport = a.rport, b.rport = a.lport;
	CHECK(cw_wire_conn_key(&a, ka, sizeof(ka)) > 0);
	CHECK(cw_wire_conn_key(&b, kb, sizeof(kb)) > 0);
	CHECK(strcmp(ka, kb) == 0);
	CHECK(strcmp(ka, "tcp:10.0.0.1:80-10.0.0.2:41234") == 0);

	/* Same address both sides (loopback): ports decide. */
	cw_addr_parse(&a.laddr, "127.0.0.1");
	a.raddr = a.laddr;
	b = a;
	b.lport = a.rport, b.rport = a.lport;
	cw_wire_conn_key(&a, ka, sizeof(ka));
	cw_wire_conn_key(&b, kb, sizeof(kb));
	CHECK(strcmp(ka, kb) == 0);

	/* IPv6 and UDP; protocol is part of the key. */
	cw_addr_parse(&a.laddr, "fd77::1");
	cw_addr_parse(&a.raddr, "fd77::2");
	a.protocol = 17;
	b = a;
	b.laddr = a.raddr, b.raddr = a.laddr;
	b.lport = a.rport, b.rport = a.lport;
	cw_wire_conn_key(&a, ka, sizeof(ka));
	cw_wire_conn_key(&b, kb, sizeof(kb));
	CHECK(strcmp(ka, kb) == 0);
	CHECK(strcmp(ka, "udp:[fd77::1]:41234-[fd77::2]:80") == 0);
	a.protocol = 6;
	cw_wire_conn_key(&a, kb, sizeof(kb));
	CHECK(strcmp(ka, kb) != 0);

	/* Too small a buffer is refused, not cut. */
	CHECK(cw_wire_conn_key(&a, ka, 8) == -1);
}

static void test_errors(void)
{
	struct cw_conn_record r;
	struct cw_wire_msg m;
	uint8_t *buf, bad[64];
	size_t len, i;
	char err[128];
	int e;

	fill(&r);
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);

	/* Every truncation is an error, never a crash or a half record. */
	for (i = 1; i < len; i++) {
		e = cw_wire_decode(buf, i, &m, err, sizeof(err));
		CHECK(e == CW_WIRE_EMALFORMED ||
		      (i == 2 && e == CW_WIRE_EKIND));
	}
	CHECK(cw_wire_decode(buf, len - 1, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(err[0] != 0);
	CHECK(cw_wire_decode(buf, 0, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(cw_wire_decode(NULL, 0, &m, NULL, 0) == CW_WIRE_EMALFORMED);
	free(buf);

	/* Garbage. */
	memset(bad, 0xff, sizeof(bad));
	CHECK(cw_wire_decode(bad, sizeof(bad), &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);

	/* version 2: field 1 varint 2, then field 10 (a body v1 can't read). */
	bad[0] = 0x08, bad[1] = 2, bad[2] = 0x52, bad[3] = 2, bad[4] = 0x08;
	bad[5] = 0xff;
	CHECK(cw_wire_decode(bad, 4, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED); /* cut inside field 10 */
	bad[3] = 1;
	CHECK(cw_wire_decode(bad, 5, &m, err, sizeof(err)) == CW_WIRE_EVERSION);
	CHECK(strstr(err, "version 2") != NULL);

	/* No version at all. */
	bad[0] = 0x52, bad[1] = 0;
	CHECK(cw_wire_decode(bad, 2, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);

	/* Version 1 with an unknown kind (field 13, reserved for later). */
	bad[0] = 0x08, bad[1] = 1, bad[2] = 0x6a, bad[3] = 0;
	CHECK(cw_wire_decode(bad, 4, &m, err, sizeof(err)) == CW_WIRE_EKIND);

	/* Version 1, conn whose lport is out of range (field 8 = 70000). */
	bad[0] = 0x08, bad[1] = 1, bad[2] = 0x52, bad[3] = 4;
	bad[4] = 0x40, bad[5] = 0xf0, bad[6] = 0xa2, bad[7] = 0x04;
	CHECK(cw_wire_decode(bad, 8, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "lport") != NULL);

	/* A 5-byte address. */
	bad[3] = 7, bad[4] = 0x3a, bad[5] = 5;
	memset(bad + 6, 1, 5);
	CHECK(cw_wire_decode(bad, 11, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "laddr") != NULL);

	CHECK(strcmp(cw_wire_strerror(CW_WIRE_EVERSION), "unknown version") ==
	      0);
}

static void test_error_counts(void)
{
	struct cw_wire_errors e;

	memset(&e, 0, sizeof(e));
	cw_wire_errors_count(&e, CW_WIRE_EMALFORMED, "test:1", "first");
	cw_wire_errors_count(&e, CW_WIRE_EMALFORMED, "test:2", "second");
	cw_wire_errors_count(&e, CW_WIRE_EVERSION, "test:3", "v9");
	CHECK(e.count[-CW_WIRE_EMALFORMED] == 2);
	CHECK(e.count[-CW_WIRE_EVERSION] == 1);
	CHECK(cw_wire_errors_total(&e) == 3);
	cw_wire_errors_report(&e, "test");
}

static void test_frames(void)
{
	struct cw_wire_reader rd;
	const uint8_t *p;
	size_t n;
	char err[128], *mem = NULL;
	size_t memlen = 0;
	FILE *fp = open_memstream(&mem, &memlen);

	CHECK(cw_wire_write_magic(fp) == 0);
	CHECK(cw_wire_write_frame(fp, "abc", 3) == 0);
	CHECK(cw_wire_write_frame(fp, "defg", 4) == 0);
	fclose(fp);

	fp = fmemopen(mem, memlen, "r");
	CHECK(cw_wire_reader_init(&rd, fp, err, sizeof(err)) == 0);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == 1 && n == 3 &&
	      !memcmp(p, "abc", 3));
	CHECK(cw_wire_reader_next(&rd, &p, &n) == 1 && n == 4);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == 0);
	cw_wire_reader_release(&rd);
	fclose(fp);

	/* Torn: the last frame cut short. */
	fp = fmemopen(mem, memlen - 1, "r");
	CHECK(cw_wire_reader_init(&rd, fp, err, sizeof(err)) == 0);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == 1);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == CW_WIRE_RTORN);
	cw_wire_reader_release(&rd);
	fclose(fp);

	/* A flipped payload bit: CRC error, then the reader goes on. */
	mem[CW_WIRE_MAGIC_LEN + CW_WIRE_FRAME_HDR] ^= 1;
	fp = fmemopen(mem, memlen, "r");
	CHECK(cw_wire_reader_init(&rd, fp, err, sizeof(err)) == 0);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == CW_WIRE_RCRC);
	CHECK(cw_wire_reader_next(&rd, &p, &n) == 1 && n == 4);
	cw_wire_reader_release(&rd);
	fclose(fp);

	/* Not a wire file. */
	mem[0] = 'X';
	fp = fmemopen(mem, memlen, "r");
	CHECK(cw_wire_reader_init(&rd, fp, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not a causeway wire file") != NULL);
	cw_wire_reader_release(&rd);
	fclose(fp);
	free(mem);
}

int main(void)
{
	test_round_trip();
	test_meta();
	test_key();
	test_errors();
	test_error_counts();
	test_frames();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_wire: all checks passed\n");
	return 0;
}
