// SPDX-License-Identifier: MIT
/*
 * Wire codec: every field round trips, both ends of a connection get one
 * key, and bad input gives distinct, non-fatal errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/record_read.h"
#include "common/sample_run.h"
#include "common/wire.h"
#include "common/wire.pb-c.h"
#include "correlator/live.h"

#include "tests/unit/check.h"
#include "tests/unit/wire_fill.h"

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
	/* HostMeta 10-19: each its own value, so a swap would show. */
	in.host.health = (struct cw_host_health){10, 11, 12, 13, 14,
						 15, 16, 17, 18, 1ULL << 40};
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

	/* Version 1 with an unknown kind (field 99, none yet). */
	bad[0] = 0x08, bad[1] = 1, bad[2] = 0x9a, bad[3] = 0x06, bad[4] = 0;
	CHECK(cw_wire_decode(bad, 5, &m, err, sizeof(err)) == CW_WIRE_EKIND);

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

/*
 * The edge-health block (fields 30-37): both decoders read it, a
 * histogram that is not well formed or too long is refused by name, and
 * the JSON form reads back to the same bytes.
 */
static void test_health(void)
{
	struct cw_conn_record r, back;
	struct cw_wire_msg m;
	uint8_t *buf, *fast;
	size_t len, flen;
	char err[160], *text = NULL;
	size_t tlen = 0;
	struct cw_jsonw w;
	FILE *fp;

	fill(&r);
	CHECK(r.rtt.len > 0 && r.xchg.len > 0 && r.xchg_first.len > 0);
	CHECK(cw_wire_encode_pb(&(struct cw_wire_msg){.kind = CW_WIRE_CONN,
						       .conn = r},
				&buf, &len) == 0);
	CHECK(cw_wire_encode_conn_fast(&r, &fast, &flen) == 0);
	CHECK(len == flen && !memcmp(buf, fast, len));
	CHECK(cw_wire_decode_conn_fast(buf, len, &m) == CW_WIRE_CONN);
	CHECK(!memcmp(&m.conn, &r, sizeof(r)));
	free(buf);
	free(fast);

	/* A bin of count 0 is no histogram: refused, naming the field. */
	r.xchg.len = 2;
	r.xchg.b[0] = 1;
	r.xchg.b[1] = 0;
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode_conn_fast(buf, len, &m) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "xchg_hist") != NULL);
	free(buf);
	/* An unknown failure kind reads back as it was. */
	fill(&r);
	r.fail = 9;
	CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) == CW_WIRE_CONN);
	CHECK(m.conn.fail == 9);
	free(buf);

	/* An edge bucket's health and a delta's, through both decoders. */
	{
		static struct cw_wire_msg e, back;
		struct cw_end_delta d;

		memset(&d, 0, sizeof(d)); /* padding too: compared whole */
		d.connect_us = 7;
		d.fail = CW_REC_FAIL_TIMEOUT;
		d.resets_in = 1;

		fill(&r);
		memset(&e, 0, sizeof(e));
		e.kind = CW_WIRE_EDGE;
		strcpy(e.edge.group, "g");
		e.edge.t.conns = 2;
		e.edge.h.conns_refused = 1;
		e.edge.h.conns_timeout = 1;
		e.edge.h.resets_by_client = 4;
		e.edge.h.rtt = r.rtt;
		e.edge.h.client = r.xchg;
		e.edge.h.client_first = r.xchg_first;
		e.edge.h.server = r.rtt;
		e.edge.h.connect = r.xchg_first;
		e.edge.t.h = &e.edge.h; /* a total's health is a pointer */
		CHECK(cw_edge_failed(&e.edge.t));
		e.edge.t.h = NULL;
		CHECK(cw_wire_encode(&e, &buf, &len) == 0);
		CHECK(cw_wire_decode(buf, len, &back, err, sizeof(err)) ==
		      CW_WIRE_EDGE);
		CHECK(!memcmp(&back.edge, &e.edge, sizeof(e.edge)));
		free(buf);
		/* Network time: client minus server at each quantile. */
		CHECK(cw_edge_network_ns(&e.edge.h, 0.5) > 0);
		memset(&e, 0, sizeof(e));
		e.kind = CW_WIRE_STATE;
		e.state.chunks = 1;
		e.state.ends = &r;
		e.state.n = 1;
		d.xchg = r.xchg;
		e.state.deltas = &d;
		e.state.ndeltas = 1;
		CHECK(cw_wire_encode(&e, &buf, &len) == 0);
		CHECK(cw_wire_decode(buf, len, &back, err, sizeof(err)) ==
		      CW_WIRE_STATE);
		CHECK(back.state.ndeltas == 1 &&
		      !memcmp(&back.state.deltas[0], &d, sizeof(d)));
		CHECK(back.state.n == 1 &&
		      !memcmp(&back.state.ends[0], &r, sizeof(r)));
		cw_wire_msg_release(&back);
		free(buf);
	}

	/* JSON: written, read back, the same fields and bins. */
	fill(&r);
	fp = open_memstream(&text, &tlen);
	cw_jsonw_init(&w, fp);
	cw_conn_record_json(&w, &r);
	fclose(fp);
	CHECK(strstr(text, "\"fail\":\"timeout\"") != NULL);
	CHECK(strstr(text, "\"xchg\":{\"count\":") != NULL);
	CHECK(cw_record_parse(text, tlen, &back, err, sizeof(err)) == 0);
	CHECK(back.connect_us == r.connect_us && back.fail == r.fail &&
	      back.resets_in == r.resets_in &&
	      back.resets_out == r.resets_out &&
	      back.xchg_pipelined == r.xchg_pipelined);
	CHECK(!memcmp(&back.rtt, &r.rtt, sizeof(r.rtt)) &&
	      !memcmp(&back.xchg, &r.xchg, sizeof(r.xchg)) &&
	      !memcmp(&back.xchg_first, &r.xchg_first, sizeof(r.xchg_first)));
	free(text);
	/* No health, no keys: older outputs stay as they were. */
	memset(&r, 0, sizeof(r));
	text = NULL;
	fp = open_memstream(&text, &tlen);
	cw_jsonw_init(&w, fp);
	cw_conn_record_json(&w, &r);
	fclose(fp);
	CHECK(strstr(text, "\"fail\"") == NULL);
	free(text);
}

/* A timing window of n messages: alternating out/in, sizes 100 + i. */
static void fill_timing(struct cw_timing_record *t, size_t n)
{
	struct cw_conn_record r;
	size_t i;

	memset(t, 0, sizeof(*t));
	fill(&r);
	strcpy(t->host, "host-a.example");
	t->cookie = r.cookie;
	cw_timing_record_set_conn(t, &r);
	t->slot_ns = 1700000000000000000ULL;
	t->window_start_ns = t->slot_ns + 1234567;
	t->window_ns = 2000000000ULL;
	t->seq = 7;
	t->n = n;
	t->msgs = calloc(n ? n : 1, sizeof(*t->msgs));
	for (i = 0; i < n; i++) {
		t->msgs[i].ts_ns = t->window_start_ns + i * 1000 + (i % 3);
		t->msgs[i].dir = i % 2 ? 2 : 1;
		t->msgs[i].bytes = (uint32_t)(100 + i);
	}
	if (n) {
		t->msgs[0].ts_ns = t->window_start_ns; /* a zero delta */
		t->msgs[n - 1].bytes = 0;	       /* ran past the end */
	}
}

static bool timing_equal(const struct cw_timing_record *a,
			 const struct cw_timing_record *b)
{
	size_t i;

	if (strcmp(a->host, b->host) || a->cookie != b->cookie ||
	    a->window_start_ns != b->window_start_ns ||
	    a->window_ns != b->window_ns || a->n != b->n ||
	    a->slot_ns != b->slot_ns || a->seq != b->seq ||
	    a->has_conn != b->has_conn || a->netns != b->netns ||
	    a->protocol != b->protocol || a->role != b->role ||
	    a->flags != b->flags || cw_addr_cmp(&a->laddr, &b->laddr) ||
	    cw_addr_cmp(&a->raddr, &b->raddr) || a->lport != b->lport ||
	    a->rport != b->rport || memcmp(&a->proc, &b->proc, sizeof(a->proc)))
		return false;
	for (i = 0; i < a->n; i++)
		if (a->msgs[i].ts_ns != b->msgs[i].ts_ns ||
		    a->msgs[i].bytes != b->msgs[i].bytes ||
		    a->msgs[i].dir != b->msgs[i].dir)
			return false;
	return true;
}

static void test_timing(void)
{
	static const size_t sizes[] = {0, 1, 7, 8, 9, 1000};
	struct cw_timing_record t;
	struct cw_wire_msg m;
	char key[CW_WIRE_ANYKEY_MAX], ka[CW_WIRE_KEY_MAX], kb[CW_WIRE_KEY_MAX];
	uint8_t *buf;
	size_t len, i;
	char err[128];

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill_timing(&t, sizes[i]);
		CHECK(cw_wire_encode_timing(&t, &buf, &len) == 0);
		CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
		      CW_WIRE_TIMING);
		CHECK(m.kind == CW_WIRE_TIMING && timing_equal(&m.timing, &t));
		/* Compact: a few bytes a message, not a struct's 16. */
		if (sizes[i] == 1000)
			CHECK(len < 250 + 5 * 1000);
		CHECK(cw_wire_key(&m, key, sizeof(key)) > 0);
		CHECK(strcmp(key, "1700000000000000000") == 0);
		cw_wire_msg_release(&m);
		CHECK(m.kind == 0);
		free(buf);
		free(t.msgs);
	}

	/* The two ends of a connection share a connection key. */
	fill_timing(&t, 0);
	CHECK(cw_wire_timing_conn_key(&t, ka, sizeof(ka)) > 0);
	{
		struct cw_addr a = t.laddr;
		uint16_t p = t.lport;

		t.laddr = t.raddr, t.lport = t.rport;
		t.raddr = a, t.rport = p;
	}
	CHECK(cw_wire_timing_conn_key(&t, kb, sizeof(kb)) > 0);
	CHECK(strcmp(ka, kb) == 0);
	free(t.msgs);

	/* The encoder refuses what the decoder would: unsorted, outside. */
	fill_timing(&t, 4);
	t.msgs[2].ts_ns = t.msgs[1].ts_ns - 1;
	CHECK(cw_wire_encode_timing(&t, &buf, &len) == -1);
	free(t.msgs);
	fill_timing(&t, 4);
	t.msgs[3].ts_ns = t.window_start_ns + t.window_ns + 1;
	CHECK(cw_wire_encode_timing(&t, &buf, &len) == -1);
	free(t.msgs);
}

/* Pack a hand-made TimingWindow; the caller frees. */
static uint8_t *pack_timing(Causeway__Wire__TimingWindow *w, size_t *len)
{
	Causeway__Wire__Envelope env;
	uint8_t *buf;

	causeway__wire__envelope__init(&env);
	env.version = 1;
	env.kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_TIMING;
	env.timing = w;
	*len = protobuf_c_message_get_packed_size(&env.base);
	buf = malloc(*len + 1);
	protobuf_c_message_pack(&env.base, buf);
	return buf;
}

static int decode_timing_case(Causeway__Wire__TimingWindow *w, char *err,
			      size_t errlen)
{
	struct cw_wire_msg m;
	uint8_t *buf;
	size_t len;
	int r;

	buf = pack_timing(w, &len);
	r = cw_wire_decode(buf, len, &m, err, errlen);
	if (r > 0)
		cw_wire_msg_release(&m);
	free(buf);
	return r;
}

static void test_timing_errors(void)
{
	Causeway__Wire__TimingWindow w;
	uint64_t deltas[3] = {1, 2, 3};
	uint32_t sizes[3] = {10, 20, 30};
	uint8_t dirs[1] = {0x05};
	char err[160];

	causeway__wire__timing_window__init(&w);
	w.host = "h";
	w.protocol = 6;
	w.start_ns = 1000;
	w.end_ns = 2000;
	w.n_ts_delta_ns = 3, w.ts_delta_ns = deltas;
	w.n_sizes = 3, w.sizes = sizes;
	w.dirs.len = 1, w.dirs.data = dirs;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_TIMING);

	/* Parallel lists of different lengths. */
	w.n_sizes = 2;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "sizes") != NULL);
	w.n_sizes = 3;
	w.dirs.len = 0;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	w.dirs.len = 1;

	/* Direction bits past the last message. */
	dirs[0] = 0x0d;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "direction bits") != NULL);
	dirs[0] = 0x05;

	/* Deltas running past the window's end, or overflowing 64 bits. */
	deltas[2] = 998;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "after the window ends") != NULL);
	deltas[2] = 997;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_TIMING);
	deltas[1] = UINT64_MAX;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	deltas[1] = 2;

	/* A window that ends before it starts. */
	w.end_ns = 999;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "before it starts") != NULL);
	w.end_ns = 2000;

	/* Fields out of range, as for connections. */
	w.rport = 65536;
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "rport") != NULL);
	w.rport = 80;
	w.laddr.len = 3, w.laddr.data = (uint8_t *)"abc";
	CHECK(decode_timing_case(&w, err, sizeof(err)) == CW_WIRE_EMALFORMED);
}

static struct cw_sample_run *make_run(void)
{
	struct cw_sample_run *run = cw_sample_run_new(50);
	uint32_t i;
	int f;

	strcpy(run->host, "host-a");
	strcpy(run->dev, "eth0,eth1");
	run->start_real_ns = 1700000000000000000ULL;
	run->interval_ns = 100000;
	run->samples = 60;
	run->ncpus = 2;
	run->flags = CW_RUN_INTERRUPTED;
	run->past_end = 3;
	for (i = 0; i < run->nbins; i++)
		for (f = 0; f < CW_SF_MAX; f++)
			run->bins[i].v[f] = (i * 7 + (uint32_t)f) % 5
						    ? 0
						    : (uint64_t)i << f;
	run->bins[4].saturated = 3;
	return run;
}

static void test_samples(void)
{
	struct cw_sample_run *run = make_run();
	Causeway__Wire__Envelope *env;
	struct cw_wire_msg m;
	char key[CW_WIRE_ANYKEY_MAX], err[160];
	uint8_t *buf, *again;
	size_t len, n;

	CHECK(cw_wire_encode_samples(run, 42, &buf, &len) == 0);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
	      CW_WIRE_SAMPLES);
	CHECK(m.samples.seq == 42 && m.samples.run);
	CHECK(strcmp(m.samples.run->host, "host-a") == 0);
	CHECK(strcmp(m.samples.run->dev, "eth0,eth1") == 0);
	CHECK(m.samples.run->nbins == 50 && m.samples.run->samples == 60);
	CHECK(m.samples.run->flags == CW_RUN_INTERRUPTED);
	CHECK(memcmp(m.samples.run->bins, run->bins, 50 * sizeof(*run->bins)) ==
	      0);
	CHECK(cw_wire_key(&m, key, sizeof(key)) > 0);
	CHECK(strcmp(key, "host-a/eth0,eth1") == 0);
	cw_wire_msg_release(&m);

	/* The run's bytes are exactly what the store writes. */
	CHECK(cw_sample_run_encode(run, &again, &n) == 0);
	env = causeway__wire__envelope__unpack(NULL, len, buf);
	CHECK(env && env->samples && env->samples->run.len == n &&
	      !memcmp(env->samples->run.data, again, n));
	free(again);

	/* A header that disagrees with the run it carries. */
	env->samples->nbins = 49;
	free(buf);
	len = protobuf_c_message_get_packed_size(&env->base);
	buf = malloc(len);
	protobuf_c_message_pack(&env->base, buf);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "disagrees") != NULL);
	free(buf);

	/* A damaged run (its CRC fails). */
	env->samples->nbins = 50;
	env->samples->run.data[env->samples->run.len / 2] ^= 0x10;
	len = protobuf_c_message_get_packed_size(&env->base);
	buf = malloc(len);
	protobuf_c_message_pack(&env->base, buf);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "sample run") != NULL);
	free(buf);

	/* No run at all. */
	env->samples->run.len = 0;
	len = protobuf_c_message_get_packed_size(&env->base);
	buf = malloc(len);
	protobuf_c_message_pack(&env->base, buf);
	CHECK(cw_wire_decode(buf, len, &m, err, sizeof(err)) ==
	      CW_WIRE_EMALFORMED);
	free(buf);
	causeway__wire__envelope__free_unpacked(env, NULL);

	/* Every truncation of a good record is an error, never a crash. */
	CHECK(cw_wire_encode_samples(run, 1, &buf, &len) == 0);
	for (n = 1; n < len; n++)
		if (cw_wire_decode(buf, n, &m, NULL, 0) > 0)
			cw_wire_msg_release(&m);
	free(buf);
	CHECK(strcmp(cw_wire_kind_name(CW_WIRE_SAMPLES), "samples") == 0);
	CHECK(strcmp(cw_wire_kind_name(CW_WIRE_TIMING), "timing") == 0);
	cw_sample_run_free(run);
}

/* One end for the pairing test: host, cookie, role, local/remote ports. */
static void end_rec(struct cw_timing_record *t, const char *host,
		    uint64_t cookie, int role, const char *la, uint16_t lp,
		    const char *ra, uint16_t rp, const char *comm,
		    const uint8_t *dirs, size_t n)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	snprintf(t->host, sizeof(t->host), "%s", host);
	t->cookie = cookie;
	t->has_conn = true;
	t->protocol = 6;
	t->role = (uint8_t)role;
	cw_addr_parse(&t->laddr, la);
	cw_addr_parse(&t->raddr, ra);
	t->lport = lp;
	t->rport = rp;
	t->proc.tgid = (uint32_t)cookie;
	snprintf(t->proc.comm, sizeof(t->proc.comm), "%s", comm);
	t->slot_ns = 1000000000;
	t->window_start_ns = 1000000000;
	t->window_ns = 1000000000;
	t->seq = cookie;
	t->n = n;
	t->msgs = calloc(n ? n : 1, sizeof(*t->msgs));
	for (i = 0; i < n; i++) {
		t->msgs[i].ts_ns = t->window_start_ns + 1000 * (i + 1);
		t->msgs[i].dir = dirs[i];
		t->msgs[i].bytes = 10;
	}
}

/* The correlator pairs the two ends of a connection from windows alone. */
static void test_live_windows(void)
{
	/* The client's window opened mid-exchange: it first sees a reply. */
	static const uint8_t cli[] = {2, 1, 2, 1, 2}, srv[] = {2, 1, 2, 1};
	static const uint8_t one[] = {1};
	struct cw_timing_record r[7];
	struct cw_live_stats st;
	struct cw_msgtrace t;
	size_t i;

	end_rec(&r[0], "a", 1, CW_REC_ROLE_CLIENT, "10.0.0.1", 40000,
		"10.0.0.2", 80, "curl", cli, 5);
	end_rec(&r[1], "b", 2, CW_REC_ROLE_SERVER, "10.0.0.2", 80, "10.0.0.1",
		40000, "nginx", srv, 4);
	r[2] = r[1]; /* a replayed record: same host, cookie and seq */
	r[2].msgs = calloc(1, sizeof(*r[2].msgs));
	r[2].n = 0;
	/* The second record of a split end (next seq). */
	end_rec(&r[3], "b", 2, CW_REC_ROLE_SERVER, "10.0.0.2", 80, "10.0.0.1",
		40000, "nginx", one, 1);
	r[3].seq = 3;
	r[3].msgs[0].ts_ns += 10000;
	/* A connection whose peer nobody watched. */
	end_rec(&r[4], "b", 5, CW_REC_ROLE_CLIENT, "10.0.0.2", 41000,
		"10.0.0.9", 5432, "nginx", one, 1);
	/* An end without its connection's fields. */
	end_rec(&r[5], "d", 7, CW_REC_ROLE_CLIENT, "10.0.0.3", 1, "10.0.0.4", 2,
		"x", one, 1);
	r[5].has_conn = false;
	/* The same 4-tuple as curl's on another (isolated) host. */
	end_rec(&r[6], "c", 6, CW_REC_ROLE_CLIENT, "10.0.0.1", 40000,
		"10.0.0.2", 80, "curl", one, 1);

	cw_msgtrace_init(&t);
	CHECK(cw_live_trace_windows(r, 6, true, &t, &st) == 0);
	CHECK(st.records == 6 && st.unknown == 1 && st.duplicates == 1);
	CHECK(st.ends == 3 && st.paired == 2 && st.unpaired == 1);
	/* curl's leading reply is dropped: 4 + 4 + 1 + 1. */
	CHECK(st.trimmed == 1 && st.messages == 10);
	CHECK(cw_msgtrace_find(&t, "curl[1]@a") >= 0);
	CHECK(cw_msgtrace_find(&t, "nginx[2]@b") >= 0);
	CHECK(cw_msgtrace_find(&t, "10.0.0.9:5432") >= 0);
	CHECK(cw_msgtrace_find(&t, "x[7]@d") < 0);
	for (i = 0; i < t.n_msgs; i++)
		if (t.msgs[i].node ==
		    (uint32_t)cw_msgtrace_find(&t, "curl[1]@a"))
			CHECK(t.msgs[i].peer ==
			      (uint32_t)cw_msgtrace_find(&t, "nginx[2]@b"));
	cw_msgtrace_release(&t);

	/* Two clients claim nginx's end: nobody is paired with it. */
	cw_msgtrace_init(&t);
	CHECK(cw_live_trace_windows(r, 7, true, &t, &st) == 0);
	CHECK(st.ends == 4 && st.paired == 0 && st.ambiguous == 1);
	CHECK(cw_msgtrace_find(&t, "10.0.0.1") >= 0); /* nginx's peer */
	cw_msgtrace_release(&t);
	for (i = 0; i < 7; i++)
		free(r[i].msgs);
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
	test_health();
	test_error_counts();
	test_frames();
	test_timing();
	test_timing_errors();
	test_samples();
	test_live_windows();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_wire: all checks passed\n");
	return 0;
}
