// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Per-message observations for per-request traces (issue 17), kept out of
 * the steady state: the loader (agent/msgs.c) attaches these programs only
 * inside timing windows or for `causeway run --traces`, and detaches them
 * after, so outside those a send or recv runs nothing of ours.
 *
 *   tp_btf/sock_send_length, sock_recv_length   every call: extend the
 *       message in progress, or end it and start the next on a flip
 *   tp_btf/inet_sock_set_state                  the role from the
 *       handshake, and the last message at close
 *   iter/bpf_sk_storage_map                     at detach: every socket's
 *       message in progress
 *   tp_btf/sys_exit                             a known thread's return
 *       from epoll_wait, epoll_pwait(2), poll, ppoll, select, pselect6:
 *       one event-loop iteration
 *
 * Messages are aggregated in socket-local storage, so one event crosses to
 * user space per message, not per call (a 1 MiB reply read in 16 recv()s
 * is one event).  Per thread, a hash holds the request the thread serves
 * now (received on an accepted socket, reply not started) and how many it
 * holds open: a call leaving on a connected socket is stamped with both.
 * One open request means a thread-per-request server: the call is that
 * request's.
 *
 * An event loop holds many open, so it gets evidence of its own (vPath):
 * the thread's context is that of its latest read (a request read on an
 * accepted socket; a reply read on a connected socket carries the request
 * its call was made for; unknown stays unknown), and a call takes it,
 * flagged ctx_loop, only when the write falls in the same loop iteration
 * as that read.  A handler that runs straight from its read callback
 * (Node.js, nginx, asyncio protocols) writes before the loop reads the
 * next event's socket; one that defers its write to a timer or a later
 * iteration writes after other reads have moved the context on, so across
 * an iteration boundary the context is not trusted and timing decides
 * (traces/infer.c).  A call a client pool queued (all its connections
 * busy) is written when a reply frees one, in another request's
 * iteration: it takes the oldest request whose handler left a call to
 * that peer pending (pending_*, below).  Deferral inside one iteration
 * (setImmediate after several reads) is the case this cannot see:
 * docs/causeway-traces.md.
 *
 * Only tracing programs of kinds this kernel attaches without tracefs
 * (DESIGN.md: no kprobes, fentry refused): tp_btf and an iterator.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "msgs.h"

#define AF_INET	 2
#define AF_INET6 10
#define MSG_PEEK 2

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load. */
const volatile __u32 target_netns = 0; /* 0: every network namespace */
const volatile __u32 self_tgid = 0;    /* the agent: its sockets skipped */

/* Set by the loader before each attachment: state of an older one is
 * stale (its messages were flushed at detach). */
__u32 gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cw_msgs_sk);
} socks SEC(".maps");

/* LRU: a thread that exits leaves its entry to be recycled. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cw_msgs_thread);
} threads SEC(".maps");

/* An event loop's learned calls per source, and its queued calls. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cw_msgs_next_key);
	__type(value, struct cw_msgs_next);
} nexts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024); /* loop threads: 3 KiB each */
	__type(key, __u32);
	__type(value, struct cw_msgs_pending);
} pendings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_msgs_pending);
} pending_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_MSGS_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

static __always_inline bool sk_wanted(struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;

	if (family != AF_INET && family != AF_INET6)
		return false;
	if (BPF_CORE_READ_BITFIELD(sk, sk_protocol) != IPPROTO_TCP)
		return false;
	return !target_netns ||
	       sk->__sk_common.skc_net.net->ns.inum == target_netns;
}

/* Identity of a socket, once per attachment, before its first message. */
static __always_inline void announce(struct cw_msgs_sk *s, struct sock *sk,
				     __u32 tgid)
{
	struct cw_msgs_sock_ev *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(CW_MSGS_STAT_LOST);
		return; /* tried again at its next call */
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = CW_MSGS_SOCK;
	e->netns = sk->__sk_common.skc_net.net->ns.inum;
	e->cookie = s->cookie;
	e->tgid = tgid;
	e->family = sk->__sk_common.skc_family;
	e->lport = sk->__sk_common.skc_num;
	e->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	e->role = s->role;
	e->role_seen = !!(s->flags & CW_MSGS_F_ROLE_SEEN);
	if (e->family == AF_INET) {
		bpf_core_read(e->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(e->raddr, 4, &sk->__sk_common.skc_daddr);
	} else {
		bpf_core_read(e->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(e->raddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	s->flags |= CW_MSGS_F_ANNOUNCED;
}

static __always_inline void fill_msg(struct cw_msgs_msg_ev *e,
				     const struct cw_msgs_sk *s)
{
	e->kind = CW_MSGS_MSG;
	e->tid = s->tid;
	e->cookie = s->cookie;
	e->start_ns = s->start_ns;
	e->end_ns = s->end_ns;
	e->bytes = s->bytes;
	e->ctx_cookie = s->ctx_cookie;
	e->ctx_seq = s->ctx_seq;
	e->ctx_open = s->ctx_open;
	e->seq = s->role == CW_MSGS_ACCEPTED && s->dir == CW_MSGS_IN ? s->seq_in
								     : 0;
	e->dir = s->dir;
	e->role = s->role;
	e->ctx_loop = s->ctx_loop;
	e->pad = 0;
}

/* The message in progress is over: hand it out. */
static __always_inline void msg_end(struct cw_msgs_sk *s)
{
	struct cw_msgs_msg_ev *e;

	if (!s->start_ns)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(CW_MSGS_STAT_LOST);
		s->start_ns = 0;
		return;
	}
	fill_msg(e, s);
	s->start_ns = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline struct cw_msgs_thread *thread_get(__u32 tid, bool create)
{
	struct cw_msgs_thread *t = bpf_map_lookup_elem(&threads, &tid);
	struct cw_msgs_thread fresh = {.gen = gen};

	if (t && t->gen == gen)
		return t;
	if (t) { /* from an older attachment: start again */
		t->cookie = 0;
		t->n_open = 0;
		t->iter = t->cur_iter = 0;
		t->cur_cookie = 0;
		t->n_sync = t->n_stale = 0;
		t->answered = 0;
		t->wrote[0] = t->wrote[1] = t->wrote[2] = 0;
		t->gen = gen;
		return t;
	}
	if (!create)
		return NULL;
	if (bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&threads, &tid)) {
		stat_inc(CW_MSGS_STAT_THREAD_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&threads, &tid);
}

/* The reply to the socket's open request starts (or the socket closes):
 * the thread that received the request holds one fewer. */
static __always_inline void request_close(struct cw_msgs_sk *s)
{
	struct cw_msgs_thread *t;

	if (!s->req_tid)
		return;
	t = thread_get(s->req_tid, false);
	s->req_tid = 0;
	if (!t)
		return;
	/* Another thread (a worker) may reply: atomics, not plain stores. */
	if (t->n_open)
		__sync_fetch_and_add(&t->n_open, -1);
	if (t->cookie == s->cookie)
		t->cookie = 0;
}

/*
 * An event loop's queued calls.  A handler that finds every connection of
 * its client pool busy writes nothing: the pool queues the call and
 * writes it when a reply frees a connection, in the iteration of that
 * reply's read, whose context is another request's.  So per thread the
 * peers a handler calls after a read from each source are learned from
 * the calls it wrote at once, and when the next read ends a handling
 * that neither answered its request nor wrote to one of them, that call
 * is pending; a call on a just-freed connection takes the oldest pending
 * one to its peer (pools serve their queues in order).  Pending calls of
 * a request whose reply began are dropped; one that did not fit marks
 * its peer's order lost until that queue runs dry.
 */
/* The scans of a thread's pending calls, run by bpf_loop: the verifier
 * checks each callback once, not once per slot. */
struct pend_scan {
	struct cw_msgs_pending *p;
	__u64 to, cookie;
	__u32 at, oldest;
};

static long scan_clear(__u32 i, void *arg)
{
	struct pend_scan *c = arg;

	if (i >= CW_MSGS_PENDING)
		return 1;
	c->p->cookie[i] = 0;
	return 0;
}

static long scan_free(__u32 i, void *arg)
{
	struct pend_scan *c = arg;

	if (i >= CW_MSGS_PENDING)
		return 1;
	if (c->p->cookie[i])
		return 0;
	c->at = i;
	return 1;
}

static long scan_oldest(__u32 i, void *arg)
{
	struct pend_scan *c = arg;
	__u32 age;

	if (i >= CW_MSGS_PENDING)
		return 1;
	age = c->p->next_stamp - c->p->stamp[i]; /* wraps: still right */
	if (c->p->cookie[i] && c->p->to[i] == c->to &&
	    (c->at >= CW_MSGS_PENDING || age > c->oldest)) {
		c->oldest = age;
		c->at = i;
	}
	return 0;
}

static long scan_drop(__u32 i, void *arg)
{
	struct pend_scan *c = arg;

	if (i >= CW_MSGS_PENDING)
		return 1;
	if (c->p->cookie[i] == c->cookie)
		c->p->cookie[i] = 0;
	return 0;
}

static __always_inline struct cw_msgs_pending *pending_get(__u32 tid,
							   bool create)
{
	struct cw_msgs_pending *p = bpf_map_lookup_elem(&pendings, &tid);
	struct pend_scan c = {};
	__u32 zero = 0;

	if (!p && create) {
		p = bpf_map_lookup_elem(&pending_zero, &zero);
		if (!p)
			return NULL;
		bpf_map_update_elem(&pendings, &tid, p, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&pendings, &tid);
		if (p && p->gen != gen)
			p->gen = gen; /* fresh from the zeroed template */
		return p;
	}
	if (p && p->gen != gen) {
		c.p = p;
		bpf_loop(CW_MSGS_PENDING, scan_clear, &c, 0);
		p->lossy = 0;
		p->gen = gen;
	}
	return p;
}

static __always_inline void pending_push(__u32 tid, __u64 cookie, __u32 seq,
					 __u64 to)
{
	struct cw_msgs_pending *p = pending_get(tid, true);
	struct pend_scan c = {.at = CW_MSGS_PENDING};
	__u32 at;

	if (!p)
		return;
	c.p = p;
	bpf_loop(CW_MSGS_PENDING, scan_free, &c, 0);
	at = c.at;
	if (at >= CW_MSGS_PENDING) {
		p->lossy = p->lossy && p->lossy != to ? ~0ULL : to;
		return;
	}
	p->cookie[at] = cookie;
	p->seq[at] = seq;
	p->to[at] = to;
	p->stamp[at] = ++p->next_stamp;
}

/* The oldest pending call to `to`, taken out; false: none, or its
 * queue's order is lost (then taken out all the same). */
static __always_inline bool pending_pop(__u32 tid, __u64 to, __u64 *cookie,
					__u32 *seq)
{
	struct cw_msgs_pending *p = pending_get(tid, false);
	struct pend_scan c = {.at = CW_MSGS_PENDING, .to = to};
	__u32 at;

	if (!p)
		return false;
	c.p = p;
	bpf_loop(CW_MSGS_PENDING, scan_oldest, &c, 0);
	at = c.at;
	if (at >= CW_MSGS_PENDING) {
		if (p->lossy == to || p->lossy == ~0ULL)
			p->lossy = 0; /* drained: in order again */
		return false;
	}
	*cookie = p->cookie[at];
	*seq = p->seq[at];
	p->cookie[at] = 0;
	return !(p->lossy == to || p->lossy == ~0ULL);
}

/* The reply to a request began: nothing of it is pending any more. */
static __always_inline void pending_drop(__u32 tid, __u64 cookie)
{
	struct cw_msgs_pending *p = bpf_map_lookup_elem(&pendings, &tid);
	struct pend_scan c = {.cookie = cookie};

	if (!p || p->gen != gen)
		return;
	c.p = p;
	bpf_loop(CW_MSGS_PENDING, scan_drop, &c, 0);
}

/* Add peer `to` to a set of CW_MSGS_FANOUT peers (0: a free place); a
 * full set keeps what it has. */
static __always_inline void peers_add(__u64 *set, __u64 to)
{
	__u32 i;

	for (i = 0; i < CW_MSGS_FANOUT; i++) {
		if (set[i] == to)
			return;
		if (!set[i]) {
			set[i] = to;
			return;
		}
	}
}

/* A call written at once after a read from t->cur_from: learn its peer. */
static __always_inline void learn_next(struct cw_msgs_thread *t, __u32 tid,
				       __u64 to)
{
	struct cw_msgs_next_key k = {.tid = tid, .from = t->cur_from};
	struct cw_msgs_next fresh = {.gen = gen}, *n;

	peers_add(t->wrote, to);
	n = bpf_map_lookup_elem(&nexts, &k);
	if (!n || n->gen != gen) {
		fresh.to[0] = to;
		bpf_map_update_elem(&nexts, &k, &fresh, BPF_ANY);
		return;
	}
	peers_add(n->to, to);
}

/* The handling of the latest read ends (another read begins): each peer
 * its source's handler calls that it neither wrote to nor answered
 * before is a pending call. */
static __always_inline void handling_end(struct cw_msgs_thread *t, __u32 tid)
{
	struct cw_msgs_next_key k = {.tid = tid, .from = t->cur_from};
	struct cw_msgs_next *n;
	__u32 i, j;
	__u64 to;
	bool done;

	if (!t->cur_cookie || t->answered)
		return;
	n = bpf_map_lookup_elem(&nexts, &k);
	if (!n || n->gen != gen)
		return;
	for (i = 0; i < CW_MSGS_FANOUT; i++) {
		to = n->to[i];
		if (!to)
			continue;
		for (done = false, j = 0; j < CW_MSGS_FANOUT; j++)
			done |= t->wrote[j] == to;
		if (!done)
			pending_push(tid, t->cur_cookie, t->cur_seq, to);
	}
}

/*
 * Thread t read on s: its context is now the request that read belongs to
 * (a request on an accepted socket; the call's request on a connected
 * one, 0 when unknown), set in the thread's current loop iteration.  A
 * loop thread's later reads of the same message renew it (on_io).
 */
static __always_inline void read_ctx(struct cw_msgs_sk *s,
				     struct cw_msgs_thread *t, __u32 tid)
{
	bool acc = s->role == CW_MSGS_ACCEPTED;
	__u64 cookie = acc ? s->cookie : s->call_cookie;
	__u32 seq = acc ? s->seq_in : s->call_seq, i;

	if (t->iter && (cookie != t->cur_cookie || seq != t->cur_seq ||
			s->cookie != t->cur_src)) {
		handling_end(t, tid);
		for (i = 0; i < CW_MSGS_FANOUT; i++)
			t->wrote[i] = 0;
		t->answered = 0;
	}
	t->cur_cookie = cookie;
	t->cur_seq = cookie ? seq : 0;
	t->cur_src = s->cookie;
	t->cur_from = s->end_id;
	t->cur_iter = t->iter;
	if (t->iter)
		s->flags |= CW_MSGS_F_LOOP_READ;
}

/* A request arrives on an accepted socket, read by thread tid. */
static __always_inline void request_open(struct cw_msgs_sk *s, __u32 tid)
{
	struct cw_msgs_thread *t;

	request_close(s); /* a pipelined request before the reply */
	s->seq_in++;
	t = thread_get(tid, true);
	if (!t)
		return;
	__sync_fetch_and_add(&t->n_open, 1);
	t->cookie = s->cookie;
	t->seq = s->seq_in;
	s->req_tid = tid;
	read_ctx(s, t, tid);
}

/* Thread tid begins the reply to s's request. */
static __always_inline void request_answer(struct cw_msgs_sk *s, __u32 tid)
{
	struct cw_msgs_thread *t = thread_get(tid, false);

	if (!t || !t->iter)
		return;
	if (t->cur_cookie == s->cookie && t->cur_seq == s->seq_in)
		t->answered = 1;
	pending_drop(tid, s->cookie);
}

/*
 * A call starts: its context.  The loop's evidence first: the context of
 * the latest read, if that read was in this iteration (t->iter counts
 * only for a thread seen returning from a wait), with two exceptions:
 *
 * - the read was this very socket's reply: a client pool that queues
 *   calls (Node.js's http.Agent at maxSockets) hands a freed connection
 *   to the next waiting call as its reply is read, and that call is
 *   another request's: the oldest pending call to this peer (above);
 * - the thread defers: its calls written after the iteration of their
 *   context outnumber 1 / LOOP_STALE_SHARE of those written in it (a
 *   handler writing from a timer or a later callback; a loop that does
 *   not defer still has a few, from callbacks no read of ours began).
 *   Such a write can also land in an iteration that read something else
 *   first (an asyncio loop runs the iteration's reads, then its due
 *   timers), so none of that thread's same-iteration writes is evidence
 *   either.
 *
 * The first call on a connection made while attached waited for its
 * handshake, not for a timer: it counts as neither, and it takes the
 * oldest pending call to its peer out of the queue unflagged (a pool
 * below its limit opens a connection for a call rather than queue it, in
 * an order the handshakes may not keep).
 *
 * Else the latest request opened, with the count the reader trusts only
 * at 1.  The call keeps the request it was made for when either is
 * certain, for its reply's read.
 */
#define LOOP_STALE_SHARE 4

static __always_inline void call_ctx(struct cw_msgs_sk *s,
				     struct cw_msgs_thread *t, __u32 tid)
{
	bool fresh = t->iter && t->cur_iter == t->iter && t->cur_cookie;
	bool freed = fresh && t->cur_src == s->cookie;
	bool sure = t->n_stale * LOOP_STALE_SHARE <= t->n_sync;
	bool loop = fresh && !freed && sure;
	__u64 qcookie = 0;
	__u32 qseq = 0;

	if (s->flags & CW_MSGS_F_NEW_CONN) {
		s->flags &= ~CW_MSGS_F_NEW_CONN;
		if (t->iter && !fresh) {
			pending_pop(tid, s->end_id, &qcookie, &qseq);
			loop = false;
			goto out;
		}
	}
	if (t->iter && t->cur_cookie && !fresh) {
		t->n_stale++;
	} else if (fresh && !freed) {
		t->n_sync++;
		learn_next(t, tid, s->end_id);
	}
out:
	s->ctx_cookie = loop ? t->cur_cookie : t->cookie;
	s->ctx_seq = loop ? t->cur_seq : t->cookie ? t->seq : 0;
	s->ctx_open = t->n_open;
	if (freed && pending_pop(tid, s->end_id, &qcookie, &qseq) && sure) {
		s->ctx_cookie = qcookie;
		s->ctx_seq = qseq;
		loop = true;
	}
	s->ctx_loop = loop;
	if (loop || (t->n_open == 1 && t->cookie)) {
		s->call_cookie = s->ctx_cookie;
		s->call_seq = s->ctx_seq;
	}
}

static __always_inline void msg_begin(struct cw_msgs_sk *s, __u8 dir, __u32 tid,
				      __u64 now, int bytes)
{
	struct cw_msgs_thread *t;

	s->start_ns = s->end_ns = now;
	s->bytes = bytes;
	s->dir = dir;
	s->tid = tid;
	s->ctx_cookie = 0;
	s->ctx_seq = s->ctx_open = 0;
	s->ctx_loop = 0;
	s->flags &= ~CW_MSGS_F_LOOP_READ;
	if (s->role == CW_MSGS_ACCEPTED) {
		if (dir == CW_MSGS_IN) {
			request_open(s, tid);
		} else {
			request_answer(s, tid);
			request_close(s);
		}
		return;
	}
	if (dir == CW_MSGS_OUT)
		s->call_cookie = s->call_seq = 0;
	t = thread_get(tid, false);
	if (!t)
		return;
	if (dir == CW_MSGS_OUT)
		call_ctx(s, t, tid);
	else
		read_ctx(s, t, tid); /* a reply: the call's request */
}

/*
 * A socket first touched in this attachment.  Its role from the handshake
 * if the state hook saw it; else from the listener: an accepted socket is
 * a copy of its listening socket (sk_clone_lock), which carries listen()'s
 * backlog in sk_max_ack_backlog, while a socket that connect()ed never
 * listened and holds 0 there.
 */
static __always_inline void sk_begin(struct cw_msgs_sk *s, struct sock *sk,
				     __u32 tgid)
{
	if (!s->cookie)
		s->cookie = bpf_get_socket_cookie(sk);
	if (!(s->flags & CW_MSGS_F_ROLE_SEEN))
		s->role = sk->sk_max_ack_backlog ? CW_MSGS_ACCEPTED
						 : CW_MSGS_CONNECTED;
	s->flags &= CW_MSGS_F_ROLE_SEEN | CW_MSGS_F_NEW_CONN;
	if (self_tgid && tgid == self_tgid)
		s->flags |= CW_MSGS_F_SELF;
	s->start_ns = 0;
	s->seq_in = 0;
	s->req_tid = 0;
	s->call_cookie = s->call_seq = 0;
	if (s->role == CW_MSGS_ACCEPTED)
		s->end_id = 1ULL << 63 | sk->__sk_common.skc_num;
	else if (sk->__sk_common.skc_family == AF_INET)
		s->end_id = (__u64)sk->__sk_common.skc_dport << 32 |
			    sk->__sk_common.skc_daddr;
	else
		s->end_id = (__u64)sk->__sk_common.skc_dport << 32 |
			    (sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[3] ^
			     sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[1]);
	s->gen = gen;
}

/* A loop thread reads more of a message: the context is its again. */
static __always_inline void read_again(struct cw_msgs_sk *s)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cw_msgs_thread *t = bpf_map_lookup_elem(&threads, &tid);

	if (t && t->gen == gen)
		read_ctx(s, t, tid);
}

/*
 * A successful send or recv of `bytes`.  The common case, a call in the
 * direction of the message in progress, is one storage lookup, one clock
 * read and two stores.
 */
static __always_inline void on_io(struct sock *sk, int bytes, __u8 dir)
{
	struct cw_msgs_sk *s;
	__u64 id, now;

	if (bytes <= 0 || !sk || !sk_wanted(sk))
		return;
	s = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s) {
		stat_inc(CW_MSGS_STAT_STORAGE_FAIL);
		return;
	}
	now = bpf_ktime_get_ns();
	if (s->gen == gen && s->start_ns && s->dir == dir) {
		s->end_ns = now;
		s->bytes += bytes;
		if (s->flags & CW_MSGS_F_LOOP_READ)
			read_again(s);
		return;
	}
	id = bpf_get_current_pid_tgid();
	if (s->gen != gen)
		sk_begin(s, sk, id >> 32);
	if (s->flags & CW_MSGS_F_SELF)
		return;
	if (!(s->flags & CW_MSGS_F_ANNOUNCED))
		announce(s, sk, id >> 32);
	msg_end(s);
	msg_begin(s, dir, (__u32)id, now, bytes);
}

/* The handshake names the role; at close the last message goes out. */
static __always_inline void on_state(struct sock *sk, int old, int new)
{
	struct cw_msgs_sk *s;

	if (!sk_wanted(sk))
		return;
	if (new == TCP_ESTABLISHED &&
	    (old == TCP_SYN_SENT || old == TCP_SYN_RECV)) {
		s = bpf_sk_storage_get(&socks, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (!s) {
			stat_inc(CW_MSGS_STAT_STORAGE_FAIL);
			return;
		}
		s->role = old == TCP_SYN_SENT ? CW_MSGS_CONNECTED
					      : CW_MSGS_ACCEPTED;
		s->flags |= CW_MSGS_F_ROLE_SEEN;
		if (old == TCP_SYN_SENT)
			s->flags |= CW_MSGS_F_NEW_CONN;
		return;
	}
	if (new != TCP_CLOSE)
		return;
	s = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!s || s->gen != gen)
		return;
	msg_end(s);
	if (s->role == CW_MSGS_ACCEPTED)
		request_close(s);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(cw_msgs_send, struct sock *sk, int ret, int flags)
{
	on_io(sk, ret, CW_MSGS_OUT);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(cw_msgs_recv, struct sock *sk, int ret, int flags)
{
	if (!(flags & MSG_PEEK))
		on_io(sk, ret, CW_MSGS_IN);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(cw_msgs_state, struct sock *sk, int old, int new)
{
	on_state(sk, old, new);
	return 0;
}

/*
 * The return of a wait for events: a loop iteration ends and the next
 * begins, for a thread already known (one that read a request).  The raw
 * sys_exit tracepoint behind syscalls:sys_exit_*, because tp_btf needs no
 * tracefs (DESIGN.md); every syscall's return runs this compare while the
 * programs are attached, a known thread's wait one lookup more.  Native
 * syscall numbers only: a 32-bit process on a 64-bit kernel is not seen.
 */
static __always_inline bool is_wait(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	long nr = BPF_CORE_READ(regs, orig_ax);

	/* poll, select, epoll_wait, pselect6, ppoll, epoll_pwait(2) */
	return nr == 7 || nr == 23 || nr == 232 || nr == 270 || nr == 271 ||
	       nr == 281 || nr == 441;
#elif defined(__TARGET_ARCH_arm64)
	long nr = BPF_CORE_READ(regs, syscallno);

	/* epoll_pwait, pselect6, ppoll, epoll_pwait2 */
	return nr == 22 || nr == 72 || nr == 73 || nr == 441;
#else
	return false;
#endif
}

SEC("tp_btf/sys_exit")
int BPF_PROG(cw_msgs_wake, struct pt_regs *regs, long ret)
{
	struct cw_msgs_thread *t;
	__u32 tid;

	if (!is_wait(regs))
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t && t->gen == gen)
		t->iter++;
	return 0;
}

/* At detach: each socket's message in progress, as a record to read. */
SEC("iter/bpf_sk_storage_map")
int cw_msgs_flush(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct cw_msgs_sk *s = ctx->value;
	struct cw_msgs_msg_ev e;

	if (!ctx->sk || !s || s->gen != gen || !s->start_ns ||
	    (s->flags & CW_MSGS_F_SELF))
		return 0;
	fill_msg(&e, s);
	s->start_ns = 0;
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
