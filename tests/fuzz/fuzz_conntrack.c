// fuzz-sources: common/log.c common/util.c common/htab.c common/record.c
// fuzz-sources: common/jsonw.c agent/nat.c
// fuzz-sources: common/hist.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the conntrack answers the agent reads.  The agent's
 * callback gets an entry that libnetfilter_conntrack has already parsed
 * from the kernel's netlink message (a malformed message never reaches it:
 * the library exits on one, "ctnetlink kernel ABI is broken"), so what is
 * ours to fuzz is reading that entry: any set of attributes present or
 * absent, with any values, against a question taken from the first bytes.
 * A reply is only "the entry asked for" when its protocol and original
 * ports are the question's, and an IPv4 question gets IPv4 addresses.
 */
#include <arpa/inet.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t take(struct input *in, void *out, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memset(out, 0, len);
	memcpy(out, in->p, k);
	in->p += k, in->n -= k;
	return k == len;
}

/* The attributes cw_nat_ct_reply reads, each set when its bit is. */
static const struct {
	enum nf_conntrack_attr attr;
	size_t len;
} attrs[] = {
	{ATTR_L4PROTO, 1},	  {ATTR_ORIG_PORT_SRC, 2},
	{ATTR_ORIG_PORT_DST, 2},  {ATTR_REPL_IPV4_SRC, 4},
	{ATTR_REPL_IPV4_DST, 4},  {ATTR_REPL_IPV6_SRC, 16},
	{ATTR_REPL_IPV6_DST, 16}, {ATTR_REPL_PORT_SRC, 2},
	{ATTR_REPL_PORT_DST, 2},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct cw_ct_tuple ask = {0};
	struct cw_ct_reply rep;
	struct nf_conntrack *ct;
	uint8_t q[6], v[16];
	uint16_t present;
	size_t i;

	if (!take(&in, q, sizeof(q)) || !take(&in, &present, 2))
		return 0;
	ask.src.family = ask.dst.family = q[0] & 1 ? 6 : 4;
	ask.protocol = q[1];
	ask.sport = (uint16_t)(q[2] << 8 | q[3]);
	ask.dport = (uint16_t)(q[4] << 8 | q[5]);
	ct = nfct_new();
	if (!ct)
		abort();
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		take(&in, v, attrs[i].len); /* short input: zeroes */
		if (present & (1u << i))
			nfct_set_attr_l(ct, attrs[i].attr, v, attrs[i].len);
	}
	memset(&rep, 0xa5, sizeof(rep));
	if (cw_nat_ct_reply(ct, &ask, &rep) == CW_CT_ANSWER_REPLY) {
		if (nfct_get_attr_u8(ct, ATTR_L4PROTO) != ask.protocol ||
		    ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_SRC)) !=
			    ask.sport ||
		    ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_DST)) !=
			    ask.dport)
			abort(); /* another entry taken for the one asked */
		if (ask.src.family == 4 &&
		    ((rep.src.family && rep.src.family != 4) ||
		     (rep.dst.family && rep.dst.family != 4)))
			abort(); /* an IPv4 question answered in IPv6 */
		if (!rep.src.family && !rep.dst.family)
			abort(); /* a reply with no address at all */
	}
	nfct_destroy(ct);
	return 0;
}
