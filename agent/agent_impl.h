/* SPDX-License-Identifier: MIT */
/*
 * The connection agent's inside, shared by agent/agent.c (loading,
 * attaching, windows) and agent/collect.c (each interval's records and the
 * message estimate).  Nothing else includes this.
 */
#ifndef CW_AGENT_IMPL_H
#define CW_AGENT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/exchange.h"
#include "agent/nat.h"
#include "agent/variant.h"
#include "common/hist.h"
#include "common/htab.h"
#include "common/util.h"

#define MAX_LINKS    32
#define MAX_IO_LINKS 8
/* A UDP flow idle this long is read-and-deleted from the kernel map. */
#define UDP_IDLE_NS (60 * NSEC_PER_SEC)
/* UDP flows are stamped with the coarse clock (a tick behind at most):
 * a flow this close before the last collection may have changed since. */
#define UDP_COARSE_SLACK_NS (20 * NSEC_PER_MSEC)
/* Ends still unowned after a scan are scanned for again this seldom. */
#define RESCAN_EVERY 10

/* The kernel side and the records must agree on roles. */
_Static_assert((int)CW_ROLE_UNKNOWN == (int)CW_REC_ROLE_UNKNOWN, "role values");
_Static_assert((int)CW_ROLE_CLIENT == (int)CW_REC_ROLE_CLIENT, "role values");
_Static_assert((int)CW_ROLE_SERVER == (int)CW_REC_ROLE_SERVER, "role values");
_Static_assert((int)CW_DIR_OUT == (int)CW_OBS_OUT, "direction values");
_Static_assert((int)CW_DIR_IN == (int)CW_OBS_IN, "direction values");
_Static_assert((int)CW_FAIL_REFUSED == (int)CW_REC_FAIL_REFUSED, "fail values");
_Static_assert((int)CW_FAIL_TIMEOUT == (int)CW_REC_FAIL_TIMEOUT, "fail values");

/* Past this many ends or services the estimate tables start afresh. */
#define EST_MAX (1u << 20)

/* Messages and calls per byte, out and in ([0] out, [1] in). */
struct est_ratio {
	double msgs[2], calls[2];
	bool have[2];
};

/* The largest figures an end has been given: estimates never go back. */
struct est_end {
	uint64_t msgs[2], calls[2];
};

/* An end's RTT readings so far (agent/collect.c, health_fill()). */
struct rtt_end {
	struct cw_hist h; /* ns */
	uint64_t srtt_ns; /* the last reading's cw_conn.srtt_ns */
};

/* A service: a server's port, or the address and port a client calls. */
struct svc_key {
	uint32_t netns;
	uint16_t port;
	uint8_t role;
	uint8_t pad;
	uint8_t addr[16];
};

struct cw_agent {
	struct conn_bpf *skel;
	enum cw_attach attach;
	enum cw_agent_mode mode;
	struct bpf_link *links[MAX_LINKS];
	int nlinks;
	/* The per-call programs: attached for the agent's life (always), or
	 * only while a window is open (sampled). */
	struct bpf_program *io_progs[MAX_IO_LINKS];
	struct bpf_link *io_links[MAX_IO_LINKS];
	int nio;
	bool io_attached;
	enum cw_hooks hooks;
	uint64_t unowned_seen; /* unowned_ends at the last scan */
	struct bpf_link *collect_link, *scan_link;
	int cgroup_fd;
	struct ring_buffer *rb;
	struct cw_htab pending;	   /* cookie -> struct cw_conn: closed */
	struct cw_htab event_sums; /* per-event mode: cookie -> u64 bytes */
	struct ring_buffer *timing_rb;
	struct cw_htab timing; /* cookie -> struct msg_list */
	struct cw_xchg xchg;   /* exchange times per end (exchange.h) */
	uint64_t window_start_real, window_ns, window_end_mono;
	uint64_t event_bytes;
	uint64_t since_mono; /* start of the previous collection */
	int64_t mono_to_real;
	uint64_t seq;
	bool need_scan;
	bool unowned_left;  /* a record went out with no owner */
	struct cw_nat *nat; /* DNAT undone for client ends; NULL: off */
	/* Messages outside windows (--hooks sampled): see est_fill(). */
	bool estimating;
	struct cw_htab est_ends; /* cookie -> struct est_end */
	struct cw_htab est_svcs; /* struct svc_key -> struct est_ratio */
	struct cw_htab rtt_ends; /* cookie -> struct rtt_end: TCP health */
	struct cw_agent_stats st;
	char host[CW_HOST_LEN];
	char boot_id[CW_BOOT_ID_LEN]; /* ends are (host, boot, cookie) */
};

/* agent.c */
/* Run an iterator link, each record of size bytes to fn; 0 or -1. */
int agent_run_iter(struct bpf_link *link, size_t size,
		   void (*fn)(struct cw_agent *a, const void *data),
		   struct cw_agent *a);
/* Owners of unowned ends from the processes' file tables; 0 or -1. */
int agent_scan_files(struct cw_agent *a);

/* collect.c */
/* Look a closed client end up in conntrack while the entry still lives. */
void agent_nat_resolve_closed(struct cw_agent *a, const struct cw_conn *c);
/* Free the ends' RTT histograms (the table stays usable, empty). */
void agent_health_release(struct cw_agent *a);

#endif
