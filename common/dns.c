// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dns.h"
#include "common/util.h"

#define HDR_LEN	  12
#define T_A	  1
#define T_CNAME	  5
#define T_AAAA	  28
#define C_IN	  1
#define MAX_CHAIN 16 /* names a question's CNAMEs may lead through */
#define MAX_JUMPS 64 /* compression pointers followed in one name */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put_char(char *out, size_t *o, uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		c = (uint8_t)(c - 'A' + 'a');
	if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	    c == '_')
		out[(*o)++] = (char)c;
	else
		*o += (size_t)snprintf(out + *o, 5, "\\%03u", c);
}

/*
 * The name at *off written into out (CW_DNS_NAME_MAX bytes), *off moved
 * past it where it sits (a pointer ends it).  A pointer must point before
 * itself, and a name holds at most 255 bytes on the wire: together with
 * MAX_JUMPS that bounds the walk whatever the message.
 */
static int read_name(const uint8_t *m, size_t len, size_t *off, char *out)
{
	size_t p = *off, wire = 1, o = 0;
	int jumps = 0;
	bool jumped = false;

	for (;;) {
		uint8_t l;

		if (p >= len)
			return -1;
		l = m[p];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			if (p + 1 >= len || ++jumps > MAX_JUMPS)
				return -1;
			to = (size_t)(l & 0x3f) << 8 | m[p + 1];
			if (to >= p)
				return -1;
			if (!jumped)
				*off = p + 2;
			jumped = true;
			p = to;
			continue;
		}
		if (l & 0xc0) /* 0x40 and 0x80: no longer defined */
			return -1;
		if (!l)
			break;
		wire += 1u + l;
		if (wire > 255 || p + 1 + l > len)
			return -1;
		if (o)
			out[o++] = '.';
		for (size_t i = 0; i < l; i++)
			put_char(out, &o, m[p + 1 + i]);
		p += 1u + l;
	}
	if (!jumped)
		*off = p + 1;
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	return 0;
}

struct rr {
	size_t name_off; /* where the owner's name starts */
	uint16_t type, class;
	uint32_t ttl;
	size_t rdata, rdlen;
};

/* The resource record at *off; *off moved past it. */
static int read_rr(const uint8_t *m, size_t len, size_t *off, struct rr *rr,
		   char *name)
{
	rr->name_off = *off;
	if (read_name(m, len, off, name) || len - *off < 10)
		return -1;
	rr->type = get16(m + *off);
	rr->class = get16(m + *off + 2);
	rr->ttl = (uint32_t)get16(m + *off + 4) << 16 | get16(m + *off + 6);
	rr->rdlen = get16(m + *off + 8);
	rr->rdata = *off + 10;
	if (rr->rdlen > len - rr->rdata)
		return -1;
	*off = rr->rdata + rr->rdlen;
	return 0;
}

/* Where name is in the chain, or -1. */
static int chain_index(char (*chain)[CW_DNS_NAME_MAX], size_t n,
		       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(chain[i], name))
			return (int)i;
	return -1;
}

/*
 * Follow the CNAMEs from the question's name (chain[0]) through the
 * answer section starting at off: every name an address may be owned by,
 * with the shortest TTL on the way to it (ttl[i]): the question's name
 * holds an address no longer than any link of its chain does.
 */
static int follow_cnames(const uint8_t *m, size_t len, size_t off,
			 unsigned int count, char (*chain)[CW_DNS_NAME_MAX],
			 uint32_t *ttl, size_t *n)
{
	char name[CW_DNS_NAME_MAX], target[CW_DNS_NAME_MAX];
	bool grew = true;

	while (grew && *n < MAX_CHAIN) {
		size_t p = off;

		grew = false;
		for (unsigned int i = 0; i < count && *n < MAX_CHAIN; i++) {
			struct rr rr;
			size_t t;
			int from;

			if (read_rr(m, len, &p, &rr, name))
				return -1;
			from = chain_index(chain, *n, name);
			if (rr.type != T_CNAME || rr.class != C_IN || from < 0)
				continue;
			t = rr.rdata;
			if (read_name(m, rr.rdata + rr.rdlen, &t, target))
				return -1;
			if (chain_index(chain, *n, target) < 0) {
				ttl[*n] =
					rr.ttl < ttl[from] ? rr.ttl : ttl[from];
				strcpy(chain[(*n)++], target);
				grew = true;
			}
		}
	}
	return 0;
}

/* cw_dns_parse(), or with cut cw_dns_parse_cut(). */
static int parse(const uint8_t *msg, size_t len, bool cut, cw_dns_fn fn,
		 void *ctx)
{
	char chain[MAX_CHAIN][CW_DNS_NAME_MAX], name[CW_DNS_NAME_MAX];
	uint32_t ttl[MAX_CHAIN] = {UINT32_MAX};
	unsigned int qd, an, i;
	size_t off = HDR_LEN, answers, nchain = 1;
	uint16_t flags;
	int found = 0;

	if (len < HDR_LEN)
		goto bad;
	flags = get16(msg + 2);
	qd = get16(msg + 4);
	an = get16(msg + 6);
	/* A response (QR) to a standard query (opcode 0) with RCODE 0. */
	if (!(flags & 0x8000) || (flags & 0x7800) || (flags & 0x000f) ||
	    qd != 1)
		return 0;
	if (read_name(msg, len, &off, chain[0]) || len - off < 4)
		goto bad;
	if (get16(msg + off + 2) != C_IN)
		return 0;
	off += 4;
	/* Check every answer's bounds before believing any. */
	answers = off;
	for (i = 0; i < an; i++) {
		struct rr rr;

		if (!read_rr(msg, len, &off, &rr, name))
			continue;
		if (!cut)
			goto bad;
		an = i; /* the record the cut runs through ends them */
		break;
	}
	if (follow_cnames(msg, len, answers, an, chain, ttl, &nchain))
		goto bad;
	off = answers;
	for (i = 0; i < an; i++) {
		struct cw_dns_answer a = {0};
		struct rr rr;
		int at;

		read_rr(msg, len, &off, &rr, name);
		at = chain_index(chain, nchain, name);
		if (rr.class != C_IN || at < 0)
			continue;
		if (rr.type == T_A && rr.rdlen == 4)
			a.family = AF_INET;
		else if (rr.type == T_AAAA && rr.rdlen == 16)
			a.family = AF_INET6;
		else
			continue;
		memcpy(a.addr, msg + rr.rdata, rr.rdlen);
		a.ttl = rr.ttl < ttl[at] ? rr.ttl : ttl[at];
		fn(chain[0], &a, ctx);
		found++;
	}
	return found;
bad:
	errno = EINVAL;
	return -1;
}

int cw_dns_parse(const uint8_t *msg, size_t len, cw_dns_fn fn, void *ctx)
{
	return parse(msg, len, false, fn, ctx);
}

int cw_dns_parse_cut(const uint8_t *msg, size_t len, cw_dns_fn fn, void *ctx)
{
	return parse(msg, len, true, fn, ctx);
}

struct cache_key {
	uint8_t family;
	uint8_t pad[7];
	uint8_t addr[16];
};

struct cache_val {
	uint64_t expires_ns;
	uint64_t news_until_ns; /* reported as news until then */
	char name[CW_DNS_NAME_MAX];
};

static void key_of(struct cache_key *k, int family, const void *addr)
{
	memset(k, 0, sizeof(*k));
	k->family = family == AF_INET6 ? 6 : 4;
	memcpy(k->addr, addr, family == AF_INET6 ? 16 : 4);
}

void cw_dns_cache_init(struct cw_dns_cache *c, size_t cap, uint32_t min_ttl,
		       uint32_t max_ttl)
{
	memset(c, 0, sizeof(*c));
	cw_htab_init(&c->h, sizeof(struct cache_key), sizeof(struct cache_val));
	c->cap = cap ? cap : 1;
	c->min_ttl_ns = min_ttl * NSEC_PER_SEC;
	c->max_ttl_ns = (max_ttl > min_ttl ? max_ttl : min_ttl) * NSEC_PER_SEC;
}

void cw_dns_cache_release(struct cw_dns_cache *c)
{
	cw_htab_release(&c->h);
}

/*
 * Make room for one entry: among the next few entries from the cursor,
 * drop an expired one if any, else the one that expires first.  A sample
 * rather than a full scan keeps a put O(1) on a cache of any size.
 */
static void evict_one(struct cw_dns_cache *c, uint64_t now_ns)
{
	size_t best = 0, i;
	uint64_t soonest = UINT64_MAX;

	for (i = 0; i < 16 && i < c->h.len; i++) {
		size_t at = (c->cursor + i) % c->h.len;
		const struct cache_val *v = cw_htab_val(&c->h, at);

		if (v->expires_ns < soonest) {
			soonest = v->expires_ns;
			best = at;
		}
		if (v->expires_ns <= now_ns)
			break;
	}
	c->cursor = (c->cursor + i + 1) % c->h.len;
	if (soonest > now_ns)
		c->evicted++;
	cw_htab_delete(&c->h, cw_htab_key(&c->h, best));
}

int cw_dns_cache_put(struct cw_dns_cache *c, const char *name,
		     const struct cw_dns_answer *a, uint64_t now_ns)
{
	uint64_t ttl = (uint64_t)a->ttl * NSEC_PER_SEC;
	struct cache_key k;
	struct cache_val *v;
	bool created;

	key_of(&k, a->family, a->addr);
	if (!cw_htab_get(&c->h, &k) && c->h.len >= c->cap)
		evict_one(c, now_ns);
	v = cw_htab_upsert(&c->h, &k, &created);
	if (!v)
		return -1;
	if (ttl < c->min_ttl_ns)
		ttl = c->min_ttl_ns;
	if (ttl > c->max_ttl_ns)
		ttl = c->max_ttl_ns;
	v->expires_ns = now_ns + ttl;
	snprintf(v->name, sizeof(v->name), "%s", name);
	return 0;
}

int cw_dns_cache_learn(struct cw_dns_cache *c, const char *name,
		       const struct cw_dns_answer *a, uint64_t now_ns)
{
	struct cache_key k;
	struct cache_val *v;
	bool news;

	key_of(&k, a->family, a->addr);
	v = cw_htab_get(&c->h, &k);
	news = !v || v->expires_ns <= now_ns || v->news_until_ns <= now_ns ||
	       strcmp(v->name, name);
	if (cw_dns_cache_put(c, name, a, now_ns))
		return -1;
	if (!news)
		return 0;
	v = cw_htab_get(&c->h, &k);
	v->news_until_ns = v->expires_ns;
	return 1;
}

const char *cw_dns_cache_get(struct cw_dns_cache *c, int family,
			     const void *addr, uint64_t now_ns)
{
	struct cache_key k;
	struct cache_val *v;

	key_of(&k, family, addr);
	v = cw_htab_get(&c->h, &k);
	if (!v)
		return NULL;
	if (v->expires_ns <= now_ns) {
		cw_htab_delete(&c->h, &k);
		return NULL;
	}
	return v->name;
}
