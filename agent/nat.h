/* SPDX-License-Identifier: MIT */
/*
 * Undoing NAT on the client end of a connection.
 *
 * A client that connects to a virtual address (a Kubernetes ClusterIP, an
 * iptables DNAT rule) has a socket whose peer is the virtual address, while
 * the server sees the client's real packets: the two ends would not pair.
 * Likewise a client whose source is translated on the way out (SNAT or
 * masquerade, or conntrack's own source-port remap when the translated
 * tuple clashes with an entry still in TIME_WAIT) is seen by the server
 * at another address or port than its socket has.  Conntrack knows both
 * sides: the entry found by the socket's original tuple (laddr:lport ->
 * raddr:rport) has a reply tuple whose source is the real server and whose
 * destination is the client as the server sees it.  Where the reply's
 * source differs from the original destination, the record's raddr/rport
 * become the real server; where the reply's destination differs from the
 * socket's own address and port, laddr/lport become what the server sees;
 * either way CW_REC_NAT is set.
 *
 * One lookup per client connection, when its end is first seen (a periodic
 * record or its close record: conntrack keeps the entry in TIME_WAIT or
 * CLOSE for a while after close); the answer, NAT or not, is cached by
 * socket cookie for the end's later records and dropped with its closed
 * record.  The cache is bounded: when full, the least recently used half
 * goes.
 *
 *	struct cw_nat *n;
 *	cw_nat_open(&n, netns);		// before capabilities are dropped
 *	cw_nat_resolve(n, &r);		// close record arrived: look up now
 *	cw_nat_apply(n, &r);		// each record before it is emitted
 *	cw_nat_free(n);
 */
#ifndef CW_NAT_H
#define CW_NAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

/* The original direction of a connection, as the client's socket has it. */
struct cw_ct_tuple {
	uint32_t netns;	  /* namespace inode of the socket */
	uint8_t protocol; /* IPPROTO_TCP, IPPROTO_UDP */
	struct cw_addr src, dst;
	uint16_t sport, dport;
};

enum cw_ct_result {
	CW_CT_NONE,  /* no entry, or conntrack is not there: no NAT */
	CW_CT_FOUND, /* *reply is set */
	CW_CT_ERROR, /* the lookup failed; counted, treated as no NAT */
};

/* The reply direction of an entry: src the real server, dst the client as
 * the server sees it.  A part the entry lacks is zero (family 0, port 0). */
struct cw_ct_reply {
	struct cw_addr src, dst;
	uint16_t sport, dport;
};

/* The conntrack query: the reply tuple of the entry for orig. */
typedef enum cw_ct_result (*cw_ct_lookup_fn)(void *ctx,
					     const struct cw_ct_tuple *orig,
					     struct cw_ct_reply *reply);

struct cw_nat_stats {
	uint64_t lookups; /* conntrack queries made */
	uint64_t undone;  /* client ends found behind DNAT */
	uint64_t snat;	  /* client ends whose source was translated */
	uint64_t errors;  /* queries that failed (not "no entry") */
	uint64_t evicted; /* cache entries dropped by the bound */
	size_t cached;	  /* ends in the cache now */
};

#define CW_NAT_CACHE_MAX 65536

struct cw_nat;

/*
 * Conntrack over netlink (libnetfilter_conntrack), in network namespace
 * netns (an inode; 0: the agent's own) and, when that is another one, in
 * the agent's own as well, where a host's kube-proxy rules translate its
 * pods' traffic.  Call it before dropping CAP_SYS_ADMIN: entering another
 * namespace needs it.  *out is NULL, with 0 returned, when conntrack
 * cannot be queried here (no nfnetlink): then there is simply no NAT.
 * -1 only if the agent could not return to its own namespace.
 */
int cw_nat_open(struct cw_nat **out, uint32_t netns);
/* The cache and the logic over any lookup (tests); NULL if out of memory. */
struct cw_nat *cw_nat_new(cw_ct_lookup_fn fn, void *ctx, size_t cap);
/*
 * Look up r's end now if it is a TCP client end not seen before, and keep
 * the answer.  For a close record as soon as it arrives.
 */
void cw_nat_resolve(struct cw_nat *n, const struct cw_conn_record *r);
/*
 * Resolve as above, then rewrite r (raddr, rport if its end is behind
 * DNAT; laddr, lport if its source was translated; CW_REC_NAT either
 * way).  A closed record is the end's last: its entry goes.
 */
void cw_nat_apply(struct cw_nat *n, struct cw_conn_record *r);
void cw_nat_stats(const struct cw_nat *n, struct cw_nat_stats *st);
/* NULL is fine. */
void cw_nat_free(struct cw_nat *n);

struct nf_conntrack;
enum cw_ct_answer {
	CW_CT_ANSWER_OTHER, /* another entry: a late answer to an earlier
			     * question */
	CW_CT_ANSWER_EMPTY, /* the entry asked for, with no reply tuple */
	CW_CT_ANSWER_REPLY, /* the entry asked for: *rep filled */
};
/*
 * Read one conntrack answer (as libnetfilter_conntrack parsed it from the
 * kernel's netlink message) against the question ask.
 */
enum cw_ct_answer cw_nat_ct_reply(struct nf_conntrack *ct,
				  const struct cw_ct_tuple *ask,
				  struct cw_ct_reply *rep);

#endif
