// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The floor of the agent benchmark: empty programs on the hooks the agent's
 * per-call programs use.  Whatever a real program costs above this is its
 * own work; this much is the price of being attached at all.
 *
 * Built with -DFLOOR_PART=NAME (bench/bench_agent_prog.sh, PARTS=...), the
 * same programs do one piece of what the agent's per-call programs do, so
 * that the pieces can be priced one by one against the empty program:
 *
 *   lookup	bpf_sk_storage_get (create) and nothing else
 *   lookup_use	the lookup, a flag test and a plain add to the storage
 *   lookup_lock the same with a locked add
 *   lookup2	the lookup twice: the second finds every line it reads
 *		already loaded, so it prices the helper's own instructions
 *   touch	no helper after the first call: plain loads of what the
 *		lookup reads (sk->sk_bpf_storage, its cache slots, the
 *		element), so it prices the memory the lookup touches
 *   clock	bpf_ktime_get_ns
 *   pid	bpf_get_current_pid_tgid
 *   filters	the family, protocol and namespace loads
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct part_val {
	__u64 flags;
	__u64 calls;
	__u64 pad[30];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct part_val);
} part_store SEC(".maps");

__u64 part_sink = 0;

#define P_EMPTY	      0
#define P_LOOKUP      1
#define P_LOOKUP_USE  2
#define P_LOOKUP_LOCK 3
#define P_TOUCH	      4
#define P_CLOCK	      5
#define P_PID	      6
#define P_FILTERS     7
#define P_LOOKUP2     8

#ifndef FLOOR_PART
#define FLOOR_PART P_EMPTY
#endif

static __always_inline void part(struct sock *sk)
{
	struct part_val *v;

	if (FLOOR_PART == P_LOOKUP) {
		v = bpf_sk_storage_get(&part_store, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (!v)
			part_sink = 1;
	} else if (FLOOR_PART == P_LOOKUP_USE) {
		v = bpf_sk_storage_get(&part_store, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (v && !(v->flags & 1))
			v->calls++;
	} else if (FLOOR_PART == P_LOOKUP_LOCK) {
		v = bpf_sk_storage_get(&part_store, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (v && !(v->flags & 1))
			__sync_fetch_and_add(&v->calls, 1);
	} else if (FLOOR_PART == P_LOOKUP2) {
		v = bpf_sk_storage_get(&part_store, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (v)
			v = bpf_sk_storage_get(&part_store, sk, 0, 0);
		if (!v)
			part_sink = 1;
	} else if (FLOOR_PART == P_TOUCH) {
		struct bpf_local_storage *ls = sk->sk_bpf_storage;
		struct bpf_local_storage_data *d = 0;
		int i;

		if (!ls) {
			bpf_sk_storage_get(&part_store, sk, 0,
					   BPF_SK_STORAGE_GET_F_CREATE);
			return;
		}
		/* Only this map's storage is on the benchmark's sockets. */
		for (i = 0; i < 16 && !d; i++)
			d = ls->cache[i];
		if (d && d->smap)
			part_sink = 1;
	} else if (FLOOR_PART == P_CLOCK) {
		if (bpf_ktime_get_ns() == 1)
			part_sink = 1;
	} else if (FLOOR_PART == P_PID) {
		if (bpf_get_current_pid_tgid() == 1)
			part_sink = 1;
	} else if (FLOOR_PART == P_FILTERS) {
		if (sk->__sk_common.skc_family == 99 ||
		    BPF_CORE_READ_BITFIELD(sk, sk_protocol) == 99 ||
		    sk->__sk_common.skc_net.net->ns.inum == 1)
			part_sink = 1;
	}
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(floor_send, struct sock *sk, int ret, int flags)
{
	if (FLOOR_PART != P_EMPTY)
		part(sk);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(floor_recv, struct sock *sk, int ret, int flags)
{
	if (FLOOR_PART != P_EMPTY)
		part(sk);
	return 0;
}
