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

#include "agent/dns.h"
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
	uint64_t no_owner;	 /* closed with no owner, not even tentative */
	uint64_t records;	 /* records handed out */
	uint64_t collections;
	uint64_t events;      /* per-event mode: events summed */
	uint64_t timing_lost; /* message starts dropped: timing ring full */
	uint64_t windows;     /* timing windows collected */
	uint64_t nat_lookups; /* conntrack queries (one per client end) */
	uint64_t nat_undone;  /* client ends found behind DNAT */
	uint64_t nat_errors;  /* conntrack queries that failed */
	uint64_t nat_snat;    /* client ends whose source was translated */
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

struct conn_bpf; /* bpf/conn.bpf.c's skeleton, "conn.skel.h" */
/*
 * Set up an opened skeleton for one variant, as cw_agent_open() does
 * before it loads: every program off but the variant's (and the UDP
 * programs when udp, the iterators when iters), the settings mode wants.
 * Public for tests that load bpf/conn.bpf.c's programs themselves.  0, or
 * -1 after a message.
 */
int cw_variant_prepare(struct conn_bpf *skel, enum cw_attach variant,
		       enum cw_agent_mode mode, bool udp, bool iters);
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
 * The /proc parsers of cw_enrich_process(), apart from the reading so any
 * bytes can be fed to them (tests/fuzz/fuzz_proc_*.c).  buf holds the n
 * bytes read (no NUL needed); the reader reads at most the *_READ bytes.
 */
#define CW_PROC_CMDLINE_READ 1024 /* more than a record keeps: a whole cut */
#define CW_PROC_CGROUP_READ  4096
#define CW_PROC_STAT_READ    1024
/* /proc/PID/cmdline (NUL-separated argv) as one clean line of at most
 * size - 1 bytes, cut between characters; returns its length. */
size_t cw_proc_parse_cmdline(const char *buf, size_t n, char *out, size_t size);
/* /proc/PID/cgroup: the container id and pod uid of the first line that
 * names a container ("" for none). */
void cw_proc_parse_cgroup(const char *buf, size_t n, char *container,
			  size_t clen, char *pod, size_t plen);
/* /proc/PID/stat: field 22, the start in clock ticks since boot, into
 * *ticks; 0, or -1 (nothing written) when the text has no such field. */
int cw_proc_parse_stat_start(const char *buf, size_t n, uint64_t *ticks);

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
 * every interval the resource use of each live process that a record has
 * named (CPU time and resident memory of its container's cgroup when it
 * has one, else its own), with its workload identity.
 */

/*
 * This host's boot id (/proc/sys/kernel/random/boot_id; the environment's
 * CAUSEWAY_TEST_BOOT_ID instead, for tests only) into buf: 0, or -1 after
 * a message with buf "".
 */
int cw_boot_id_read(char *buf, size_t len);
/* This host now: id, hostname, kernel release, boot id, cores, memory.
 * 0, or -1 after a message. */
int cw_host_meta_read(struct cw_host_meta *hm, const char *host);
/*
 * Process p's memory and CPU time: its container's cgroup (cpu.stat or
 * cpuacct.usage, memory.current or memory.usage_in_bytes) when it is in
 * one, else /proc (agent/workload.h, cw_task_usage).  0, or -1 with no
 * message if the process is gone or its pid now names another process.
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
 * out of memory.  Either way its labels are p's from now on. */
int cw_meta_seen_add(struct cw_meta_seen *s, const struct cw_process *p);

typedef int (*cw_proc_meta_fn)(const struct cw_proc_meta *pm, void *ctx);
/*
 * Read every remembered process's use now and hand it to fn; processes
 * that are gone are forgotten.  0, or -1 as soon as fn returns non-zero.
 */
int cw_meta_seen_publish(struct cw_meta_seen *s, const char *host,
			 cw_proc_meta_fn fn, void *ctx);

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
struct cw_msgs;
struct cw_dns;

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
	/* Host metadata at start and every meta_every_ns (0: only at
	 * start); process metadata (resources) every interval. */
	uint64_t meta_every_ns;
	const char *version; /* the agent's, in host metadata */
	/* Where the container runtime's state is read (workload identity);
	 * NULL: $CAUSEWAY_RUNTIME_ROOT, else "/". */
	const char *runtime_root;
	/* --metrics (issue 13), read only if sz covers them: the board the
	 * daemon copies every counter onto after each collection (NULL:
	 * none), and the producer's spool whose counters join them and the
	 * health in host metadata (NULL: none). */
	struct cw_metrics_board *metrics;
	struct cw_spool *spool;
	/* --traces (issue 17), read only if sz covers it: the message
	 * programs, loaded, attached by the daemon only while a timing
	 * window is open; their records go with the windows'.  NULL: off. */
	struct cw_msgs *msgs;
	/* --dns (issue 31), read only if sz covers it: the DNS capture
	 * (agent/dns.h), polled every pass; its names go out as DnsName
	 * records beside the metadata.  NULL: off. */
	struct cw_dns *dns;
};

struct cw_daemon_stats {
	uint64_t sample_runs, sample_failures, samples_published;
	uint64_t windows, timing_records, messages, no_conn, timing_failures;
	uint64_t host_meta, proc_meta, meta_failures;
	/* --traces: MsgWindow records made and their messages, records not
	 * published, and events the kernel lost (ring full). */
	uint64_t msgs_records, msgs_messages, msgs_failures, msgs_lost;
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
	/* Each live process's resources every interval, to on_meta (with
	 * the callbacks' ctx; NULL: not read); identity under runtime_root
	 * (as cw_daemon_opts). */
	cw_proc_meta_fn on_meta;
	const char *runtime_root;
	/* --metrics (issue 13): the board the agent's counters are copied
	 * onto after each collection, or NULL; read only if sz covers it. */
	struct cw_metrics_board *metrics;
	/* --dns (issue 31), read only if sz covers them: the DNS capture,
	 * polled every pass, its names to on_dns (with the callbacks' ctx).
	 * NULL: off. */
	struct cw_dns *dns;
	int (*on_dns)(const struct cw_wire_dns *n, void *ctx);
	/* Once, with the callbacks' ctx, when the agent watches: after the
	 * first timing window is open, before the first collection (where
	 * a caller says it is ready).  NULL: none; read only if sz covers
	 * it. */
	void (*on_ready)(void *ctx);
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

/* ---- per-message observations for traces (agent/msgs.c, issue 17) -----
 *
 * bpf/msgs.bpf.c, apart from the agent's steady state: while attached, one
 * observation per message (a run of calls in one direction on a TCP
 * socket) with its thread, and for a call the request that thread was
 * serving.  Attached only inside timing windows or for `causeway run
 * --traces`; detached, nothing of it runs on a send or recv.
 *
 *	struct cw_msgs_opts o = {.sz = sizeof(o)};
 *	struct cw_msgs *m;
 *	cw_msgs_open(&m, &o);		// loaded, nothing attached
 *	cw_msgs_attach(m);		// a window opens
 *	cw_msgs_poll(m, fn, ctx);	// often: what arrived, to fn
 *	cw_msgs_detach(m, fn, ctx);	// window over: the rest, to fn
 *	cw_msgs_close(m);
 *
 * Or, for `causeway run --traces FILE`, all of it on a thread of its own,
 * writing the messages CSV that causeway-traces(1) reads:
 *
 *	struct cw_msgs_trace *tr;
 *	cw_msgs_trace_start(&tr, "msgs.csv", &o, window_ns, every_ns);
 *	...				// the run
 *	cw_msgs_trace_finish(tr);	// the file whole, or nothing
 */
enum cw_msgs_dir { CW_MSGS_DIR_IN = 0, CW_MSGS_DIR_OUT = 1 };
enum cw_msgs_role { CW_MSGS_ROLE_ACCEPTED = 0, CW_MSGS_ROLE_CONNECTED = 1 };

struct cw_msgs_opts {
	size_t sz;	/* sizeof(struct cw_msgs_opts), so it can grow */
	uint32_t netns; /* watch only this namespace inode; 0: all */
};

/* A socket as first seen in an attachment. */
struct cw_msgs_sock {
	uint64_t cookie;
	uint32_t netns;
	uint32_t tgid; /* the process of its first call seen */
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t role;	/* enum cw_msgs_role */
	bool role_seen; /* from the handshake; else from the listener's
			 * backlog, which an accepted socket inherits */
};

/* One message.  Times are CLOCK_REALTIME ns (a capture's clock). */
struct cw_msgs_obs {
	const struct cw_msgs_sock *sock;
	/* A call (connected socket, out): the socket of the request its
	 * thread was serving (NULL: none), that request's number on it and
	 * how many requests the thread held open (1: exactly one).
	 * ctx_loop: the thread is an event loop and ctx is the request of
	 * its latest read in the same loop iteration (bpf/msgs.bpf.c). */
	const struct cw_msgs_sock *ctx;
	uint32_t ctx_seq, ctx_open;
	bool ctx_loop;
	uint64_t start_ns, end_ns, bytes;
	uint32_t tid; /* the thread of its first call */
	uint32_t seq; /* a request (accepted, in): its number, from 1 */
	uint8_t dir;  /* enum cw_msgs_dir */
};

struct cw_msgs_stats {
	uint64_t messages;     /* handed out */
	uint64_t sockets;      /* identities received */
	uint64_t lost;	       /* ring buffer full: events dropped */
	uint64_t storage_fail; /* socket storage could not be made */
	uint64_t thread_full;  /* thread map full: a context not kept */
	uint64_t unknown_sock; /* a message whose socket's identity was lost */
	uint64_t attaches;     /* windows (attachments) so far */
};

struct cw_msgs;

/* Called per message; return non-zero to stop handing them out. */
typedef int (*cw_msgs_fn)(const struct cw_msgs_obs *m, void *ctx);

/* Load (nothing attached): 0, or -1 after a message. */
int cw_msgs_open(struct cw_msgs **out, const struct cw_msgs_opts *o);
/* Attach the per-call programs (a new attachment): 0, or -1. */
int cw_msgs_attach(struct cw_msgs *m);
/* Hand the messages that arrived to fn: 0, or -1 if fn stopped it. */
int cw_msgs_poll(struct cw_msgs *m, cw_msgs_fn fn, void *ctx);
/* Detach, then hand out the rest and every socket's message in
 * progress; 0, or -1 after a message or if fn stopped it.  Detached
 * either way. */
int cw_msgs_detach(struct cw_msgs *m, cw_msgs_fn fn, void *ctx);
bool cw_msgs_attached(const struct cw_msgs *m);
/* The socket at the other end of s's connection if this attachment saw
 * it in the same namespace (loopback), else NULL.  Valid until the next
 * poll. */
const struct cw_msgs_sock *cw_msgs_peer(const struct cw_msgs *m,
					const struct cw_msgs_sock *s);
void cw_msgs_stats(const struct cw_msgs *m, struct cw_msgs_stats *st);
/* Detach and free; NULL is fine. */
void cw_msgs_close(struct cw_msgs *m);

struct cw_msgs_trace;

/*
 * Open `path` (written whole at finish), load, and record on a thread:
 * attached for the whole run when window_ns is 0, else in windows of
 * window_ns at every wall-clock multiple of every_ns, the first at once
 * (as cw_agent_watch() opens them).  Call after dropping privileges: the
 * thread has the caller's.  0, or -1 after a message (nothing written).
 */
int cw_msgs_trace_start(struct cw_msgs_trace **out, const char *path,
			const struct cw_msgs_opts *o, uint64_t window_ns,
			uint64_t every_ns);
/* Stop, flush, write the file and free: 0, or -1 after a message (no
 * file).  Prints what was recorded and lost. */
int cw_msgs_trace_finish(struct cw_msgs_trace *tr);
/* Stop and free, leaving no file; NULL is fine. */
void cw_msgs_trace_abort(struct cw_msgs_trace *tr);

/*
 * `causeway agent --traces` (agent/schedule.c): a window's messages cut
 * into MsgWindow records (common/wire.h) of at most `chunk` messages,
 * each with the sockets its messages name, handed to fn as they fill and
 * the window's last one (marked, possibly empty) at close.
 *
 *	struct cw_msgs_batch b;
 *	cw_msgs_batch_init(&b, host, boot_id, CW_WIRE_MSGS_CHUNK, fn, ctx);
 *	cw_msgs_batch_open(&b, slot_ns);	// a window opens
 *	cw_msgs_poll(m, cw_msgs_batch_add_fn, &b);	// and at detach
 *	cw_msgs_batch_close(&b, now_real, lost);	// the last record
 *	cw_msgs_batch_release(&b);
 */
typedef int (*cw_wire_msgs_fn)(const struct cw_wire_msgs *w, void *ctx);

struct cw_msgs_batch {
	struct cw_wire_msgs w; /* the record being filled */
	struct cw_htab idx;    /* cookie -> uint32_t index in w.socks */
	size_t cap_msgs, cap_socks, chunk;
	uint64_t open_real; /* the window's attach time */
	uint64_t records, messages;
	cw_wire_msgs_fn fn;
	void *ctx;
};

void cw_msgs_batch_init(struct cw_msgs_batch *b, const char *host,
			const char *boot_id, size_t chunk, cw_wire_msgs_fn fn,
			void *ctx);
/* A window at slot_ns opens now (now_real): its first record is chunk 0. */
void cw_msgs_batch_open(struct cw_msgs_batch *b, uint64_t slot_ns,
			uint64_t now_real);
/* Add one message (a cw_msgs_fn): 0, or -1 (out of memory, or fn's
 * error; nothing is kept of the full record either way). */
int cw_msgs_batch_add_fn(const struct cw_msgs_obs *o, void *batch);
/* The window's last record, `lost` kernel events in it: fn's return. */
int cw_msgs_batch_close(struct cw_msgs_batch *b, uint64_t now_real,
			uint64_t lost);
void cw_msgs_batch_release(struct cw_msgs_batch *b);

/* ---- the agent's health (agent/health.c) -------------------------------
 *
 * Every counter the agent keeps, at one moment: served as Prometheus text
 * by `--metrics` and summed into host metadata (HostMeta 10-19), so a
 * fleet sees each agent's losses and spool without logging into it.
 *
 *	struct cw_metrics_board *b = cw_agent_metrics_board(host);
 *	struct cw_agent_health h = {0};
 *	cw_agent_stats(a, &h.agent);		// and the others it has
 *	cw_agent_health_post(&h, b);
 */

struct cw_kafka_producer_stats;
struct cw_spool_stats;
struct cw_metrics_board;

struct cw_agent_health {
	struct cw_agent_stats agent;
	struct cw_daemon_stats daemon; /* zeros under `causeway run` */
	bool has_kafka;		       /* a producer: the next two hold */
	uint64_t produced, delivered, failed, spooled, replayed, lost,
		queue_full, in_flight;
	bool has_spool;
	uint64_t spool_records, spool_bytes, spool_evicted, spool_lost_full,
		spool_evicted_full, spool_full_episodes;
	struct cw_dns_stats dns; /* --dns (agent/dns.h); zeros without */
};

/* Fill the Kafka and spool parts from their stats (either may be NULL). */
void cw_agent_health_kafka(struct cw_agent_health *h,
			   const struct cw_kafka_producer_stats *ks,
			   const struct cw_spool_stats *ss);
/* A board for the agent's metrics, every sample labelled host="host";
 * NULL after a message. */
struct cw_metrics_board *cw_agent_metrics_board(const char *host);
/* Copy h onto a board from cw_agent_metrics_board(). */
void cw_agent_health_post(const struct cw_agent_health *h,
			  struct cw_metrics_board *b);
/* The part of h that host metadata carries. */
void cw_agent_health_meta(const struct cw_agent_health *h,
			  struct cw_host_health *out);

#endif
