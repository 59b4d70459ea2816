// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Fine-timescale traffic counters, after Millisampler: tc programs on the
 * ingress and egress of chosen interfaces add every packet to the bin of
 * the current interval, in a per-CPU array of fixed size, so memory is set
 * by the number of bins alone.  A run begins when user space sets start_ns
 * and ends at the last bin; the loader attaches the programs only while a
 * run is on.  Packets are never dropped or changed.
 *
 * Per bin and per region (in-region / cross-region by the remote address):
 * bytes each way, ingress ECN-CE bytes, TCP segments whose data was already
 * seen on that flow (retransmits) each way, and distinct flows each way.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sampler.h"

#define TC_ACT_OK    0
#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define IP_MF_OFFSET 0x3fff
#define ECN_MASK     0x3
#define ECN_CE	     0x3
#define ETH_HDR_LEN  14
#define DIR_IN	     0
#define DIR_OUT	     1

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load. */
const volatile __u64 interval_ns = 1000000;
const volatile __u32 nbins = 2000;
const volatile bool has_regions = false; /* else all is in-region */

/* Set by the loader after attach: CLOCK_MONOTONIC start, 0 while idle. */
__u64 start_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2000); /* the loader sets nbins */
	__type(key, __u32);
	__type(value, struct cw_sampler_bin);
} bins SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* the loader may resize */
	__type(key, struct cw_seq_key);
	__type(value, __u32);
} seq_end SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct cw_region_key);
	__type(value, __u8);
} regions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_SSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* What one packet tells us, parsed once. */
struct pkt {
	struct cw_seq_key key; /* addresses as on the wire, ports, family */
	__u32 seq;
	__u32 payload; /* TCP payload bytes, 0 if not TCP data */
	__u8 proto;
	__u8 ecn;
	bool is_ip;
};

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

static __always_inline __u64 mix64(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static __always_inline __u64 fold_addr(const __u8 *a)
{
	__u64 lo, hi;

	__builtin_memcpy(&lo, a, 8);
	__builtin_memcpy(&hi, a + 8, 8);
	return mix64(lo ^ mix64(hi));
}

static __always_inline __u64 flow_hash(const struct pkt *p)
{
	__u64 h = fold_addr(p->key.saddr);

	h = mix64(h ^ fold_addr(p->key.daddr));
	h ^= ((__u64)p->key.sport << 32) | ((__u64)p->key.dport << 16) |
	     p->proto;
	return mix64(h);
}

static __always_inline int parse_l4(struct __sk_buff *skb, struct pkt *p,
				    __u32 off, __u32 l3_len, __u32 hdr_len)
{
	__u8 tcp[14];
	__u32 doff;

	if (p->proto == IPPROTO_UDP) {
		if (bpf_skb_load_bytes_relative(skb, off, tcp, 4,
						BPF_HDR_START_NET))
			return 0;
	} else if (p->proto != IPPROTO_TCP ||
		   bpf_skb_load_bytes_relative(skb, off, tcp, sizeof(tcp),
					       BPF_HDR_START_NET)) {
		return 0;
	}
	p->key.sport = ((__u16)tcp[0] << 8) | tcp[1];
	p->key.dport = ((__u16)tcp[2] << 8) | tcp[3];
	if (p->proto != IPPROTO_TCP)
		return 0;
	p->seq = ((__u32)tcp[4] << 24) | ((__u32)tcp[5] << 16) |
		 ((__u32)tcp[6] << 8) | tcp[7];
	doff = (tcp[12] >> 4) * 4;
	/* A zero IP length (BIG TCP) leaves only the skb length to go by. */
	if (!l3_len)
		l3_len = skb->len > ETH_HDR_LEN ? skb->len - ETH_HDR_LEN : 0;
	if (l3_len > hdr_len + doff)
		p->payload = l3_len - hdr_len - doff;
	return 0;
}

static __always_inline int parse_ipv4(struct __sk_buff *skb, struct pkt *p)
{
	struct iphdr ip;
	__u32 ihl;

	if (bpf_skb_load_bytes_relative(skb, 0, &ip, sizeof(ip),
					BPF_HDR_START_NET))
		return -1;
	if (ip.version != 4)
		return -1;
	p->is_ip = true;
	p->key.family = 4;
	p->ecn = ip.tos & ECN_MASK;
	p->proto = ip.protocol;
	__builtin_memcpy(p->key.saddr, &ip.saddr, 4);
	__builtin_memcpy(p->key.daddr, &ip.daddr, 4);
	if (bpf_ntohs(ip.frag_off) & IP_MF_OFFSET)
		return 0; /* fragments: addresses only */
	ihl = ip.ihl * 4;
	return parse_l4(skb, p, ihl, bpf_ntohs(ip.tot_len), ihl);
}

static __always_inline int parse_ipv6(struct __sk_buff *skb, struct pkt *p)
{
	struct ipv6hdr ip6;
	__u32 len;

	if (bpf_skb_load_bytes_relative(skb, 0, &ip6, sizeof(ip6),
					BPF_HDR_START_NET))
		return -1;
	if (ip6.version != 6)
		return -1;
	p->is_ip = true;
	p->key.family = 6;
	p->ecn = (ip6.flow_lbl[0] >> 4) & ECN_MASK;
	p->proto = ip6.nexthdr;
	__builtin_memcpy(p->key.saddr, &ip6.saddr, 16);
	__builtin_memcpy(p->key.daddr, &ip6.daddr, 16);
	len = bpf_ntohs(ip6.payload_len);
	return parse_l4(skb, p, sizeof(ip6), len ? len + sizeof(ip6) : 0,
			sizeof(ip6));
}

static __always_inline __u32 region_of(const struct pkt *p, __u8 dir)
{
	struct cw_region_key k = {.prefixlen = 128};
	const __u8 *remote = dir == DIR_IN ? p->key.saddr : p->key.daddr;

	if (!has_regions || !p->is_ip)
		return 0;
	if (p->key.family == 4) {
		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], remote, 4);
	} else {
		__builtin_memcpy(k.addr, remote, 16);
	}
	return bpf_map_lookup_elem(&regions, &k) ? 0 : 1;
}

static __always_inline void sketch_add(struct cw_flow_sketch *s, __u64 h)
{
	__u32 bit = h & (CW_SKETCH_BITS - 1);
	__u32 id = (__u32)(h >> 32) ?: 1;
	__u32 n = s->n_exact, i;

	s->bits[(bit >> 6) & 1] |= 1ULL << (bit & 63);
	if (n > CW_SKETCH_EXACT)
		return;
	for (i = 0; i < CW_SKETCH_EXACT; i++) {
		if (i >= n)
			break;
		if (s->exact[i] == id)
			return;
	}
	if (n < CW_SKETCH_EXACT)
		s->exact[n] = id;
	s->n_exact = n + 1;
}

/* A TCP data segment that ends at or before data already seen on its flow. */
static __always_inline bool is_retransmit(struct pkt *p, __u8 dir)
{
	__u32 end = p->seq + p->payload, *last;

	p->key.dir = dir;
	last = bpf_map_lookup_elem(&seq_end, &p->key);
	if (!last) {
		if (bpf_map_update_elem(&seq_end, &p->key, &end, BPF_ANY))
			stat_inc(CW_SSTAT_SEQ_FULL);
		return false;
	}
	if ((__s32)(end - *last) <= 0)
		return true;
	*last = end;
	return false;
}

static __always_inline int sample(struct __sk_buff *skb, __u8 dir)
{
	struct cw_sampler_bin *b;
	struct pkt p = {};
	__u64 start = start_ns, now;
	__u32 idx, r;

	if (!start)
		return TC_ACT_OK;
	now = bpf_ktime_get_ns();
	if (now < start)
		return TC_ACT_OK;
	idx = (now - start) / interval_ns;
	if (idx >= nbins) {
		stat_inc(CW_SSTAT_PAST_END);
		return TC_ACT_OK;
	}
	b = bpf_map_lookup_elem(&bins, &idx);
	if (!b)
		return TC_ACT_OK;
	if (skb->protocol == bpf_htons(ETH_P_IP))
		parse_ipv4(skb, &p);
	else if (skb->protocol == bpf_htons(ETH_P_IPV6))
		parse_ipv6(skb, &p);
	r = region_of(&p, dir) & 1;
	if (dir == DIR_IN) {
		b->bytes_in[r] += skb->len;
		if (p.is_ip && p.ecn == ECN_CE)
			b->ecn_in[r] += skb->len;
	} else {
		b->bytes_out[r] += skb->len;
	}
	if (!p.is_ip)
		return TC_ACT_OK;
	sketch_add(dir == DIR_IN ? &b->flows_in[r] : &b->flows_out[r],
		   flow_hash(&p));
	if (p.proto == IPPROTO_TCP && p.payload && is_retransmit(&p, dir)) {
		__u32 segs = skb->gso_segs ?: 1;

		if (dir == DIR_IN)
			b->retrans_in[r] += segs;
		else
			b->retrans_out[r] += segs;
	}
	return TC_ACT_OK;
}

SEC("tc")
int cw_sampler_ingress(struct __sk_buff *skb)
{
	return sample(skb, DIR_IN);
}

SEC("tc")
int cw_sampler_egress(struct __sk_buff *skb)
{
	return sample(skb, DIR_OUT);
}
