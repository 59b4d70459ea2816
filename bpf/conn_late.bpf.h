// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Ends first seen after their handshake, the owner's close as the final
 * reading, and the ends whose final reading waits for their destruction:
 * conn.bpf.c's answers to the kernel making an end's transitions without
 * running its programs, or under an owner that still holds it.
 *
 * Part of conn.bpf.c, which includes it once after conn_touch() and
 * conn_health.bpf.h: one BPF object, one skeleton.
 */
/*
 * Ends first seen after their handshake.  The kernel does not always run
 * the tracing programs: under load, a TCP state change made in softirq
 * work on top of some task reached ftrace's copy of the same tracepoint
 * but none of the BPF programs attached to it, with no recursion miss
 * counted (docs/agent-counters.md, "Transitions the programs never see").
 * A client then has its storage from SYN_SENT but no ESTABLISHED, and a
 * server end has no storage at all until its next transition.  Such an
 * end is marked established when it is next seen in a state that only an
 * established connection reaches, with the base a fresh connection has at
 * ESTABLISHED: the kernel starts its counters at the handshake (sk_alloc
 * zeroes them, tcp_disconnect() too), so the client's sent total holds
 * its SYN (bytes_acked = 1) and nothing else does.  A TCP Fast Open
 * client's SYN data is then counted, where a reading would absorb it.
 */
static __always_inline bool established_like(int state)
{
	return state == TCP_ESTABLISHED || state == TCP_CLOSE_WAIT ||
	       fin_queued(state) || state == TCP_FIN_WAIT2;
}

/*
 * A listener starts: tells a late end's role.  Never removed when it
 * stops, since a pre-existing end takes its role from the map when its
 * record is made (agent/collect.c): the map is LRU instead.
 */
static __always_inline void listener_note(struct sock *sk)
{
	struct cw_listen_key lk = {};
	__u8 one = 1;

	lk.netns = sk_netns(sk);
	lk.port = BPF_CORE_READ(sk, __sk_common.skc_num);
	bpf_map_update_elem(&listeners, &lk, &one, BPF_ANY);
}

static __always_inline void conn_late(struct cw_conn *c, struct sock *sk)
{
	struct cw_listen_key lk = {};

	if (use_sk_hash || c->flags & (CW_F_ESTABLISHED | CW_F_CLOSED))
		return;
	if (!c->role) {
		lk.netns = c->netns;
		lk.port = sk_lport(sk);
		c->role = bpf_map_lookup_elem(&listeners, &lk)
				  ? CW_ROLE_SERVER
				  : CW_ROLE_CLIENT;
	}
	c->base_out = c->role == CW_ROLE_CLIENT ? 1 : 0;
	c->base_in = 0;
	c->flags |= CW_F_ESTABLISHED | CW_F_BASE | CW_F_LATE;
	fill_addrs(c, sk);
	if (!owned(c))
		__sync_fetch_and_add(&unowned_ends, 1);
}

/*
 * A transition out of a state only an established end is in: an end whose
 * handshake went unseen is marked.  Storage is made only leaving
 * ESTABLISHED or CLOSE_WAIT: an end in either state that a process held
 * when the agent started got storage from the start-up scan, while an end
 * already closing then (FIN_WAIT1 and after, held by no file) is not ours.
 */
static __always_inline void late_sight(struct sock *sk, int old)
{
	struct cw_conn *c;

	if (use_sk_hash || !established_like(old))
		return;
	c = conn_get(sk, false);
	if (!c && (old == TCP_ESTABLISHED || old == TCP_CLOSE_WAIT))
		c = conn_touch(sk, IPPROTO_TCP, true);
	if (c)
		conn_late(c, sk);
}

/*
 * The owner's close(): its bytes are final now, and the record goes at
 * once rather than at CLOSE, which the kernel may reach in work no program
 * sees ("Ends first seen after their handshake").  close() set both
 * shutdown bits and emptied the receive queue before tcp_close_state()
 * made this transition (__tcp_close), and queues its FIN only after it:
 * on_close() reads with the state left, so no FIN is taken off.  Nothing
 * can be written any more, and nothing more read: data arriving later is
 * never read, and a read of an empty queue after both shutdowns returns
 * EOF.  shutdown(SHUT_WR) alone leaves RCV_SHUTDOWN clear until the peer's
 * FIN, and unread data in the queue: such an end waits, as before.
 */
static __always_inline bool owner_done(struct cw_conn *c, struct sock *sk)
{
	return c->flags & CW_F_ESTABLISHED &&
	       (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) &
		SHUTDOWN_MASK) == SHUTDOWN_MASK &&
	       !BPF_CORE_READ(sk, sk_receive_queue.qlen);
}

/*
 * The peer's FIN (SOCK_DONE, no error) reaching FIN_WAIT2: an end whose
 * holder shut down only its sending side and holds it still (not
 * orphaned).  Only from FIN_WAIT2, which a FIN leaves at once for CLOSE
 * (tcp_fin -> tcp_time_wait): from CLOSING or LAST_ACK the same flags
 * are also those of the holder's tcp_disconnect() (connect(AF_UNSPEC)),
 * which goes to CLOSE before it clears them, and such a socket may
 * connect again.
 */
static __always_inline bool peer_fin_held(struct sock *sk, int old)
{
	__u64 fl = BPF_CORE_READ(sk, __sk_common.skc_flags);

	return old == TCP_FIN_WAIT2 && !SK_FIELD(sk, sk_err) &&
	       !(fl & (1UL << SOCK_DEAD)) && (fl & (1UL << SOCK_DONE));
}

/*
 * Final readings.  The CLOSE transition is final for an end whose owner
 * has closed it or has nothing left to read.  But the kernel also moves a
 * socket its owner still holds to CLOSE: the peer's FIN reaching FIN_WAIT2
 * after our shutdown(SHUT_WR) (tcp_fin -> tcp_time_wait -> tcp_done), a
 * RST; the owner may then go on reading what is queued, and the bytes it
 * reads after CLOSE are its bytes too.  Such an end is marked CW_F_DRAIN:
 * the iterator keeps reporting it and its final record is sent when the
 * socket is destroyed (the owner's close()).  Told apart from an owner's
 * own close(), which also reaches CLOSE with data unread (a RST instead of
 * a FIN), by the receive queue: __tcp_close empties it first, and reads
 * that never happen do not count.
 *
 * The peer's FIN closing an end its holder shut down for writing only
 * (FIN_WAIT2 -> CLOSE) waits even with nothing unread: the holder's last
 * recv() may have taken the last bytes already (copied_seq moved) while
 * its call is not yet counted (sock_recv_length fires after the call
 * returns), and the FIN, handled on another CPU in that instant, would
 * close the record one call short.
 *
 * An end whose owner was not seen in its own context yet (none, or only
 * a tentative one) waits too, if a process still holds it: a server end
 * reset by its peer while its owner sat in recv() never ran an owner's
 * hook (the RST sets sk_err, so the CLOSE is not the owner's), but its
 * owner's close() runs the destruction in the owner's own context.
 * Returns true if the reading waits.
 */
static __always_inline bool close_drains(struct cw_conn *c, struct sock *sk,
					 int old)
{
	struct seq_now s;

	if (use_sk_hash || c->flags & (CW_F_CLOSED | CW_F_DRAIN) ||
	    !(c->flags & CW_F_ESTABLISHED))
		return false;
	if (BPF_CORE_READ(sk, __sk_common.skc_flags) & (1UL << SOCK_DEAD))
		return false;
	tcp_seq_now(sk, &s);
	if (c->flags & CW_F_OWNER &&
	    (s.unread_data <= 0 || !BPF_CORE_READ(sk, sk_receive_queue.qlen)) &&
	    !owner_abort(sk, old) && !peer_fin_held(sk, old))
		return false;
	conn_base(c, sk, 0, 0);
	tcp_bytes(c, sk, old, &c->bytes_out, &c->bytes_in);
	c->close_state = old;
	c->flags |= CW_F_DRAIN;
	c->last_ns = bpf_ktime_get_ns();
	return true;
}
