/* SPDX-License-Identifier: MIT */
/*
 * The correlator feeding the graph (graph/graph.h): what it paired, its
 * time buckets, per-window traffic, a group's P.edges read back, the whole
 * way from records to a view, and a member's fleet graph.
 *
 * From records to a view, the way `causeway graph` and `render` do it:
 *
 *	struct cw_pipeline pl;
 *
 *	cw_pipeline_init(&pl, 60 * NSEC_PER_SEC);	// 0: no windows
 *	if (cw_pipeline_read_files(&pl, paths, n, false) ||
 *	    cw_pipeline_add(&pl, recs, nrecs) ||	// or records in hand
 *	    cw_pipeline_finish(&pl, CW_BY_HOST))
 *		goto fail;				// already reported
 *	// pl.graph: the process graph; pl.view: grouped, with igraph;
 *	// pl.pairs, pl.read: what was paired and read
 *	cw_view_edges(&pl.view, -1, 20, &edges, &ne);	// top 20 edges
 *	cw_view_json(&pl.view, &w, edges, ne);
 *	cw_pipeline_release(&pl);
 *
 * Without the pipeline: cw_pairing_graph(&pairing, &g) pairs a pairing fed
 * by hand (cw_pairing_add_many()) and adds its connections to g.
 *
 * A member's fleet graph, from its snapshot hook (`causeway correlate`):
 *
 *	cw_fleet_init(&f, &kafka_conf, group, edges_topic);	// or NULL
 *	...	// at each snapshot, c the member:
 *	if (cw_fleet_read(&f, c))			// the others' buckets
 *		return -1;
 *	if (cw_fleet_moved(&f, c) && cw_fleet_build(&f, c))
 *		return -1;
 *	write(&f.graph);
 *	cw_fleet_release(&f);
 */
#ifndef CW_CORRELATOR_PIPELINE_H
#define CW_CORRELATOR_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/htab.h"
#include "common/kafka.h"
#include "common/record.h"
#include "common/record_read.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "graph/graph.h"

/*
 * p's connections into g (initialised by the caller): a node per owner of
 * a watched end, an external node for the peer of an end with no partner,
 * one edge per (client, server, protocol).  cw_pairing_graph() pairs p
 * first; cw_pairing_graph_paired() takes p paired (cw_pairing_pair()).
 * Edges in the order the pairs come (groups of ends by tuple, in the order
 * of their first end).  0 or -1 (out of memory; no message).
 */
int cw_pairing_graph(struct cw_pairing *p, struct cw_graph *g);
int cw_pairing_graph_paired(const struct cw_pairing *p, struct cw_graph *g);
/*
 * Every edge of p's time buckets (sealed totals and open buckets as they
 * stand, cw_pairing_edges()) into g; 0 or -1 (out of memory).
 */
int cw_pairing_graph_buckets(struct cw_pairing *p, struct cw_graph *g);

/*
 * Traffic per time window (correlator/windows.c).  Records of one end
 * carry cumulative counters; the difference between two records of the
 * same end is spread over the windows between their last_ns (the first
 * record's counters over [first_ns, last_ns]).  Windows start at multiples
 * of the width (CLOCK_REALTIME), so they line up across files and hosts.
 */
struct cw_window_delta {
	uint32_t end;	   /* index in cw_windows.ends */
	uint32_t flags;	   /* CW_WD_* of the record that ended this change */
	uint64_t start_ns; /* the window's start */
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in;
	/* Of the bytes, those whose messages the agent counted (the
	 * record's sampled_ppm applied to its totals, as for the edges). */
	uint64_t sampled_out, sampled_in;
};

#define CW_WD_MSGS_EST 1u /* the end's messages are estimated */
#define CW_WD_SAMPLED  2u /* the end said how it counted (an estimate block) */

/*
 * Bounds on the entries: a change spread over more windows than
 * CW_WINDOWS_SPAN_MAX, or once the windows hold max_deltas entries
 * (CW_WINDOWS_MAX_DELTAS unless changed after init), goes whole into its
 * last window (counted in `lumped`), so a record spanning years of narrow
 * windows costs one entry, not millions.
 */
#define CW_WINDOWS_SPAN_MAX 100000
/* 3 Mi entries (192 MiB): under a power of two, so the lumped ones that
 * come after fit in the array's 4 Mi without doubling it. */
#define CW_WINDOWS_MAX_DELTAS (3u << 20)

struct cw_windows {
	uint64_t width_ns;
	uint64_t lumped;     /* changes put whole in their last window */
	uint64_t max_deltas; /* bound on entries before lumping */
	struct cw_htab ends; /* end key -> newest state of the end */
	struct cw_window_delta *deltas;
	size_t ndeltas, cap;
	uint64_t stale; /* records older than one already seen */
	/* cw_windows_place(): each end's edge, or -1 (its bytes are
	 * unattributed), and whether it is the client end and paired. */
	long *edge;
	uint8_t *client, *paired;
};

void cw_windows_init(struct cw_windows *w, uint64_t width_ns);
void cw_windows_release(struct cw_windows *w);
/* Account one record; 0, or -1 when out of memory. */
int cw_windows_add(struct cw_windows *w, const struct cw_conn_record *r);
/*
 * Find each end's edge in g, built from p (paired) and the same records:
 * the edge to the partner p chose, else to the external node of its peer.
 * Call before p is released; the cells need only w after.  0 or -1 (out
 * of memory; no message).
 */
int cw_windows_place(struct cw_windows *w, const struct cw_graph *g,
		     const struct cw_pairing *p);
/*
 * Every delta on its end's edge, as the cells of *out for cw_view_build()
 * (after cw_windows_place(); with no placement every byte is
 * unattributed): a connection seen from both ends counts each direction
 * as its sender counted it, an end with no partner counts both.  Bytes of
 * ends that match no edge go to out->unattributed; no width, no cells.
 * *out is the caller's (cw_edge_windows_release()).  0 or -1 (out of
 * memory; no message).
 */
int cw_windows_by_edge(const struct cw_windows *w, struct cw_edge_windows *out);
/*
 * cw_windows_by_edge(), then cw_view_build(v, g, by, ...) with the cells:
 * the view of g with w's windows (placed on g).  0, or -1 after a message.
 */
int cw_windows_view(const struct cw_windows *w, struct cw_view *v,
		    const struct cw_graph *g, enum cw_group_by by);

/*
 * Names of the peers outside the fleet (correlator/names.c), from the
 * agents' DnsName records (`causeway agent --dns`): one address -> name
 * map for the whole fleet.  Hosts may disagree (split-horizon DNS, a name
 * moved): per address the record with the newest time_ns stands, on a
 * tie the smaller host id, then the smaller name, so the map is the same
 * whatever order the records come in.  A name stays past its TTL: the
 * graph spans the past, when the address had that name.  Bounded: past
 * cap addresses, one learned long ago (a sample's oldest) goes, counted.
 *
 *	cw_peer_names_init(&n, 0);
 *	cw_peer_names_add(&n, &msg.dns);		// every DnsName record
 *	cw_peer_names_apply(&n, &graph);		// external nodes named
 *	cw_peer_names_release(&n);
 */
#define CW_PEER_NAMES_MAX (1u << 16)

struct cw_peer_names {
	struct cw_htab map; /* address -> name, time, host */
	size_t cap, cursor;
	uint64_t records;   /* DnsName records taken */
	uint64_t disagreed; /* ... naming an address otherwise than before */
	uint64_t evicted;   /* addresses dropped for the bound */
	uint64_t bad;	    /* undecodable keyed records on the meta topic */
	int64_t *pos;	    /* read on from here, per meta partition */
	int nparts;
};

/* Empty, at most cap addresses (0: CW_PEER_NAMES_MAX). */
void cw_peer_names_init(struct cw_peer_names *n, size_t cap);
void cw_peer_names_release(struct cw_peer_names *n);
/* Take one record; 0, or -1 (out of memory; no message). */
int cw_peer_names_add(struct cw_peer_names *n, const struct cw_wire_dns *d);
/* The name of an address, or NULL. */
const char *cw_peer_names_get(const struct cw_peer_names *n,
			      const struct cw_addr *a);
/* Every external node of g named (its name "" when none); how many. */
size_t cw_peer_names_apply(const struct cw_peer_names *n, struct cw_graph *g);
/* Every DnsName record of the brokers' meta topic, from its start; 0, or
 * -1 after a message.  _read_on: of l (the meta topic), from where the
 * last call left each partition; 0, or -1 (cw_kafka_log's message). */
struct cw_kafka_log;
int cw_peer_names_read_on(struct cw_peer_names *n, struct cw_kafka_log *l);
int cw_peer_names_read_kafka(struct cw_peer_names *n,
			     const struct cw_kafka_conf *kc);

/*
 * The whole way from records to a view (correlator/pipeline.c), as
 * `causeway graph` and `causeway render` take it; see the sketch at the
 * top.
 */
struct cw_pipeline {
	struct cw_pairing pairing; /* released by cw_pipeline_finish() */
	struct cw_windows windows;
	struct cw_graph graph;
	struct cw_view view;
	struct cw_resources res;	  /* host and process metadata read */
	struct cw_peer_names names;	  /* DnsName records read */
	struct cw_record_read_stats read; /* cw_pipeline_read_files() */
	struct cw_pairing_stats pairs;	  /* the pairing's, kept */
	double t_read, t_pair, t_view;	  /* seconds per stage */
	bool from_edges; /* cw_pipeline_read_kafka(): the graph is built */
};

/*
 * The fleet graph from a correlator group's <prefix>.edges instead of
 * records (correlator/edges.c: every member's buckets, merged), of the
 * buckets that start in [since_ns, until_ns) (until_ns 0: no end), with
 * the names of all <prefix>.meta's DnsName records; no
 * per-window traffic.  pl->pairs counts connections (paired and not).
 * 0, or -1 after a message.
 */
int cw_pipeline_read_kafka(struct cw_pipeline *pl,
			   const struct cw_kafka_conf *kc, const char *group,
			   uint64_t since_ns, uint64_t until_ns);
/*
 * A --since or --until value into *ns (CLOCK_REALTIME), in the time
 * grammar of cw_parse_time() (common/util.h): now, "1h" or "-1h" back
 * from now_ns, "@1700000000", "2026-11-23 14:00" (UTC) or RFC 3339.
 * 0, or -1 after a message naming opt.
 */
int cw_time_arg(const char *opt, const char *val, uint64_t now_ns,
		uint64_t *ns);
/* --since and --until (either NULL: unbounded, 0) into *since, *until,
 * checked to be in order.  0, or -1 after a message. */
int cw_time_range(const char *since, const char *until, uint64_t *since_ns,
		  uint64_t *until_ns);

/* Empty; per-window traffic of width window_ns (0: none). */
void cw_pipeline_init(struct cw_pipeline *pl, uint64_t window_ns);
void cw_pipeline_release(struct cw_pipeline *pl);
/* Ingest n records (the newest per end wins).  0, or -1 after a message. */
int cw_pipeline_add(struct cw_pipeline *pl, const struct cw_conn_record *r,
		    size_t n);
/* Ingest one host or process metadata record, or a DnsName.  0, or -1
 * after a message. */
int cw_pipeline_add_meta(struct cw_pipeline *pl, const struct cw_wire_msg *m);
/*
 * Ingest every record of the files (JSON lines or wire, '-' for stdin),
 * connection records and host and process metadata, tables sized from
 * their sizes; stats into pl->read.  0, or -1 after a message.
 */
int cw_pipeline_read_files(struct cw_pipeline *pl, char *const *paths, size_t n,
			   bool skip_bad);
/*
 * Pair, build pl->graph, give it the resources read, place the windows on
 * its edges, free the ends (their stats stay in pl->pairs) and project
 * into pl->view grouped by `by`.  Once only.  0, or -1 after a message.
 */
int cw_pipeline_finish(struct cw_pipeline *pl, enum cw_group_by by);

/*
 * A member's fleet graph (correlator/fleet.c), as `causeway correlate`
 * writes it at each snapshot; see the sketch at the top.  With the edges
 * topic: the partitions the member owns from its own state (what it would
 * read back, never lost to the topic's retention) and every other
 * partition's buckets read on from the topic and merged; without it, its
 * own partitions; without buckets, its pairing.  Records of owned
 * partitions are not kept from the topic, and its partitions that only
 * owned partitions write to are not read.
 */
struct cw_fleet_inputs { /* what a graph is made of */
	uint64_t applied;    /* records applied */
	uint64_t states;     /* partitions restored, started, dropped */
	uint64_t merged;     /* P.edges records kept by the merge */
	uint64_t names;	     /* DnsName records read */
	size_t nparts;
};

struct cw_fleet {
	struct cw_graph graph; /* after cw_fleet_build(); the caller's to
				* take (it is re-initialised then) */
	/* With the edges topic: the fleet's merged view of it, read on. */
	const struct cw_kafka_conf *kc;
	const char *edges_topic;
	struct cw_edge_merge merge;
	bool merging;
	int32_t *owned; /* the input partitions owned at the last read */
	size_t nowned;
	/* Kept from one read to the next: the topic read through it, and
	 * its partitions that hold owned partitions' buckets only (skip[k]
	 * for k below nparts; nparts -1: it changed, no skipping). */
	struct cw_kafka_log *log;
	bool *skip;
	int nparts;
	struct cw_fleet_inputs built_from; /* of graph, when built */
	bool built;
	/* With the edges topic: the names of <prefix>.meta, read on. */
	struct cw_peer_names names;
	struct cw_kafka_log *meta_log;
};

/* Empty; edges_topic NULL: the member's own graph only (kc, group unused). */
void cw_fleet_init(struct cw_fleet *f, const struct cw_kafka_conf *kc,
		   const char *group, const char *edges_topic);
void cw_fleet_release(struct cw_fleet *f);
/*
 * Read the other partitions' buckets on from the edges topic (none
 * without it); a partition handed over since the last read makes the
 * merge start again from the topic's beginning.  0, or -1 after a message.
 */
int cw_fleet_read(struct cw_fleet *f, struct cw_correlator *c);
/* Whether the graph was never built or what it is made of moved since. */
bool cw_fleet_moved(const struct cw_fleet *f, const struct cw_correlator *c);
/* Rebuild f->graph, edges sorted by bytes.  0, or -1 after a message. */
int cw_fleet_build(struct cw_fleet *f, struct cw_correlator *c);

/*
 * The measured graph `causeway place` plans from (correlator/measured.c):
 * agent records and the agents' host and process metadata, from record
 * files or a broker's conns and meta topics, through the pipeline by
 * process, as the JSON of `causeway graph --by process --format json`.
 *
 *	struct cw_measured m = {.records = paths, .nrecords = n,
 *				.name = "the graph of 'a.cww'"};
 *	if (cw_measured_graph(&m))
 *		goto fail;		// told; m.json may still need freeing
 *	... m.json, m.len ...
 *	free(m.json);
 */
struct cw_measured {
	/* set by the caller: record files (JSON lines or wire) ... */
	char *const *records;
	size_t nrecords;
	/* ... or the conns and meta topics of the brokers, read from the
	 * beginning until idle_ns (0: 3 s) passes with no record stamped
	 * before the read began */
	const char *brokers, *kafka_properties, *topic_prefix;
	uint64_t idle_ns;
	/* Only the traffic in [since_ns, until_ns) (0: open), in whole windows
	 * of window_ns (0: 1 s); connection ends wholly outside are left out */
	uint64_t since_ns, until_ns, window_ns;
	const char *name; /* the graph, for messages */
	/* filled: the graph JSON (the caller frees it) */
	char *json;
	size_t len;
};

/* Read, pair, build and write m->json.  0, or -1 after a message. */
int cw_measured_graph(struct cw_measured *m);

#endif
