// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Messages on a connection end, for the per-call programs of conn.bpf.c:
 * a message is a run of calls in one direction, split by a direction flip
 * (and an idle gap with --msg-gap).  Inside a timing window each start
 * goes to the timing ring with what exchange times need (bpf/conn.h,
 * struct cw_msg_event; agent/exchange.c): its place in the stream, the
 * end of the message before, what was in flight the other way.
 *
 * Part of conn.bpf.c, which includes it once before on_io(): one BPF
 * object, one skeleton.
 */
/* Bytes the other way in flight when a message starts (cw_msg_event). */
static __always_inline __u32 msg_overlap(const struct seq_now *s, __u8 dir)
{
	__s32 v = dir == CW_DIR_OUT ? s->unread_data : s->unacked;

	return v > 0 ? (__u32)v : 0;
}

/*
 * A message starts with this call of `bytes`: its place in the stream,
 * the end of the message before (call_ns, the last call) and what was in
 * flight the other way (exchange times: agent/exchange.c).
 */
static __always_inline void msg_start(struct cw_conn *c, struct sock *sk,
				      int bytes, __u8 dir, __u64 now)
{
	struct cw_msg_event *e;
	struct seq_now s;
	__u64 out, in;

	if (now >= window_end_ns)
		return;
	e = bpf_ringbuf_reserve(&timing, sizeof(*e), 0);
	if (!e) {
		stat_inc(CW_STAT_TIMING_LOST);
		return;
	}
	/* The call has returned: its bytes are in the counters. */
	if (!use_sk_hash)
		conn_base(c, sk, dir == CW_DIR_OUT ? bytes : 0,
			  dir == CW_DIR_IN ? bytes : 0);
	/* One reading of the sequence numbers for both. */
	tcp_seq_now(sk, &s);
	if (use_sk_hash) {
		out = c->bytes_out;
		in = c->bytes_in;
	} else {
		tcp_bytes_of(c, &s, TCP_ESTABLISHED, &out, &in);
	}
	e->cookie = c->cookie;
	e->ts_ns = now;
	e->bytes_before = (dir == CW_DIR_OUT ? out : in) - bytes;
	e->dir = dir;
	e->role = c->role;
	e->flags = c->msg_flags;
	c->msg_flags = 0;
	e->overlap = msg_overlap(&s, dir);
	e->prev_end_ns = c->call_ns;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void msg_count(struct cw_conn *c, __u8 dir)
{
	if (dir == CW_DIR_OUT)
		c->msgs_out++;
	else
		c->msgs_in++;
	c->last_dir = dir;
}

/*
 * Inside a window, a call going on with a request (a client's send, a
 * server's receive) after a pause longer than the path's RTT and 1 ms: a
 * second request before the reply (CW_MSGF_RESUMED).  The RTT is read
 * only after such a pause.
 */
static __always_inline void msg_pause(struct cw_conn *c, struct sock *sk,
				      __u8 dir, __u64 now)
{
	struct tcp_sock *tp = (void *)sk;
	__u8 req = c->role == CW_ROLE_CLIENT   ? CW_DIR_OUT
		   : c->role == CW_ROLE_SERVER ? CW_DIR_IN
					       : CW_DIR_NONE;
	__u64 gap = now - c->call_ns;

	if (dir != req || !c->call_ns || gap <= 1000000)
		return;
	/* The path's least RTT: srtt holds the peer's delayed ACKs too. */
	if (gap > (__u64)BPF_CORE_READ(tp, rtt_min.s[0].v) * 1000)
		c->msg_flags |= CW_MSGF_RESUMED;
}

/*
 * Whether this call starts a message, and its record inside a window.  The
 * clock is read only where a time is needed: every call inside a timing
 * window (a message's end is its last call: exchange times), or every
 * call when an idle gap also splits (--msg-gap).  Outside windows
 * (window_end_ns 0) a call going on with a message costs one test more.
 */
static __always_inline void msg_track(struct cw_conn *c, struct sock *sk,
				      int bytes, __u8 dir)
{
	__u64 now;

	if (c->last_dir == dir && !msg_gap_ns) {
		/* After the close too: the message ran past it. */
		if (window_end_ns) {
			now = bpf_ktime_get_ns();
			msg_pause(c, sk, dir, now);
			c->call_ns = now;
		}
		return;
	}
	if (!msg_gap_ns) {
		/*
		 * A direction flip starts a message.  Its time is needed only
		 * in a window (the clock costs ~50 ns here, more than the
		 * rest of the call: bench/RESULTS.md); the agent zeroes
		 * window_end_ns when a window is collected, and the
		 * collection iterator keeps last_ns for the records.  A
		 * flip after the close leaves call_ns at the last message's
		 * end.
		 */
		if (window_end_ns) {
			now = bpf_ktime_get_ns();
			msg_start(c, sk, bytes, dir, now);
			if (now < window_end_ns)
				c->call_ns = now;
			c->last_ns = now;
		}
		msg_count(c, dir);
		return;
	}
	now = bpf_ktime_get_ns();
	if (c->last_dir != dir || now - c->call_ns > msg_gap_ns) {
		msg_start(c, sk, bytes, dir, now);
		msg_count(c, dir);
	}
	c->call_ns = now;
	c->last_ns = now;
}
