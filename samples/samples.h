/* SPDX-License-Identifier: MIT */
/*
 * Fine-timescale samples after the run: the local store of run files
 * (written atomically, pruned by age and size), exports (CSV, JSON, SVG)
 * and bursts with the connections that were active in them.  Recording a
 * run is the agent's (agent/sampler.h); a run's model and codec are the
 * shared layer's (common/sample_run.h).
 *
 *	char name[CW_SAMPLE_NAME_MAX];
 *	struct cw_sample_run *run;
 *
 *	if (!cw_sample_store_write(cw_sample_store_dir(NULL), run, NULL,
 *				   name, sizeof(name)))
 *		cw_sample_run_json(stdout, run);
 *
 * Every function returns 0 or -1 after printing what went wrong, unless it
 * says otherwise.
 */
#ifndef CW_SAMPLES_H
#define CW_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/sample_run.h"

#define CW_SAMPLE_FILE_EXT     ".cws"
#define CW_SAMPLE_NAME_MAX     128
#define CW_SAMPLE_DEFAULT_DIR  "/var/lib/causeway/samples"
#define CW_SAMPLE_DEFAULT_KEEP (3ULL * 86400 * 1000000000ULL)
#define CW_SAMPLE_DEFAULT_CAP  (256ULL << 20)

/* --store, else $CAUSEWAY_SAMPLES_DIR, else CW_SAMPLE_DEFAULT_DIR. */
const char *cw_sample_store_dir(const char *override);

struct cw_sample_store_limits {
	uint64_t keep_ns;   /* 0: CW_SAMPLE_DEFAULT_KEEP */
	uint64_t max_bytes; /* 0: CW_SAMPLE_DEFAULT_CAP */
};

/*
 * Write a run into the store atomically as "<utc>-<interval>.cws", then
 * prune: runs older than keep_ns, then the oldest until under max_bytes
 * (the new run always stays).  The file name goes to name.
 */
int cw_sample_store_write(const char *dir, const struct cw_sample_run *run,
			  const struct cw_sample_store_limits *lim, char *name,
			  size_t namelen);
/* Prune as above; returns the number of runs removed, or -1. */
int cw_sample_store_prune(const char *dir,
			  const struct cw_sample_store_limits *lim,
			  const char *keep_name);

/* A path, a name in the store (extension optional) or "latest". */
int cw_sample_store_resolve(const char *dir, const char *run, char *path,
			    size_t len);
/* Read and check one run file. */
int cw_sample_run_read(const char *path, struct cw_sample_run **out);

struct cw_sample_entry {
	char name[CW_SAMPLE_NAME_MAX];
	uint64_t size;
	uint64_t mtime_ns;
};
/* Run files in the store, oldest first; *out is malloc'd. */
int cw_sample_store_list(const char *dir, struct cw_sample_entry **out,
			 size_t *n);

/* RUN from the store (as cw_sample_store_resolve()) read into *run. */
int cw_sample_run_load(const char *store, const char *name,
		       struct cw_sample_run **run);
/* The run's encoding written atomically to path (a run file). */
int cw_sample_run_save(const char *path, const struct cw_sample_run *run);

/* ---- listing and summary (samples/report.c) ---------------------------- */

/* The store's runs, oldest first: a table, or JSON lines when json. */
int cw_sample_store_print(FILE *fp, const char *dir, bool json);
/* One run: its header, then each field's total and peak bin. */
int cw_sample_run_summary(FILE *fp, const struct cw_sample_run *run);

/* ---- export and plots (samples/export.c) ------------------------------- */

enum cw_sample_format { CW_SAMPLE_CSV, CW_SAMPLE_JSON, CW_SAMPLE_SVG };

/* The run in one format, to output (atomically) or, when NULL, stdout. */
int cw_sample_run_write_as(const char *output, const struct cw_sample_run *run,
			   enum cw_sample_format format);

int cw_sample_run_csv(FILE *fp, const struct cw_sample_run *run);
int cw_sample_run_json(FILE *fp, const struct cw_sample_run *run);
/* Hand-drawn SVG: throughput, ECN-CE, retransmits and flows over time. */
int cw_sample_run_svg(FILE *fp, const struct cw_sample_run *run);

/* ---- bursts and their connections (samples/bursts.c) ------------------ */

struct cw_burst {
	uint32_t first, last; /* bins, inclusive */
	uint64_t bytes;	      /* held at UINT64_MAX: then bytes_saturated */
	bool bytes_saturated;
	double peak_util; /* fraction of link speed, in the busiest bin */
	uint32_t max_flows;
	bool flows_saturated;
};

/*
 * Bursts in one direction (ingress or not): maximal runs of bins whose
 * bytes exceed threshold (0..1) of what speed_bps carries in one bin.
 */
int cw_sample_bursts(const struct cw_sample_run *run, bool ingress,
		     double threshold, uint64_t speed_bps,
		     struct cw_burst **out, size_t *n);

/* One connection record, the fields attribution needs. */
struct cw_burst_edge {
	char comm[16];
	int64_t pid; /* -1: unknown */
	char laddr[46], raddr[46];
	uint16_t lport, rport;
	uint64_t bytes_out, bytes_in;
	uint64_t first_ns, last_ns; /* CLOCK_REALTIME */
};

/* Read JSON lines of connection records (cw_conn_record_json). */
int cw_burst_edges_load(const char *path, struct cw_burst_edge **out,
			size_t *n);
/*
 * Edges active during a burst ([first_ns, last_ns] overlaps it), ranked by
 * bytes: indices into edges go to idx (room for n), count returned.
 */
size_t cw_burst_attribute(const struct cw_sample_run *run,
			  const struct cw_burst *b,
			  const struct cw_burst_edge *edges, size_t n,
			  size_t *idx);

struct cw_sample_bursts_opts {
	double threshold;   /* fraction of the link, as cw_sample_bursts() */
	uint64_t speed_bps; /* must be known */
	const struct cw_burst_edge *edges; /* NULL: no attribution */
	size_t n_edges;
	size_t top; /* edges shown per burst */
	bool json;  /* one JSON object, else a table per direction */
};
/* Both directions' bursts, with their top edges when edges are given. */
int cw_sample_bursts_report(FILE *fp, const struct cw_sample_run *run,
			    const struct cw_sample_bursts_opts *o);

#endif
