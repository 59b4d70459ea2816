// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The floor of bench_dns: empty cgroup_skb programs, ingress and egress,
 * attached where bpf/dns.bpf.c attaches, so the hooks' own cost (the
 * kernel's run of any program there) and the capture's work can be told
 * apart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("cgroup_skb/ingress")
int cw_dns_ingress(struct __sk_buff *skb)
{
	return 1;
}

SEC("cgroup_skb/egress")
int cw_dns_egress(struct __sk_buff *skb)
{
	return 1;
}
