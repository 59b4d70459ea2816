/* SPDX-License-Identifier: MIT */
/*
 * Container placement: which host each unit (container, pod or workload)
 * should run on, from the traffic measured between units and their CPU and
 * memory.  One instance, three methods that solve it, one evaluation that
 * scores every plan the same way.
 *
 *	struct cw_place p;
 *	cw_place_init(&p);
 *	long h = cw_place_add_host(&p, "node-1", 16.0, 64e9);
 *	long u = cw_place_add_unit(&p, "web", h, 1.5, 2e9, true);
 *	cw_place_add_traffic(&p, u, v, bytes);	// summed per pair
 *	p.headroom = 0.1;
 *	struct cw_place_plan plan;
 *	if (cw_place_check(&p) == 0 &&
 *	    cw_place_solve(&p, CW_PLACE_PARTITION, &plan) == 0)
 *		use(plan.host[u], plan.cross_bytes, plan.hosts_used);
 *	cw_place_plan_release(&plan);
 *	cw_place_release(&p);
 *
 * The objective, in order: every host within its CPU and memory capacity
 * less the headroom; no more bytes between units on different hosts
 * (cross-host bytes) than the current placement has, unless consolidate;
 * the fewest hosts in use (unless fixed_hosts); the fewest cross-host
 * bytes; the fewest units moved.  Units that are not movable stay on their
 * host and count against its capacity.  With max_moves >= 0 at most that
 * many movable units leave their host (and the host count is not
 * minimised: the plan is a set of moves).
 *
 * Every method's plan is relabelled (cw_place_relabel) and its moves that
 * save nothing are taken back, so no plan moves a unit it need not.
 */
#ifndef CW_PLACE_H
#define CW_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/htab.h"

struct cw_place_host {
	char *name;
	double cpu;    /* cores */
	double memory; /* bytes */
};

struct cw_place_unit {
	char *name;
	uint32_t host; /* where it runs now */
	double cpu, memory;
	bool movable;
};

struct cw_place_link {
	uint32_t a, b; /* a < b */
	uint64_t bytes;
};

struct cw_place {
	struct cw_place_host *hosts;
	size_t nhosts, cap_hosts;
	struct cw_place_unit *units;
	size_t nunits, cap_units;
	struct cw_place_link *links; /* merged per pair by cw_place_check */
	size_t nlinks, cap_links;
	double headroom;   /* fraction of each capacity kept free, [0, 1) */
	bool fixed_hosts;  /* minimise bytes only, on the hosts there are */
	/* Fewest hosts even when that raises the cross-host bytes above the
	 * current placement's.  Without it the fewest hosts are sought among
	 * plans that do not (if the current placement does not fit, no such
	 * plan may exist: then the fewest bytes). */
	bool consolidate;
	long max_moves;	   /* -1: no limit */
	size_t host_limit; /* > 0: use only this many hosts (see below) */
	uint64_t seed;	   /* the genetic algorithm's */
	double time_limit; /* seconds, for the integer program; 0: 60 */
	/* filled by cw_place_check: adjacency (CSR) over links */
	size_t *adj_off;
	uint32_t *adj_to;
	uint64_t *adj_bytes;
};

enum cw_place_method { CW_PLACE_GA, CW_PLACE_PARTITION, CW_PLACE_ILP };

struct cw_place_move {
	uint32_t unit, from, to;
	int64_t gain; /* cross-host bytes saved by this move, in plan order */
};

struct cw_place_plan {
	uint32_t *host; /* per unit */
	size_t nunits;
	uint64_t cross_bytes;
	size_t hosts_used;
	bool fits;	/* every host within capacity less headroom */
	bool optimal;	/* CW_PLACE_ILP proved it */
	double seconds; /* CPU time the method took */
	size_t moves_saved; /* moves of the method's own plan not needed */
	struct cw_place_move *moves;
	size_t nmoves;
};

void cw_place_init(struct cw_place *p);
void cw_place_release(struct cw_place *p);
/* A host or unit; its index, or -1 (out of memory, message printed). */
long cw_place_add_host(struct cw_place *p, const char *name, double cpu,
		       double memory);
long cw_place_add_unit(struct cw_place *p, const char *name, uint32_t host,
		       double cpu, double memory, bool movable);
/* Bytes between two units (either order, summed); a == b is ignored. */
int cw_place_add_traffic(struct cw_place *p, uint32_t a, uint32_t b,
			 uint64_t bytes);
/* Index of a host or unit by name, or -1; linear (inputs are small). */
long cw_place_host_index(const struct cw_place *p, const char *name);

/*
 * Merge the links, build the adjacency and check that a plan can exist:
 * 0, or -1 with one message naming the unit (or host) and why: no units,
 * a unit larger than every host, pinned units over their host, or more
 * CPU or memory than all hosts (or the host limit) hold together.
 */
int cw_place_check(struct cw_place *p);

/*
 * Solve with one method (after cw_place_check).  0 and *plan filled (the
 * caller releases it), or -1 with a message: out of memory, GLPK failing,
 * or no plan within capacity found.
 */
int cw_place_solve(struct cw_place *p, enum cw_place_method m,
		   struct cw_place_plan *plan);
void cw_place_plan_release(struct cw_place_plan *plan);
/* "ga", "partition", "ilp"; 0 or -1 (no message). */
int cw_place_method_parse(const char *s, enum cw_place_method *out);
const char *cw_place_method_name(enum cw_place_method m);

/* Cross-host bytes of an assignment (host per unit). */
uint64_t cw_place_cross_bytes(const struct cw_place *p, const uint32_t *host);
/* Bytes of unit u's links whose other end is on u's host in `host`. */
uint64_t cw_place_local_bytes(const struct cw_place *p, const uint32_t *host,
			      uint32_t u);
/*
 * Rename the hosts of a plan (host per unit, within capacity) so the most
 * units stay where they run now: the groups of units the plan puts
 * together go, one group per host, to the hosts (those the plan uses and
 * those cw_place_host_order allows) that already hold most of their
 * units, where they fit and units that cannot move stay.  Exact (an
 * assignment problem, the Hungarian method, O(g^2 h) for g groups and h
 * hosts); the host count, the cross-host bytes and the fit are those of
 * the plan; ties keep the plan's names.  0 or -1 (out of memory).
 */
int cw_place_relabel(const struct cw_place *p, uint32_t *host);
/*
 * Whether plan a beats plan b (both scored): without consolidation, one
 * that keeps the cross-host bytes at most the current placement's; then
 * fewer hosts (unless fixed hosts or a moves limit), fewer bytes, fewer
 * moves.
 */
bool cw_place_plan_better(const struct cw_place *p,
			  const struct cw_place_plan *a,
			  const struct cw_place_plan *b);
/* Units a plan moves from where they run now. */
size_t cw_place_moved(const struct cw_place *p, const uint32_t *host);
/* Fill cross_bytes, hosts_used, fits and the moves (gains in order). */
int cw_place_plan_score(const struct cw_place *p, struct cw_place_plan *plan);
/* The hosts a plan may use, best first (see host_limit); its count. */
size_t cw_place_host_order(const struct cw_place *p, uint32_t *order);

/*
 * Reading the inputs of 'causeway place' (place/input.c).
 *
 * A small CSV file with a header line naming its columns (any order,
 * "#" comments, blank lines skipped): hosts need host,cpu,memory; the units
 * file (resources per unit) unit,cpu,memory and optionally host, pod,
 * workload, namespace, kind.  CPU in cores ("1.5") or millicores ("500m");
 * memory in bytes with an optional suffix k, M, G, T (powers of 1000) or
 * Ki, Mi, Gi, Ti (of 1024).
 */
struct cw_place_row {
	char *f[8]; /* by column below, NULL when absent */
};
enum {
	CW_PCOL_NAME, /* host or unit */
	CW_PCOL_CPU,
	CW_PCOL_MEMORY,
	CW_PCOL_HOST, /* units: where it runs */
	CW_PCOL_POD,
	CW_PCOL_WORKLOAD,
	CW_PCOL_NAMESPACE,
	CW_PCOL_KIND,
};
struct cw_place_table {
	struct cw_place_row *rows;
	size_t nrows, cap;
	double *cpu, *memory; /* parsed, per row */
};

/*
 * Parse text (len bytes) as a hosts (units == false) or units table: 0, or
 * -1 with "line N: why" in err and no message (outside data).
 */
int cw_place_table_parse(struct cw_place_table *t, const char *text, size_t len,
			 bool units, char *err, size_t errlen);
void cw_place_table_release(struct cw_place_table *t);
/* "1.5", "500m" in cores; 0 or -1 (no message). */
int cw_place_parse_cpu(const char *s, double *out);
/* "64Gi", "2G", "1048576"; 0 or -1 (no message). */
int cw_place_parse_memory(const char *s, double *out);

/*
 * The whole of 'causeway place' behind its options (place/load.c,
 * place/choose.c, place/output.c): the instance read from the graph JSON
 * and the two tables, the plans of one method or all, and the plan
 * written in one of four formats.
 *
 *	struct cw_place_input in;
 *	struct cw_place_result res = {.method = CW_PLACE_PARTITION};
 *	cw_place_input_init(&in);
 *	in.graph_path = "g.json", in.hosts_path = "h.csv", ...;
 *	if (cw_place_input_load(&in) == 0 && cw_place_choose(&in, &res) == 0)
 *		cw_place_write(&in, &res, CW_PLACE_FMT_TABLE, stdout);
 *	cw_place_result_release(&res);
 *	cw_place_input_release(&in);
 */
enum cw_place_by {
	CW_PLACE_BY_CONTAINER,
	CW_PLACE_BY_POD,
	CW_PLACE_BY_WORKLOAD
};
enum cw_place_format {
	CW_PLACE_FMT_TABLE,
	CW_PLACE_FMT_JSON,
	CW_PLACE_FMT_K8S,
	CW_PLACE_FMT_APPGROUP,
};

struct cw_place_unit_meta {
	char *ns, *kind; /* for the Kubernetes outputs; NULL: none given */
};

struct cw_place_input {
	/* set by the caller (after cw_place_input_init) */
	const char *graph_path, *hosts_path, *units_path; /* "-": stdin */
	/* Instead of graph_path, the measured data themselves, read into
	 * graph_text by measure(in) (0, or -1 after a message): the caller's,
	 * the correlator's pipeline as 'causeway graph' runs it
	 * (cw_measured_graph()), which place/ does not use: record files (JSON
	 * lines or wire) ... */
	int (*measure)(struct cw_place_input *in);
	char *const *records;
	size_t nrecords;
	/* ... or the conns and meta topics of the brokers, read from the
	 * beginning until idle_ns (0: 3 s) passes with no record */
	const char *brokers, *kafka_properties, *topic_prefix;
	uint64_t idle_ns;
	/* Only the traffic in [since_ns, until_ns) (0: open), in whole windows
	 * of window_ns (records: 0 is 1 s; a graph: its own windows) */
	uint64_t since_ns, until_ns, window_ns;
	enum cw_place_by by; /* what moves */
	const char *ns;	     /* namespace for units with none */
	struct cw_place p;   /* its options (headroom, ...) set by the caller */
	/* filled by cw_place_input_load */
	struct cw_place_table hosts, units;
	char graph_name[300];		     /* for messages */
	char units_from[96], hosts_from[96]; /* "units file 'u.csv'", ... */
	char *graph_text; /* the measured route's graph JSON */
	size_t graph_len;
	struct cw_htab unit_rows; /* hash of a container id's first 12 -> row */
	struct cw_htab by_name;	  /* hash of a unit name -> unit + 1 */
	struct cw_place_unit_meta *meta; /* per unit */
	size_t cap_meta;
	uint64_t outside_bytes; /* to or from external and unknown ends */
	uint64_t first_ns, last_ns;
};

struct cw_place_result {
	/* set by the caller */
	bool all;		     /* every method, the best chosen */
	enum cw_place_method method; /* without all: the one to run */
	/* filled by cw_place_choose */
	struct cw_place_plan plans[3]; /* by method */
	bool ok[3];
	long best;		     /* the method of the best plan */
	struct cw_place_plan before; /* where the units run now */
};

/*
 * Whether the file at path holds agent records (a wire stream, or JSON
 * lines whose first line is a record) rather than a graph's JSON; "-" and
 * files that cannot be read count as a graph (the loader then says why).
 */
bool cw_place_is_records(const char *path);
/* Zeroed, namespace "default", cw_place_init'ed. */
void cw_place_input_init(struct cw_place_input *in);
/*
 * Read the hosts and units tables and the graph (graph_path, or the
 * records or brokers through in->measure) into in->p, then
 * cw_place_check it.  With no units file the units and their CPU (the
 * nodes' cpu_cores) and memory (rss_peak_bytes, else rss_bytes) come from
 * the graph's nodes; with no hosts file the hosts and capacities from the
 * graph's "hosts" (the agents' HostMeta: cpus, mem_bytes).  0, or -1 with
 * one message naming the file, the row or node, and why.
 */
int cw_place_input_load(struct cw_place_input *in);
void cw_place_input_release(struct cw_place_input *in);

/*
 * Score the current placement and solve by res->method (or every method
 * with res->all), res->best the best plan's: fewest hosts unless fixed
 * hosts or a move limit, then fewest cross-host bytes.  0, or -1 with a
 * message (out of memory, or no method found a plan).
 */
int cw_place_choose(struct cw_place_input *in, struct cw_place_result *res);
void cw_place_result_release(struct cw_place_result *res);

/* Write the chosen plan (all plans for JSON) to fp; stdio errors stay in fp. */
void cw_place_write(const struct cw_place_input *in,
		    const struct cw_place_result *res, enum cw_place_format f,
		    FILE *fp);

#endif
