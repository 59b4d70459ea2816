// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Per-connection traffic, aggregated in the kernel.
 *
 * Three attach variants of the same logic live here; the loader (agent/)
 * keeps one and turns the others off with bpf_program__set_autoload():
 *
 *   tracepoint  tp_btf/inet_sock_set_state, sock_send_length,
 *               sock_recv_length (kernel >= 6.5), tcp_retransmit_skb
 *   fentry      tcp_connect, inet_csk_accept, tcp_set_state,
 *               sock_sendmsg, sock_recvmsg (fentry/fexit)
 *   kprobe      the same functions as kprobe/kretprobe, with an
 *               entry -> return handoff keyed by thread
 *
 * TCP aggregates live in socket-local storage (tracepoint, fentry) or, where
 * tracing programs cannot use it, in a hash keyed by socket (kprobe).  The
 * agent copies them out every interval with the iter/bpf_sk_storage_map
 * iterator, and each connection's last totals arrive once, at close, on a
 * ring buffer.  No per-message event crosses to user space, except in the
 * benchmark's per-event mode, which exists only to measure what that costs.
 *
 * Bytes need no per-call program: the kernel counts them in tcp_sock, and
 * the iterator and the close transition read those counters (see "What the
 * owner wrote and read" below).  The per-call programs (sock_send_length,
 * sock_recv_length) only count calls and messages; with --hooks sampled
 * (the agent's default) the loader attaches them only while a timing window
 * is open and detaches them after, since even an empty attached program
 * costs ~77 ns a call here (bench/RESULTS.md).  The kprobe variant keeps its
 * per-call byte sums: it has no socket storage for the iterator to walk.
 *
 * UDP is counted per (socket, peer) by cgroup_skb programs on the root
 * cgroup v2, since the peer of an unconnected socket is only in the packet.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "conn.h"

#define AF_INET	      2
#define AF_INET6      10
#define MSG_PEEK      2
#define ETH_P_IP      0x0800
#define ETH_P_IPV6    0x86DD
#define IPV6_HDR_LEN  40
#define UDP_HDR_LEN   8
#define SHUTDOWN_MASK 3 /* RCV_SHUTDOWN | SEND_SHUTDOWN */

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load. */
const volatile __u32 target_netns = 0;	 /* 0: every network namespace */
const volatile __u64 msg_gap_ns = 0;	 /* 0: only a direction flip splits */
const volatile bool per_event = false;	 /* benchmark: one event per call */
const volatile bool use_sk_hash = false; /* kprobe variant */
/* kprobe variant: ids start here (the loader's wall clock, ns; see
 * sk_id_new()). */
const volatile __u64 sk_id_base = 0;
/* The agent's own process: its Kafka traffic would feed on itself. */
const volatile __u32 self_tgid = 0;
/* --hooks sampled: note what the per-call programs saw (the bytes, where
 * each window starts) for the estimate of messages outside windows. */
const volatile bool count_sampled = false;

/* Running in the agent's own process (never watched: its Kafka traffic). */
static __always_inline bool in_self(void)
{
	return self_tgid && bpf_get_current_pid_tgid() >> 32 == self_tgid;
}

/* Set by the agent before each collection: skip what did not change. */
__u64 collect_since_ns = 0;
/* Set by the agent: message starts are recorded until this time (0: off). */
__u64 window_end_ns = 0;
/* TCP ends established with no owner yet: the agent scans fd tables when
 * this moves, so a server end gets its owner without a per-call hook. */
__u64 unowned_ends = 0;
/* Set by the agent after its start-up scan: an end a later scan finds with
 * no storage was established unseen, not open before the agent. */
bool scan_late = false;

static const struct cw_conn zero_conn;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cw_conn);
} conns SEC(".maps");

/* kprobe variant: programs of that type cannot use socket storage. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct cw_conn);
} conn_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} closed SEC(".maps");

/* Message starts inside timing windows; bounded, losses counted. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} timing SEC(".maps");

/* Per-event mode only; the loader shrinks it otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct cw_udp_key);
	__type(value, struct cw_udp_flow);
} udp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* kprobe variant: the ids handed out so far on each CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sk_ids SEC(".maps");

/* kprobe variant: sock_{send,recv}msg entry hands the socket to return. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} inflight SEC(".maps");

/* Listening ports seen by the scans and LISTEN transitions: tells the
 * roles of pre-existing ends and of ends first seen late. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cw_listen_key);
	__type(value, __u8);
} listeners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_conn);
} scratch SEC(".maps");

/*
 * task_struct::start_boottime was real_start_time before v5.5
 * (commit cf25e24db61c "time: Rename tsk->real_start_time to
 * ->start_boottime").
 */
struct task_struct___old {
	u64 real_start_time;
} __attribute__((preserve_access_index));

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

/*
 * Socket fields.  Tracing programs (tp_btf, fentry, iterators) get the
 * socket as a BTF pointer and read it with plain loads; kprobes must go
 * through bpf_probe_read_kernel, a helper call per field, which doubled the
 * cost of a send.  use_sk_hash is known at load, so the verifier drops the
 * branch a variant does not take.
 */
#define SK_FIELD(sk, field)                                                    \
	(use_sk_hash ? BPF_CORE_READ(sk, field) : (sk)->field)

static __always_inline __u32 sk_netns(struct sock *sk)
{
	if (use_sk_hash)
		return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	return sk->__sk_common.skc_net.net->ns.inum;
}

/* TCP or UDP over IPv4/IPv6, in the namespace we watch: its protocol. */
static __always_inline __u8 sk_protocol_wanted(struct sock *sk)
{
	__u16 family = SK_FIELD(sk, __sk_common.skc_family);
	__u8 proto;

	if (family != AF_INET && family != AF_INET6)
		return 0;
	/* sk_protocol was a bitfield before v5.6; both reads handle that. */
	if (use_sk_hash)
		proto = BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol);
	else
		proto = BPF_CORE_READ_BITFIELD(sk, sk_protocol);
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0;
	if (target_netns && sk_netns(sk) != target_netns)
		return 0;
	return proto;
}

static __always_inline __u64 task_start_ns(struct task_struct *leader)
{
	if (bpf_core_field_exists(leader->start_boottime))
		return BPF_CORE_READ(leader, start_boottime);
	return BPF_CORE_READ((struct task_struct___old *)leader,
			     real_start_time);
}

static __always_inline void fill_owner_task(struct cw_owner *o,
					    struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);

	o->tgid = BPF_CORE_READ(task, tgid);
	o->pid = BPF_CORE_READ(task, pid);
	o->start_ns = task_start_ns(leader);
	bpf_probe_read_kernel_str(o->comm, sizeof(o->comm), &leader->comm);
}

/* The current task and its cgroup as the owner (process context). */
static __always_inline void owner_here(struct cw_conn *c)
{
	fill_owner_task(&c->owner, (void *)bpf_get_current_task());
	c->owner.cgroup_id = bpf_get_current_cgroup_id();
}

/*
 * Only from process context: the current task owns the socket.  It
 * replaces a tentative owner (cw_conn.owner_tentative): a call, a close
 * or a shutdown is the owner's own, while a holder found in an fd table
 * or the process that accepted the socket may hold it for an instant
 * only.
 */
static __always_inline void fill_owner(struct cw_conn *c)
{
	owner_here(c);
	c->owner_tentative = 0;
	c->flags |= CW_F_OWNER;
}

/* An owner is known: seen in its own context, or tentatively. */
static __always_inline bool owned(const struct cw_conn *c)
{
	return (c->flags & CW_F_OWNER) || c->owner_tentative;
}

/*
 * The local port.  skc_num is 0 once a CLOSE released the port
 * (inet_put_port()); inet_sport keeps it, and is 0 only before connect()
 * chose one.
 */
static __always_inline __u16 sk_lport(struct sock *sk)
{
	__u16 port = BPF_CORE_READ(sk, __sk_common.skc_num);

	return port ? port
		    : bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk,
					      inet_sport));
}

static __always_inline void fill_addrs(struct cw_conn *c, struct sock *sk)
{
	c->lport = sk_lport(sk);
	c->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	/* bpf_core_read with explicit sizes: the destinations are arrays. */
	if (c->family == AF_INET) {
		bpf_core_read(c->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(c->raddr, 4, &sk->__sk_common.skc_daddr);
	} else {
		bpf_core_read(c->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(c->raddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
}

static __always_inline void refresh_tcp(struct cw_conn *c, struct sock *sk)
{
	struct tcp_sock *tp = (void *)sk;

	c->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	c->srtt_ns = bpf_ktime_get_ns();
	if (!c->lport || !c->rport)
		fill_addrs(c, sk);
}

/*
 * What the owner wrote and read, from tcp_sock's own counters.
 *
 * The sequence space counts the SYN and the FIN as one byte each.  Two
 * 64-bit totals follow from the counters the kernel keeps anyway:
 *
 *   sent = bytes_acked + (write_seq - snd_una)
 *	everything the socket took into its sequence space: bytes_acked sums
 *	every advance of snd_una (tcp_snd_una_update), write_seq - snd_una is
 *	what is queued or in flight (< 2^31, so 32-bit arithmetic is exact).
 *	It includes the client's SYN (acked by the SYN-ACK, before
 *	ESTABLISHED) and the FIN once close() or shutdown() queued it.
 *   consumed = bytes_received - (rcv_nxt - copied_seq)
 *	everything received (bytes_received sums every advance of rcv_nxt,
 *	tcp_rcv_nxt_update, so the FIN too) minus what the owner has not read
 *	yet.  A read that reaches the FIN moves copied_seq past it (tcp_recvmsg
 *	and tcp_read_sock both do ++seq).
 *
 * The base (both totals when the end is first seen: at ESTABLISHED, or at
 * the start-up scan for an end open before the agent) absorbs the SYNs and
 * whatever came before, so:
 *
 *   written = sent - base_out - fin_out
 *	fin_out = 1 in FIN_WAIT1, FIN_WAIT2, CLOSING, TIME_WAIT, LAST_ACK
 *	(the states after tcp_close_state() queued the FIN; at the close
 *	transition, the state it leaves)
 *   read = consumed - base_in - fin_in
 *	fin_in = 1 when the peer's FIN came in, in sequence (tcp_fin() sets
 *	SOCK_DONE), and copied_seq has reached rcv_nxt (the read returned
 *	0, the FIN was taken).  Not RCV_SHUTDOWN: close() sets it with no
 *	FIN received (__tcp_close sets sk_shutdown to SHUTDOWN_MASK first),
 *	and so does shutdown(SHUT_RD); either made the last byte read
 *	vanish from an end that closed first.
 *
 * Counted this way, sendfile, splice and MSG_ZEROCOPY count as the calls
 * that queue the bytes.  The counters are read without the socket lock (the
 * iterator), so they are read in an order that can only under-count an
 * instant (bytes_acked before snd_una before write_seq: an ACK in between
 * lowers write_seq - snd_una by what bytes_acked missed), never over-count:
 * running totals never go backwards.  A client seen through its handshake
 * takes the base a fresh connection has (its SYN), so a TCP Fast Open
 * SYN's data counts as written.
 */
struct seq_now {
	__u64 sent, consumed;
	__s32 unread_data; /* received, in order, not yet read: no FIN */
	__s32 unacked;	   /* sent, not yet acknowledged (write_seq - snd_una) */
	bool fin_in;
};

static __always_inline void tcp_seq_now(struct sock *sk, struct seq_now *s)
{
	struct tcp_sock *tp = (void *)sk;
	__u64 acked = BPF_CORE_READ(tp, bytes_acked);
	__u32 una = BPF_CORE_READ(tp, snd_una);
	__u32 wseq = BPF_CORE_READ(tp, write_seq);
	__u64 rcvd = BPF_CORE_READ(tp, bytes_received);
	__u32 nxt = BPF_CORE_READ(tp, rcv_nxt);
	__u32 copied = BPF_CORE_READ(tp, copied_seq);
	__s32 queued = (__s32)(wseq - una), unread = (__s32)(nxt - copied);
	bool fin_rcvd =
		BPF_CORE_READ(sk, __sk_common.skc_flags) & (1UL << SOCK_DONE);

	s->sent = acked + (queued > 0 ? queued : 0);
	s->consumed = rcvd - (unread > 0 ? unread : 0);
	s->unacked = queued;
	s->fin_in = fin_rcvd && unread <= 0;
	/* The FIN is the last thing in sequence: unread holds it if taken. */
	s->unread_data = unread - (fin_rcvd && unread > 0 ? 1 : 0);
}

static __always_inline void conn_base(struct cw_conn *c, struct sock *sk,
				      __u64 less_out, __u64 less_in)
{
	struct seq_now s;

	if (c->flags & CW_F_BASE)
		return;
	tcp_seq_now(sk, &s);
	c->base_out = s.sent - less_out;
	c->base_in = s.consumed - less_in;
	c->flags |= CW_F_BASE;
}

static __always_inline bool fin_queued(int state)
{
	return state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 ||
	       state == TCP_CLOSING || state == TCP_TIME_WAIT ||
	       state == TCP_LAST_ACK;
}

/*
 * The owner's bytes now, by the formula above; 0 rather than below base.
 * state: the socket's TCP state, which says whether our FIN is queued; for
 * an end closed but still draining (CW_F_DRAIN), the state it left.
 */
static __always_inline void tcp_bytes_of(const struct cw_conn *c,
					 const struct seq_now *s, int state,
					 __u64 *out, __u64 *in)
{
	__u64 less;

	if (c->flags & CW_F_DRAIN)
		state = c->close_state;
	less = c->base_out + (fin_queued(state) ? 1 : 0);
	*out = s->sent > less ? s->sent - less : 0;
	less = c->base_in + (s->fin_in ? 1 : 0);
	*in = s->consumed > less ? s->consumed - less : 0;
}

static __always_inline void tcp_bytes(const struct cw_conn *c, struct sock *sk,
				      int state, __u64 *out, __u64 *in)
{
	struct seq_now s;

	tcp_seq_now(sk, &s);
	tcp_bytes_of(c, &s, state, out, in);
}

/*
 * kprobe variant: a socket's id, where the others use its cookie (which
 * kprobe programs cannot read).  Not its address: that would put kernel
 * heap addresses into records, and the slab hands the same address to
 * the next socket within moments.  A per-CPU count (no atomics needed:
 * a program runs on one CPU, unpreempted) with the CPU in the low 12
 * bits, on top of the loader's wall clock in ns: unique within a run,
 * and above every id of an earlier run unless one CPU made a socket
 * every 4 us all through it; below 2^63 until 2262, where no kernel
 * address is.  Made at first sight, gone with the hash entry at close.
 */
static __always_inline __u64 sk_id_new(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&sk_ids, &zero);

	if (!n)
		return 0;
	*n += 1;
	return sk_id_base + ((*n << 12) | (bpf_get_smp_processor_id() & 0xfff));
}

static __always_inline struct cw_conn *conn_get(struct sock *sk, bool create)
{
	struct cw_conn *c;
	__u64 key;

	if (!use_sk_hash)
		return bpf_sk_storage_get(&conns, sk, 0,
					  create ? BPF_SK_STORAGE_GET_F_CREATE
						 : 0);
	key = (__u64)sk;
	c = bpf_map_lookup_elem(&conn_hash, &key);
	if (c || !create)
		return c;
	if (bpf_map_update_elem(&conn_hash, &key, &zero_conn, BPF_NOEXIST))
		return NULL;
	return bpf_map_lookup_elem(&conn_hash, &key);
}

static __always_inline void conn_forget(struct sock *sk)
{
	__u64 key = (__u64)sk;

	if (use_sk_hash)
		bpf_map_delete_elem(&conn_hash, &key);
}

/* First touch: identity of the socket.  Returns c, or NULL if none. */
static __always_inline struct cw_conn *conn_touch(struct sock *sk, __u8 proto,
						  bool create)
{
	struct cw_conn *c = conn_get(sk, create);

	if (!c) {
		if (create)
			stat_inc(CW_STAT_STORAGE_FAIL);
		return NULL;
	}
	if (c->first_ns)
		return c;
	c->first_ns = bpf_ktime_get_ns();
	c->cookie = use_sk_hash ? sk_id_new() : bpf_get_socket_cookie(sk);
	c->family = SK_FIELD(sk, __sk_common.skc_family);
	c->protocol = proto;
	c->netns = sk_netns(sk);
	fill_addrs(c, sk);
	return c;
}

/* Connect time, failed connects, resets. */
#include "conn_health.bpf.h"
/* Ends whose handshake or close no program saw; final readings. */
#include "conn_late.bpf.h"

static __always_inline void emit_event(struct sock *sk, int bytes, __u8 dir)
{
	struct cw_io_event *e;
	struct cw_conn *c = NULL;

	/* kprobe variant: the socket's id lives with its aggregates. */
	if (use_sk_hash) {
		c = conn_touch(sk, sk_protocol_wanted(sk), true);
		if (!c)
			return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(CW_STAT_EVENT_LOST);
		return;
	}
	e->cookie = c ? c->cookie : bpf_get_socket_cookie(sk);
	e->ts_ns = bpf_ktime_get_ns();
	e->bytes = bytes;
	e->dir = dir;
	bpf_ringbuf_submit(e, 0);
}

/*
 * The end a send or recv is on, or NULL to skip the call.  An end with
 * storage passed the filters when the storage was made (only wanted
 * sockets get any: state changes, the scan and this function all filter
 * first), so the common case is one storage lookup and a flag test; the
 * family, protocol, namespace and pid tests run only for a socket seen
 * for the first time.  The kprobe variant keeps its hash lookup.
 */
static __always_inline struct cw_conn *io_end(struct sock *sk)
{
	struct cw_conn *c = NULL;
	__u8 proto;

	if (!use_sk_hash)
		c = bpf_sk_storage_get(&conns, sk, 0, 0);
	if (c)
		return c->flags & CW_F_SELF ? NULL : c;
	proto = sk_protocol_wanted(sk);
	if (!proto)
		return NULL;
	if (in_self())
		return NULL;
	c = conn_touch(sk, proto, true);
	if (c && c->flags & CW_F_SELF)
		return NULL;
	return c;
}

/* Messages: their starts, ends and what was in flight. */
#include "conn_msg.bpf.h"

/*
 * A successful send or recv of `bytes`, in the owner's process context.
 * The cheapest tests come first (loads from the socket before helper
 * calls; for a socket already seen, one storage lookup and flag tests),
 * and the clock only in msg_track().  Where the time goes, measured piece
 * by piece: bench/RESULTS.md, "Per-call program time".
 */
static __always_inline void on_io(struct sock *sk, int bytes, __u8 dir)
{
	struct cw_conn *c;

	if (bytes <= 0 || !sk)
		return;
	if (per_event) {
		if (!sk_protocol_wanted(sk) || in_self())
			return;
		emit_event(sk, bytes, dir);
		return;
	}
	c = io_end(sk);
	if (!c)
		return;
	if (!(c->flags & CW_F_OWNER))
		fill_owner(c);
	if (c->protocol != IPPROTO_TCP)
		return; /* UDP bytes are counted per peer by cgroup_skb */
	/*
	 * Plain adds, no lock prefix: each counter has one direction, and a
	 * TCP socket's sends (and its receives) are serialised by its owner
	 * in any program where they make sense as a stream; two threads
	 * sending at once on one socket interleave their bytes anyway, and
	 * may then lose a call count here, never a byte (bytes come from the
	 * kernel's counters).
	 */
	if (dir == CW_DIR_OUT)
		c->calls_out++;
	else
		c->calls_in++;
	if (use_sk_hash) {
		/* No iterator over the hash: bytes are summed per call. */
		if (dir == CW_DIR_OUT)
			__sync_fetch_and_add(&c->bytes_out, bytes);
		else
			__sync_fetch_and_add(&c->bytes_in, bytes);
	}
	if (count_sampled) {
		/* The bytes these counts cover: the estimate's basis. */
		if (dir == CW_DIR_OUT)
			c->sbytes_out += bytes;
		else
			c->sbytes_in += bytes;
		/*
		 * The first call seen in a window starts a message: the
		 * direction last seen may be a window old, and a reply whose
		 * request went by before the window opened is a message.
		 */
		if (c->win_mark != window_end_ns) {
			c->win_mark = window_end_ns;
			c->last_dir = CW_DIR_NONE;
		}
	}
	msg_track(c, sk, bytes, dir);
}

/* old: the state the socket leaves for TCP_CLOSE. */
static __always_inline void on_close(struct sock *sk, struct cw_conn *c,
				     int old)
{
	struct cw_conn *rec;

	if (c->flags & CW_F_CLOSED)
		return;
	c->flags |= CW_F_CLOSED;
	if (!(c->flags & CW_F_ESTABLISHED)) {
		if (c->role == CW_ROLE_CLIENT) {
			stat_inc(CW_STAT_CONNECT_FAILED);
			if (!(c->flags & CW_F_SELF))
				connect_failed(sk, c);
		}
		conn_forget(sk);
		return;
	}
	if (!owned(c))
		stat_inc(CW_STAT_NO_OWNER);
	rec = bpf_ringbuf_reserve(&closed, sizeof(*rec), 0);
	if (!rec) {
		stat_inc(CW_STAT_CLOSE_LOST);
		conn_forget(sk);
		return;
	}
	__builtin_memcpy(rec, c, sizeof(*rec));
	/*
	 * The end lived until now.  Without per-call programs nothing else
	 * moves last_ns for a connection that ends between two collections,
	 * and an end's record would then say it lived only at its first
	 * touch: a client whose SYN was retransmitted (first touch 1 s
	 * before its server's) would never overlap its server end.
	 */
	if (!(c->flags & CW_F_DRAIN))
		rec->last_ns = bpf_ktime_get_ns();
	if (!use_sk_hash) {
		conn_base(rec, sk, 0, 0);
		tcp_bytes(rec, sk, old, &rec->bytes_out, &rec->bytes_in);
	}
	if (c->flags & CW_F_DRAIN) {
		/*
		 * Nothing is written after CLOSE, so what the close reading
		 * gave stands; a read can only add.  Only tcp_disconnect()
		 * (connect(AF_UNSPEC)) zeroes the counters before destroy.
		 */
		rec->bytes_out = c->bytes_out;
		if (rec->bytes_in < c->bytes_in)
			rec->bytes_in = c->bytes_in;
	}
	refresh_tcp(rec, sk);
	bpf_ringbuf_submit(rec, 0);
	conn_forget(sk);
}

/*
 * TCP state changes.  Some run in softirq context (the passive open, the
 * handshake completing), where the current task is not the owner.  Three
 * run only in the owner's context and set it: connect() (SYN_SENT), and
 * tcp_close_state() from close() or shutdown() (FIN_WAIT1 when this end
 * closes first, LAST_ACK when the peer did), and close() aborting an open
 * end (CLOSE with no error): so every end its owner closes has its owner
 * with no per-call program.  A server end that stays open is owned,
 * tentatively, by the agent's fd-table scan, which unowned_ends
 * triggers.
 * Over 80 lines: one short case per transition, kept side by side.
 */
/*
 * The base an end's totals start from once established.  A handshake
 * seen: the kernel's counters started at it.  A client's sent total holds
 * its SYN and nothing else of ours but what connect() carried in the SYN
 * (TCP Fast Open, sendto(MSG_FASTOPEN)); a server's holds nothing of the
 * handshake, and a Fast Open server may have read the SYN's data before
 * the ACK: owner's bytes, not a base.
 */
static __always_inline void established_base(struct cw_conn *c,
					     struct sock *sk, int old)
{
	if (use_sk_hash)
		return;
	if (!(c->flags & CW_F_BASE) &&
	    (old == TCP_SYN_SENT || old == TCP_SYN_RECV)) {
		c->base_out = old == TCP_SYN_SENT ? 1 : 0;
		c->base_in = 0;
		c->flags |= CW_F_BASE;
	} else {
		conn_base(c, sk, 0, 0);
	}
}

/*
 * One TCP state change of an end.  Over 80 lines because it is one
 * switch with a short case per transition (connect, established, the
 * close states, reset); each case's work is in a helper already.
 */
static __always_inline void on_state(struct sock *sk, int old, int new)
{
	struct cw_conn *c;

	if (per_event || sk_protocol_wanted(sk) != IPPROTO_TCP)
		return;
	if (new != TCP_ESTABLISHED)
		late_sight(sk, old);
	switch (new) {
	case TCP_LISTEN:
		listener_note(sk);
		break;
	case TCP_SYN_SENT:
		c = conn_touch(sk, IPPROTO_TCP, true);
		if (!c)
			return;
		c->role = CW_ROLE_CLIENT;
		if (!c->syn_ns)
			c->syn_ns = bpf_ktime_get_ns();
		/* Marked once here, so the per-call programs test a flag
		 * instead of calling for the pid on every call. */
		if (in_self()) {
			c->flags |= CW_F_SELF;
			return;
		}
		if (!(c->flags & CW_F_OWNER))
			fill_owner(c);
		break;
	case TCP_SYN_RECV:
		c = conn_touch(sk, IPPROTO_TCP, true);
		if (c)
			c->role = CW_ROLE_SERVER;
		break;
	case TCP_ESTABLISHED:
		c = conn_touch(sk, IPPROTO_TCP, true);
		if (!c)
			return;
		if (!c->role)
			c->role = old == TCP_SYN_SENT	? CW_ROLE_CLIENT
				  : old == TCP_SYN_RECV ? CW_ROLE_SERVER
							: CW_ROLE_UNKNOWN;
		if (old == TCP_SYN_SENT && c->syn_ns &&
		    !(c->flags & CW_F_ESTABLISHED))
			c->connect_us =
				(bpf_ktime_get_ns() - c->syn_ns) / 1000 ?: 1;
		c->flags |= CW_F_ESTABLISHED;
		fill_addrs(c, sk);
		established_base(c, sk, old);
		if (!owned(c))
			__sync_fetch_and_add(&unowned_ends, 1);
		break;
	case TCP_FIN_WAIT1:
	case TCP_LAST_ACK:
		if (in_self())
			return;
		c = conn_get(sk, false);
		if (!c)
			return;
		if (!(c->flags & CW_F_OWNER))
			fill_owner(c);
		if (owner_done(c, sk))
			on_close(sk, c, old);
		break;
	case TCP_CLOSE:
		c = conn_get(sk, false);
		if (!c)
			return;
		/*
		 * An open end closing with no error set is close() aborting
		 * it (unread data: a RST instead of a FIN) or shutdown by
		 * tcp_disconnect(), both in the owner's context; a RST or a
		 * timeout received sets sk_err first (tcp_done_with_error).
		 */
		if (!(c->flags & CW_F_OWNER) &&
		    (old == TCP_ESTABLISHED || old == TCP_CLOSE_WAIT) &&
		    !SK_FIELD(sk, sk_err) && !in_self())
			fill_owner(c);
		health_close(c, sk, old);
		if (close_drains(c, sk, old))
			return;
		on_close(sk, c, old);
		break;
	}
}

/*
 * At destruction: the final reading of an end that waited after CLOSE.
 * Every TCP socket passes here (tcp_v4_destroy_sock, IPv6 too) before its
 * storage goes; a socket already in CLOSE is destroyed by its holder's
 * close() (__tcp_close), in the holder's context: its owner.
 */
static __always_inline void on_destroy(struct sock *sk)
{
	struct cw_conn *c;

	if (use_sk_hash || per_event)
		return;
	c = bpf_sk_storage_get(&conns, sk, 0, 0);
	if (!c)
		return;
	if (!(c->flags & CW_F_DRAIN)) {
		if (connect_failed_unseen(c, sk))
			on_close(sk, c, TCP_SYN_SENT);
		return;
	}
	if (!(c->flags & CW_F_OWNER) && !in_self())
		fill_owner(c);
	on_close(sk, c, c->close_state);
}

/*
 * accept() returned newsk to the current task: its owner, tentatively.  A
 * forking server's parent or a process that hands the socket to a worker
 * (SCM_RIGHTS) accepts it too, and the first call or close seen in a
 * process's own context names the owner for good (fill_owner()).
 */
static __always_inline void on_accept(struct sock *sk)
{
	struct cw_conn *c;

	if (!sk || per_event || sk_protocol_wanted(sk) != IPPROTO_TCP)
		return;
	c = conn_touch(sk, IPPROTO_TCP, true);
	if (!c)
		return;
	c->role = CW_ROLE_SERVER;
	if (!owned(c)) {
		owner_here(c);
		c->owner_tentative = 1;
	}
}

static __always_inline void on_retransmit(struct sock *sk)
{
	struct cw_conn *c;

	if (per_event || sk_protocol_wanted(sk) != IPPROTO_TCP)
		return;
	c = conn_get(sk, false);
	if (c)
		__sync_fetch_and_add(&c->retrans, 1);
}

/* The programs, by hook family. */
#include "conn_hooks.bpf.h"
#include "conn_udp.bpf.h"
#include "conn_iter.bpf.h"
