/* SPDX-License-Identifier: MIT */
/*
 * Bins shared by bpf/sampler.bpf.c and its loader (agent/sampler.c).
 * Fixed-width __u types only and no includes, so both sides compile it.
 */
#ifndef CW_BPF_SAMPLER_H
#define CW_BPF_SAMPLER_H

/* Traffic is split by the remote address: in-region prefixes or not. */
#define CW_REGIONS 2 /* 0: in-region, 1: cross-region */

/* Bits in a flow sketch, and flows a sketch also keeps exactly. */
#define CW_SKETCH_BITS	128
#define CW_SKETCH_EXACT 12

/*
 * Distinct flows in one bin: a 128-bit linear-counting bitmap over a flow
 * hash, plus the first CW_SKETCH_EXACT hashes themselves so that small
 * counts are exact.  n_exact is CW_SKETCH_EXACT + 1 once the list overflowed.
 */
struct cw_flow_sketch {
	__u64 bits[CW_SKETCH_BITS / 64];
	__u32 exact[CW_SKETCH_EXACT];
	__u32 n_exact;
	__u32 pad;
};

/* One bin of one CPU; user space merges the CPUs. */
struct cw_sampler_bin {
	__u64 bytes_in[CW_REGIONS]; /* L2 frame bytes, as ip -s link */
	__u64 bytes_out[CW_REGIONS];
	__u64 ecn_in[CW_REGIONS];     /* ingress bytes marked ECN-CE */
	__u64 retrans_in[CW_REGIONS]; /* TCP segments with seen sequence */
	__u64 retrans_out[CW_REGIONS];
	struct cw_flow_sketch flows_in[CW_REGIONS];
	struct cw_flow_sketch flows_out[CW_REGIONS];
};

/* Last end sequence seen on one direction of a TCP flow. */
struct cw_seq_key {
	__u8 saddr[16]; /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u8 family; /* 4 or 6 */
	__u8 dir;    /* 0 ingress, 1 egress */
	__u16 pad;
};

/* In-region prefixes; IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
struct cw_region_key {
	__u32 prefixlen;
	__u8 addr[16];
};

enum cw_sampler_stat {
	CW_SSTAT_PAST_END, /* packets after the last bin */
	CW_SSTAT_SEQ_FULL, /* sequence map update failed */
	CW_SSTAT_MAX,
};

#endif
