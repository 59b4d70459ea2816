/* SPDX-License-Identifier: MIT */
/*
 * Records shared by bpf/dns.bpf.c and its loader (agent/dns.c): the DNS
 * answers a host's processes receive, copied whole up to a bound, from
 * every network namespace (names are the host's, whichever asked).  Fixed
 * width __u types only and no includes, so both sides compile it as is.
 */
#ifndef CW_BPF_DNS_H
#define CW_BPF_DNS_H

/* Payload bytes copied at most: a classic DNS message over UDP (RFC 1035
 * 4.2.1); a longer (EDNS) answer is cut there and says so. */
#define CW_DNS_CAP 512

/* One UDP datagram from source port 53, as a socket received it. */
struct cw_dns_ev {
	__u16 len;  /* payload bytes in data */
	__u16 full; /* the datagram's payload length (> len: cut) */
	__u8 data[CW_DNS_CAP];
};

/* A query a socket sent, awaiting its answer (map dns_queries). */
struct cw_dns_query_key {
	__u64 cookie; /* the socket's */
	__u16 id;     /* the DNS message id */
	__u16 pad[3];
};

/* How long a query waits for its answer, ns. */
#define CW_DNS_QUERY_NS (30ULL * 1000000000ULL)

/* Per-CPU counters (map dns_stats, indexed by these). */
enum cw_dns_stat {
	CW_DNS_STAT_SEEN = 0,	     /* datagrams from port 53 */
	CW_DNS_STAT_LOST = 1,	     /* ring buffer full: not copied */
	CW_DNS_STAT_BAD = 2,	     /* headers or payload unreadable */
	CW_DNS_STAT_QUERIES = 3,     /* datagrams sent to port 53 */
	CW_DNS_STAT_UNSOLICITED = 4, /* from port 53, no query of the
				      * socket with that id: not copied */
	CW_DNS_STAT_MAX = 5,
};

#endif
