/* SPDX-License-Identifier: MIT */
/*
 * Records shared by bpf/conn.bpf.c and its loader (agent/).  Fixed-width
 * __u types only and no includes, so both sides compile it as is.
 */
#ifndef CW_BPF_CONN_H
#define CW_BPF_CONN_H

#define CW_COMM_LEN 16

/* Same values as common/record.h's CW_REC_ROLE_* (agent.c asserts it). */
enum cw_role {
	CW_ROLE_UNKNOWN = 0,
	CW_ROLE_CLIENT = 1, /* active open: connect() */
	CW_ROLE_SERVER = 2, /* passive open: accept() */
};

enum cw_dir {
	CW_DIR_NONE = 0,
	CW_DIR_OUT = 1,
	CW_DIR_IN = 2,
};

enum cw_conn_flag {
	CW_F_PREEXISTING = 1 << 0, /* open before the agent started */
	CW_F_ESTABLISHED = 1 << 1,
	CW_F_CLOSED = 1 << 2, /* close record already sent */
	CW_F_OWNER = 1 << 3,  /* owner filled in process context */
	CW_F_BASE = 1 << 4,   /* base_out/base_in taken */
	CW_F_SELF = 1 << 5,   /* the agent's own socket: calls not counted */
	/*
	 * Closed by the kernel (the peer's FIN in FIN_WAIT2, a RST) while
	 * its owner still holds it with data left to read: the final
	 * reading waits for the socket's destruction (bpf/conn.bpf.c,
	 * "Final readings").
	 */
	CW_F_DRAIN = 1 << 6,
	/*
	 * Established unseen: the kernel ran the handshake without running
	 * our programs, and the end was first seen later (bpf/conn.bpf.c,
	 * "Ends first seen after their handshake").  Its base is a fresh
	 * connection's, not a reading.
	 */
	CW_F_LATE = 1 << 7,
};

/*
 * How a client's connect failed (cw_conn.fail); the same values as
 * common/record.h's CW_REC_FAIL_* (agent/agent_impl.h asserts it).
 */
enum cw_fail {
	CW_FAIL_NONE = 0,
	CW_FAIL_REFUSED = 1, /* sk_err ECONNREFUSED at CLOSE: a RST to our SYN */
	CW_FAIL_TIMEOUT = 2, /* any other SYN_SENT -> CLOSE: never answered */
};

/* Key of the listeners map: a listening port in one network namespace. */
struct cw_listen_key {
	__u32 netns;
	__u16 port;
	__u16 pad;
};

/* The process that owns a socket, taken in process context. */
struct cw_owner {
	__u32 tgid;
	__u32 pid;	 /* the thread that was seen */
	__u64 start_ns;	 /* group leader's start, CLOCK_BOOTTIME */
	__u64 cgroup_id; /* cgroup v2 id */
	char comm[CW_COMM_LEN];
};

/*
 * Per-socket aggregates.  Kept in socket-local storage for TCP; copied out
 * by the collection iterator every interval and by the close hook once.
 * Times are CLOCK_MONOTONIC ns.  Addresses: IPv4 in the first 4 bytes.
 *
 * TCP bytes come from tcp_sock's own counters (bpf/conn.bpf.c, "What the
 * owner wrote and read"): bytes_out/bytes_in are the last values reported.
 * calls and msgs are counted by the per-call programs, so only while they
 * are attached (always with --hooks always, else inside timing windows).
 */
struct cw_conn {
	/*
	 * What the per-call programs read and write on every call comes
	 * first: a storage element's data starts 8 bytes into a cache line
	 * (after the map pointer the lookup reads anyway), so these 48
	 * bytes share that line and a call touches one line, not two.
	 */
	__u8 flags;    /* enum cw_conn_flag */
	__u8 protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 last_dir; /* enum cw_dir */
	__u8 role;     /* enum cw_role */
	__u16 family;  /* AF_INET or AF_INET6 */
	__u8 close_state; /* CW_F_DRAIN: the TCP state it left for CLOSE */
	__u8 msg_flags;	  /* enum cw_msg_flag of the message going on */
	__u64 calls_out; /* successful send calls */
	__u64 calls_in;	 /* successful recv calls (MSG_PEEK excluded) */
	__u64 msgs_out;	 /* runs of bytes sent: direction flip or gap */
	__u64 msgs_in;
	__u64 last_ns;
	__u64 cookie;	 /* socket cookie: unique while the host is up */
	__u64 bytes_out; /* bytes the owner sent */
	__u64 bytes_in;	 /* bytes the owner received */
	__u64 first_ns;
	__u64 base_out; /* sequence space sent / consumed at first sight */
	__u64 base_in;
	__u32 retrans; /* retransmitted segments */
	__u32 srtt_us; /* smoothed RTT at copy-out */
	__u32 netns;   /* network namespace inode */
	__u16 lport;   /* host byte order */
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
	struct cw_owner owner;
	/*
	 * --hooks sampled: what the per-call programs saw while they were
	 * attached (inside timing windows), so the agent can estimate the
	 * messages outside them from the exact bytes (agent/agent.c,
	 * "Messages outside windows").
	 */
	__u64 sbytes_out; /* bytes of the send calls seen */
	__u64 sbytes_in;
	__u64 win_mark; /* window_end_ns at this end's last call seen */
	/*
	 * The time of this end's last call, with --msg-gap and inside
	 * timing windows (where it is the end of the message going on:
	 * exchange times).  Not last_ns, which the collection iterator
	 * moves to its own time when bytes moved, so a gap that ended just
	 * after a collection read as no gap.  After a window's close and
	 * before its collection, a call going on with the message sets it
	 * too: the agent then knows that message ran past the close.
	 */
	__u64 call_ns;
	/*
	 * TCP health, from lifecycle transitions only (bpf/conn.bpf.c,
	 * "Connection health"; docs/agent-counters.md).
	 */
	__u64 syn_ns;	  /* client: its SYN_SENT, CLOCK_MONOTONIC */
	__u32 connect_us; /* client: SYN_SENT -> ESTABLISHED; 0 unknown */
	__u32 resets_in;  /* RST received after establishment: 0 or 1 */
	__u32 resets_out; /* RSTs sent after establishment */
	__u8 fail;	  /* enum cw_fail: a client whose connect failed */
	/*
	 * The owner is a holder, not yet seen in its own context: found in
	 * a process's fd table by the agent's scan, or the process that
	 * accepted the socket.  A forking server's parent, or a process that
	 * hands the socket over by SCM_RIGHTS, holds it for an instant only.
	 * CW_F_OWNER stays clear, so the first call, close or shutdown seen
	 * in a process's own context replaces it, at no cost on the per-call
	 * path (bpf/conn.bpf.c, fill_owner()).
	 */
	__u8 owner_tentative;
	__u8 hpad[2];
	__u64 srtt_ns; /* when srtt_us was read: one RTT reading each */
};

/* UDP is counted per (socket, peer): unconnected sockets talk to many. */
struct cw_udp_key {
	__u64 cookie;
	__u8 raddr[16];
	__u16 rport;
	__u16 family;
	__u32 pad;
};

struct cw_udp_flow {
	__u64 bytes_out; /* UDP payload bytes */
	__u64 bytes_in;
	__u64 dgrams_out;
	__u64 dgrams_in;
	__u64 first_ns;
	__u64 last_ns;
	__u32 netns;
	__u16 lport;
	__u16 pad;
	__u8 laddr[16];
	struct cw_owner owner;
};

/* One send or recv, only in the benchmark's per-event mode. */
struct cw_io_event {
	__u64 cookie;
	__u64 ts_ns;
	__u32 bytes;
	__u32 dir;
};

/*
 * A message starting on a connection, only inside a timing window (the
 * agent opens one for a set time on a schedule).  bytes_before is the
 * direction's byte count before this message: consecutive starts in one
 * direction give each message's size.
 *
 * For exchange times (agent/exchange.c): prev_end_ns is the time of the
 * end's last call before this one, which is the end of the message before
 * (inside a window every call's time is kept in cw_conn.call_ns); the
 * window's last message ends at the call_ns the agent reads after the
 * window.  overlap says whether another message was in flight the other
 * way when this one started, from the socket's own sequence numbers:
 * for a send, bytes received and not yet read; for a receive, bytes sent
 * and not yet acknowledged (a reply to all we sent acknowledges it all).
 * Either means more than one message in flight: not a timed exchange.
 * So does a request that went on after a pause (flags).
 */
enum cw_msg_flag {
	/*
	 * A request (a client's send, a server's receive) went on after a
	 * pause longer than the path's RTT (the least seen) and 1 ms: a
	 * second request before the reply, whose first request the peer had
	 * had time to answer.  Only inside windows, where each call's time
	 * is read.
	 */
	CW_MSGF_RESUMED = 1 << 0,
};

struct cw_msg_event {
	__u64 cookie;
	__u64 ts_ns; /* CLOCK_MONOTONIC, this host */
	__u64 bytes_before;
	__u8 dir;      /* enum cw_dir */
	__u8 role;     /* enum cw_role of the end */
	__u16 flags;   /* enum cw_msg_flag of the message before this one */
	__u32 overlap; /* bytes the other way in flight (above), capped */
	__u64 prev_end_ns; /* the last call before this message; 0 none */
};

/* Counters the agent reports so that nothing is lost silently. */
enum cw_stat {
	CW_STAT_CLOSE_LOST,	/* close record dropped: ring buffer full */
	CW_STAT_EVENT_LOST,	/* per-event mode: event dropped */
	CW_STAT_STORAGE_FAIL,	/* socket storage could not be created */
	CW_STAT_UDP_MAP_FULL,	/* UDP flow map full: datagram not counted */
	CW_STAT_CONNECT_FAILED, /* active open that never got established */
	CW_STAT_NO_OWNER,	/* closed before any process-context hook */
	CW_STAT_TIMING_LOST,	/* message start dropped: timing ring full */
	CW_STAT_MAX,
};

#endif
