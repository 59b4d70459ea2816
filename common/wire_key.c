// SPDX-License-Identifier: MIT
/*
 * Record keys (which partition a record goes to) and the count of records
 * a reader skipped, by reason: the parts of common/wire.h that need no
 * protobuf.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/sample_run.h"
#include "common/wire.h"

static int endpoint_cmp(const struct cw_addr *a, uint16_t aport,
			const struct cw_addr *b, uint16_t bport)
{
	int c = cw_addr_cmp(a, b);

	if (c)
		return c;
	return aport < bport ? -1 : aport > bport;
}

static const char *endpoint_str(const struct cw_addr *a, uint16_t port,
				char *buf, size_t len)
{
	char s[64];

	cw_addr_str(a, s, sizeof(s));
	snprintf(buf, len, a->family == 6 ? "[%s]:%u" : "%s:%u", s, port);
	return buf;
}

static int endpoints_key(int protocol, const struct cw_addr *lo,
			 uint16_t loport, const struct cw_addr *hi,
			 uint16_t hiport, char *buf, size_t len)
{
	char a[64], b[64], proto[8];
	int n;

	if (endpoint_cmp(lo, loport, hi, hiport) > 0) {
		const struct cw_addr *ta = lo;
		uint16_t tp = loport;

		lo = hi, loport = hiport;
		hi = ta, hiport = tp;
	}
	if (protocol == 6 || protocol == 17)
		snprintf(proto, sizeof(proto), "%s", cw_proto_name(protocol));
	else
		snprintf(proto, sizeof(proto), "ip%u", protocol);
	n = snprintf(buf, len, "%s:%s-%s", proto,
		     endpoint_str(lo, loport, a, sizeof(a)),
		     endpoint_str(hi, hiport, b, sizeof(b)));
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int cw_wire_timing_conn_key(const struct cw_timing_record *t, char *buf,
			    size_t len)
{
	return endpoints_key(t->protocol, &t->laddr, t->lport, &t->raddr,
			     t->rport, buf, len);
}

int cw_wire_key(const struct cw_wire_msg *m, char *buf, size_t len)
{
	int n;

	if (!len)
		return -1;
	buf[0] = 0;
	switch (m->kind) {
	case CW_WIRE_CONN:
		return cw_wire_conn_key(&m->conn, buf, len);
	case CW_WIRE_TIMING:
		n = snprintf(buf, len, "%" PRIu64, m->timing.slot_ns);
		break;
	case CW_WIRE_MSGS:
		n = snprintf(buf, len, "%" PRIu64, m->msgs.slot_ns);
		break;
	case CW_WIRE_DNS:
		n = snprintf(buf, len, "%.*s",
			     (int)strnlen(m->dns.host, sizeof(m->dns.host)),
			     m->dns.host);
		break;
	case CW_WIRE_SAMPLES:
		if (!m->samples.run)
			return -1;
		n = snprintf(buf, len, "%.*s/%.*s",
			     (int)strnlen(m->samples.run->host,
					  sizeof(m->samples.run->host)),
			     m->samples.run->host,
			     (int)strnlen(m->samples.run->dev,
					  sizeof(m->samples.run->dev)),
			     m->samples.run->dev);
		break;
	default:
		return 0;
	}
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int cw_wire_conn_key(const struct cw_conn_record *r, char *buf, size_t len)
{
	return endpoints_key(r->protocol, &r->laddr, r->lport, &r->raddr,
			     r->rport, buf, len);
}

void cw_wire_errors_count(struct cw_wire_errors *e, int err, const char *where,
			  const char *reason)
{
	unsigned int i =
		err < 0 && err >= -CW_WIRE_NERR ? (unsigned int)-err : 0;

	e->count[i]++;
	if (e->logged[i])
		return;
	e->logged[i] = true;
	cw_warn("skipping %s record%s%s%s%s (further ones are counted, not "
		"logged)",
		i ? cw_wire_strerror(err) : "bad", where ? " at " : "",
		where ? where : "", reason && *reason ? ": " : "",
		reason ? reason : "");
}

uint64_t cw_wire_errors_total(const struct cw_wire_errors *e)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i <= CW_WIRE_NERR; i++)
		n += e->count[i];
	return n;
}

void cw_wire_errors_report(const struct cw_wire_errors *e, const char *what)
{
	char buf[256];
	size_t off = 0;
	int i;

	if (!cw_wire_errors_total(e))
		return;
	for (i = 0; i <= CW_WIRE_NERR && off < sizeof(buf); i++) {
		if (!e->count[i])
			continue;
		off += snprintf(buf + off, sizeof(buf) - off,
				"%s%" PRIu64 " %s", off ? ", " : "",
				e->count[i], i ? cw_wire_strerror(-i) : "bad");
	}
	cw_warn("%s: skipped %s", what, buf);
}
