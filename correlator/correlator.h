/* SPDX-License-Identifier: MIT */
/*
 * The correlator: keeps the newest record of every connection end and pairs
 * the two ends of each connection on the canonical 4-tuple + protocol +
 * time overlap.  What it found is exported for the graph component (which
 * builds nodes and edges from it, graph/graph.h) and for live paths: each
 * end's partner (or none), the ends grouped by connection tuple, and each
 * end's numbers and owner.  An end whose partner was not watched is kept
 * alone; nothing is dropped.
 *
 *	struct cw_pairing p;
 *
 *	cw_pairing_init(&p);
 *	cw_pairing_add_many(&p, recs, n);	// as records come
 *	if (cw_pairing_pair(&p))		// the partner map
 *		return cw_error("out of memory pairing connection ends");
 *	for (i = 0; i < p.st.ends; i++)
 *		if (p.partner[i] >= 0)
 *			...			// i and p.partner[i] pair
 *	cw_pairing_release(&p);
 *
 * The service around it, `causeway correlate`: a Kafka consumer-group
 * member that applies connection records to a pairing, collects the
 * agents' timing windows and infers each window's causal paths, and
 * commits offsets only once what holds them is written:
 *
 *	struct cw_correlator c;
 *	struct cw_correlator_opts o = {.out = dir, .paths = true, ...};
 *
 *	if (cw_correlator_open(&c, &o, consumer, timing_topic))
 *		return -1;
 *	c.snapshot = write_graph;	// builds and writes the graph
 *	err = cw_correlator_run(&c, duration, idle, every);
 *	cw_correlator_close(&c);
 */
#ifndef CW_CORRELATOR_H
#define CW_CORRELATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "common/htab.h"
#include "common/kafka.h"
#include "common/record.h"
#include "common/wire.h"
#include "paths/paths.h"

struct cw_pairing_stats {
	uint64_t records;   /* records applied */
	uint64_t stale;	    /* older than what we had: ignored */
	uint64_t ends;	    /* distinct connection ends */
	uint64_t paired;    /* connections seen from both ends */
	uint64_t unpaired;  /* ends whose partner was not watched */
	uint64_t ambiguous; /* ends that matched several candidates */
};

/*
 * Which end a record is about: host, socket cookie and, for UDP, the remote
 * address and the flow's first_ns (a flow re-created later is another
 * end).  No padding: hashed as it is.
 */
struct cw_end_id {
	char host[CW_HOST_LEN];
	uint64_t cookie;
	uint64_t generation;  /* UDP: first_ns */
	struct cw_addr raddr; /* UDP */
	uint8_t protocol;
	uint16_t rport; /* UDP */
	uint8_t pad[4];
};

/* r's end, zero-padded. */
void cw_end_id_of(const struct cw_conn_record *r, struct cw_end_id *id);

/* What is kept of an end's newest record besides its key and process. */
struct cw_end {
	uint64_t bytes_out, bytes_in;
	uint64_t calls_out, calls_in;
	uint64_t msgs_out, msgs_in;
	uint64_t first_ns, last_ns;
	uint64_t seq;
	uint64_t proc_at; /* its process in the pairing's log */
	uint32_t proc_room;
	uint32_t
		owner; /* what makes its graph node: 0..cw_pairing_owners()-1 */
	uint32_t flags;
	uint32_t retrans, srtt_us;
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t protocol, role;
};

/* Is e the client end?  The agent says so; else the higher port is. */
bool cw_end_is_client(const struct cw_end *e);

/* Who owns an end: the parts its graph node is made of. */
struct cw_end_owner {
	const char *host; /* the pairing's; valid until the next add */
	uint32_t netns;
	bool unknown; /* CW_REC_NO_OWNER: a netns, no process */
	struct cw_process proc;
};

/*
 * The ends are kept compactly: host names and node keys are interned, an
 * end keeps its newest record's numbers and its process packed in a log.
 * cw_pairing_end() puts a whole record back together.
 */
struct cw_pairing {
	struct cw_htab ends;   /* end key -> the end's newest numbers */
	struct cw_htab hosts;  /* host name -> id */
	struct cw_htab owners; /* what makes an end's node -> id */
	unsigned char *procs;  /* each end's process, packed */
	size_t procs_used, procs_size;
	struct cw_pairing_stats st;
	/*
	 * What cw_pairing_pair() found, valid until the next add: each end's
	 * partner (or -1); the ends grouped by connection tuple, groups in
	 * the order of their first end (order[group_end[k-1]..group_end[k]) is
	 * group k, ends in index order within it).
	 */
	long *partner;
	uint32_t *order;
	uint32_t *group_end;
	size_t ngroups;
	/* cw_pairing_end()'s records, by end, until the next add */
	struct cw_conn_record **made;
	size_t nmade;
	struct cw_conn_record spare; /* when out of memory for those */
};

void cw_pairing_init(struct cw_pairing *p);
void cw_pairing_release(struct cw_pairing *p);
/* Room for about n ends, so the tables grow no more; 0 or -1 (ENOMEM). */
int cw_pairing_reserve(struct cw_pairing *p, size_t n);
/* Apply one record: the newest per end wins (cumulative counters). */
int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r);
/* Apply n records in order: the same, faster (lookups overlap). */
int cw_pairing_add_many(struct cw_pairing *p, const struct cw_conn_record *r,
			size_t n);
/*
 * Pair every end: within one tuple each end takes the complementary end
 * whose lifetime overlaps its own, preferring opposite roles and then the
 * nearest start.  Fills partner, order, group_end and the stats' ends,
 * paired, unpaired and ambiguous.  0 or -1 (out of memory; no message).
 */
int cw_pairing_pair(struct cw_pairing *p);
/* The TCP end (host, cookie), or -1; valid until the next add. */
long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie);
/* The end *id, or -1; valid until the next add. */
long cw_pairing_find_id(const struct cw_pairing *p, const struct cw_end_id *id);
/* End i's numbers (i < st.ends); valid until the next add. */
const struct cw_end *cw_pairing_numbers(const struct cw_pairing *p, size_t i);
/* How many owners (distinct graph nodes of watched ends) there are. */
size_t cw_pairing_owners(const struct cw_pairing *p);
/* End i's owner into *o. */
void cw_pairing_owner(const struct cw_pairing *p, size_t i,
		      struct cw_end_owner *o);
/* End i's newest record; the pointer is valid until the next add. */
const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *p,
					    size_t i);
/* The same, copied into *r. */
void cw_pairing_end_copy(const struct cw_pairing *p, size_t i,
			 struct cw_conn_record *r);

/*
 * Timing windows (correlator/timing.c): every end's records of one slot.
 * A window is complete a grace period after a newer slot shows up, when
 * more than CW_TIMING_MAX_PENDING are pending (the oldest), or at the end.
 * A record of a slot already inferred is late: counted and dropped.  Each
 * record's (partition, offset) is kept, so that a partition's commit point
 * never passes a record whose window is still pending.  A slot further in
 * the future than CW_TIMING_MAX_AHEAD_NS, or further in the past than
 * CW_TIMING_MAX_BEHIND_NS, of the correlator's own clock is refused and
 * counted: it would never complete, or push real windows out as late.
 * A window pending for max_age_ns (CW_TIMING_MAX_AGE_NS unless changed
 * after init) since its first record is complete even with no newer one:
 * the last window before the agents stop does not wait for ever.
 */
#define CW_TIMING_MAX_PENDING	8
#define CW_TIMING_MAX_AHEAD_NS	(10 * 60 * 1000000000ULL)
#define CW_TIMING_MAX_BEHIND_NS (7 * 86400 * 1000000000ULL) /* retention */
#define CW_TIMING_MAX_AGE_NS	(10 * 60 * 1000000000ULL)

struct cw_timing_source {
	int32_t partition;
	int64_t offset;
};

struct cw_timing_window {
	uint64_t slot;
	uint64_t start_ns, end_ns; /* earliest start, latest end seen */
	struct cw_timing_record *recs;
	size_t n, cap;
	struct cw_timing_source *offs;
	size_t noffs, cap_offs;
	uint64_t newer_mono; /* when a newer window was first seen; 0: not */
	uint64_t first_mono; /* when its first record came */
};

/* A partition of the timing topic: what can be committed. */
struct cw_timing_part {
	int32_t partition;
	int64_t max_seen; /* highest offset read */
	int64_t stored;	  /* commit point stored; -1: none */
};

struct cw_timing {
	struct cw_timing_window wins[CW_TIMING_MAX_PENDING + 1]; /* by slot */
	size_t nwins;
	struct cw_timing_part *parts;
	size_t nparts, cap_parts;
	uint64_t grace_ns;
	uint64_t max_age_ns;
	uint64_t done_slot; /* the newest window inferred */
	uint64_t records, late;
	uint64_t refused; /* slots too far from the clock */
};

void cw_timing_init(struct cw_timing *tw, uint64_t grace_ns);
void cw_timing_release(struct cw_timing *tw);
/* Offset `offset` of the timing topic's partition was read (whatever it
 * held).  0, or -1 after a message. */
int cw_timing_seen(struct cw_timing *tw, int32_t partition, int64_t offset);
/*
 * Keep t, read from (partition, offset) at monotonic time now (wall clock
 * now_real), in its slot's window; the window takes t->msgs (NULL after,
 * whatever the outcome).  0 (kept; or late, or its slot too far from
 * now_real, and counted), or -1 after a message (out of memory; more than
 * CW_TIMING_MAX_PENDING + 1 windows).
 */
int cw_timing_add(struct cw_timing *tw, struct cw_timing_record *t,
		  int32_t partition, int64_t offset, uint64_t now,
		  uint64_t now_real);
/* The oldest window if it is complete at now (any pending when all), or
 * NULL.  Once its paths are written, cw_timing_pop() it. */
struct cw_timing_window *cw_timing_ready(struct cw_timing *tw, uint64_t now,
					 bool all);
/* Drop the oldest window: done; later records of its slot are late. */
void cw_timing_pop(struct cw_timing *tw);
/* Partition's commit point: its oldest record in a pending window, else
 * past everything read (-1: nothing read). */
int64_t cw_timing_safe_offset(const struct cw_timing *tw, int32_t partition);
/* Store an offset as a partition's commit point; 0 or -1 (not stored). */
typedef int (*cw_timing_store_fn)(void *arg, int32_t partition, int64_t next);
/* Store every partition's commit point that moved forward; how many. */
size_t cw_timing_commit(struct cw_timing *tw, cw_timing_store_fn store,
			void *arg);

/*
 * The service (correlator/service.c).  Connection records go to the
 * pairing; timing records (when paths is set) to their windows, and each
 * complete window's causal paths to DIR/paths.json and a line of
 * DIR/paths.jsonl.  Every snapshot period the caller's snapshot hook runs
 * (it builds and writes the graph), then the offsets are committed.
 */
struct cw_correlator_opts {
	const char *out; /* DIR, or NULL: write nothing */
	bool paths;	 /* read the timing topic */
	uint64_t grace_ns;
	struct cw_paths_opts po;
};

struct cw_correlator;
/* Write what c holds (final: the last time); 0, or -1 after a message. */
typedef int (*cw_correlator_snapshot_fn)(struct cw_correlator *c, bool final,
					 void *arg);

struct cw_correlator {
	struct cw_correlator_opts o;
	struct cw_kafka_consumer *consumer; /* the caller's */
	const char *timing_topic;
	struct cw_pairing pairing;
	struct cw_wire_errors errors;
	struct cw_timing timing;
	FILE *jsonl;	   /* DIR/paths.jsonl, appended */
	uint64_t *written; /* slots with a line in it, ascending */
	size_t nwritten, cap_written;
	uint64_t applied_since_commit;
	uint64_t windows, windows_failed, no_conn;
	cw_correlator_snapshot_fn snapshot;
	void *snapshot_arg;
};

/*
 * Ready c.  With paths and DIR, open DIR/paths.jsonl for appending: the
 * slots it has a line for are never appended again (a member restarted
 * before its commit infers them again), and a torn last line (a crash in
 * the middle of writing it) is cut off.  0, or -1 after a message.
 */
int cw_correlator_open(struct cw_correlator *c,
		       const struct cw_correlator_opts *o,
		       struct cw_kafka_consumer *consumer,
		       const char *timing_topic);
/* 0, or -1 after a message (paths.jsonl could not be written). */
int cw_correlator_close(struct cw_correlator *c);
/* Has paths.jsonl a line for slot? */
bool cw_correlator_written(const struct cw_correlator *c, uint64_t slot);
/* Apply one message (released): a bad record is counted and skipped. */
void cw_correlator_apply(struct cw_correlator *c, struct cw_kafka_msg *m);
/* Infer and write every complete window (all: every pending one).  0, or
 * -1 after a message (a window not written stays pending). */
int cw_correlator_windows_step(struct cw_correlator *c, uint64_t now, bool all);
/* The snapshot hook, then the timing commit points, then the commit. */
int cw_correlator_snapshot(struct cw_correlator *c, bool final);
/*
 * Consume until a signal (cw_stop), duration, or idle with no record (0:
 * no limit), with a snapshot every `every` ns and at the end.  0, or -1
 * after a message.
 */
int cw_correlator_run(struct cw_correlator *c, uint64_t duration, uint64_t idle,
		      uint64_t every);

#endif
