// SPDX-License-Identifier: MIT
/*
 * A connection record read straight from its bytes into the record, for
 * the correlator's hot path: protobuf-c's unpack allocates every nested
 * message and string (a dozen mallocs and frees a record) only to have
 * them copied out again.
 *
 * It reads the one shape agents write: an Envelope of a version and a
 * ConnRecord, each known field at most once, with its own wire type, in
 * canonical varints, and names of printable ASCII within their bounds.
 * Anything else (a field twice, which protobuf merges; a wrong wire type;
 * a name that needs cleaning or is too long; a bound broken) is declined,
 * and cw_wire_decode() then takes protobuf-c's way, which gives the
 * verdict and the error.  So this path is never the one that judges: what
 * it accepts decodes to the very bytes protobuf-c's way gives, which
 * tests/fuzz/fuzz_wire.c checks on every input it tries.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/hist.h"
#include "common/wire.h"

struct rd {
	const uint8_t *p, *end;
};

/* A canonical varint of at most 10 bytes (the tenth being 0 or 1). */
static bool varint_long(struct rd *r, uint64_t *v)
{
	const uint8_t *p = r->p;
	unsigned int shift = 0;
	uint64_t x = 0;
	uint8_t b;

	if (r->end - p >= 10) {
		/* Room for the longest: no bound to test on each byte. */
		do {
			b = *p++;
			x |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while ((b & 0x80) && shift < 70);
		if ((b & 0x80) || (shift == 70 && b > 1))
			return false;
	} else {
		do {
			if (p == r->end || shift > 63)
				return false;
			b = *p++;
			if (shift == 63 && b > 1)
				return false;
			x |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while (b & 0x80);
	}
	if (!b && shift > 7)
		return false; /* a needless trailing zero byte */
	r->p = p;
	*v = x;
	return true;
}

/* Most are one byte, many two: those cases inline. */
static inline __attribute__((always_inline)) bool varint(struct rd *r,
							 uint64_t *v)
{
	if (r->end - r->p >= 2) {
		if (r->p[0] < 0x80) {
			*v = *r->p++;
			return true;
		}
		if (r->p[1] < 0x80 && r->p[1]) {
			*v = (uint64_t)(r->p[0] & 0x7f) | (uint64_t)r->p[1] << 7;
			r->p += 2;
			return true;
		}
	} else if (r->p < r->end && *r->p < 0x80) {
		*v = *r->p++;
		return true;
	}
	return varint_long(r, v);
}

static bool fixed64(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	int i;

	if (r->end - r->p < 8)
		return false;
	for (i = 7; i >= 0; i--)
		x = x << 8 | r->p[i];
	r->p += 8;
	*v = x;
	return true;
}

/* A length-delimited field's bytes, as a reader of their own. */
static inline __attribute__((always_inline)) bool delimited(struct rd *r,
							    struct rd *sub)
{
	uint64_t n;

	if (!varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return false;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return true;
}

/* An unknown field skipped, as protobuf-c keeps and ignores it. */
static bool skip(struct rd *r, unsigned int wire)
{
	struct rd sub;
	uint64_t v;

	switch (wire) {
	case 0:
		return varint(r, &v);
	case 1:
		return fixed64(r, &v);
	case 2:
		return delimited(r, &sub);
	case 5:
		if (r->end - r->p < 4)
			return false;
		r->p += 4;
		return true;
	}
	return false; /* groups, and the wire types that do not exist */
}

/*
 * Are n bytes all printable ASCII (0x20 to 0x7e)?  Eight at a time: a
 * word has a byte below 0x20 when subtracting 0x20 from each borrows into
 * a byte whose top bit was clear, and one above 0x7e when adding 1 to
 * each, or the byte itself, sets a top bit.  A carry or borrow between
 * bytes starts only at a byte that is itself outside, so neither test
 * ever says yes of a word that has none.
 */
static bool printable(const uint8_t *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL, tops = ones * 0x80;
	uint64_t w, bad = 0;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		bad |= ((w - ones * 0x20) & ~w) | (w + ones) | w;
	}
	if (bad & tops)
		return false;
	for (; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/* A name of printable ASCII shorter than cap, copied with its NUL. */
static bool name(struct rd *r, char *dst, size_t cap)
{
	struct rd s;
	size_t n;

	if (!delimited(r, &s))
		return false;
	n = (size_t)(s.end - s.p);
	if (n >= cap || !printable(s.p, n))
		return false;
	memcpy(dst, s.p, n);
	dst[n] = 0;
	return true;
}

static bool addr(struct rd *r, struct cw_addr *a)
{
	struct rd s;
	size_t n;

	if (!delimited(r, &s))
		return false;
	n = (size_t)(s.end - s.p);
	if (n != 0 && n != 4 && n != 16)
		return false;
	memcpy(a->bytes, s.p, n);
	a->family = n == 16 ? 6 : n == 4 ? 4 : 0;
	return true;
}

/* The field's tag: its number and wire type, once per message each. */
static inline __attribute__((always_inline)) bool tag(struct rd *r, uint64_t *seen, unsigned int *field,
		unsigned int *wire)
{
	uint64_t t;

	if (!varint(r, &t) || t >> 3 == 0 || t >> 3 > 536870911)
		return false;
	*field = (unsigned int)(t >> 3);
	*wire = (unsigned int)(t & 7);
	if (*field < 64) {
		if (*seen >> *field & 1)
			return false;
		*seen |= 1ULL << *field;
	}
	return true;
}

#define WANT(w)                                                                \
	do {                                                                   \
		if (wire != (w))                                               \
			return false;                                          \
	} while (0)

static bool process(struct rd *r, struct cw_process *pr)
{
	unsigned int field, wire;
	uint64_t seen = 0, v;
	bool ok;

	while (r->p < r->end) {
		if (!tag(r, &seen, &field, &wire))
			return false;
		if (field <= 3) {
			WANT(0);
			if (!varint(r, &v) || (field == 1 && v > UINT32_MAX))
				return false;
			if (field == 1)
				pr->tgid = (uint32_t)v;
			else if (field == 2)
				pr->start_ns = v;
			else
				pr->cgroup_id = v;
			continue;
		}
		if (field > 12) {
			if (!skip(r, wire))
				return false;
			continue;
		}
		WANT(2);
		switch (field) {
		case 4:
			ok = name(r, pr->comm, sizeof(pr->comm));
			break;
		case 5:
			ok = name(r, pr->cmdline, sizeof(pr->cmdline));
			break;
		case 6:
			ok = name(r, pr->container, sizeof(pr->container));
			break;
		case 7:
			ok = name(r, pr->pod, sizeof(pr->pod));
			break;
		case 8:
			ok = name(r, pr->container_name,
				  sizeof(pr->container_name));
			break;
		case 9:
			ok = name(r, pr->pod_name, sizeof(pr->pod_name));
			break;
		case 10:
			ok = name(r, pr->pod_ns, sizeof(pr->pod_ns));
			break;
		case 11:
			ok = name(r, pr->workload_kind,
				  sizeof(pr->workload_kind));
			break;
		default:
			ok = name(r, pr->workload, sizeof(pr->workload));
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* ConnRecord's varint fields: where each goes and its bound. */
static bool conn_varint(struct cw_conn_record *c, unsigned int field,
			uint64_t v)
{
	switch (field) {
	case 2:
		c->netns = (uint32_t)v;
		return v <= UINT32_MAX;
	case 3:
		c->cookie = v;
		return true;
	case 4:
		c->protocol = (uint8_t)v;
		return v <= UINT8_MAX;
	case 5:
		c->role = (uint8_t)v;
		return v <= UINT8_MAX;
	case 6:
		c->flags = (uint32_t)v;
		return v <= UINT32_MAX;
	case 8:
		c->lport = (uint16_t)v;
		return v <= UINT16_MAX;
	case 10:
		c->rport = (uint16_t)v;
		return v <= UINT16_MAX;
	case 11:
		c->bytes_out = v;
		return true;
	case 12:
		c->bytes_in = v;
		return true;
	case 13:
		c->calls_out = v;
		return true;
	case 14:
		c->calls_in = v;
		return true;
	case 15:
		c->msgs_out = v;
		return true;
	case 16:
		c->msgs_in = v;
		return true;
	case 19:
		c->retrans = (uint32_t)v;
		return v <= UINT32_MAX;
	case 20:
		c->srtt_us = (uint32_t)v;
		return v <= UINT32_MAX;
	case 21:
		c->seq = v;
		return true;
	case 24:
		c->sampled_msgs_out = v;
		return true;
	case 25:
		c->sampled_msgs_in = v;
		return true;
	case 26:
		c->sampled_ppm = v > CW_PPM ? CW_PPM : (uint32_t)v;
		return v <= UINT32_MAX;
	case 30:
		c->connect_us = (uint32_t)v;
		return v <= UINT32_MAX;
	case 31:
		c->fail = (uint8_t)v;
		return v <= UINT8_MAX;
	case 32:
		c->resets_in = (uint32_t)v;
		return v <= UINT32_MAX;
	case 33:
		c->resets_out = (uint32_t)v;
		return v <= UINT32_MAX;
	case 37:
		c->xchg_pipelined = v;
		return true;
	}
	return false;
}

/* A histogram (fields 34-36): well formed and within its room. */
static bool hist(struct rd *r, struct cw_rec_hist *h)
{
	struct rd s;
	size_t n;

	if (!delimited(r, &s))
		return false;
	n = (size_t)(s.end - s.p);
	if (!cw_rec_hist_valid(s.p, n))
		return false;
	memcpy(h->b, s.p, n);
	h->len = (uint16_t)n;
	return true;
}

static bool conn(struct rd *r, struct cw_conn_record *c)
{
	unsigned int field, wire;
	uint64_t seen = 0, v;
	struct rd sub;

	while (r->p < r->end) {
		if (!tag(r, &seen, &field, &wire))
			return false;
		switch (field) {
		case 1:
			WANT(2);
			if (!name(r, c->host, sizeof(c->host)))
				return false;
			break;
		case 7:
		case 9:
			WANT(2);
			if (!addr(r, field == 7 ? &c->laddr : &c->raddr))
				return false;
			break;
		case 17:
		case 18:
			WANT(1);
			if (!fixed64(r,
				     field == 17 ? &c->first_ns : &c->last_ns))
				return false;
			break;
		case 22:
			WANT(2);
			if (!delimited(r, &sub) || !process(&sub, &c->proc))
				return false;
			break;
		case 23:
			WANT(2);
			if (!name(r, c->boot_id, sizeof(c->boot_id)))
				return false;
			break;
		case 34:
		case 35:
		case 36:
			WANT(2);
			if (!hist(r, field == 34   ? &c->rtt
				     : field == 35 ? &c->xchg
						   : &c->xchg_first))
				return false;
			break;
		default:
			if ((field > 26 && field < 30) || field > 37) {
				if (!skip(r, wire))
					return false;
				break;
			}
			WANT(0);
			if (!varint(r, &v) || !conn_varint(c, field, v))
				return false;
			break;
		}
	}
	return true;
}

int cw_wire_decode_conn_fast(const uint8_t *buf, size_t len,
			     struct cw_wire_msg *out)
{
	struct rd r, sub = {NULL, NULL};
	unsigned int field, wire;
	uint64_t seen = 0, v;

	if (!buf)
		return 0;
	r.p = buf;
	r.end = buf + len;
	while (r.p < r.end) {
		if (!tag(&r, &seen, &field, &wire))
			return 0;
		if (field == 1 && wire == 0) {
			if (!varint(&r, &v) || v != CW_WIRE_VERSION)
				return 0;
		} else if (field == 10 && wire == 2) {
			if (!delimited(&r, &sub))
				return 0;
		} else {
			return 0; /* another kind, or more than one */
		}
	}
	if (!(seen >> 1 & 1) || !sub.p)
		return 0;
	memset(&out->conn, 0, sizeof(out->conn));
	if (!conn(&sub, &out->conn))
		return 0;
	out->version = CW_WIRE_VERSION;
	out->kind = CW_WIRE_CONN;
	return CW_WIRE_CONN;
}
