// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Loss for the byte-truth tests: a tc ingress program that drops about one
 * in DROP_EVERY TCP packets that carry data, a SYN or a FIN, chosen by a
 * pseudo-random sequence seeded with DROP_SEED, so a run can be repeated.
 * The kernel here has no netem; a drop on the receiver's ingress is loss the
 * sender must repair by retransmission, where an egress drop would be seen
 * by the sender at once.  Pure ACKs pass: losing them only delays.
 *
 *   clang -O2 -g -target bpf -DDROP_SEED=7 -DDROP_EVERY=40 -c drop.bpf.c
 *   tc qdisc add dev DEV clsact
 *   tc filter add dev DEV ingress bpf direct-action obj drop.bpf.o sec tc
 *
 * Counts in the `drops` map: [0] packets seen, [1] dropped, [3] of them
 * SYNs, [4] FINs ([2] holds the pseudo-random sequence).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef DROP_SEED
#define DROP_SEED 1
#endif
#ifndef DROP_EVERY
#define DROP_EVERY 40
#endif

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* xorshift64: the sequence lives in slot 2, seeded at the first packet. */
static __always_inline __u64 next_rand(void)
{
	__u32 k = 2;
	__u64 *x = bpf_map_lookup_elem(&drops, &k), v;

	if (!x)
		return 1;
	v = *x ? *x : 0x9e3779b97f4a7c15ULL * (DROP_SEED + 1);
	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	*x = v;
	return v;
}

static __always_inline void count(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&drops, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("tc")
int drop_some(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct tcphdr *th;
	__u32 l3_len, l4_off, payload;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
			return TC_ACT_OK;
		l4_off = sizeof(*eth) + ip->ihl * 4;
		l3_len = bpf_ntohs(ip->tot_len) - ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		l4_off = sizeof(*eth) + sizeof(*ip6);
		l3_len = bpf_ntohs(ip6->payload_len);
	} else {
		return TC_ACT_OK;
	}
	th = data + l4_off;
	if ((void *)(th + 1) > end)
		return TC_ACT_OK;
	payload = l3_len - th->doff * 4;
	if (!payload && !th->syn && !th->fin)
		return TC_ACT_OK;
	count(0);
	if (next_rand() % DROP_EVERY)
		return TC_ACT_OK;
	count(1);
	if (th->syn)
		count(3);
	if (th->fin)
		count(4);
	return TC_ACT_SHOT;
}
