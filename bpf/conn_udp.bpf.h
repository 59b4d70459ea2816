// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * UDP counted per (socket, peer) by cgroup_skb programs.
 *
 * Part of conn.bpf.c, which includes it once after its maps and the logic
 * every variant shares: one BPF object, one skeleton.
 */
/* ---- UDP: per (socket, peer), from the packets ------------------------ */

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The network namespace of a socket a cgroup_skb program holds: its
 * struct bpf_sock view has no namespace, the kernel's struct sock does. */
static __always_inline __u32 bpf_sock_netns(struct bpf_sock *bsk)
{
	struct sock *sk;

	if (!bpf_rdonly_cast)
		return 0;
	sk = bpf_rdonly_cast(bsk, bpf_core_type_id_kernel(struct sock));
	return sk->__sk_common.skc_net.net->ns.inum;
}

/* The IPv4 header's fields we read, in one load. */
struct ip4_head {
	__u8 vihl;
	__u8 pad[11];
	__u8 saddr[4], daddr[4];
};

/* The IPv6 header's fields we read, in one load. */
struct ip6_head {
	__u8 pad[8];
	__u8 saddr[16], daddr[16];
};

/*
 * The flow a UDP packet is on, from its headers: key (peer, family) and
 * the local address and port; the payload length in *len.  0, or -1 for a
 * packet that is not UDP over IPv4/IPv6 we can read.  One load per
 * header: each bpf_skb_load_bytes is a helper call, and this runs per
 * packet.
 */
static __always_inline int udp_parse(struct __sk_buff *skb, __u8 dir,
				     struct cw_udp_key *key, __u8 laddr[16],
				     __u16 *lport, __u16 *len)
{
	struct ip4_head h4;
	struct ip6_head h6;
	__u16 udp[4]; /* source port, destination port, length, checksum */
	__u32 off;
	bool out = dir == CW_DIR_OUT;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, &h4, sizeof(h4)))
			return -1;
		off = (h4.vihl & 0xf) * 4;
		key->family = AF_INET;
		__builtin_memcpy(key->raddr, out ? h4.daddr : h4.saddr, 4);
		__builtin_memcpy(laddr, out ? h4.saddr : h4.daddr, 4);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 0, &h6, sizeof(h6)))
			return -1;
		off = IPV6_HDR_LEN; /* extension headers: not counted */
		key->family = AF_INET6;
		__builtin_memcpy(key->raddr, out ? h6.daddr : h6.saddr, 16);
		__builtin_memcpy(laddr, out ? h6.saddr : h6.daddr, 16);
	} else {
		return -1;
	}
	if (bpf_skb_load_bytes(skb, off, udp, sizeof(udp)))
		return -1;
	key->rport = bpf_ntohs(out ? udp[1] : udp[0]);
	*lport = bpf_ntohs(out ? udp[0] : udp[1]);
	*len = bpf_ntohs(udp[2]);
	*len = *len > UDP_HDR_LEN ? *len - UDP_HDR_LEN : 0;
	return 0;
}

/*
 * Per packet, so the cheap way: the coarse clock (a flow's times only
 * tell when it was last active, to a tick; the agent allows for that),
 * and the socket's storage looked up only when it is needed (a flow
 * without its owner yet, or a namespace to check).
 */
static __always_inline int udp_count(struct __sk_buff *skb, __u8 dir)
{
	struct cw_udp_key key = {};
	struct cw_udp_flow *f, nf = {};
	struct bpf_sock *sk = skb->sk;
	struct cw_conn *c = NULL;
	__u8 laddr[16] = {};
	__u16 lport, len;

	if (per_event || !sk)
		return 1;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != IPPROTO_UDP)
		return 1;
	if (udp_parse(skb, dir, &key, laddr, &lport, &len))
		return 1;
	key.cookie = bpf_get_socket_cookie(skb);
	if (target_netns) {
		/* The cgroup hooks see every namespace's packets; a socket
		 * without storage yet still has a namespace to check. */
		__u32 ns;

		c = bpf_sk_storage_get(&conns, sk, 0, 0);
		ns = c && c->netns ? c->netns : bpf_sock_netns(sk);
		if (ns && ns != target_netns)
			return 1;
	}
	f = bpf_map_lookup_elem(&udp_flows, &key);
	if (!f) {
		nf.first_ns = bpf_ktime_get_coarse_ns();
		nf.lport = lport;
		__builtin_memcpy(nf.laddr, laddr, sizeof(laddr));
		if (bpf_map_update_elem(&udp_flows, &key, &nf, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&udp_flows, &key)) {
			stat_inc(CW_STAT_UDP_MAP_FULL);
			return 1;
		}
		f = bpf_map_lookup_elem(&udp_flows, &key);
		if (!f)
			return 1;
	}
	if (dir == CW_DIR_OUT) {
		__sync_fetch_and_add(&f->bytes_out, len);
		__sync_fetch_and_add(&f->dgrams_out, 1);
	} else {
		__sync_fetch_and_add(&f->bytes_in, len);
		__sync_fetch_and_add(&f->dgrams_in, 1);
	}
	f->last_ns = bpf_ktime_get_coarse_ns();
	if (f->owner.tgid)
		return 1;
	if (!c)
		c = bpf_sk_storage_get(&conns, sk, 0, 0);
	if (c && owned(c)) {
		f->owner = c->owner;
		f->netns = c->netns;
	}
	return 1;
}

SEC("cgroup_skb/egress")
int cw_udp_egress(struct __sk_buff *skb)
{
	return udp_count(skb, CW_DIR_OUT);
}

SEC("cgroup_skb/ingress")
int cw_udp_ingress(struct __sk_buff *skb)
{
	return udp_count(skb, CW_DIR_IN);
}
