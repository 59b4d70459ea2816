// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Connection health: connect time, failed connects and resets, from
 * lifecycle transitions and one program per RST sent; nothing per call
 * or per packet.  The RTT is the agent's (agent/collect.c).
 *
 * Part of conn.bpf.c, which includes it once after conn_touch() and
 * fill_addrs(): one BPF object, one skeleton.
 */
#define EPIPE	     32
#define ECONNRESET   104
#define ECONNREFUSED 111

/*
 * Connection health, from lifecycle transitions only: nothing runs per
 * call or per packet for it.
 *
 * - connect_us: a client's SYN_SENT (in connect(), before the SYN goes)
 *   to its ESTABLISHED, so SYN retransmissions count in it; 0 when either
 *   went unseen (an end marked established late has none).
 * - fail: a client's SYN_SENT -> CLOSE.  The kernel sets sk_err before
 *   it moves the socket to CLOSE (tcp_done_with_error()): ECONNREFUSED
 *   when a RST answered our SYN (tcp_reset() in SYN_SENT; an ICMP port
 *   unreachable gives the same) is CW_FAIL_REFUSED; anything else
 *   (ETIMEDOUT after the SYN retries, an ICMP host or network
 *   unreachable, or the owner closing the socket while it waited: an
 *   application's own connect timeout) is CW_FAIL_TIMEOUT: the peer
 *   never answered.  Such an end becomes one closed record (connect_failed()).
 * - resets_in: an established end moved to CLOSE with sk_err ECONNRESET
 *   (or EPIPE, from CLOSE_WAIT): tcp_reset(), a RST received.  A RST
 *   that arrives after the owner's close() sent the final record is not
 *   in it (the peer's end counts it as sent).
 * - resets_out: RSTs the socket sent while established and not yet final
 *   (tp_btf/tcp_send_reset).  An owner's close() that aborts (unread
 *   data, SO_LINGER 0) moves to CLOSE before it sends the RST, so such an
 *   end's final record waits for the destruction in the same close()
 *   (owner_abort()).
 */
static __always_inline void health_close(struct cw_conn *c, struct sock *sk,
					 int old)
{
	int err = SK_FIELD(sk, sk_err);

	if (c->flags & CW_F_CLOSED)
		return;
	if (!(c->flags & CW_F_ESTABLISHED)) {
		if (old == TCP_SYN_SENT && !c->fail)
			c->fail = err == ECONNREFUSED ? CW_FAIL_REFUSED
						      : CW_FAIL_TIMEOUT;
		return;
	}
	if (err == ECONNRESET || err == EPIPE)
		c->resets_in = 1;
}

/* A client whose connect failed: one closed record, with its owner. */
static __always_inline void connect_failed(struct sock *sk, struct cw_conn *c)
{
	struct cw_conn *rec;

	if (!c->fail)
		c->fail = CW_FAIL_TIMEOUT;
	rec = bpf_ringbuf_reserve(&closed, sizeof(*rec), 0);
	if (!rec) {
		stat_inc(CW_STAT_CLOSE_LOST);
		return;
	}
	__builtin_memcpy(rec, c, sizeof(*rec));
	rec->last_ns = bpf_ktime_get_ns();
	/* The port was chosen after SYN_SENT (inet_hash_connect()). */
	if (!rec->lport || !rec->rport)
		fill_addrs(rec, sk);
	bpf_ringbuf_submit(rec, 0);
}

/*
 * At the destruction: a client's connect that failed in work no program
 * saw (a SYN timeout runs in a timer): never established, no byte
 * acknowledged or received, not final.  Its cause is gone (the owner's
 * connect() took sk_err): a timeout, unless the CLOSE was seen.
 */
static __always_inline bool connect_failed_unseen(const struct cw_conn *c,
						  struct sock *sk)
{
	return c->role == CW_ROLE_CLIENT &&
	       !(c->flags & (CW_F_ESTABLISHED | CW_F_CLOSED)) &&
	       !BPF_CORE_READ((struct tcp_sock *)sk, bytes_acked) &&
	       !BPF_CORE_READ((struct tcp_sock *)sk, bytes_received);
}

/*
 * The owner's close() aborting an open end: unread data (a RST instead of
 * a FIN, __tcp_close()) or SO_LINGER 0 (tcp_disconnect()).  Both move the
 * socket to CLOSE before they send the RST and destroy it later in the
 * same call, so the final reading waits for the destruction and holds the
 * RST sent.  Told apart from every other CLOSE of an open end: no error
 * (a RST or a timeout received sets sk_err first), both shutdown bits
 * (close() sets them first; connect(AF_UNSPEC) does not), not orphaned
 * yet (close()'s FIN_WAIT2 timewait handoff runs after sock_orphan()),
 * and from FIN_WAIT1/2 no FIN received (tcp_fin() sets RCV_SHUTDOWN too,
 * with SOCK_DONE).
 */
static __always_inline bool owner_abort(struct sock *sk, int old)
{
	__u64 fl = BPF_CORE_READ(sk, __sk_common.skc_flags);

	if (SK_FIELD(sk, sk_err) || fl & (1UL << SOCK_DEAD))
		return false;
	if ((BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & SHUTDOWN_MASK) !=
	    SHUTDOWN_MASK)
		return false;
	if (old == TCP_ESTABLISHED || old == TCP_CLOSE_WAIT)
		return true;
	return (old == TCP_FIN_WAIT1 || old == TCP_FIN_WAIT2) &&
	       !(fl & (1UL << SOCK_DONE));
}

/*
 * A RST sent: tcp_send_active_reset() by a full socket, or the reply to a
 * segment (tcp_v4/v6_send_reset()), where sk may be NULL, a request or a
 * timewait socket: none of those has storage.  Per RST, never per call.
 */
static __always_inline void on_send_reset(struct sock *sk)
{
	struct cw_conn *c;

	if (!sk || use_sk_hash || per_event)
		return;
	c = bpf_sk_storage_get(&conns, sk, 0, 0);
	if (c && c->flags & CW_F_ESTABLISHED && !(c->flags & CW_F_CLOSED))
		__sync_fetch_and_add(&c->resets_out, 1);
}

/* tracepoint and fentry variants (the loader, agent/agent.c); only the
 * socket is read: it is the first argument since v4.15. */
SEC("tp_btf/tcp_send_reset")
int BPF_PROG(cw_tp_send_reset, struct sock *sk)
{
	on_send_reset(sk);
	return 0;
}
