/* SPDX-License-Identifier: MIT */
/*
 * The correlator: keeps the newest record of every connection end and pairs
 * the two ends of each connection on the canonical 4-tuple + protocol +
 * time overlap.  What it found feeds the graph (correlator/pipeline.h
 * turns it into graph/graph.h's nodes and edges) and live paths: each
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
 * Which end a record is about: host, boot, socket cookie and, for UDP, the
 * remote address and the flow's first_ns (a flow re-created later is
 * another end).  No padding: hashed as it is.
 */
struct cw_end_id {
	char host[CW_HOST_LEN];
	char boot_id[CW_BOOT_ID_LEN]; /* "" from agents that predate it */
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
	/* Share of the bytes whose messages were counted, not estimated
	 * (cw_conn_record.sampled_ppm; 0: the record had no estimate). */
	uint32_t sampled_ppm;
	/* Time buckets: CW_END_* (common/wire.h), and how many open buckets
	 * hold a delta of this end (it is not freed while any does). */
	uint32_t acct;
	uint32_t npend;
	/* Edge health, the newest record's (docs/edge-health.md); its
	 * histograms, when it ever had any, in the pairing's hists. */
	uint32_t connect_us, resets_in, resets_out;
	uint8_t fail; /* here, not after the u64: 8 bytes less per end */
	bool has_hists;
	uint64_t xchg_pipelined;
};

/* An end's histograms (cw_conn_record's rtt, xchg, xchg_first). */
struct cw_end_hists {
	struct cw_rec_hist rtt, xchg, xchg_first;
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
 * Time buckets (correlator/bucket.c), on when s.width_ns is set.  Each
 * record's delta since the end's record before goes to the bucket of its
 * last_ns.  Once the newest last_ns applied (the watermark) is a bucket's
 * end plus lateness_ns past (and records numbering an eighth of the live
 * ends came since the last seal), the bucket is sealed (cw_pairing_seal()):
 * its ends are paired and their deltas folded into edge totals, keyed by
 * the edge's nodes; then every end whose bucket is sealed and that is
 * closed, or that has been silent for ttl_ns, is freed (a silent one that
 * is not closed keeps its totals as dormant, so that a later record adds
 * only what is new).  Memory is then the live ends, the open buckets'
 * deltas and the edges.  Everything depends on the records alone, not on
 * the clock, so a state restored and fed the same records ends the same.
 */
#define CW_BUCKET_WIDTH_NS    (60 * 1000000000ULL)
#define CW_BUCKET_TTL_NS      (15 * 60 * 1000000000ULL)
#define CW_BUCKET_LATENESS_NS (30 * 1000000000ULL)
#define CW_VIEW_NS	      (3600 * 1000000000ULL) /* correlate --view */

struct cw_buckets {
	struct cw_bucket_state s; /* settings and counters */
	struct cw_htab nodes;	  /* node key -> struct cw_edge_node */
	struct cw_htab total;	  /* edge key -> cw_edge_total, sealed ones */
	struct cw_htab sealed;	  /* the same by bucket, not yet taken */
	struct cw_htab pend;	  /* (bucket, end) -> what the end did */
	struct cw_htab dormant;	  /* end -> its totals, silent past ttl */
	/* (bucket, end) -> struct cw_end_hists: what the end's histograms
	 * gained in that bucket, for the pend entries that have any. */
	struct cw_htab pend_hists;
	bool due;		  /* a bucket can be sealed */
	bool loading;		  /* restoring: records are state, no deltas */
	/* The view (cw_pairing_view()): 0 keeps one all-time total per edge;
	 * else totals per bucket, those before the view forgotten. */
	uint64_t view_ns;
	/*
	 * The node of each owner (the pairing's owner ids), -1 until looked
	 * up: an end's owner is resolved once, not at every seal.  Renumbering
	 * the owners or the nodes drops it (cw_buckets_drop_owners()).
	 */
	long *owner_node;
	size_t owner_nodes, cap_owner_node;
};

/*
 * The ends are kept compactly: hosts (a name in one boot) and node keys
 * are interned, an
 * end keeps its newest record's numbers and its process packed in a log.
 * cw_pairing_end() puts a whole record back together.
 */
struct cw_pairing {
	struct cw_htab ends;   /* end key -> the end's newest numbers */
	struct cw_htab hosts;  /* host name -> id */
	struct cw_htab owners; /* what makes an end's node -> id */
	unsigned char *procs;  /* each end's process, packed */
	size_t procs_used, procs_size;
	size_t procs_live; /* the live ends' proc_room summed */
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
	/* Each end's connection tuple, interned as its records come: an id
	 * in tuples (tuple key -> nothing) by end; pairing hashes no end. */
	struct cw_htab tuples;
	uint32_t *end_tuple;
	size_t cap_end_tuple;
	/* cw_pairing_end()'s records, by end, until the next add */
	struct cw_conn_record **made;
	size_t nmade;
	struct cw_conn_record spare; /* when out of memory for those */
	struct cw_buckets bk;	     /* time buckets, when on */
	/* end key -> struct cw_end_hists: the newest histograms of the ends
	 * (live or dormant) that have any; most ends have none. */
	struct cw_htab hists;
};

void cw_pairing_init(struct cw_pairing *p);
void cw_pairing_release(struct cw_pairing *p);
/* Room for about n ends, so the tables grow no more; 0 or -1 (ENOMEM). */
int cw_pairing_reserve(struct cw_pairing *p, size_t n);
/* Apply one record: the newest per end wins (cumulative counters). */
int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r);
/*
 * Add every end of src (its newest record) to dst, in src's order: a
 * partition's state into a merged view, or a checkpoint back.  The
 * counters of dst count them as records.  0 or -1 (ENOMEM).
 */
int cw_pairing_add_all(struct cw_pairing *dst, const struct cw_pairing *src);
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
/* The TCP end (host, boot_id, cookie), or -1; valid until the next add. */
long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     const char *boot_id, uint64_t cookie);
/* The end *id, or -1; valid until the next add. */
long cw_pairing_find_id(const struct cw_pairing *p, const struct cw_end_id *id);
/* End i's numbers (i < st.ends); valid until the next add. */
const struct cw_end *cw_pairing_numbers(const struct cw_pairing *p, size_t i);
/* End i's histograms, NULL when it has none. */
const struct cw_end_hists *cw_pairing_hists(const struct cw_pairing *p,
					    size_t i);
/* What end e (its histograms h, may be NULL) gives its edge in total. */
void cw_end_health_of(const struct cw_end *e, const struct cw_end_hists *h,
		      struct cw_end_health *out);
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
 * Time buckets (correlator/bucket.c).  cw_pairing_buckets() turns them on
 * (before any record; width 0: off); after each record, if p->bk.due,
 * cw_pairing_seal() seals what can be.  0 or -1 (out of memory).
 */
void cw_buckets_init(struct cw_buckets *b);
void cw_buckets_release(struct cw_buckets *b);
/* The id of node n in b->nodes, interned; -1 when out of memory. */
long cw_buckets_node(struct cw_buckets *b, const struct cw_edge_node *n);
/*
 * Forget the nodes nothing names, once they are over half of b's (and
 * 1,024 or more).  id[] has an entry per node: 0 for those still named,
 * anything else for the rest.  The named ones are kept in their order,
 * id[] then maps each old id to its new one, and remap(arg, id) moves
 * every holder of ids over before the old nodes go; if remap fails,
 * nothing changes.  0, or -1 (out of memory, or remap's failure).
 */
typedef int (*cw_node_remap_fn)(void *arg, const uint32_t *id);
int cw_buckets_keep_nodes(struct cw_buckets *b, uint32_t *id,
			  cw_node_remap_fn remap, void *arg);
/* Forget which node each owner is (the owners were numbered again). */
void cw_buckets_drop_owners(struct cw_buckets *b);
void cw_pairing_buckets(struct cw_pairing *p, uint64_t width_ns,
			uint64_t ttl_ns, uint64_t lateness_ns);
int cw_pairing_seal(struct cw_pairing *p);
/*
 * The skew bound: a record whose times are beyond it would move its
 * pairing's watermark (and so the sealing point, which never comes back)
 * far from the fleet's time: one end from 2099 makes every later record
 * late and frees nothing.  The service sets such records aside and counts
 * them (CW_WIRE_EFUTURE, CW_WIRE_EPAST) before they reach a pairing, so
 * no sealing point or checkpoint ever holds them:
 *   future: first_ns or last_ns more than CW_SKEW_AHEAD_NS past now_real,
 *     the correlator's wall clock (the agents' clocks are synchronized to
 *     seconds; a slot ahead of the clock is refused the same way by
 *     timing windows, CW_TIMING_MAX_AHEAD_NS);
 *   past: last_ns before CW_SKEW_FLOOR_NS (2000-01-01: a clock never
 *     set), or more than CW_SKEW_BEHIND_NS before p's sealing point (a
 *     record older than the topic's retention is no current traffic).
 * first_ns may be as old as the connection is.  0 within the bound, or
 * CW_WIRE_EFUTURE / CW_WIRE_EPAST with the reason in why.
 */
#define CW_SKEW_AHEAD_NS  (10 * 60 * 1000000000ULL)
#define CW_SKEW_BEHIND_NS (7 * 86400 * 1000000000ULL)
#define CW_SKEW_FLOOR_NS  (946684800ULL * 1000000000ULL)
int cw_pairing_skewed(const struct cw_pairing *p, const struct cw_conn_record *r,
		      uint64_t now_real, char *why, size_t len);
/*
 * Keep the sealed buckets of the last view_ns only (before the first
 * record): the view starts view_ns before the newest sealed bucket's end,
 * and cw_pairing_edges() gives what it holds with the open buckets.
 * Memory is then the live ends, the open buckets and the view's edges,
 * not every edge ever seen.  0: all time (the default).
 */
void cw_pairing_view(struct cw_pairing *p, uint64_t view_ns);
/* The live ends, dormant ends and bytes p holds now (for tests, stats). */
size_t cw_pairing_live_ends(const struct cw_pairing *p);
size_t cw_pairing_bytes(const struct cw_pairing *p);

/*
 * p as checkpoint chunks (correlator/state.c writes and reads them):
 * cw_pairing_chunks() of them; chunk k into st, whose arrays (ends,
 * end_flags, deltas, edges) it allocates when NULL, for the caller to
 * free.  Reading back: each chunk in order with cw_pairing_load_chunk(),
 * then every chunk's deltas (their end indices count the live ends of
 * all chunks) with cw_pairing_load_deltas().  0 or -1 (out of memory).
 */
size_t cw_pairing_chunks(const struct cw_pairing *p);
int cw_pairing_chunk(const struct cw_pairing *p, size_t k,
		     struct cw_wire_state *st);
int cw_pairing_load_chunk(struct cw_pairing *p, const struct cw_wire_state *st);
int cw_pairing_load_deltas(struct cw_pairing *p, const struct cw_end_delta *d,
			   size_t n);

/* An edge as cw_pairing_edges() gives it. */
typedef int (*cw_edge_fn)(const struct cw_edge_node *client,
			  const struct cw_edge_node *server, uint8_t protocol,
			  uint64_t bucket_ns, const struct cw_edge_total *t,
			  void *arg);
/*
 * Every edge of p with buckets: the sealed totals with what the open
 * buckets hold so far (paired as of now) added, bucket_ns 0.  Pairs p
 * first.  Stops at fn's first non-zero return, which it returns; -1 when
 * out of memory.
 */
int cw_pairing_edges(struct cw_pairing *p, cw_edge_fn fn, void *arg);
/*
 * The same per bucket: each sealed bucket not yet taken (sealed), then,
 * with open, each open bucket as it stands; the nodes fn is given stay
 * valid until p changes.  cw_pairing_take_sealed() forgets the sealed
 * ones once they are written.
 */
int cw_pairing_buckets_each(struct cw_pairing *p, bool open, cw_edge_fn fn,
			    void *arg);
void cw_pairing_take_sealed(struct cw_pairing *p);
/* Add one edge total (a checkpoint's) to p's sealed totals; 0 or -1. */
int cw_pairing_add_total(struct cw_pairing *p, const struct cw_wire_edge *w);
/* Add sum to *t: an edge's totals over more time (x's health merged
 * into t's own block, never shared).  */
void cw_edge_total_add(struct cw_edge_total *t, const struct cw_edge_total *x);
/* A table of cw_edge_total released, each value's health block freed;
 * one key deleted, its health freed. */
void cw_edge_totals_release(struct cw_htab *h);
void cw_edge_totals_delete(struct cw_htab *h, const void *key);

/*
 * Reading <prefix>.edges (correlator/edges.c): records of one group with
 * buckets starting in [since_ns, until_ns) (until 0: no end) are merged:
 * per (bucket, input partition), the whole set of the highest offset
 * wins; sets are summed over input partitions.  Duplicates, older sets
 * and sets cut short are left out, whatever order they come in.
 *
 *	struct cw_edge_merge m;
 *	cw_edge_merge_init(&m, "causeway-correlator", since, 0);
 *	cw_edge_merge_read(&m, &kafka_conf, "causeway.edges");	// or _add
 *	cw_edge_merge_each(&m, false, cw_graph_bucket_edge, &graph);
 *	cw_edge_merge_release(&m);
 */
struct cw_edge_merge {
	char group[CW_WIRE_NAME_MAX];
	uint64_t since_ns, until_ns;
	struct cw_buckets nodes; /* only its nodes: interned */
	struct cw_htab recs;	 /* (set, index) -> the record's edge */
	struct cw_htab sets;	 /* (bucket, offset, partition) -> seen */
	struct cw_htab best;	 /* (bucket, partition) -> best offset */
	uint64_t records;	 /* records kept (of the group, in range) */
	uint64_t duplicates, superseded;
	uint64_t foreign, outside, bad; /* other groups, out of range, bad */
	/* Input partitions whose records are neither kept nor given by
	 * cw_edge_merge_each(): the caller owns them and adds their edges
	 * from its own state.  A caller that stops owning one must read
	 * the topic again from the start (a fresh merge). */
	const int32_t *owned;
	size_t nowned;
	uint64_t own; /* records of owned partitions: skipped */
	/* Partitions of the edges topic not read at all (skip[k], k below
	 * nskip; NULL: none): every input partition they hold is owned. */
	const bool *skip;
	int nskip;
	int64_t *pos; /* cw_edge_merge_read(): next offset per partition */
	int npos, cur;
	size_t pruned_at; /* recs.len after the last prune */
	uint64_t newest_ns; /* the newest bucket kept */
};

void cw_edge_merge_init(struct cw_edge_merge *m, const char *group,
			uint64_t since_ns, uint64_t until_ns);
void cw_edge_merge_release(struct cw_edge_merge *m);
/* Move the start of the range on to since_ns (never back): what came
 * before is forgotten, and the nodes only it named.  0 or -1 (out of
 * memory). */
int cw_edge_merge_since(struct cw_edge_merge *m, uint64_t since_ns);
/* One record; 0 or -1 (out of memory). */
int cw_edge_merge_add(struct cw_edge_merge *m, const struct cw_wire_edge *w);
/* Every partition of topic, from where the last call stopped (at first,
 * its oldest record); 0, or -1 after a message. */
int cw_edge_merge_read(struct cw_edge_merge *m, const struct cw_kafka_conf *kc,
		       const char *topic);
/* The same through l, a log of the edges topic kept by the caller (a
 * member that reads on at every snapshot connects once), whose n
 * partitions (cw_kafka_log_partitions()) the caller asked for. */
int cw_edge_merge_read_log(struct cw_edge_merge *m, struct cw_kafka_log *l,
			   int n);
/* The merged edges, summed over buckets (or per bucket), to fn: fn's
 * first non-zero return, or -1 (out of memory). */
int cw_edge_merge_each(struct cw_edge_merge *m, bool per_bucket, cw_edge_fn fn,
		       void *arg);

/*
 * Timing windows (correlator/timing.c): every end's records of one slot.
 * A window is complete a grace period after a newer slot shows up and
 * every partition that is behind has passed its slot (event time: a
 * member catching up reads partitions at different paces), when more than
 * CW_TIMING_MAX_PENDING are pending (the oldest), or at the end.
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
	/* MsgWindow records of the slot (`agent --traces`), for traces. */
	struct cw_wire_msgs *mrecs;
	size_t nm, cap_m;
	struct cw_timing_source *offs;
	size_t noffs, cap_offs;
	uint64_t newer_mono; /* when a newer window was first seen; 0: not */
	uint64_t first_mono; /* when its first record came */
};

/*
 * A partition of the timing topic: what can be committed, and how far in
 * event time it has come.  A partition that is behind (records in the
 * log not read yet, cw_timing_behind()) may still give any slot from the
 * newest it gave on, and inferring a window makes every older slot late:
 * windows from that slot on wait for it.
 */
struct cw_timing_part {
	int32_t partition;
	int64_t max_seen;     /* highest offset read */
	int64_t stored;	      /* commit point stored; -1: none */
	uint64_t newest_slot; /* of the records it gave; 0: none yet */
	bool behind;	      /* unread records in the log */
	bool paused;	      /* the caller's: not fetched (cw_timing_ahead()) */
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
/* The same for a MsgWindow record: the window takes r's socks and msgs. */
int cw_timing_add_msgs(struct cw_timing *tw, struct cw_wire_msgs *r,
		       int32_t partition, int64_t offset, uint64_t now,
		       uint64_t now_real);
/*
 * Whether partition has records in the log not read yet (the consumer's
 * lag).  While one is behind, a window of a slot it has not passed is not
 * complete by the grace alone: read from a backlog, one partition can run
 * many slots ahead of another.  0, or -1 after a message.
 */
int cw_timing_behind(struct cw_timing *tw, int32_t partition, bool behind);
/*
 * Should partition be paused: half the windows that may be pending are,
 * one waits for a partition behind, and this one is past the oldest such
 * (it would only add windows, until the bound forces that one out)?
 */
bool cw_timing_ahead(const struct cw_timing *tw, int32_t partition);
/* The slot of the oldest pending window a partition behind may still
 * add to (the one cw_timing_ahead() pauses past); 0 when none is. */
uint64_t cw_timing_held_slot(const struct cw_timing *tw);
/*
 * Would a record of slot need a window the pending set has no room for
 * (the set full, slot neither pending nor inferred, newer than the oldest,
 * and one the wall clock now_real lets in)?  The bound then makes the
 * oldest complete (cw_timing_ready()): infer and pop it before such a
 * record is added, and only then, so that a record of a pending slot, or
 * one refused all the same, never closes a window.
 */
bool cw_timing_needs_room(const struct cw_timing *tw, uint64_t slot,
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
 * DIR/paths.jsonl; its traces (MsgWindow records) to a line of
 * DIR/traces.jsonl and, with otlp, POSTed there (a POST that fails a few
 * times is counted and given up on).  Every snapshot period the caller's
 * snapshot hook runs (it builds and writes the graph), then the offsets
 * are committed.
 */
struct cw_correlator_opts {
	const char *out; /* DIR, or NULL: write nothing */
	bool paths;	 /* read the timing topic */
	/* OTLP/HTTP URL each window's traces are POSTed to, or NULL. */
	const char *otlp;
	uint64_t grace_ns;
	struct cw_paths_opts po;
	/*
	 * Per-partition state (correlator/state.c): with kafka set, each
	 * partition of conns_topic has its own pairing, checkpointed to
	 * state_topic at every snapshot (and at a handover) with the input
	 * offset it reflects, restored on assignment, dropped on revocation.
	 * NULL: one pairing, the group's committed offsets (as before).
	 */
	const struct cw_kafka_conf *kafka;
	const char *group;	 /* names the checkpoints: one group's */
	const char *conns_topic; /* <prefix>.conns */
	const char *state_topic; /* <prefix>.state */
	const char *edges_topic; /* <prefix>.edges; NULL: none written */
	/* Time buckets of every pairing (cw_pairing_buckets()); 0: off.
	 * view_ns: the span of the sealed buckets kept (cw_pairing_view()). */
	uint64_t bucket_ns, ttl_ns, lateness_ns, view_ns;
};

/* One input partition this member owns: its pairing and where it is. */
struct cw_part_state {
	int32_t partition;
	struct cw_pairing pairing;
	int64_t next;  /* the next input offset to apply */
	int64_t saved; /* offset of the newest checkpoint written or restored;
			  -1: none */
	uint64_t lost; /* records deleted by retention before applied */
	uint64_t saved_mono; /* when saved was written (or restored) */
	bool due;	     /* cw_correlator_checkpoint(): writing it */
	int64_t edges_at;    /* next when its edge buckets were written */
	/* Checkpoint keys (state.c): the slot the next checkpoint goes to,
	 * and how many chunks each slot has in the state topic. */
	uint8_t slot;
	uint32_t slot_chunks[2];
};

/* A partition's checkpoint is written at least this often (if it moved). */
#define CW_CHECKPOINT_MAX_AGE_NS (60 * 1000000000ULL)

/* What the partition states did, for the summary. */
struct cw_state_stats {
	uint64_t checkpoints;	/* checkpoints written */
	uint64_t chunks;	/* their records */
	uint64_t restored;	/* partitions restored from a checkpoint */
	uint64_t fresh;		/* partitions with none: from the start */
	uint64_t dropped;	/* partitions revoked */
	uint64_t lost;		/* records lost to retention, all partitions */
	uint64_t foreign;	/* records of partitions not owned: skipped */
	uint64_t replayed;	/* records already reflected: skipped */
	uint64_t failures;	/* checkpoints that could not be written */
	double restore_secs;	/* time spent restoring */
	uint64_t restored_ends; /* ends restored */
};

/* Window slots, ascending: those an output file has a line for. */
struct cw_slot_set {
	uint64_t *slot;
	size_t n, cap;
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
	/* DIR/paths.jsonl and DIR/traces.jsonl (OTLP per window), appended,
	 * and the slots of their lines. */
	FILE *jsonl, *traces;
	struct cw_slot_set written, traced;
	/* Windows and spans written or posted; POSTs done, given up. */
	uint64_t trace_windows, trace_spans, traces_posted, traces_post_failed;
	uint64_t applied_since_commit;
	uint64_t applied; /* connection records applied by this process */
	uint64_t windows, windows_failed, no_conn;
	/* Timing partitions' lag, last read at lag_mono; pauses made. */
	struct cw_kafka_lag *lags;
	size_t cap_lags;
	uint64_t lag_mono, timing_pauses;
	cw_correlator_snapshot_fn snapshot;
	void *snapshot_arg;
	/* With opts.kafka: the partitions owned, by partition number; the
	 * merged view is then `pairing`, rebuilt before each snapshot. */
	struct cw_part_state *parts;
	size_t nparts, cap_parts;
	struct cw_kafka_log *state_log;
	int state_partitions;
	struct cw_state_stats sst;
	/* <prefix>.edges (opts.kafka and buckets): where buckets go. */
	struct cw_kafka_log *edges_log;
	int edges_partitions;
	uint64_t edge_records;	  /* edges written (EdgeSets hold many) */
	uint64_t edges_open_mono; /* when the open buckets were written */
	uint64_t edges_skipped;	  /* open writes put off: behind the input */
	/* Records applied by the last snapshot, and in the period before:
	 * how far behind the input may be and still count as caught up. */
	uint64_t snap_applied, period_applied;
	/* The wall clock read once for a batch of records being applied
	 * (the skew bound is minutes wide); 0: read it per record. */
	uint64_t batch_real;
	/* The process's CPU (all threads, ns) when the first batch of
	 * records began and when a batch last ended (read at most once a
	 * millisecond: cpu_mono), and what snapshots took after that:
	 * cw_correlator_ingest_cpu(). */
	uint64_t cpu_first, cpu_last, cpu_mono, cpu_after;
};

/*
 * The CPU seconds (all threads) ingest took: from the first batch of
 * records to the last (what was applied, the snapshots between, the
 * fetching beside), and the snapshots after it; the group join, the
 * checkpoints' restore before the first record and the idling after the
 * last are not in it.  0 before any record.  For the bench
 * (bench/bench_correlate.sh), beside the whole process's CPU.
 */
double cw_correlator_ingest_cpu(const struct cw_correlator *c);

/*
 * Ready c.  With paths and DIR, open DIR/paths.jsonl and DIR/traces.jsonl
 * for appending: the slots each has a line for are never appended again
 * (a member restarted before its commit infers them again), nor a window
 * in traces.jsonl posted again, and a torn last line (a crash in the
 * middle of writing it) is cut off.  0, or -1 after a message.
 */
int cw_correlator_open(struct cw_correlator *c,
		       const struct cw_correlator_opts *o,
		       struct cw_kafka_consumer *consumer,
		       const char *timing_topic);
/* 0, or -1 after a message (paths.jsonl could not be written). */
int cw_correlator_close(struct cw_correlator *c);
/* Has paths.jsonl a line for slot? */
bool cw_correlator_written(const struct cw_correlator *c, uint64_t slot);
/*
 * Partition state (correlator/state.c), used by the service when
 * opts.kafka is set.  The consumer's hooks: restore a partition's newest
 * checkpoint (the one of highest offset) and say where to start; write a
 * checkpoint at a handover (not when lost) and drop the state.
 */
int64_t cw_correlator_on_assign(void *c, const char *topic, int32_t partition);
void cw_correlator_on_revoke(void *c, const char *topic, int32_t partition,
			     bool lost);
/* The state of partition, or NULL if this member does not own it. */
struct cw_part_state *cw_correlator_part(struct cw_correlator *c,
					 int32_t partition);
/*
 * Checkpoint the partitions whose checkpoint is due: those that moved by a
 * quarter of their ends since their last, or CW_CHECKPOINT_MAX_AGE_NS ago
 * (all: every one that moved).  0, or -1 after a message (some were not
 * written: offsets must not be committed).
 */
int cw_correlator_checkpoint(struct cw_correlator *c, bool all);
/*
 * Rebuild c->pairing as the union of the partitions' states; 0 or -1.
 * With buckets, only its counters: the graph is cw_correlator_edges()'.
 */
int cw_correlator_merge(struct cw_correlator *c);
/* Turn p's buckets on as c's options say. */
void cw_correlator_buckets_on(struct cw_correlator *c, struct cw_pairing *p);
/* Every edge of every pairing c holds (cw_pairing_edges()); fn's first
 * non-zero return, or -1 when out of memory. */
int cw_correlator_edges(struct cw_correlator *c, cw_edge_fn fn, void *arg);
/*
 * Write the partitions' buckets to <prefix>.edges: those sealed since
 * the last write (then forgotten), and the open ones as they stand when
 * all is set, or when a bucket width has passed since they were last
 * written and the member is not behind its input (lag over one snapshot
 * period's records): a set rewritten at every snapshot would flood the
 * topic, and an open bucket of a backlog changes with every record until
 * the member catches up.  0, or -1 after a message (nothing is
 * forgotten: written again next time).
 */
int cw_correlator_write_edges(struct cw_correlator *c, bool all);
/* Drop every partition's state. */
void cw_correlator_parts_release(struct cw_correlator *c);

/* Apply one message (released): a bad record, or a connection record
 * beyond the skew bound (cw_pairing_skewed()), is counted and skipped. */
void cw_correlator_apply(struct cw_correlator *c, struct cw_kafka_msg *m);
/* Infer and write every complete window (all: every pending one).  0, or
 * -1 after a message (a window not written stays pending). */
int cw_correlator_windows_step(struct cw_correlator *c, uint64_t now, bool all);
/* The snapshot hook, then the timing commit points, then the commit. */
int cw_correlator_snapshot(struct cw_correlator *c, bool final);
/*
 * Consume until a signal (cw_stop), duration, or idle: holding an
 * assignment with no record (0: no limit; joining, rebalancing and
 * snapshots are not idle), with a snapshot every `every` ns of reading and
 * at the end.  0, or -1
 * after a message.
 */
int cw_correlator_run(struct cw_correlator *c, uint64_t duration, uint64_t idle,
		      uint64_t every);

#endif
