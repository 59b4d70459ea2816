// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The iterators the agent reads conn.bpf.c's state with: the start-up
 * scan of open files and the walk of the sockets' storage.
 *
 * Part of conn.bpf.c, which includes it once after its maps and the logic
 * every variant shares: one BPF object, one skeleton.
 */
/* ---- iterators -------------------------------------------------------- */

/*
 * Start-up scan over every task's open files: sockets that were open before
 * the agent get storage and their owner (the task that holds them), and
 * listening ports are noted so user space can tell those sockets' roles.
 */
SEC("iter/task_file")
int cw_scan_files(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	struct cw_listen_key lk = {};
	struct socket *sock;
	struct cw_conn *c;
	struct sock *sk;
	__u8 proto, one = 1;
	int state;

	if (!task || !file)
		return 0;
	sock = bpf_sock_from_file(file);
	if (!sock)
		return 0;
	sk = sock->sk;
	if (!sk)
		return 0;
	proto = sk_protocol_wanted(sk);
	if (!proto)
		return 0;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (proto == IPPROTO_TCP && state == TCP_LISTEN) {
		lk.netns = sk_netns(sk);
		lk.port = BPF_CORE_READ(sk, __sk_common.skc_num);
		bpf_map_update_elem(&listeners, &lk, &one, BPF_ANY);
		return 0;
	}
	if (proto == IPPROTO_TCP && state != TCP_ESTABLISHED &&
	    state != TCP_CLOSE_WAIT)
		return 0;
	c = conn_touch(sk, proto, true);
	if (!c)
		return 0;
	if (!(c->flags & (CW_F_ESTABLISHED | CW_F_CLOSED)) &&
	    proto == IPPROTO_TCP) {
		/*
		 * After the start-up scan, or for a client whose SYN_SENT
		 * was seen, an end not yet established is one whose
		 * handshake went unseen: counted from its birth.
		 */
		if (scan_late || c->role == CW_ROLE_CLIENT) {
			conn_late(c, sk);
		} else {
			c->flags |= CW_F_PREEXISTING | CW_F_ESTABLISHED;
			/* Counted from now on: what it did before is not
			 * ours. */
			conn_base(c, sk, 0, 0);
		}
	}
	/*
	 * A holder, not necessarily the owner: a forking server's parent
	 * and a process handing the socket over by SCM_RIGHTS hold it an
	 * instant before they close their copy.  Kept as found first, and
	 * replaced by the first call or close seen in a process's own
	 * context (fill_owner()).
	 */
	if (!owned(c)) {
		fill_owner_task(&c->owner, task);
		c->owner_tentative = 1;
	}
	return 0;
}

/*
 * Every interval: TCP ends whose bytes moved (read from the kernel's
 * counters, written back as the last reported) or whose calls were counted
 * since the last collection.
 */
SEC("iter/bpf_sk_storage_map")
int cw_collect(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct cw_conn *c = ctx->value, *out;
	struct sock *sk = ctx->sk;
	__u64 bout, bin;
	__u32 zero = 0;
	int state;

	if (!sk || !c)
		return 0;
	if (c->protocol != IPPROTO_TCP || (c->flags & CW_F_CLOSED))
		return 0;
	/* The state first: the transition's program ran before its store. */
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (!(c->flags & CW_F_ESTABLISHED)) {
		/* A client whose ESTABLISHED went unseen (conn_late()). */
		if (c->role != CW_ROLE_CLIENT || !established_like(state))
			return 0;
		conn_late(c, sk);
	}
	conn_base(c, sk, 0, 0);
	tcp_bytes(c, sk, state, &bout, &bin);
	if (c->flags & CW_F_DRAIN) {
		/*
		 * Nothing is written after CLOSE and a read only adds; and
		 * tcp_disconnect() (SO_LINGER 0, before the destruction)
		 * zeroes the counters: the CLOSE reading stands (on_close()).
		 */
		bout = c->bytes_out;
		if (bin < c->bytes_in)
			bin = c->bytes_in;
	}
	if (bout != c->bytes_out || bin != c->bytes_in) {
		c->bytes_out = bout;
		c->bytes_in = bin;
		c->last_ns = bpf_ktime_get_ns();
	} else if (c->last_ns < collect_since_ns &&
		   !(c->flags & CW_F_PREEXISTING &&
		     c->first_ns >= collect_since_ns)) {
		return 0;
	}
	out = bpf_map_lookup_elem(&scratch, &zero);
	if (!out)
		return 0;
	bpf_probe_read_kernel(out, sizeof(*out), c);
	refresh_tcp(out, sk);
	bpf_seq_write(ctx->meta->seq, out, sizeof(*out));
	return 0;
}
