// SPDX-License-Identifier: MIT
/*
 * The DNS answer parser on messages built here byte by byte: A and AAAA
 * answers named as the question asked them, through CNAME chains and
 * compression pointers; other names' addresses ignored; queries and error
 * responses give nothing; pointer loops, forward pointers, long names and
 * every truncation are refused; odd bytes in names are escaped.  Then the
 * name cache: TTLs with their clamps, expiry, families kept apart, and a
 * bounded size with evictions counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dns.h"

#include "tests/unit/check.h"

struct msg {
	uint8_t b[1024];
	size_t n;
};

static void u16(struct msg *m, unsigned int v)
{
	m->b[m->n++] = (uint8_t)(v >> 8);
	m->b[m->n++] = (uint8_t)v;
}

static void u32(struct msg *m, uint32_t v)
{
	u16(m, v >> 16);
	u16(m, v & 0xffff);
}

/* A dotted name in wire form (no compression). */
static void name(struct msg *m, const char *s)
{
	while (*s) {
		size_t l = strcspn(s, ".");

		m->b[m->n++] = (uint8_t)l;
		memcpy(m->b + m->n, s, l);
		m->n += l;
		s += l + (s[l] == '.');
	}
	m->b[m->n++] = 0;
}

static void header(struct msg *m, unsigned int flags, unsigned int an)
{
	m->n = 0;
	u16(m, 0x1234);
	u16(m, flags);
	u16(m, 1);
	u16(m, an);
	u16(m, 0);
	u16(m, 0);
}

static void question(struct msg *m, const char *q, unsigned int type)
{
	name(m, q);
	u16(m, type);
	u16(m, 1);
}

static void rr_head(struct msg *m, unsigned int type, uint32_t ttl,
		    unsigned int rdlen)
{
	u16(m, type);
	u16(m, 1);
	u32(m, ttl);
	u16(m, rdlen);
}

static void rr_a(struct msg *m, const char *owner, uint32_t ttl,
		 const uint8_t ip[4])
{
	name(m, owner);
	rr_head(m, 1, ttl, 4);
	memcpy(m->b + m->n, ip, 4);
	m->n += 4;
}

struct seen {
	int n;
	char name[8][CW_DNS_NAME_MAX];
	struct cw_dns_answer a[8];
};

static void record(const char *nm, const struct cw_dns_answer *a, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		strcpy(s->name[s->n], nm);
		s->a[s->n] = *a;
	}
	s->n++;
}

static const uint8_t ip1[4] = {10, 0, 0, 1}, ip2[4] = {10, 0, 0, 2};

static void test_simple(void)
{
	struct msg m;
	struct seen s = {0};

	header(&m, 0x8180, 2);
	question(&m, "WWW.Example.COM", 1);
	rr_a(&m, "www.example.com", 300, ip1);
	rr_a(&m, "other.example.com", 300, ip2); /* not what was asked */
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 1 && s.n == 1);
	CHECK(!strcmp(s.name[0], "www.example.com"));
	CHECK(s.a[0].family == AF_INET && !memcmp(s.a[0].addr, ip1, 4) &&
	      s.a[0].ttl == 300);
	/* Every cut of it is refused: the header promises two answers. */
	for (size_t i = 0; i < m.n; i++) {
		struct seen t = {0};

		CHECK(cw_dns_parse(m.b, i, record, &t) == -1);
		CHECK(errno == EINVAL && t.n == 0);
	}
}

static void test_cname_and_pointers(void)
{
	static const uint8_t ip6[16] = {0xfd, 0, [15] = 7};
	struct msg m;
	struct seen s = {0};
	size_t target;

	header(&m, 0x8180, 3);
	question(&m, "api.shop.test", 28);
	/* api.shop.test (a pointer to the question) CNAME edge.cdn.test */
	u16(&m, 0xc000 | 12);
	rr_head(&m, 5, 60, 15);
	target = m.n;
	name(&m, "edge.cdn.test");
	/* edge.cdn.test (a pointer to the CNAME's target) AAAA fd00::7 */
	u16(&m, 0xc000 | (unsigned int)target);
	rr_head(&m, 28, 30, 16);
	memcpy(m.b + m.n, ip6, 16);
	m.n += 16;
	/* cdn.test (a pointer into the middle of a name) A: not asked */
	u16(&m, 0xc000 | (unsigned int)(target + 5));
	rr_head(&m, 1, 30, 4);
	memcpy(m.b + m.n, ip2, 4);
	m.n += 4;
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 1 && s.n == 1);
	CHECK(!strcmp(s.name[0], "api.shop.test"));
	CHECK(s.a[0].family == AF_INET6 && !memcmp(s.a[0].addr, ip6, 16) &&
	      s.a[0].ttl == 30);
}

static void test_refused(void)
{
	struct msg m;
	struct seen s = {0};
	size_t at;

	header(&m, 0x0100, 0); /* a query */
	question(&m, "a.test", 1);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 0);
	header(&m, 0x8183, 1); /* NXDOMAIN */
	question(&m, "a.test", 1);
	rr_a(&m, "a.test", 5, ip1);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 0 && s.n == 0);

	/* A pointer to itself, and one pointing forward. */
	header(&m, 0x8180, 1);
	question(&m, "a.test", 1);
	at = m.n;
	u16(&m, 0xc000 | (unsigned int)at);
	rr_head(&m, 1, 5, 4);
	memcpy(m.b + m.n, ip1, 4);
	m.n += 4;
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == -1 && errno == EINVAL);
	m.b[at + 1] = (uint8_t)(at + 4);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == -1 && errno == EINVAL);

	/* A name of 5 x 63-byte labels: over 255 bytes. */
	header(&m, 0x8180, 0);
	for (int l = 0; l < 5; l++) {
		m.b[m.n++] = 63;
		memset(m.b + m.n, 'x', 63);
		m.n += 63;
	}
	m.b[m.n++] = 0;
	u16(&m, 1);
	u16(&m, 1);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == -1 && errno == EINVAL);
	/* An rdlength past the end. */
	header(&m, 0x8180, 1);
	question(&m, "a.test", 1);
	name(&m, "a.test");
	rr_head(&m, 1, 5, 40);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == -1);
	CHECK(s.n == 0);
}

static void test_escapes(void)
{
	struct msg m;
	struct seen s = {0};

	header(&m, 0x8180, 1);
	m.b[m.n++] = 4;
	memcpy(m.b + m.n, "a\x07.Z", 4);
	m.n += 4;
	m.b[m.n++] = 0;
	u16(&m, 1);
	u16(&m, 1);
	u16(&m, 0xc000 | 12);
	rr_head(&m, 1, 5, 4);
	memcpy(m.b + m.n, ip1, 4);
	m.n += 4;
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 1);
	CHECK(!strcmp(s.name[0], "a\\007\\046z"));
}

static void test_cache(void)
{
	static const uint8_t v6[16] = {10, 0, 0, 1}; /* same bytes as ip1 */
	struct cw_dns_answer a = {.family = AF_INET, .ttl = 60};
	struct cw_dns_cache c;
	const uint64_t s = 1000000000ULL;

	cw_dns_cache_init(&c, 4, 5, 3600);
	memcpy(a.addr, ip1, 4);
	CHECK(cw_dns_cache_put(&c, "one.test", &a, 100 * s) == 0);
	CHECK(!strcmp(cw_dns_cache_get(&c, AF_INET, ip1, 159 * s), "one.test"));
	CHECK(cw_dns_cache_get(&c, AF_INET6, v6, 101 * s) == NULL);
	CHECK(cw_dns_cache_get(&c, AF_INET, ip1, 160 * s) == NULL);
	CHECK(c.h.len == 0); /* expired entries are dropped when met */
	a.ttl = 0;	     /* clamped up to 5 s */
	cw_dns_cache_put(&c, "zero.test", &a, 100 * s);
	CHECK(cw_dns_cache_get(&c, AF_INET, ip1, 104 * s) != NULL);
	a.ttl = 86400 * 7; /* clamped down to an hour */
	cw_dns_cache_put(&c, "week.test", &a, 100 * s);
	CHECK(!strcmp(cw_dns_cache_get(&c, AF_INET, ip1, 101 * s),
		      "week.test"));
	CHECK(cw_dns_cache_get(&c, AF_INET, ip1, 3701 * s) == NULL);
	for (uint8_t i = 0; i < 10; i++) {
		a.ttl = 60u + i;
		a.addr[3] = i;
		cw_dns_cache_put(&c, "many.test", &a, 200 * s);
		CHECK(c.h.len <= 4);
	}
	CHECK(c.evicted == 6);
	a.addr[3] = 9; /* the newest is always kept */
	CHECK(cw_dns_cache_get(&c, AF_INET, a.addr, 201 * s) != NULL);
	cw_dns_cache_release(&c);
}

/* An address through a CNAME holds the question's name no longer than
 * the CNAME's TTL. */
static void test_chain_ttl(void)
{
	struct msg m;
	struct seen s = {0};

	header(&m, 0x8180, 2);
	question(&m, "a.test", 1);
	u16(&m, 0xc000 | 12);
	rr_head(&m, 5, 10, 8);
	name(&m, "b.test");
	rr_a(&m, "b.test", 300, ip1);
	CHECK(cw_dns_parse(m.b, m.n, record, &s) == 1);
	CHECK(!strcmp(s.name[0], "a.test") && s.a[0].ttl == 10);
}

/* A capture cut short: whole answers before the cut count, never one
 * running past it; without the cut flag the same bytes are refused. */
static void test_cut(void)
{
	struct msg m;
	size_t q, one, two;

	header(&m, 0x8180, 3);
	question(&m, "cut.test", 1);
	q = m.n;
	rr_a(&m, "cut.test", 60, ip1);
	one = m.n;
	rr_a(&m, "cut.test", 60, ip2);
	two = m.n;
	rr_a(&m, "cut.test", 60, ip1);
	for (size_t i = 0; i <= m.n; i++) {
		struct seen s = {0};
		int n = cw_dns_parse_cut(m.b, i, record, &s);

		if (i < q) /* the header and question must be whole */
			CHECK(n == -1);
		else
			CHECK(n == (i < one   ? 0
				    : i < two ? 1
				    : i < m.n ? 2
					      : 3));
		CHECK(s.n == (n < 0 ? 0 : n));
		if (i < m.n)
			CHECK(cw_dns_parse(m.b, i, record, &s) == -1);
	}
}

/* News at most once per TTL per address: first answer, a changed name
 * and a renewal after the TTL are news; a repeat inside it is not. */
static void test_learn(void)
{
	struct cw_dns_answer a = {.family = AF_INET, .ttl = 10};
	struct cw_dns_cache c;
	const uint64_t s = 1000000000ULL;

	cw_dns_cache_init(&c, 4, 5, 3600);
	memcpy(a.addr, ip1, 4);
	CHECK(cw_dns_cache_learn(&c, "a.test", &a, 100 * s) == 1);
	CHECK(cw_dns_cache_learn(&c, "a.test", &a, 105 * s) == 0);
	CHECK(cw_dns_cache_learn(&c, "a.test", &a, 109 * s) == 0);
	/* Renewed in time, so still live at 112 s, but reported 10 s ago. */
	CHECK(cw_dns_cache_get(&c, AF_INET, ip1, 112 * s) != NULL);
	CHECK(cw_dns_cache_learn(&c, "a.test", &a, 110 * s) == 1);
	CHECK(cw_dns_cache_learn(&c, "b.test", &a, 111 * s) == 1);
	CHECK(!strcmp(cw_dns_cache_get(&c, AF_INET, ip1, 111 * s), "b.test"));
	a.ttl = 0; /* clamped to 5 s: news at most every 5 s */
	CHECK(cw_dns_cache_learn(&c, "b.test", &a, 130 * s) == 1);
	CHECK(cw_dns_cache_learn(&c, "b.test", &a, 134 * s) == 0);
	CHECK(cw_dns_cache_learn(&c, "b.test", &a, 135 * s) == 1);
	cw_dns_cache_release(&c);
}

int main(void)
{
	test_chain_ttl();
	test_cut();
	test_learn();
	test_simple();
	test_cname_and_pointers();
	test_refused();
	test_escapes();
	test_cache();
	return failures ? 1 : 0;
}
