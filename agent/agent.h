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
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/htab.h"
#include "common/record.h"
#include "common/wire.h"

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

/*
 * Probe, load and attach: 0, or -1 after a message with errno set to the
 * kernel's refusal when there was one (EPERM: not privileged enough for
 * these programs), else to 0.
 */
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

/*
 * Route libbpf's messages to our log (agent/bpflog.c, the one callback of
 * the process): debug messages only with -v; warnings too unless quiet
 * (loud false), as while probing for what fails by design.  Returns the
 * previous setting, for callers to restore.
 */
bool cw_libbpf_logging(bool loud);

/* Keep only the capabilities named (CAP_* numbers); 0 or -1. */
int cw_drop_caps(const int *keep, int n);
/*
 * The steady state's privileges (agent/caps.c), once everything is
 * attached and before any thread starts (capabilities are per thread):
 * become `user` (NULL: stay), keep only CAP_BPF, CAP_PERFMON and
 * CAP_NET_ADMIN, empty the bounding set and the ambient set, set
 * NO_NEW_PRIVS.  Needs CAP_SETPCAP (and CAP_SETUID, CAP_SETGID with a
 * user).  0, or -1 after a message.
 */
int cw_drop_privileges(const char *user);
/* user's uid and gid; 0, or -1 after a message. */
int cw_user_lookup(const char *user, uid_t *uid, gid_t *gid);

/* ---- Schedules (agent/schedule.c) ---------------------------------------
 * What the daemon decides, apart from the kernel and the clock: every
 * function takes the time it is told, so tests drive it with made-up
 * times.
 *
 *	struct cw_timing_sched ts;
 *	cw_timing_sched_init(&ts, window, every, cw_now_real_ns(), false);
 *	...
 *	if (signalled)
 *		cw_timing_sched_demand(&ts, now);
 *	if (!ts.slot && cw_timing_sched_due(&ts, now))
 *		cw_agent_window_open(a, ts.window_ns);	// window at ts.slot
 *	...
 *	cw_timing_sched_closed(&ts);		// once it is collected
 */

/* Timing windows at wall-clock multiples of a period, or on demand. */
struct cw_timing_sched {
	uint64_t window_ns;   /* 0: off */
	uint64_t every_ns;    /* 0: only on demand */
	uint64_t next_real;   /* next scheduled window starts then */
	uint64_t demand_real; /* an on-demand window starts then; 0: none */
	uint64_t slot;	      /* the open window's multiple; 0: none open */
};

/*
 * Windows of window_ns every every_ns (0: only on demand), the first at
 * the next multiple after now_real, or at now_real itself if first_now.
 */
void cw_timing_sched_init(struct cw_timing_sched *ts, uint64_t window_ns,
			  uint64_t every_ns, uint64_t now_real, bool first_now);
/*
 * Ask for a window at the next multiple of window_ns (an earlier pending
 * demand stands).  Returns when the demanded window will start.
 */
uint64_t cw_timing_sched_demand(struct cw_timing_sched *ts, uint64_t now_real);
/*
 * With no window open: true if one starts now, with its start in ts->slot
 * (a scheduled multiple, or the demanded one; a demand that is due is
 * served by this window).  False if windows are off or none is due.
 */
bool cw_timing_sched_due(struct cw_timing_sched *ts, uint64_t now_real);
/* The open window has been collected. */
void cw_timing_sched_closed(struct cw_timing_sched *ts);
/* How long the daemon may sleep so it opens the next window on time:
 * at most 50 ms. */
int cw_timing_sched_poll_ms(const struct cw_timing_sched *ts,
			    uint64_t now_real);

/*
 * The join of timing windows to connection records: each end's window is
 * published with its connection's fields (from the newest record of that
 * end), the window's slot, and an extent that covers its messages, in
 * records of at most `chunk` messages with consecutive seq.
 *
 *	struct cw_timing_join j;
 *	cw_timing_join_init(&j);
 *	cw_timing_join_note(&j, rec);		// every record collected
 *	j.slot = slot;				// per window
 *	cw_agent_window_collect(a, fn_calling_join_window, ...);
 *	cw_timing_join_forget_closed(&j);
 *	cw_timing_join_release(&j);
 */
struct cw_timing_join {
	struct cw_htab ends;   /* cookie -> newest struct cw_conn_record */
	uint64_t slot;	       /* the window's multiple */
	uint64_t stopped_real; /* window cut short then; 0: ran its length */
	uint64_t seq;	       /* last seq handed out */
	uint64_t records, messages, no_conn;
};

void cw_timing_join_init(struct cw_timing_join *j);
void cw_timing_join_release(struct cw_timing_join *j);
/* Remember r as its end's newest record; 0 or -1 (out of memory). */
int cw_timing_join_note(struct cw_timing_join *j,
			const struct cw_conn_record *r);
/*
 * Hand t to fn as one or more records of at most chunk messages; stops at
 * and returns fn's first non-zero return, else 0.
 */
int cw_timing_join_window(struct cw_timing_join *j,
			  const struct cw_timing_record *t, size_t chunk,
			  cw_timing_fn fn, void *ctx);
/* Forget the ends whose newest record was their last (closed). */
void cw_timing_join_forget_closed(struct cw_timing_join *j);

/* Scheduled sample runs: a run every every_ns, bins taken in turn from
 * cw_sampler_schedule[] (10 ms, 1 ms, 100 us). */
struct cw_sample_sched {
	uint64_t every_ns;  /* 0: off */
	uint64_t next_real; /* next run starts at this wall-clock time */
	unsigned turn;
};

/* The first run at the next multiple of every_ns after now_real. */
void cw_sample_sched_init(struct cw_sample_sched *ss, uint64_t every_ns,
			  uint64_t now_real);
/*
 * The bin interval of the run that is due at now_real, moving on to the
 * next multiple; 0 if runs are off or none is due.
 */
uint64_t cw_sample_sched_due(struct cw_sample_sched *ss, uint64_t now_real);

/* ---- Metadata (agent/meta.c) --------------------------------------------
 * What the agent publishes on <prefix>.meta: its host now and then, and
 * each process once, when a record first names it.
 */

/* This host now: id, hostname, kernel release, boot id, cores, memory.
 * 0, or -1 after a message. */
int cw_host_meta_read(struct cw_host_meta *hm, const char *host);
/*
 * Process p's memory and CPU time from /proc: 0, or -1 with no message if
 * the process is gone or its pid now names another process.
 */
int cw_proc_meta_read(struct cw_proc_meta *pm, const char *host,
		      const struct cw_process *p);

/* Processes already published, by (tgid, start). */
struct cw_meta_seen {
	struct cw_htab procs;
	size_t max; /* forgotten all at once past this: published again */
};

void cw_meta_seen_init(struct cw_meta_seen *s, size_t max);
void cw_meta_seen_release(struct cw_meta_seen *s);
/* 1 if p is new (and now remembered), 0 if seen before, -1 (message) if
 * out of memory. */
int cw_meta_seen_add(struct cw_meta_seen *s, const struct cw_process *p);

/* ---- The daemons (agent/daemon.c) ---------------------------------------
 *
 *	struct cw_daemon_opts o = { .sz = sizeof(o), .interval_ns = ...,
 *				    .out = stdout };
 *	struct cw_daemon_stats st;
 *	cw_catch_signals();
 *	if (cw_agent_open(&a, &ao) == 0 && cw_daemon_run(a, &o, &st) == 0)
 *		print(&st);
 */

struct cw_kafka_producer;

struct cw_daemon_opts {
	size_t sz;	      /* sizeof(struct cw_daemon_opts) */
	uint64_t interval_ns; /* collection period; required */
	uint64_t duration_ns; /* 0: until cw_stop */
	FILE *out;	      /* JSON lines when there is no producer */
	struct cw_kafka_producer *producer; /* or NULL */
	uint64_t samples_every_ns;	    /* 0: no sample runs */
	const char *samples_store;	    /* NULL: the default store */
	uint64_t window_ns;		    /* timing windows; 0: none */
	uint64_t window_every_ns;	    /* 0: only on demand */
	/* With a producer: host metadata at start and every meta_every_ns
	 * (0: only at start); process metadata at first sight. */
	uint64_t meta_every_ns;
	const char *version; /* the agent's, in host metadata */
};

struct cw_daemon_stats {
	uint64_t sample_runs, sample_failures, samples_published;
	uint64_t windows, timing_records, messages, no_conn, timing_failures;
	uint64_t host_meta, proc_meta, meta_failures;
};

/*
 * Set from a SIGUSR1 handler (async-signal-safe): the daemon opens a timing
 * window at the next multiple of its window length.
 */
extern volatile sig_atomic_t cw_window_demand;

/*
 * The host agent's loop until the duration ends or cw_stop is set: collect
 * and publish every interval, run the sample and timing schedules, then
 * flush what is pending (a window cut short too).  0, or -1 after a
 * message (the records written so far stand).
 */
int cw_daemon_run(struct cw_agent *a, const struct cw_daemon_opts *o,
		  struct cw_daemon_stats *st);

/* `causeway run`'s loop: windows from the start, handed to the caller. */
struct cw_watch_opts {
	size_t sz;		  /* sizeof(struct cw_watch_opts) */
	uint64_t interval_ns;	  /* collection period; required */
	uint64_t duration_ns;	  /* 0: until cw_stop */
	uint64_t window_ns;	  /* 0: no timing windows */
	uint64_t window_every_ns; /* required with window_ns */
};

/*
 * Collect every interval (and windows, the first at once) until the
 * duration ends or cw_stop is set, then once more; 0, or -1 after a
 * message, or as soon as a callback returned non-zero.
 */
int cw_agent_watch(struct cw_agent *a, const struct cw_watch_opts *o,
		   cw_record_fn on_record, cw_timing_fn on_timing, void *ctx);

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
