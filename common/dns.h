/* SPDX-License-Identifier: MIT */
/*
 * Names for addresses, learned from the DNS answers a host receives:
 * a parser of DNS response messages (RFC 1035 section 4, with name
 * compression; AAAA from RFC 3596) and a bounded cache that keeps each
 * address's name for the answer's TTL.  Only DNS is parsed, never the
 * payload of anything else.
 *
 *	cw_dns_parse(msg, len, learn, &cache);	// learn() puts each answer
 *	const char *name = cw_dns_cache_get(&cache, AF_INET, addr, now_ns);
 *
 * A name is reported as the client asked it (the question's name), also
 * for addresses reached through CNAMEs: that is the name a user knows;
 * its TTL is then the shortest of the chain's and the address's.
 * Names come out lower-case, dotted, without the final dot; a byte other
 * than a letter, digit, '-' or '_' is written \DDD as dig does, so names
 * are printable ASCII whatever the message held.
 */
#ifndef CW_DNS_H
#define CW_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "common/htab.h"

#define CW_DNS_NAME_MAX 1024 /* 255 wire bytes, each at most \DDD */

struct cw_dns_answer {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* 4 or 16 bytes used */
	uint32_t ttl;	  /* seconds */
};

typedef void (*cw_dns_fn)(const char *name, const struct cw_dns_answer *a,
			  void *ctx);

/*
 * Parse one DNS message of len bytes.  For a response with no error
 * (QR set, RCODE 0, one question of class IN) call fn for each A or AAAA
 * answer owned by the question's name or by a name its CNAMEs lead to;
 * return how many, 0 for a query, an error response or one with no such
 * answer, or -1 with errno EINVAL when the message is malformed (cut
 * short, a compression pointer that does not point back, a name over 255
 * bytes, a record running past the end).
 */
int cw_dns_parse(const uint8_t *msg, size_t len, cw_dns_fn fn, void *ctx);
/*
 * The same for the first len bytes of a longer message (a capture cut it
 * short): the answers wholly inside count, the first one running past
 * the cut ends the answer section; what comes before it must be whole.
 */
int cw_dns_parse_cut(const uint8_t *msg, size_t len, cw_dns_fn fn, void *ctx);

struct cw_dns_cache {
	struct cw_htab h;
	size_t cap;    /* entries kept at most */
	size_t cursor; /* where the next eviction scan starts */
	uint64_t min_ttl_ns, max_ttl_ns;
	uint64_t evicted; /* live entries pushed out when full */
};

/* A cache of at most cap names; TTLs are clamped to [min, max] seconds. */
void cw_dns_cache_init(struct cw_dns_cache *c, size_t cap, uint32_t min_ttl,
		       uint32_t max_ttl);
void cw_dns_cache_release(struct cw_dns_cache *c);
/* Keep a's address -> name until now + ttl; 0 or -1 (out of memory). */
int cw_dns_cache_put(struct cw_dns_cache *c, const char *name,
		     const struct cw_dns_answer *a, uint64_t now_ns);
/*
 * cw_dns_cache_put(), saying whether the answer is news to report: 1 when
 * the address had no live name or another one, or its name was last
 * reported one (clamped) TTL ago or more; else 0, the entry renewed all
 * the same.  So an address is reported at most once per TTL however
 * often it is answered.  -1: out of memory.
 */
int cw_dns_cache_learn(struct cw_dns_cache *c, const char *name,
		       const struct cw_dns_answer *a, uint64_t now_ns);
/* The name of an address, or NULL (unknown or expired). */
const char *cw_dns_cache_get(struct cw_dns_cache *c, int family,
			     const void *addr, uint64_t now_ns);

#endif
