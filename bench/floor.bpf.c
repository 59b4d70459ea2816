// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The floor of the agent benchmark: empty programs on the hooks the agent's
 * per-call programs use.  Whatever a real program costs above this is its
 * own work; this much is the price of being attached at all.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("tp_btf/sock_send_length")
int BPF_PROG(floor_send, struct sock *sk, int ret, int flags)
{
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(floor_recv, struct sock *sk, int ret, int flags)
{
	return 0;
}
