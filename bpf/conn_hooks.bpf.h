// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The attach variants of conn.bpf.c: the same hooks as tracepoints,
 * fentry/fexit and kprobes, each calling the shared on_*() logic.
 *
 * Part of conn.bpf.c, which includes it once after its maps and the logic
 * every variant shares: one BPF object, one skeleton.
 */
/* ---- tracepoint variant ---------------------------------------------- */

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(cw_tp_set_state, struct sock *sk, int old, int new)
{
	on_state(sk, old, new);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(cw_tp_send, struct sock *sk, int ret, int flags)
{
	on_io(sk, ret, CW_DIR_OUT);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(cw_tp_recv, struct sock *sk, int ret, int flags)
{
	if (!(flags & MSG_PEEK))
		on_io(sk, ret, CW_DIR_IN);
	return 0;
}

/* Also used by the fentry variant: any kernel with fentry has tp_btf. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(cw_tp_destroy, struct sock *sk)
{
	on_destroy(sk);
	return 0;
}

/* Also used by the fentry variant: any kernel with fentry has tp_btf. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(cw_tp_retransmit, struct sock *sk, struct sk_buff *skb)
{
	on_retransmit(sk);
	return 0;
}

/* ---- fentry variant --------------------------------------------------- */

SEC("fentry/tcp_connect")
int BPF_PROG(cw_fentry_connect, struct sock *sk)
{
	on_state(sk, TCP_CLOSE, TCP_SYN_SENT);
	return 0;
}

/* inet_csk_accept(sk, arg) since v6.10, commit 92ef0fd55ac8 ("net: change
 * proto and proto_ops accept type"); before: (sk, flags, err, kern). */
SEC("fexit/inet_csk_accept")
int BPF_PROG(cw_fexit_accept, struct sock *sk, struct proto_accept_arg *arg,
	     struct sock *newsk)
{
	on_accept(newsk);
	return 0;
}

SEC("fexit/inet_csk_accept")
int BPF_PROG(cw_fexit_accept_old, struct sock *sk, int flags, int *err,
	     bool kern, struct sock *newsk)
{
	on_accept(newsk);
	return 0;
}

SEC("fentry/tcp_set_state")
int BPF_PROG(cw_fentry_set_state, struct sock *sk, int state)
{
	on_state(sk, BPF_CORE_READ(sk, __sk_common.skc_state), state);
	return 0;
}

SEC("fexit/sock_sendmsg")
int BPF_PROG(cw_fexit_sendmsg, struct socket *sock, struct msghdr *msg, int ret)
{
	on_io(BPF_CORE_READ(sock, sk), ret, CW_DIR_OUT);
	return 0;
}

SEC("fexit/sock_recvmsg")
int BPF_PROG(cw_fexit_recvmsg, struct socket *sock, struct msghdr *msg,
	     int flags, int ret)
{
	if (!(flags & MSG_PEEK))
		on_io(BPF_CORE_READ(sock, sk), ret, CW_DIR_IN);
	return 0;
}

/* ---- kprobe variant --------------------------------------------------- */

SEC("kprobe/tcp_connect")
int BPF_KPROBE(cw_kp_connect, struct sock *sk)
{
	on_state(sk, TCP_CLOSE, TCP_SYN_SENT);
	return 0;
}

SEC("kretprobe/inet_csk_accept")
int BPF_KRETPROBE(cw_krp_accept, struct sock *newsk)
{
	on_accept(newsk);
	return 0;
}

SEC("kprobe/tcp_set_state")
int BPF_KPROBE(cw_kp_set_state, struct sock *sk, int state)
{
	on_state(sk, BPF_CORE_READ(sk, __sk_common.skc_state), state);
	return 0;
}

SEC("kprobe/tcp_retransmit_skb")
int BPF_KPROBE(cw_kp_retransmit, struct sock *sk)
{
	on_retransmit(sk);
	return 0;
}

static __always_inline void io_enter(struct socket *sock, int flags)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sk = (__u64)BPF_CORE_READ(sock, sk);

	if (!(flags & MSG_PEEK))
		bpf_map_update_elem(&inflight, &tid, &sk, BPF_ANY);
}

static __always_inline void io_return(int ret, __u8 dir)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *sk = bpf_map_lookup_elem(&inflight, &tid);

	if (!sk)
		return;
	on_io((struct sock *)*sk, ret, dir);
	bpf_map_delete_elem(&inflight, &tid);
}

SEC("kprobe/sock_sendmsg")
int BPF_KPROBE(cw_kp_sendmsg, struct socket *sock)
{
	io_enter(sock, 0);
	return 0;
}

SEC("kretprobe/sock_sendmsg")
int BPF_KRETPROBE(cw_krp_sendmsg, int ret)
{
	io_return(ret, CW_DIR_OUT);
	return 0;
}

SEC("kprobe/sock_recvmsg")
int BPF_KPROBE(cw_kp_recvmsg, struct socket *sock, struct msghdr *msg,
	       int flags)
{
	io_enter(sock, flags);
	return 0;
}

SEC("kretprobe/sock_recvmsg")
int BPF_KRETPROBE(cw_krp_recvmsg, int ret)
{
	io_return(ret, CW_DIR_IN);
	return 0;
}
