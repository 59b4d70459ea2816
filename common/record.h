/* SPDX-License-Identifier: MIT */
/*
 * The connection record: what an agent knows about one end of a connection
 * (or one UDP socket's traffic with one peer), enriched with its process.
 * The agent produces these, the wire codec carries them, the correlator
 * pairs them.  Counters are cumulative since the end was first seen, so a
 * replayed or repeated record never counts bytes twice.
 */
#ifndef CW_RECORD_H
#define CW_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/jsonw.h"

#define CW_HOST_LEN	 64
#define CW_COMM_MAX	 16
#define CW_CMDLINE_MAX	 256
#define CW_CONTAINER_MAX 80
#define CW_POD_MAX	 128
#define CW_NAME_MAX	 128 /* a Kubernetes object name, as kept */
#define CW_NS_MAX	 64
#define CW_KIND_MAX	 16
/* /proc/sys/kernel/random/boot_id: a UUID, 36 characters */
#define CW_BOOT_ID_LEN 40

/* An address in one network-namespace endpoint space. */
struct cw_addr {
	uint8_t family; /* 4 or 6; IPv4-mapped IPv6 is stored as 4 */
	uint8_t bytes[16];
};

struct cw_process {
	uint32_t tgid;
	uint64_t start_ns; /* CLOCK_BOOTTIME of the process start */
	uint64_t cgroup_id;
	char comm[CW_COMM_MAX];
	char cmdline[CW_CMDLINE_MAX];	  /* argv joined by spaces, truncated */
	char container[CW_CONTAINER_MAX]; /* container id, "" if none */
	char pod[CW_POD_MAX]; /* pod uid from kubepods, "" if none */
	/*
	 * Workload identity, from what the node holds (the container
	 * runtime's state, the kubelet's log folders: agent/workload.h);
	 * "" when unknown.  Wire Process fields 8-12.
	 */
	char container_name[CW_NAME_MAX]; /* the runtime's container name */
	char pod_name[CW_NAME_MAX];	  /* Kubernetes pod name */
	char pod_ns[CW_NS_MAX];		  /* the pod's namespace */
	char workload_kind[CW_KIND_MAX];  /* Deployment, StatefulSet, "" */
	char workload[CW_NAME_MAX];	  /* owning workload, else the pod */
};

enum cw_rec_role {
	CW_REC_ROLE_UNKNOWN = 0,
	CW_REC_ROLE_CLIENT = 1,
	CW_REC_ROLE_SERVER = 2,
};

enum cw_rec_flag {
	CW_REC_CLOSED = 1 << 0,	     /* final totals */
	CW_REC_PREEXISTING = 1 << 1, /* open before the agent started */
	CW_REC_NO_OWNER = 1 << 2,    /* owning process unknown */
	CW_REC_NAT = 1 << 3,	     /* remote address undone from DNAT */
	/* msgs_* and calls_* are estimates (see the struct's last block) */
	CW_REC_MSGS_EST = 1 << 4,
};

/* A fraction in parts per million (sampled_ppm). */
#define CW_PPM 1000000u

/*
 * A histogram in a record: the wire encoding of a struct cw_hist
 * (common/hist.h: cw_rec_hist_set, cw_rec_hist_get) in a fixed array, so
 * a record stays copyable by value.  len 0: empty.  A histogram whose
 * encoding would not fit is kept at a coarser resolution (counts exact).
 */
#define CW_REC_HIST_MAX 256
struct cw_rec_hist {
	uint16_t len;
	uint8_t b[CW_REC_HIST_MAX];
};

/* cw_conn_record.fail: how a connect failed (a client end, closed). */
enum cw_rec_fail {
	CW_REC_FAIL_NONE = 0,
	CW_REC_FAIL_REFUSED = 1, /* RST to our SYN */
	CW_REC_FAIL_TIMEOUT = 2, /* SYN never answered */
};

struct cw_conn_record {
	char host[CW_HOST_LEN]; /* host id: machine-id or hostname */
	uint32_t netns;		/* network namespace inode on that host */
	uint64_t cookie;	/* socket cookie, unique on that host */
	uint8_t protocol;	/* 6 TCP, 17 UDP */
	uint8_t role;		/* enum cw_rec_role */
	uint32_t flags;		/* enum cw_rec_flag */
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint64_t bytes_out, bytes_in;
	uint64_t calls_out, calls_in; /* send/recv calls; UDP: datagrams */
	uint64_t msgs_out, msgs_in;
	uint64_t first_ns, last_ns; /* CLOCK_REALTIME */
	uint32_t retrans;
	uint32_t srtt_us;
	uint64_t seq; /* per-agent record sequence number */
	struct cw_process proc;
	/*
	 * Boot identity (wire field 23): a socket cookie, a pid and a
	 * process start time are unique only until the host reboots, so an
	 * end is (host, boot_id, cookie).  "" from agents that predate it.
	 */
	char boot_id[CW_BOOT_ID_LEN];
	/*
	 * Messages outside timing windows (--hooks sampled).  The per-call
	 * programs that count calls and messages run only inside windows;
	 * outside them the agent estimates both from the bytes, which are
	 * exact, and the messages and calls per byte seen in the end's
	 * windows (docs/agent-counters.md).  Then flags has CW_REC_MSGS_EST
	 * and msgs_* / calls_* hold the estimates; these fields say what
	 * they rest on.  All zero: no estimate block (UDP, older agents).
	 */
	uint64_t sampled_msgs_out, sampled_msgs_in; /* counted in windows */
	uint32_t sampled_ppm; /* share of the bytes the per-call programs saw,
				 CW_PPM = all (exact counts) */
	/*
	 * Edge health (wire fields 30-37; docs/edge-health.md), cumulative
	 * since the end was first seen like every counter here, so the
	 * correlator adds only what is new (bin-wise for the histograms).
	 */
	uint32_t connect_us; /* client: SYN sent -> ESTABLISHED, us; 0 unknown */
	uint8_t fail;	     /* enum cw_rec_fail */
	uint32_t resets_in;  /* RSTs received after establishment */
	uint32_t resets_out; /* RSTs sent after establishment */
	uint64_t xchg_pipelined; /* exchanges not timed: requests in flight > 1 */
	struct cw_rec_hist rtt;	 /* srtt readings, ns, one per collection */
	struct cw_rec_hist xchg; /* client: request start -> reply end;
				    server: request arrival -> reply sent; ns */
	struct cw_rec_hist xchg_first; /* client: request start -> reply
					  start, ns */
};

/*
 * Which way a message went, as the end that saw it tells (cw_msg_obs.dir;
 * the same values as the kernel side's enum cw_dir in bpf/conn.h, which
 * the shared layer cannot include).  The wire carries it as one bit per
 * message (set: in); the path inference has its own enum cw_msg_dir.
 */
enum cw_obs_dir {
	CW_OBS_OUT = 1, /* sent by this end */
	CW_OBS_IN = 2,	/* received by this end */
};

/* One message start seen at the observing host (its own clock). */
struct cw_msg_obs {
	uint64_t ts_ns; /* CLOCK_REALTIME of the observing host */
	uint32_t bytes; /* message size; 0 if it ran past the window */
	uint8_t dir;	/* enum cw_obs_dir */
	uint8_t pad[3];
};

/*
 * The message starts of one connection end in one timing window, sorted by
 * time.  Joined to its connection record by (host, cookie).
 */
struct cw_timing_record {
	char host[CW_HOST_LEN];
	uint64_t cookie;
	uint64_t window_start_ns; /* CLOCK_REALTIME: capture began */
	uint64_t window_ns;	  /* capture lasted this long */
	size_t n;
	struct cw_msg_obs *msgs;
	/*
	 * Filled when the window is published (the wire's TimingWindow), so
	 * a consumer can pair the two ends from the windows alone; the agent
	 * library leaves them zero.  has_conn: the end's fields are known.
	 */
	uint64_t slot_ns; /* the scheduled wall-clock multiple: same fleet-wide
			   */
	uint64_t seq;	  /* per-agent timing record sequence number */
	bool has_conn;
	uint32_t netns;
	uint8_t protocol; /* 6 TCP, 17 UDP */
	uint8_t role;	  /* enum cw_rec_role */
	uint32_t flags;	  /* enum cw_rec_flag */
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	struct cw_process proc;
	/* Boot identity (wire field 19): as cw_conn_record.boot_id. */
	char boot_id[CW_BOOT_ID_LEN];
};

/* The agent's local form: host, cookie, window, msgs. */
void cw_timing_record_json(struct cw_jsonw *w,
			   const struct cw_timing_record *t);
/*
 * The published form, one object with "kind": "timing": the window (slot,
 * start, end), the end (addresses, process) and msgs as [ts_ns, "out" or
 * "in", bytes] triples.
 */
void cw_timing_window_json(struct cw_jsonw *w,
			   const struct cw_timing_record *t);
/* Copy the end's fields (netns ... proc) from its connection record. */
void cw_timing_record_set_conn(struct cw_timing_record *t,
			       const struct cw_conn_record *r);

/* "10.0.0.1" or "fd00::1"; buf of at least 46 bytes. */
const char *cw_addr_str(const struct cw_addr *a, char *buf, size_t len);
/* Parse an IPv4 or IPv6 literal; 0 or -1. */
int cw_addr_parse(struct cw_addr *a, const char *s);
/* Fill from 16 raw bytes of the given AF_ family; maps v4-in-v6 to v4. */
void cw_addr_from_raw(struct cw_addr *a, int af, const uint8_t raw[16]);
/*
 * Loopback (127/8, ::1) or link-local (169.254/16, fe80::/10): an address
 * that names something on one host, and in one network namespace, only.
 */
bool cw_addr_is_local(const struct cw_addr *a);
int cw_addr_cmp(const struct cw_addr *a, const struct cw_addr *b);

const char *cw_role_name(int role);
const char *cw_proto_name(int protocol);

/*
 * Sums of counters (bytes, messages, calls, retransmits) saturate: one
 * that would pass 2^64 - 1 stays there, so two ends that each report
 * 2^64 - 1 bytes make an edge of 2^64 - 1, not of a few bytes.  An end's
 * counters never go back: a record that says less than the one before
 * adds nothing (cw_count_delta()).  Signed byte differences (sent -
 * received) saturate at INT64_MIN and INT64_MAX the same way.
 */
static inline uint64_t cw_count_add(uint64_t a, uint64_t b)
{
	uint64_t s;

	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

static inline uint64_t cw_count_delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

/* a + b (a - b with sub), saturating. */
static inline int64_t cw_diff_add(int64_t a, uint64_t b, bool sub)
{
	int64_t s, v = b > INT64_MAX ? INT64_MAX : (int64_t)b;

	if (sub ? __builtin_sub_overflow(a, v, &s)
		: __builtin_add_overflow(a, v, &s))
		return sub ? INT64_MIN : INT64_MAX;
	return s;
}

/* a + b for signed differences, saturating at INT64_MIN and INT64_MAX. */
static inline int64_t cw_sdiff_add(int64_t a, int64_t b)
{
	int64_t s;

	if (__builtin_add_overflow(a, b, &s))
		return b < 0 ? INT64_MIN : INT64_MAX;
	return s;
}

/* x (a count, >= 0), rounded to the nearest integer: 2^64 - 1 at most. */
static inline uint64_t cw_count_of(double x)
{
	if (!(x > 0))
		return 0;
	return x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)(x + 0.5);
}

/*
 * Edge health in JSON.  cw_rec_fail_name: "none", "refused", "timeout"
 * ("failed" for a kind this build does not know).  cw_hist_quantiles_json:
 * <name>_count, <name>_p50_ns, <name>_p90_ns, <name>_p99_ns, the form every
 * output takes.  cw_rec_hist_json: an object with the same count and
 * quantiles and "bins", [lowest value of the bin, count] pairs, from which
 * the histogram reads back exactly (common/record_read.c).
 */
struct cw_hist;
const char *cw_rec_fail_name(int fail);
void cw_hist_quantiles_json(struct cw_jsonw *w, const char *name,
			    const struct cw_hist *h);
void cw_rec_hist_json(struct cw_jsonw *w, const char *key,
		      const struct cw_rec_hist *r);
/* Has the record any edge-health field set? */
bool cw_rec_has_health(const struct cw_conn_record *r);

/* Write a record as one JSON object (no newline). */
void cw_conn_record_json(struct cw_jsonw *w, const struct cw_conn_record *r);
/* "process": an end's owner, or a null pid if flags has CW_REC_NO_OWNER. */
void cw_process_json(struct cw_jsonw *w, uint32_t flags,
		     const struct cw_process *p);

#endif
