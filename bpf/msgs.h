/* SPDX-License-Identifier: MIT */
/*
 * Records shared by bpf/msgs.bpf.c and its loader (agent/msgs.c): the
 * per-message observations for per-request traces.  Fixed-width __u types
 * only and no includes, so both sides compile it as is.
 *
 * Two kinds go through one ring buffer, in the order they were made: a
 * socket's identity the first time it is seen while attached, then its
 * messages (a message is a run of calls in one direction), each handed out
 * when the next one starts, when the socket leaves ESTABLISHED, or by the
 * flush iterator when the programs are detached.
 */
#ifndef CW_BPF_MSGS_H
#define CW_BPF_MSGS_H

enum cw_msgs_kind {
	CW_MSGS_SOCK = 1, /* struct cw_msgs_sock_ev */
	CW_MSGS_MSG = 2,  /* struct cw_msgs_msg_ev */
};

enum cw_msgs_ev_role {
	CW_MSGS_ACCEPTED = 0,  /* passive open: the socket serves requests */
	CW_MSGS_CONNECTED = 1, /* active open: the socket makes calls */
};

enum cw_msgs_ev_dir {
	CW_MSGS_IN = 0,
	CW_MSGS_OUT = 1,
};

/* A socket seen for the first time in this attachment. */
struct cw_msgs_sock_ev {
	__u32 kind; /* CW_MSGS_SOCK */
	__u32 netns;
	__u64 cookie;
	__u32 tgid; /* the process of the call that first touched it */
	__u16 family;
	__u16 lport; /* host byte order */
	__u16 rport;
	__u8 role;	/* enum cw_msgs_ev_role */
	__u8 role_seen; /* 1: from the handshake, 0: from the listener's
			 * backlog copied into an accepted socket */
	__u32 pad;
	__u8 laddr[16]; /* IPv4 in the first 4 bytes */
	__u8 raddr[16];
};

/* One message, with the context of the thread that started it. */
struct cw_msgs_msg_ev {
	__u32 kind; /* CW_MSGS_MSG */
	__u32 tid;  /* the thread of its first call */
	__u64 cookie;
	__u64 start_ns; /* CLOCK_MONOTONIC: its first call returned */
	__u64 end_ns;	/* its last call returned */
	__u64 bytes;
	/* A message leaving on a connected socket (a call): the request its
	 * thread was serving when it started (the accepted socket's cookie
	 * and that request's number on it, from 1), and how many requests
	 * the thread had open (received, reply not started).  0: none.
	 * ctx_loop 1: the thread is an event loop and the request is the
	 * context of its latest read in this same loop iteration (below),
	 * not merely the latest request it opened. */
	__u64 ctx_cookie;
	__u32 ctx_seq;
	__u32 ctx_open;
	__u32 seq; /* accepted socket, dir in: this request's number */
	__u8 dir;  /* enum cw_msgs_ev_dir */
	__u8 role;
	__u8 ctx_loop;
	__u8 pad;
};

/* Per socket, in socket-local storage: the message in progress. */
struct cw_msgs_sk {
	__u64 cookie;
	__u64 start_ns; /* 0: no message in progress */
	__u64 end_ns;
	__u64 bytes;
	__u64 ctx_cookie;
	__u32 ctx_seq;
	__u32 ctx_open;
	__u32 tid;
	__u32 gen;     /* attachment this state belongs to */
	__u32 seq_in;  /* requests received (accepted) */
	__u32 req_tid; /* accepted: the thread holding the open request */
	__u8 dir;
	__u8 role;
	__u8 flags; /* enum cw_msgs_sk_flag */
	__u8 ctx_loop;
	/* Connected: the request its latest call was made for, when that
	 * was known for certain (0: none); a reply read on it takes it. */
	__u32 call_seq;
	__u64 call_cookie;
	/* Accepted: its listener's port; connected: its peer's address
	 * and port, folded.  Where a loop's read came from, where its
	 * call goes. */
	__u64 end_id;
};

enum cw_msgs_sk_flag {
	CW_MSGS_F_ANNOUNCED = 1 << 0, /* identity sent in this attachment */
	CW_MSGS_F_ROLE_SEEN = 1 << 1, /* role from the handshake */
	CW_MSGS_F_SELF = 1 << 2,      /* the agent's own socket: skipped */
	CW_MSGS_F_LOOP_READ = 1 << 3, /* message in: read by an event loop,
				       * each later read renews its context */
	CW_MSGS_F_NEW_CONN = 1 << 4,  /* connected while attached, nothing
				       * sent yet: its first call waited
				       * for the handshake, not deferred */
};

#define CW_MSGS_FANOUT 3 /* peers a handler calls after one read */

/*
 * Per thread: the request it serves now and how many it holds open; and,
 * for an event loop, the context of its latest read (vPath): a request
 * read on an accepted socket is that request, a reply read on a connected
 * socket is the request the call was made for, an unknown one is none.
 * iter counts the thread's returns from epoll_wait, poll, select and
 * kin: one per loop iteration; cur_iter is the iteration of that read,
 * cur_src the socket it was on.  Its calls so far: n_sync written in the
 * iteration of the read that set their context, n_stale later (the
 * thread defers its writes: its contexts are not evidence).
 */
struct cw_msgs_thread {
	__u64 cookie; /* the latest request it received, still open; 0 none */
	__u32 seq;
	__u32 n_open;
	__u32 gen;
	__u32 iter;	  /* loop iterations seen; 0: not (yet) a loop */
	__u64 cur_cookie; /* context of the latest read; 0 none */
	__u64 cur_src;
	__u32 cur_seq;
	__u32 cur_iter;
	__u32 n_sync;
	__u32 n_stale;
	/* The latest read's handling: where it came from (the listener's
	 * port, or the peer it replied from), the peers it wrote calls to,
	 * and whether it answered its request (the reply began). */
	__u64 cur_from;
	__u64 wrote[CW_MSGS_FANOUT];
	__u32 answered;
	__u32 pad2;
};

/*
 * Per loop thread and source of a read (a listener, or a peer it reads
 * replies from): the peers its handler has been seen to call right after
 * such a read, learned from its same-iteration calls.
 */
struct cw_msgs_next_key {
	__u32 tid;
	__u32 pad;
	__u64 from;
};

struct cw_msgs_next {
	__u64 to[CW_MSGS_FANOUT];
	__u32 gen;
	__u32 pad;
};

/*
 * Per loop thread: calls its handlers wanted but did not write (a client
 * pool with every connection busy queued them), oldest first by stamp: a
 * freed connection to that peer takes the oldest (Node.js's http.Agent
 * serves its queue in order).
 */
#define CW_MSGS_PENDING 128 /* a power of 2 */
struct cw_msgs_pending {
	__u64 cookie[CW_MSGS_PENDING]; /* the request; 0: slot free */
	__u64 to[CW_MSGS_PENDING];
	__u32 seq[CW_MSGS_PENDING];
	__u32 stamp[CW_MSGS_PENDING];
	__u64 lossy; /* a call to this peer (~0: any) was not kept: its
		      * queue's order is lost until it drains */
	__u32 next_stamp;
	__u32 gen;
};

/* Counters, so nothing is lost silently. */
enum cw_msgs_stat {
	CW_MSGS_STAT_LOST,	   /* ring buffer full: an event dropped */
	CW_MSGS_STAT_STORAGE_FAIL, /* socket storage could not be made */
	CW_MSGS_STAT_THREAD_FULL,  /* thread map full: context not kept */
	CW_MSGS_STAT_MAX,
};

#endif
