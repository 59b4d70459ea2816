/* SPDX-License-Identifier: MIT */
/*
 * Names for the peers outside the fleet (`causeway agent --dns`,
 * `causeway run --dns`): bpf/dns.bpf.c copies each DNS answer a process
 * of the host receives (UDP from port 53, at most 512 bytes, every
 * network namespace under the cgroup v2 root) to a query its socket sent
 * with the same id, and this side parses it
 * (common/dns.h: DNS only, nothing else is ever copied) into a bounded
 * cache kept for the answers' TTLs.  A name is handed out as a DnsName
 * record (common/wire.h) when it is news: first learned, changed, or
 * renewed a whole TTL after it was last handed out.
 *
 *	struct cw_dns_opts o = {.sz = sizeof(o)};
 *	struct cw_dns *d;
 *	if (cw_dns_open(&d, &o))
 *		...;				// told
 *	while (running)
 *		cw_dns_poll(d, publish, ctx);	// often; never blocks
 *	cw_dns_close(d);
 */
#ifndef CW_AGENT_DNS_H
#define CW_AGENT_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

/* Addresses kept at most: about 1.1 KiB each (a name may escape to 1,023
 * bytes), so 18 MiB at worst, little on a host that looks up few. */
#define CW_DNS_CACHE_MAX (1u << 14)
#define CW_DNS_MIN_TTL	 5     /* s: a TTL 0 answer counts this long */
#define CW_DNS_MAX_TTL	 86400 /* s: nothing is kept past a day */

struct cw_dns_opts {
	size_t sz;	     /* sizeof(struct cw_dns_opts), so it can grow */
	const char *cgroup2; /* attach here; NULL: the cgroup2 mount */
	const char *host;    /* host id in the records; NULL: cw_host_id() */
	size_t cache_max;    /* 0: CW_DNS_CACHE_MAX */
};

struct cw_dns_stats {
	uint64_t queries;     /* UDP to port 53 the kernel saw */
	uint64_t unsolicited; /* from port 53, answering no query: ignored */
	uint64_t datagrams;   /* UDP from port 53 the kernel saw */
	uint64_t lost;	      /* ... not copied: ring buffer full */
	uint64_t bad;	      /* ... headers or payload unreadable */
	uint64_t cut;	      /* copied cut at 512 bytes (EDNS answers) */
	uint64_t malformed;   /* refused by the parser: nothing learned */
	uint64_t answers;     /* A and AAAA answers learned */
	uint64_t names;	      /* DnsName records handed out */
	uint64_t evicted;     /* live names pushed out of a full cache */
};

struct cw_dns;

/* One name to publish; non-zero stops cw_dns_poll() (it returns -1). */
typedef int (*cw_dns_name_fn)(const struct cw_wire_dns *n, void *ctx);

/* Load and attach; 0, or -1 after a message (no cgroup v2, refused). */
int cw_dns_open(struct cw_dns **out, const struct cw_dns_opts *o);
/* Parse what arrived and hand the news to fn: 0, or -1 if fn said so. */
int cw_dns_poll(struct cw_dns *d, cw_dns_name_fn fn, void *ctx);
void cw_dns_stats(const struct cw_dns *d, struct cw_dns_stats *st);
/* The stats in one line on stderr (info); NULL: nothing. */
void cw_dns_report(const struct cw_dns *d);
/* Detach and free; NULL is fine. */
void cw_dns_close(struct cw_dns *d);

/* Where cgroup v2 is mounted (the first cgroup2 mount) into buf; 0, or -1
 * (none; nothing printed). */
int cw_cgroup2_find(char *buf, size_t len);

#endif
