/* SPDX-License-Identifier: MIT */
/*
 * The host agent: loads bpf/conn.bpf.c with the attach variant the kernel
 * allows, collects per-connection aggregates on a period and at close, and
 * hands them out as enriched struct cw_conn_record (common/record.h).
 *
 *	struct cw_agent_opts opts = { .sz = sizeof(opts) };
 *	struct cw_agent *a;
 *	if (cw_agent_open(&a, &opts))
 *		...;
 *	while (!cw_stop) {
 *		cw_agent_poll(a, 100);			// close records
 *		if (due)
 *			cw_agent_collect(a, emit, ctx);	// every interval
 *	}
 *	cw_agent_collect(a, emit, ctx);
 *	cw_agent_close(a);
 */
#ifndef CW_AGENT_H
#define CW_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

enum cw_attach {
	CW_ATTACH_AUTO,
	CW_ATTACH_FENTRY,
	CW_ATTACH_KPROBE,
	CW_ATTACH_TRACEPOINT,
};

enum cw_agent_mode {
	CW_MODE_AGGREGATE, /* in-kernel aggregation: the product */
	CW_MODE_CONN_ONLY, /* connection hooks only (benchmark baseline) */
	CW_MODE_PER_EVENT, /* one event per send/recv, summed in user space */
};

/* What this kernel allows; filled by cw_probe_kernel(). */
struct cw_kernel_caps {
	bool btf;	     /* /sys/kernel/btf/vmlinux readable */
	bool tracepoints;    /* sock_send_length and friends (>= 6.5) */
	bool tp_btf_loads;   /* a tp_btf program loads */
	bool fentry_loads;   /* an fentry program loads */
	bool kprobe_pmu;     /* kprobes can be attached */
	bool kprobe_loads;   /* a kprobe program loads */
	bool task_file_iter; /* pre-existing connections can be found */
	bool cgroup2;	     /* UDP per-peer counting possible */
	char cgroup2_path[256];
	char fentry_err[128]; /* why fentry is refused, if it is */
	char kprobe_err[128];
	enum cw_attach auto_pick;
};

/*
 * Load (verify) every program of one variant without attaching anything:
 * 0 if the kernel accepts them all, else -errno with the reason in why.
 */
int cw_variant_load_check(enum cw_attach variant, char *why, size_t len);
/* Fills caps by loading tiny programs; 0, or -1 with a message. */
int cw_probe_kernel(struct cw_kernel_caps *caps);
const char *cw_attach_name(enum cw_attach a);
/* "auto", "fentry", "kprobe", "tracepoint"; -1 on anything else. */
int cw_attach_parse(const char *s, enum cw_attach *out);

struct cw_agent_opts {
	size_t sz; /* sizeof(struct cw_agent_opts), so the struct can grow */
	enum cw_attach attach;
	enum cw_agent_mode mode;
	uint64_t msg_gap_ns; /* idle gap that starts a new message; 0: none */
	uint32_t netns;	     /* watch only this namespace inode; 0: all */
	bool no_udp;	     /* do not attach the UDP cgroup_skb programs */
	bool keep_caps;	     /* do not drop capabilities after attach */
	const char *host;    /* host id override; default machine-id */
	/*
	 * Pin the per-connection state here (a bpffs folder, mounted if
	 * needed): an agent restarted after a crash reuses it, so counters
	 * continue instead of starting again from zero, and close records
	 * made while no agent ran are still delivered.  NULL: no pinning.
	 */
	const char *pin_dir;
	/*
	 * Do not undo DNAT: a client end keeps the virtual address it
	 * connected to (see agent/nat.h).  Read only if sz covers it.
	 */
	bool no_nat;
	/* When the per-call programs run (enum cw_hooks, below); read only
	 * if sz covers it, else CW_HOOKS_SAMPLED. */
	int hooks;
};

/* Remove what --pin left in dir (the folder too); 0 or -1. */
int cw_agent_unpin(const char *dir);

/* Counters the agent reports with its output. */
struct cw_agent_stats {
	uint64_t close_lost;	 /* close records dropped: ring buffer full */
	uint64_t event_lost;	 /* per-event mode: events dropped */
	uint64_t storage_fail;	 /* socket storage could not be created */
	uint64_t udp_map_full;	 /* UDP flow map full: datagrams missed */
	uint64_t connect_failed; /* connects that never got established */
	uint64_t no_owner;	 /* closed before any process-context hook */
	uint64_t records;	 /* records handed out */
	uint64_t collections;
	uint64_t events;      /* per-event mode: events summed */
	uint64_t timing_lost; /* message starts dropped: timing ring full */
	uint64_t windows;     /* timing windows collected */
	uint64_t nat_lookups; /* conntrack queries (one per client end) */
	uint64_t nat_undone;  /* client ends found behind DNAT */
	uint64_t nat_errors;  /* conntrack queries that failed */
};

struct cw_agent;

/* Called once per changed connection end; return non-zero to stop. */
typedef int (*cw_record_fn)(const struct cw_conn_record *r, void *ctx);

int cw_agent_open(struct cw_agent **out, const struct cw_agent_opts *opts);
/* Which variant was attached. */
enum cw_attach cw_agent_attach(const struct cw_agent *a);
/* Wait up to timeout_ms for close records (or per-event events). */
int cw_agent_poll(struct cw_agent *a, int timeout_ms);
/* Copy out what changed since the last call and emit it. */
int cw_agent_collect(struct cw_agent *a, cw_record_fn fn, void *ctx);
void cw_agent_stats(const struct cw_agent *a, struct cw_agent_stats *st);
/*
 * Timing windows: for `duration_ns` from now, the kernel records when each
 * message starts (bounded ring; losses counted).  Windows are meant to open
 * at the same wall-clock multiples on every host (cw_window_next()).
 */
int cw_agent_window_open(struct cw_agent *a, uint64_t duration_ns);
/* True once the open window has ended and can be collected. */
bool cw_agent_window_done(const struct cw_agent *a);
typedef int (*cw_timing_fn)(const struct cw_timing_record *t, void *ctx);
/* Hand out the window's message starts per connection end, sorted. */
int cw_agent_window_collect(struct cw_agent *a, cw_timing_fn fn, void *ctx);
/* The next CLOCK_REALTIME multiple of period after now_real. */
uint64_t cw_window_next(uint64_t now_real, uint64_t period);
/* Per-event mode: bytes summed in user space, both directions. */
uint64_t cw_agent_event_bytes(const struct cw_agent *a);
const char *cw_agent_host(const struct cw_agent *a);
/* Detach everything and free; NULL is fine. */
void cw_agent_close(struct cw_agent *a);

/* Process enrichment, cached by (tgid, start); used by the agent. */
int cw_enrich_process(struct cw_process *p);
/* Container id from a cgroup path; "" if it names none.  Pod uid too. */
void cw_parse_cgroup_path(const char *path, char *container, size_t clen,
			  char *pod, size_t plen);
/* This host's id: /etc/machine-id, else the hostname. */
const char *cw_host_id(void);

/* Keep only the capabilities named (CAP_* numbers); 0 or -1. */
int cw_drop_caps(const int *keep, int n);

/* ---- per-call hooks: sampled or always (issue 10) ---------------------
 *
 * Bytes always come from the kernel's TCP counters, with no per-call
 * program.  The per-call programs (one run per send and per recv) count
 * calls and messages and stamp message starts:
 *
 *   CW_HOOKS_SAMPLED  attached only while a timing window is open
 *                     (cw_agent_window_open() attaches them, and
 *                     cw_agent_window_collect() detaches them): outside
 *                     windows a send or recv costs nothing; calls and msgs
 *                     count only what windows saw.  The agent's default,
 *                     with windows of CW_HOOKS_WINDOW_NS every
 *                     CW_HOOKS_EVERY_NS when none are asked for.
 *   CW_HOOKS_ALWAYS   attached for the agent's life: exact calls and msgs
 *                     everywhere, at ~100 ns per call (bench/RESULTS.md).
 *                     `causeway run`'s default.
 */
enum cw_hooks {
	CW_HOOKS_SAMPLED = 0,
	CW_HOOKS_ALWAYS = 1,
};

#define CW_HOOKS_WINDOW_NS (1000000000ULL)
#define CW_HOOKS_EVERY_NS  (10000000000ULL)

/* "sampled" or "always"; -1 on anything else (nothing printed). */
int cw_hooks_parse(const char *s, enum cw_hooks *out);
const char *cw_hooks_name(enum cw_hooks h);
/* True while the per-call programs are attached. */
bool cw_agent_hooks_attached(const struct cw_agent *a);
/*
 * What --hooks mode h counts and costs on a kernel with these caps, as
 * lines for `causeway probe` (each ends in a newline; never NULL).
 */
const char *cw_hooks_describe(enum cw_hooks h, const struct cw_kernel_caps *c);

#endif
