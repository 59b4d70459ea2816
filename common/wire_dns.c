// SPDX-License-Identifier: MIT
/*
 * The DnsName record (Envelope field 18) in the codec: encoded, decoded
 * with every field checked, and as JSON for `causeway dump` and the
 * agent's JSON lines.  The switches of wire.c, wire_decode.c and
 * wire_json.c call these.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dns.h"
#include "common/jsonw.h"
#include "common/wire.h"
#include "common/wire_pb.h"

_Static_assert(CW_WIRE_DNS_NAME_MAX == CW_DNS_NAME_MAX,
	       "a DnsName holds any name common/dns.c writes");

/* As they are written: cut at the array's end if unterminated. */
static char *term(const char *s, size_t cap, char *tmp)
{
	size_t n = strnlen(s, cap);

	memcpy(tmp, s, n < cap ? n : cap - 1);
	tmp[n < cap ? n : cap - 1] = 0;
	return tmp;
}

int cw_wire_dns_encode(pb_envelope *env, const struct cw_wire_dns *d,
		       uint8_t **buf, size_t *len)
{
	size_t alen = d->addr.family == 6 ? 16 : d->addr.family == 4 ? 4 : 0;
	struct cw_wire_dns tmp;
	pb_dns r;
	size_t n;

	if (!alen)
		return -1;
	causeway__wire__dns_name__init(&r);
	r.host = term(d->host, sizeof(d->host), tmp.host);
	r.boot_id = term(d->boot_id, sizeof(d->boot_id), tmp.boot_id);
	r.name = term(d->name, sizeof(d->name), tmp.name);
	r.addr.data = (uint8_t *)d->addr.bytes;
	r.addr.len = alen;
	r.ttl_s = d->ttl_s;
	r.time_ns = d->time_ns;
	r.seq = d->seq;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_DNS;
	env->dns = &r;
	n = protobuf_c_message_get_packed_size(&env->base);
	*buf = malloc(n ? n : 1);
	if (!*buf)
		return -1;
	*len = protobuf_c_message_pack(&env->base, *buf);
	return 0;
}

bool cw_wire_dns_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return false;
	return true;
}

static int field(char *err, size_t errlen, const char *what, const char *s,
		 char *dst, size_t cap)
{
	size_t n = s ? strlen(s) : 0;

	if (n >= cap) {
		snprintf(err, errlen,
			 "field '%s' is %zu bytes long (at most %zu)", what, n,
			 cap - 1);
		return -1;
	}
	memcpy(dst, s ? s : "", n + 1);
	return 0;
}

int cw_wire_dns_from_pb(const pb_dns *r, struct cw_wire_dns *d, char *err,
			size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (!r ||
	    field(err, errlen, "host", r->host, d->host, sizeof(d->host)) ||
	    field(err, errlen, "boot_id", r->boot_id, d->boot_id,
		  sizeof(d->boot_id)) ||
	    field(err, errlen, "name", r->name, d->name, sizeof(d->name)))
		return CW_WIRE_EMALFORMED;
	if (!cw_wire_dns_name_ok(d->name) || !cw_wire_dns_name_ok(d->host)) {
		snprintf(err, errlen,
			 "DNS name or host empty or not printable "
			 "ASCII");
		return CW_WIRE_EMALFORMED;
	}
	if (r->addr.len != 4 && r->addr.len != 16) {
		snprintf(err, errlen, "DNS address of %zu bytes (want 4 or 16)",
			 r->addr.len);
		return CW_WIRE_EMALFORMED;
	}
	d->addr.family = r->addr.len == 4 ? 4 : 6;
	memcpy(d->addr.bytes, r->addr.data, r->addr.len);
	d->ttl_s = r->ttl_s;
	d->time_ns = r->time_ns;
	d->seq = r->seq;
	return CW_WIRE_DNS;
}

void cw_wire_dns_json(struct cw_jsonw *w, const struct cw_wire_dns *d)
{
	char a[64];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "dns");
	cw_jsonw_str(w, "host", d->host);
	if (d->boot_id[0])
		cw_jsonw_str(w, "boot_id", d->boot_id);
	cw_jsonw_u64(w, "seq", d->seq);
	cw_jsonw_str(w, "addr", cw_addr_str(&d->addr, a, sizeof(a)));
	cw_jsonw_str(w, "name", d->name);
	cw_jsonw_u64(w, "ttl_s", d->ttl_s);
	cw_jsonw_u64(w, "time_ns", d->time_ns);
	cw_jsonw_obj_close(w);
}
