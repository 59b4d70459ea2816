// SPDX-License-Identifier: MIT
/*
 * Connection records, edge buckets, edge sets and checkpoint chunks
 * written straight from the structs, for the correlator's and the agent's
 * hot paths (the other kinds are rare and stay with protobuf-c):
 * protobuf-c's way fills a parallel tree of its own structs (each string
 * checked for its terminator), walks it once for the size and again to
 * pack.
 *
 * The bytes are protobuf-c's, to the byte: fields in number order, each
 * left out when it holds proto3's default (0, "", no bytes), a nested
 * message always written when protobuf-c's tree has one.  Strings are
 * taken up to their NUL, or cut at their array's last byte, as cstr() in
 * common/wire.c does.  tests/unit/test_wire.c and tests/fuzz/fuzz_wire.c
 * hold the two ways equal.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

struct wr {
	uint8_t *p, *end;
	bool over; /* ran out of room: the caller takes protobuf-c's way */
};

static void put_raw(struct wr *w, const void *b, size_t n)
{
	if (w->over || (size_t)(w->end - w->p) < n) {
		w->over = true;
		return;
	}
	memcpy(w->p, b, n);
	w->p += n;
}

static void put_varint(struct wr *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	/* Room for the longest: straight into the buffer, no copy. */
	if (!w->over && w->end - w->p >= 10) {
		while (v >= 0x80) {
			*w->p++ = (uint8_t)(v | 0x80);
			v >>= 7;
		}
		*w->p++ = (uint8_t)v;
		return;
	}
	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	put_raw(w, b, n);
}

static void put_tag(struct wr *w, unsigned int field, unsigned int wire)
{
	put_varint(w, (uint64_t)field << 3 | wire);
}

/* A varint field (uint32, uint64, int64, enum, bool), unless 0. */
static void put_u(struct wr *w, unsigned int field, uint64_t v)
{
	if (!v)
		return;
	put_tag(w, field, 0);
	put_varint(w, v);
}

static void put_s64(struct wr *w, unsigned int field, int64_t v)
{
	put_u(w, field, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_fixed64(struct wr *w, unsigned int field, uint64_t v)
{
	uint8_t b[8];
	int i;

	if (!v)
		return;
	put_tag(w, field, 1);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_raw(w, b, 8);
}

static void put_bytes(struct wr *w, unsigned int field, const void *b,
		      size_t n)
{
	if (!n)
		return;
	put_tag(w, field, 2);
	put_varint(w, n);
	put_raw(w, b, n);
}

/* A string of a char array of cap bytes: to its NUL, or cap - 1 bytes. */
static void put_str(struct wr *w, unsigned int field, const char *s,
		    size_t cap)
{
	size_t n;

	if (!s[0]) /* most of a process's names: nothing written */
		return;
	n = strnlen(s, cap);

	put_bytes(w, field, s, n == cap ? cap - 1 : n);
}

/*
 * A nested message: its length goes before it, so room for a length of
 * `room` bytes is left and the body moved back by what the length does
 * not need.  Two bytes hold a record's parts (under 16 KiB: their strings
 * are bounded), five any body at all.
 */
struct msg {
	uint8_t *body;
	size_t room;
};

static struct msg open_msg(struct wr *w, unsigned int field, size_t room)
{
	struct msg m = {NULL, room};

	put_tag(w, field, 2);
	if (w->over || (size_t)(w->end - w->p) < room) {
		w->over = true;
		return m;
	}
	w->p += room;
	m.body = w->p;
	return m;
}

static void close_msg(struct wr *w, struct msg m)
{
	size_t n, k = 0, len;
	uint8_t b[10];

	if (w->over || !m.body)
		return;
	len = n = (size_t)(w->p - m.body);
	do {
		b[k] = (uint8_t)((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
		k++;
	} while ((n >>= 7));
	if (k > m.room) {
		w->over = true;
		return;
	}
	memcpy(m.body - m.room, b, k);
	if (k < m.room) {
		memmove(m.body - m.room + k, m.body, len);
		w->p -= m.room - k;
	}
}

static void put_process(struct wr *w, unsigned int field,
			const struct cw_process *pr)
{
	struct msg body = open_msg(w, field, 2);

	put_u(w, 1, pr->tgid);
	put_u(w, 2, pr->start_ns);
	put_u(w, 3, pr->cgroup_id);
	put_str(w, 4, pr->comm, sizeof(pr->comm));
	put_str(w, 5, pr->cmdline, sizeof(pr->cmdline));
	put_str(w, 6, pr->container, sizeof(pr->container));
	put_str(w, 7, pr->pod, sizeof(pr->pod));
	put_str(w, 8, pr->container_name, sizeof(pr->container_name));
	put_str(w, 9, pr->pod_name, sizeof(pr->pod_name));
	put_str(w, 10, pr->pod_ns, sizeof(pr->pod_ns));
	put_str(w, 11, pr->workload_kind, sizeof(pr->workload_kind));
	put_str(w, 12, pr->workload, sizeof(pr->workload));
	close_msg(w, body);
}

static size_t addr_bytes(const struct cw_addr *a)
{
	return a->family == 6 ? 16 : a->family == 4 ? 4 : 0;
}

/* A record's histogram: its bytes (none when len is past the room, as
 * common/wire.c does). */
static void put_hist(struct wr *w, unsigned int field,
		     const struct cw_rec_hist *h)
{
	put_bytes(w, field, h->b, h->len <= CW_REC_HIST_MAX ? h->len : 0);
}

static void put_conn(struct wr *w, const struct cw_conn_record *r)
{
	put_str(w, 1, r->host, sizeof(r->host));
	put_u(w, 2, r->netns);
	put_u(w, 3, r->cookie);
	put_u(w, 4, r->protocol);
	put_u(w, 5, r->role);
	put_u(w, 6, r->flags);
	put_bytes(w, 7, r->laddr.bytes, addr_bytes(&r->laddr));
	put_u(w, 8, r->lport);
	put_bytes(w, 9, r->raddr.bytes, addr_bytes(&r->raddr));
	put_u(w, 10, r->rport);
	put_u(w, 11, r->bytes_out);
	put_u(w, 12, r->bytes_in);
	put_u(w, 13, r->calls_out);
	put_u(w, 14, r->calls_in);
	put_u(w, 15, r->msgs_out);
	put_u(w, 16, r->msgs_in);
	put_fixed64(w, 17, r->first_ns);
	put_fixed64(w, 18, r->last_ns);
	put_u(w, 19, r->retrans);
	put_u(w, 20, r->srtt_us);
	put_u(w, 21, r->seq);
	put_process(w, 22, &r->proc);
	put_str(w, 23, r->boot_id, sizeof(r->boot_id));
	put_u(w, 24, r->sampled_msgs_out);
	put_u(w, 25, r->sampled_msgs_in);
	put_u(w, 26, r->sampled_ppm);
	put_u(w, 30, r->connect_us);
	put_u(w, 31, r->fail);
	put_u(w, 32, r->resets_in);
	put_u(w, 33, r->resets_out);
	put_hist(w, 34, &r->rtt);
	put_hist(w, 35, &r->xchg);
	put_hist(w, 36, &r->xchg_first);
	put_u(w, 37, r->xchg_pipelined);
}

/* ---- the node memo (struct cw_wire_memo) ------------------------------- */

struct cw_wire_memo_slot {
	const struct cw_edge_node *n; /* NULL: empty */
	uint32_t off, len;	      /* its body in the memo's bytes */
};

/* Direct-mapped slots (a partition's nodes: thousands); past MEMO_BYTES
 * of bodies it starts again (a writer whose nodes keep missing must not
 * grow it without end). */
#define MEMO_SLOTS 16384
#define MEMO_BYTES (4u << 20)

void cw_wire_memo_release(struct cw_wire_memo *m)
{
	free(m->slot);
	free(m->bytes);
	memset(m, 0, sizeof(*m));
}

/* What names a node, read from its bytes: equal nodes hash alike. */
static size_t node_hash(const struct cw_edge_node *n)
{
	uint64_t h, a, b;

	memcpy(&a, n->host, 8);
	memcpy(&b, n->host + 8, 8);
	h = (a ^ (uint64_t)n->kind << 56) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ b ^ (uint64_t)n->netns << 32 ^ n->port) *
	    0xff51afd7ed558ccdULL;
	h = (h ^ (uint64_t)n->proc.tgid ^ n->proc.start_ns) *
	    0xc4ceb9fe1a85ec53ULL;
	memcpy(&a, n->addr.bytes + 8, 8);
	h ^= a;
	return (size_t)(h ^ h >> 29) & (MEMO_SLOTS - 1);
}

/* n's slot (empty or another node's), or NULL (no memo, no memory). */
static struct cw_wire_memo_slot *memo_slot(struct cw_wire_memo *m,
					   const struct cw_edge_node *n)
{
	if (!m)
		return NULL;
	if (!m->slot && !(m->slot = calloc(MEMO_SLOTS, sizeof(*m->slot))))
		return NULL;
	return &m->slot[node_hash(n)];
}

/* Keep n's body (len bytes at b) in slot s; out of memory, not kept. */
static void memo_keep(struct cw_wire_memo *m, struct cw_wire_memo_slot *s,
		      const struct cw_edge_node *n, const uint8_t *b,
		      size_t len)
{
	uint8_t *nb;
	size_t cap;

	if (m->len + len > MEMO_BYTES) {
		memset(m->slot, 0, MEMO_SLOTS * sizeof(*m->slot));
		m->len = 0;
	}
	if (m->len + len > m->cap) {
		cap = m->cap ? m->cap * 2 : 64 << 10;
		while (cap < m->len + len)
			cap *= 2;
		nb = realloc(m->bytes, cap);
		if (!nb)
			return;
		m->bytes = nb;
		m->cap = cap;
	}
	memcpy(m->bytes + m->len, b, len);
	*s = (struct cw_wire_memo_slot){n, (uint32_t)m->len, (uint32_t)len};
	m->len += len;
}

/* An EdgeNode; with a memo, one met before is copied from it. */
static void put_node(struct wr *w, unsigned int field,
		     const struct cw_edge_node *n, struct cw_wire_memo *memo)
{
	struct cw_wire_memo_slot *s = memo_slot(memo, n);
	struct msg body;
	size_t len;

	if (s && s->n && (s->n == n || !memcmp(s->n, n, sizeof(*n)))) {
		put_tag(w, field, 2);
		put_varint(w, s->len);
		put_raw(w, memo->bytes + s->off, s->len);
		return;
	}
	body = open_msg(w, field, 2);
	put_u(w, 1, n->kind);
	put_str(w, 2, n->host, sizeof(n->host));
	put_u(w, 3, n->netns);
	if (n->kind == CW_EDGE_NODE_PROCESS)
		put_process(w, 4, &n->proc);
	put_bytes(w, 5, n->addr.bytes, addr_bytes(&n->addr));
	put_u(w, 6, n->port);
	len = w->over || !body.body ? 0 : (size_t)(w->p - body.body);
	close_msg(w, body);
	if (s && !w->over && body.body)
		memo_keep(memo, s, n, w->p - len, len);
}

/* EdgeBucket 1-7, and EdgeSet 1-7: where an edge's set is. */
static void put_edge_where(struct wr *w, const struct cw_wire_edge *e)
{
	put_str(w, 1, e->group, sizeof(e->group));
	put_str(w, 2, e->topic, sizeof(e->topic));
	put_u(w, 3, (uint32_t)e->partition);
	put_u(w, 4, (uint64_t)e->offset);
	put_fixed64(w, 5, e->bucket_ns);
	put_u(w, 6, e->width_ns);
	put_u(w, 7, e->sealed);
}

/* An EdgeBucket with these nodes (e's own not read); in an EdgeSet
 * (!whole) its own fields only. */
static void put_edge_nodes(struct wr *w, const struct cw_wire_edge *e,
			   const struct cw_edge_node *client,
			   const struct cw_edge_node *server, bool whole,
			   struct cw_wire_memo *memo)
{
	if (whole)
		put_edge_where(w, e);
	put_node(w, 8, client, memo);
	put_node(w, 9, server, memo);
	put_u(w, 10, e->protocol);
	put_u(w, 11, e->t.conns);
	put_u(w, 12, e->t.paired);
	put_u(w, 13, e->t.bytes_c2s);
	put_u(w, 14, e->t.bytes_s2c);
	put_u(w, 15, e->t.msgs_c2s);
	put_u(w, 16, e->t.msgs_s2c);
	put_s64(w, 17, e->t.diff_c2s);
	put_s64(w, 18, e->t.diff_s2c);
	put_fixed64(w, 19, e->t.first_ns);
	put_fixed64(w, 20, e->t.last_ns);
	put_u(w, 21, e->t.retrans);
	put_u(w, 22, e->t.est_conns);
	put_u(w, 23, e->t.sampled_bytes);
	put_u(w, 24, e->t.has_sampled != 0);
	if (whole) {
		put_u(w, 25, e->set_size);
		put_u(w, 26, e->set_index);
	}
	put_u(w, 27, e->h.conns_refused);
	put_u(w, 28, e->h.conns_timeout);
	put_u(w, 29, e->h.resets_by_client);
	put_u(w, 30, e->h.resets_by_server);
	put_u(w, 31, e->h.xchg_pipelined);
	put_hist(w, 32, &e->h.connect);
	put_hist(w, 33, &e->h.rtt);
	put_hist(w, 34, &e->h.client);
	put_hist(w, 35, &e->h.client_first);
	put_hist(w, 36, &e->h.server);
}

static void put_edge(struct wr *w, const struct cw_wire_edge *e, bool whole,
		     struct cw_wire_memo *memo)
{
	put_edge_nodes(w, e, &e->client, &e->server, whole, memo);
}

static void put_edge_msg(struct wr *w, unsigned int field,
			 const struct cw_wire_edge *e, struct cw_wire_memo *memo)
{
	struct msg body = open_msg(w, field, 2);

	put_edge(w, e, true, memo);
	close_msg(w, body);
}

static void put_delta(struct wr *w, const struct cw_end_delta *d)
{
	struct msg body = open_msg(w, 13, 2);

	put_u(w, 1, d->end);
	put_u(w, 2, d->bucket_ns);
	put_u(w, 3, d->bytes_out);
	put_u(w, 4, d->bytes_in);
	put_u(w, 5, d->msgs_out);
	put_u(w, 6, d->msgs_in);
	put_u(w, 7, d->retrans);
	put_fixed64(w, 8, d->last_ns);
	put_u(w, 9, d->connect_us);
	put_u(w, 10, d->fail);
	put_u(w, 11, d->resets_in);
	put_u(w, 12, d->resets_out);
	put_u(w, 13, d->xchg_pipelined);
	put_hist(w, 14, &d->rtt);
	put_hist(w, 15, &d->xchg);
	put_hist(w, 16, &d->xchg_first);
	close_msg(w, body);
}

static void put_buckets(struct wr *w, const struct cw_bucket_state *k)
{
	struct msg body = open_msg(w, 15, 2);

	put_u(w, 1, k->width_ns);
	put_u(w, 2, k->ttl_ns);
	put_u(w, 3, k->lateness_ns);
	put_fixed64(w, 4, k->watermark_ns);
	put_fixed64(w, 5, k->sealed_ns);
	put_u(w, 6, k->gone_ends);
	put_u(w, 7, k->gone_paired);
	put_u(w, 8, k->gone_unpaired);
	put_u(w, 9, k->late);
	put_u(w, 10, k->dormant);
	put_u(w, 11, k->revived);
	put_u(w, 12, k->sealed_records);
	close_msg(w, body);
}

/* A checkpoint chunk; repeated numbers are packed, as proto3 has them. */
static void put_state(struct wr *w, const struct cw_wire_state *st)
{
	struct msg body;
	size_t i;

	put_str(w, 1, st->group, sizeof(st->group));
	put_str(w, 2, st->topic, sizeof(st->topic));
	put_u(w, 3, (uint32_t)st->partition);
	put_u(w, 4, (uint64_t)st->offset);
	put_fixed64(w, 5, st->checkpoint);
	put_u(w, 6, st->chunk);
	put_u(w, 7, st->chunks);
	for (i = 0; i < st->n; i++) {
		body = open_msg(w, 8, 2);
		put_conn(w, &st->ends[i]);
		close_msg(w, body);
	}
	put_u(w, 9, st->records);
	put_u(w, 10, st->stale);
	put_u(w, 11, st->lost);
	if (st->end_flags && st->n) {
		body = open_msg(w, 12, 5);
		for (i = 0; i < st->n; i++)
			put_varint(w, st->end_flags[i]);
		close_msg(w, body);
	}
	for (i = 0; i < st->ndeltas; i++)
		put_delta(w, &st->deltas[i]);
	for (i = 0; i < st->nedges; i++)
		put_edge_msg(w, 14, &st->edges[i], NULL);
	if (st->bk.width_ns)
		put_buckets(w, &st->bk);
}

/*
 * The Envelope around one of a connection record, an edge bucket and a
 * checkpoint chunk, into b's cap bytes: 0 with *len, or 1 (no room:
 * never, with the callers' caps).
 */
static int put_into(const struct cw_conn_record *conn,
		    const struct cw_wire_edge *edge,
		    const struct cw_wire_state *state, uint8_t *b, size_t cap,
		    size_t *len)
{
	struct wr w;
	struct msg body;

	w.p = b;
	w.end = b + cap;
	w.over = false;
	put_u(&w, 1, CW_WIRE_VERSION);
	if (conn) {
		body = open_msg(&w, 10, 2);
		put_conn(&w, conn);
	} else if (edge) {
		body = open_msg(&w, 15, 2);
		put_edge(&w, edge, true, NULL);
	} else {
		body = open_msg(&w, 16, 5);
		put_state(&w, state);
	}
	close_msg(&w, body);
	if (w.over)
		return 1;
	*len = (size_t)(w.p - b);
	return 0;
}

/* The same in a buffer of its own: 0, -1 (out of memory), or 1. */
static int put_envelope(const struct cw_conn_record *conn,
			const struct cw_wire_edge *edge,
			const struct cw_wire_state *state, size_t cap,
			uint8_t **buf, size_t *len)
{
	uint8_t *b = malloc(cap), *kept;
	int ret;

	if (!b)
		return -1;
	ret = put_into(conn, edge, state, b, cap, len);
	if (ret) {
		free(b);
		return ret;
	}
	/* Buffers may wait long in a producer's queue: keep only what is
	 * used (a shrink in place, no copy; should it fail, the whole). */
	kept = *len < cap ? realloc(b, *len) : NULL;
	*buf = kept ? kept : b;
	return 0;
}

/* Every byte of a struct's strings and numbers fits in its size, with
 * room for each field's tag and length beside. */
#define ROOM(type) (sizeof(type) + 256)

int cw_wire_encode_conn_fast(const struct cw_conn_record *r, uint8_t **buf,
			     size_t *len)
{
	return put_envelope(r, NULL, NULL, ROOM(struct cw_conn_record) + 64,
			    buf, len);
}

int cw_wire_encode_edge_fast(const struct cw_wire_edge *e, uint8_t **buf,
			     size_t *len)
{
	return put_envelope(NULL, e, NULL, CW_WIRE_EDGE_ROOM, buf, len);
}

int cw_wire_encode_edge_to(const struct cw_wire_edge *e,
			   uint8_t buf[CW_WIRE_EDGE_ROOM], size_t *len)
{
	_Static_assert(CW_WIRE_EDGE_ROOM >= ROOM(struct cw_wire_edge) + 64,
		       "CW_WIRE_EDGE_ROOM holds every edge bucket");
	return put_into(NULL, e, NULL, buf, CW_WIRE_EDGE_ROOM, len) ? -1 : 0;
}

int cw_wire_encode_state_fast(const struct cw_wire_state *st, uint8_t **buf,
			      size_t *len)
{
	/* Beyond these protobuf-c's way refuses the chunk: it says why. */
	if (st->n > CW_WIRE_STATE_MAX || st->ndeltas > CW_WIRE_STATE_MAX * 4 ||
	    st->nedges > CW_WIRE_STATE_MAX)
		return 1;
	return put_envelope(NULL, NULL, st,
			    ROOM(struct cw_wire_state) +
				    st->n * (ROOM(struct cw_conn_record) + 6) +
				    st->ndeltas * ROOM(struct cw_end_delta) +
				    st->nedges * ROOM(struct cw_wire_edge),
			    buf, len);
}

/*
 * EdgeSet (Envelope field 19): version, then the set's body, its length
 * in five bytes of room until cw_wire_edges_end() knows it.
 */
void cw_wire_edges_begin(struct cw_wire_edges_put *p, uint8_t *buf, size_t cap,
			 const struct cw_wire_edge *head)
{
	struct wr w = {buf, buf + cap, false};
	struct msg body;

	put_u(&w, 1, CW_WIRE_VERSION);
	body = open_msg(&w, 19, 5);
	put_edge_where(&w, head);
	put_u(&w, 8, head->set_size);
	put_u(&w, 9, head->set_index);
	p->buf = buf;
	p->end = buf + cap;
	/* No room (cap below CW_WIRE_EDGES_ROOM): nothing will fit, and
	 * the end makes no record. */
	p->p = w.over ? p->end : w.p;
	p->body = w.over ? NULL : body.body;
	p->n = 0;
	p->memo = NULL;
}

int cw_wire_edges_add(struct cw_wire_edges_put *p, const struct cw_wire_edge *e)
{
	return cw_wire_edges_add_nodes(p, e, &e->client, &e->server);
}

int cw_wire_edges_add_nodes(struct cw_wire_edges_put *p,
			    const struct cw_wire_edge *e,
			    const struct cw_edge_node *client,
			    const struct cw_edge_node *server)
{
	struct wr w = {p->p, p->end, false};
	struct msg body = open_msg(&w, 10, 2);

	put_edge_nodes(&w, e, client, server, false, p->memo);
	close_msg(&w, body);
	if (w.over || !p->body)
		return 1;
	p->p = w.p;
	p->n++;
	return 0;
}

size_t cw_wire_edges_end(struct cw_wire_edges_put *p)
{
	struct wr w = {p->p, p->end, false};

	if (!p->body || !p->n)
		return 0;
	close_msg(&w, (struct msg){p->body, 5});
	return w.over ? 0 : (size_t)(w.p - p->buf);
}

int cw_wire_encode_edges_fast(const struct cw_wire_edges *s, uint8_t **buf,
			      size_t *len)
{
	struct cw_wire_edges_put p;
	size_t i, cap;
	uint8_t *b, *r;

	if (!s->n || s->n > CW_WIRE_EDGES_MAX)
		return 1; /* protobuf-c's way writes what it is given */
	cap = CW_WIRE_EDGES_ROOM + s->n * (CW_WIRE_EDGE_ROOM + 8);
	b = malloc(cap);
	if (!b)
		return -1;
	cw_wire_edges_begin(&p, b, cap, &s->e[0]);
	for (i = 0; i < s->n; i++)
		if (cw_wire_edges_add(&p, &s->e[i])) {
			free(b);
			return 1;
		}
	*len = cw_wire_edges_end(&p);
	r = realloc(b, *len ? *len : 1);
	*buf = r ? r : b;
	return 0;
}
