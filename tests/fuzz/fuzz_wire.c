// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: common/hist.c common/health.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * The wire decoder and the frame reader on arbitrary bytes: never a crash,
 * only a kind or a distinct error; whatever decodes re-encodes to a record
 * that decodes the same; a conn record always has a key, and so do timing
 * windows, sample runs and a window's messages (MsgWindow); and a conn
 * record the direct reader takes decodes to the same bytes through
 * protobuf-c, which is what judges everything it declines; and a record
 * or an edge bucket or set of any bytes is written the same, byte for
 * byte, by the direct writer and through protobuf-c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/sample_run.h"
#include "common/wire.h"

static bool timing_same(const struct cw_timing_record *a,
			const struct cw_timing_record *b)
{
	size_t i;

	if (strcmp(a->host, b->host) || a->cookie != b->cookie ||
	    a->window_start_ns != b->window_start_ns ||
	    a->window_ns != b->window_ns || a->n != b->n ||
	    a->slot_ns != b->slot_ns || a->seq != b->seq ||
	    a->has_conn != b->has_conn || a->netns != b->netns ||
	    a->protocol != b->protocol || a->role != b->role ||
	    a->flags != b->flags ||
	    memcmp(&a->laddr, &b->laddr, sizeof(a->laddr)) ||
	    memcmp(&a->raddr, &b->raddr, sizeof(a->raddr)) ||
	    a->lport != b->lport || a->rport != b->rport ||
	    memcmp(&a->proc, &b->proc, sizeof(a->proc)))
		return false;
	for (i = 0; i < a->n; i++) {
		/* Sorted, inside the window, one of the two directions. */
		if (a->msgs[i].ts_ns < a->window_start_ns ||
		    a->msgs[i].ts_ns > a->window_start_ns + a->window_ns ||
		    (i && a->msgs[i].ts_ns < a->msgs[i - 1].ts_ns) ||
		    (a->msgs[i].dir != 1 && a->msgs[i].dir != 2))
			abort();
		if (a->msgs[i].ts_ns != b->msgs[i].ts_ns ||
		    a->msgs[i].bytes != b->msgs[i].bytes ||
		    a->msgs[i].dir != b->msgs[i].dir)
			return false;
	}
	return true;
}

static bool samples_same(const struct cw_wire_samples *a,
			 const struct cw_wire_samples *b)
{
	const struct cw_sample_run *x = a->run, *y = b->run;

	return a->seq == b->seq && !strcmp(x->host, y->host) &&
	       !strcmp(x->dev, y->dev) &&
	       x->start_real_ns == y->start_real_ns &&
	       x->interval_ns == y->interval_ns && x->samples == y->samples &&
	       x->nbins == y->nbins && x->flags == y->flags &&
	       !memcmp(x->bins, y->bins, x->nbins * sizeof(*x->bins));
}

/* A window's messages: inside the record's times, naming its sockets,
 * and the same after a round trip. */
static bool msgs_same(const struct cw_wire_msgs *a,
		      const struct cw_wire_msgs *b)
{
	size_t i;

	if (strcmp(a->host, b->host) || strcmp(a->boot_id, b->boot_id) ||
	    a->slot_ns != b->slot_ns || a->start_ns != b->start_ns ||
	    a->end_ns != b->end_ns || a->seq != b->seq ||
	    a->chunk != b->chunk || a->last != b->last || a->lost != b->lost ||
	    a->n != b->n || a->nsocks != b->nsocks)
		return false;
	if (memcmp(a->socks, b->socks, a->nsocks * sizeof(*a->socks)))
		return false;
	for (i = 0; i < a->n; i++) {
		const struct cw_wire_mmsg *x = &a->msgs[i];

		if (x->start_ns < a->start_ns || x->end_ns < x->start_ns ||
		    x->end_ns > a->end_ns || x->sock >= a->nsocks ||
		    x->ctx > a->nsocks)
			abort();
	}
	return !memcmp(a->msgs, b->msgs, a->n * sizeof(*a->msgs));
}

static void check_msg(const struct cw_wire_msg *m)
{
	static struct cw_wire_msg again;
	char key[CW_WIRE_ANYKEY_MAX];
	uint8_t *buf;
	size_t len;

	if (cw_wire_encode(m, &buf, &len))
		abort();
	if (cw_wire_decode(buf, len, &again, NULL, 0) != m->kind)
		abort();
	free(buf);
	if (cw_wire_key(m, key, sizeof(key)) < 0)
		abort();
	switch (m->kind) {
	case CW_WIRE_CONN:
		if (memcmp(&again.conn, &m->conn, sizeof(m->conn)))
			abort();
		/* Its histograms are well formed and within their room. */
		if (!cw_rec_hist_valid(m->conn.rtt.b, m->conn.rtt.len) ||
		    !cw_rec_hist_valid(m->conn.xchg.b, m->conn.xchg.len) ||
		    !cw_rec_hist_valid(m->conn.xchg_first.b,
				       m->conn.xchg_first.len))
			abort();
		if (cw_wire_conn_key(&m->conn, key, sizeof(key)) < 0)
			abort();
		break;
	case CW_WIRE_HOST:
		if (memcmp(&again.host, &m->host, sizeof(m->host)))
			abort();
		break;
	case CW_WIRE_PROC:
		if (memcmp(&again.proc, &m->proc, sizeof(m->proc)))
			abort();
		break;
	case CW_WIRE_TIMING:
		if (!timing_same(&m->timing, &again.timing))
			abort();
		if (m->timing.has_conn &&
		    cw_wire_timing_conn_key(&m->timing, key, sizeof(key)) < 0)
			abort();
		break;
	case CW_WIRE_SAMPLES:
		if (!samples_same(&m->samples, &again.samples))
			abort();
		break;
	case CW_WIRE_MSGS:
		if (!msgs_same(&m->msgs, &again.msgs))
			abort();
		break;
	}
	cw_wire_msg_release(&again);
}

static void fuzz_frames(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m;
	struct cw_wire_reader rd;
	const uint8_t *p;
	char err[128];
	size_t n;
	FILE *fp;
	int r, i;

	fp = fmemopen((void *)data, size, "r");
	if (!fp)
		return;
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err)) == 0) {
		for (i = 0; i < 64; i++) {
			r = cw_wire_reader_next(&rd, &p, &n);
			if (r == 1 && cw_wire_decode(p, n, &m, NULL, 0) > 0) {
				check_msg(&m);
				cw_wire_msg_release(&m);
			}
			if (r != 1 && r != CW_WIRE_RCRC)
				break;
		}
	}
	cw_wire_reader_release(&rd);
	fclose(fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The direct reader agrees with protobuf-c's way wherever it answers. */
static void fuzz_fast(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg fast, slow;
	int r = cw_wire_decode_conn_fast(data, size, &fast);

	if (r != 0 && r != CW_WIRE_CONN)
		abort();
	if (!r)
		return;
	if (cw_wire_decode_pb(data, size, &slow, NULL, 0) != CW_WIRE_CONN ||
	    fast.version != slow.version ||
	    memcmp(&fast.conn, &slow.conn, sizeof(fast.conn)))
		abort();
	cw_wire_msg_release(&slow);
}

/* Both writers on m, which they must write to the same bytes. */
static void same_bytes(const struct cw_wire_msg *m)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int r = m->kind == CW_WIRE_CONN
			? cw_wire_encode_conn_fast(&m->conn, &a, &na)
		: m->kind == CW_WIRE_EDGE
			? cw_wire_encode_edge_fast(&m->edge, &a, &na)
		: m->kind == CW_WIRE_EDGES
			? cw_wire_encode_edges_fast(&m->edges, &a, &na)
			: cw_wire_encode_state_fast(&m->state, &a, &na);

	if (r != 0 || cw_wire_encode_pb(m, &b, &nb) != 0 || na != nb ||
	    memcmp(a, b, na))
		abort();
	free(a);
	free(b);
}

/* A checkpoint chunk of up to 3 ends, flags, a delta and an edge, all of
 * the input's bytes. */
static void fuzz_put_state(const uint8_t *data, size_t size,
			   const struct cw_wire_edge *edge)
{
	static struct cw_conn_record ends[3];
	static struct cw_wire_msg m;
	struct cw_wire_edge e = *edge;
	struct cw_end_delta d;
	uint32_t flags[3] = {0};
	size_t i, n = size % 4;

	memset(&m, 0, sizeof(m));
	memset(ends, 0, sizeof(ends));
	memset(&d, 0, sizeof(d));
	m.kind = CW_WIRE_STATE;
	memcpy(&m.state, data,
	       size < offsetof(struct cw_wire_state, ends)
		       ? size
		       : offsetof(struct cw_wire_state, ends));
	for (i = 0; i < n; i++)
		memcpy(&ends[i], data, size < sizeof(ends[i]) ? size
							       : sizeof(ends[i]));
	memcpy(flags, data, size < sizeof(flags) ? size : sizeof(flags));
	memcpy(&d, data, size < sizeof(d) ? size : sizeof(d));
	memcpy(&m.state.bk, data,
	       size < sizeof(m.state.bk) ? size : sizeof(m.state.bk));
	m.state.ends = ends;
	m.state.n = n;
	m.state.end_flags = size & 4 ? flags : NULL;
	m.state.deltas = &d;
	m.state.ndeltas = size & 8 ? 1 : 0;
	m.state.edges = &e;
	m.state.nedges = size & 16 ? 1 : 0;
	same_bytes(&m);
}

/* An EdgeSet of 1 to 3 edges of the input's bytes (the later ones shifted
 * by one byte, so that they differ): both writers write the same bytes,
 * and the record decodes to as many edges, of consecutive indices. */
static void fuzz_put_edges(const uint8_t *data, size_t size,
			   const struct cw_wire_edge *edge)
{
	static struct cw_wire_edge e[3];
	static struct cw_wire_msg m, again;
	size_t i, n = 1 + size % 3;
	uint8_t *buf;
	size_t len;

	for (i = 0; i < n; i++) {
		e[i] = *edge;
		if (i && size > i)
			memcpy(&e[i].client, data + i,
			       size - i < sizeof(e[i].client)
				       ? size - i
				       : sizeof(e[i].client));
	}
	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGES;
	m.edges.e = e;
	m.edges.n = n;
	same_bytes(&m);
	/* Decoded, only when the set can hold them: a reader refuses edges
	 * past set_size. */
	if ((uint64_t)e[0].set_index + n > e[0].set_size ||
	    cw_wire_encode(&m, &buf, &len))
		return;
	if (cw_wire_decode(buf, len, &again, NULL, 0) == CW_WIRE_EDGES) {
		if (again.edges.n != n)
			abort();
		for (i = 0; i < n; i++)
			if (again.edges.e[i].set_index != e[0].set_index + i ||
			    again.edges.e[i].set_size != e[0].set_size)
				abort();
		cw_wire_msg_release(&again);
	}
	free(buf);
}

/* The input's bytes as a record's and an edge's fields, as they are. */
static void fuzz_put(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_CONN;
	memcpy(&m.conn, data, size < sizeof(m.conn) ? size : sizeof(m.conn));
	same_bytes(&m);
	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_EDGE;
	memcpy(&m.edge, data, size < sizeof(m.edge) ? size : sizeof(m.edge));
	m.edge.sealed = size && (data[size - 1] & 1); /* a bool: 0 or 1 */
	same_bytes(&m);
	fuzz_put_state(data, size, &m.edge);
	fuzz_put_edges(data, size, &m.edge);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m;
	char err[256];
	int r;

	fuzz_fast(data, size);
	fuzz_put(data, size);
	r = cw_wire_decode(data, size, &m, err, sizeof(err));
	if (r > 0) {
		check_msg(&m);
		cw_wire_msg_release(&m);
	} else if (r != CW_WIRE_EMALFORMED && r != CW_WIRE_EVERSION &&
		   r != CW_WIRE_EKIND)
		abort();
	else if (!err[0])
		abort(); /* every error says why */
	if (size >= CW_WIRE_MAGIC_LEN &&
	    !memcmp(data, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN))
		fuzz_frames(data, size);
	return 0;
}
