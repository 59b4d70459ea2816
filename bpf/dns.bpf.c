// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * DNS answers as the host's processes receive them, for the names of
 * peers outside the fleet (agent/dns.c parses them; only DNS is ever
 * copied).  A cgroup_skb ingress program on the root of the cgroup v2
 * tree: it runs for every datagram delivered to a socket of a process in
 * that tree, whatever its network namespace (containers, test hosts),
 * after the kernel checked the UDP header and checksum.  Attached only
 * when the agent is asked for names (--dns).
 *
 * Only answers to a query: the egress twin notes each datagram a socket
 * sends to port 53 by (socket, message id), and an answer is copied only
 * if its socket sent a query with its id in the last 30 s (the entry is
 * then spent).  So a datagram from port 53 that nobody asked for (a
 * spoofer who does not know the socket and the id, as a resolver itself
 * checks) names nothing; it is counted.
 *
 * Per packet, so the cheap way out first: a socket that is not UDP costs
 * one field read, a UDP datagram not to or from port 53 two header loads.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "dns.h"

#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define IPPROTO_UDP_ 17
#define IPV6_HDR_LEN 40
#define UDP_HDR_LEN  8
#define DNS_PORT     53

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} dns_ring SEC(".maps");

/* LRU: a query never answered is pushed out by newer ones. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cw_dns_query_key);
	__type(value, __u64); /* sent at, ktime ns */
} dns_queries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_DNS_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} dns_stats SEC(".maps");

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&dns_stats, &i);

	if (v)
		*v += 1;
}

/* Where the UDP header starts: 0 for a packet that is not UDP. */
static __always_inline __u32 udp_offset(struct __sk_buff *skb)
{
	__u8 h[10];

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, h, sizeof(h)) ||
		    h[9] != IPPROTO_UDP_)
			return 0;
		return (h[0] & 0xf) * 4;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* Next header 17 right after the fixed header only: DNS
		 * answers do not come with extension headers. */
		if (bpf_skb_load_bytes(skb, 0, h, 8) || h[6] != IPPROTO_UDP_)
			return 0;
		return IPV6_HDR_LEN;
	}
	return 0;
}

/*
 * The UDP header of a datagram of a UDP socket into udp[4] (source port,
 * destination port, length, checksum), its offset into *off; -1 if not.
 */
static __always_inline int udp_header(struct __sk_buff *skb, __u16 udp[4],
				      __u32 *off)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return -1;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != IPPROTO_UDP_)
		return -1;
	*off = udp_offset(skb);
	if (!*off || bpf_skb_load_bytes(skb, *off, udp, 4 * sizeof(__u16)))
		return -1;
	return 0;
}

/* The query's key: the socket and the message id at the payload's start. */
static __always_inline int query_key(struct __sk_buff *skb, __u32 off,
				     struct cw_dns_query_key *k)
{
	if (bpf_skb_load_bytes(skb, off + UDP_HDR_LEN, &k->id, sizeof(k->id)))
		return -1;
	k->cookie = bpf_get_socket_cookie(skb);
	return 0;
}

SEC("cgroup_skb/egress")
int cw_dns_egress(struct __sk_buff *skb)
{
	struct cw_dns_query_key k = {};
	__u64 now = bpf_ktime_get_ns();
	__u16 udp[4];
	__u32 off;

	if (udp_header(skb, udp, &off) || udp[1] != bpf_htons(DNS_PORT))
		return 1;
	stat_inc(CW_DNS_STAT_QUERIES);
	if (!query_key(skb, off, &k))
		bpf_map_update_elem(&dns_queries, &k, &now, BPF_ANY);
	return 1;
}

/* Whether the answer's socket asked with its id lately; spent if so. */
static __always_inline bool solicited(struct __sk_buff *skb, __u32 off)
{
	struct cw_dns_query_key k = {};
	__u64 *sent;
	bool ok;

	if (query_key(skb, off, &k))
		return false;
	sent = bpf_map_lookup_elem(&dns_queries, &k);
	if (!sent)
		return false;
	ok = bpf_ktime_get_ns() - *sent < CW_DNS_QUERY_NS;
	bpf_map_delete_elem(&dns_queries, &k);
	return ok;
}

SEC("cgroup_skb/ingress")
int cw_dns_ingress(struct __sk_buff *skb)
{
	struct cw_dns_ev *ev;
	__u16 udp[4]; /* source port, destination port, length, checksum */
	__u32 off, len, full;

	if (udp_header(skb, udp, &off) || udp[0] != bpf_htons(DNS_PORT))
		return 1;
	stat_inc(CW_DNS_STAT_SEEN);
	if (!solicited(skb, off)) {
		stat_inc(CW_DNS_STAT_UNSOLICITED);
		return 1;
	}
	full = bpf_ntohs(udp[2]);
	if (full <= UDP_HDR_LEN) {
		stat_inc(CW_DNS_STAT_BAD);
		return 1;
	}
	full -= UDP_HDR_LEN;
	len = full > CW_DNS_CAP ? CW_DNS_CAP : full;
	ev = bpf_ringbuf_reserve(&dns_ring, sizeof(*ev), 0);
	if (!ev) {
		stat_inc(CW_DNS_STAT_LOST);
		return 1;
	}
	if (len < 1 || len > CW_DNS_CAP ||
	    bpf_skb_load_bytes(skb, off + UDP_HDR_LEN, ev->data, len)) {
		bpf_ringbuf_discard(ev, 0);
		stat_inc(CW_DNS_STAT_BAD);
		return 1;
	}
	ev->len = len;
	ev->full = full > 0xffff ? 0xffff : full;
	bpf_ringbuf_submit(ev, 0);
	return 1;
}
