/* SPDX-License-Identifier: MIT */
/*
 * The fine-timescale sampler (after Meta's Millisampler): tc programs count
 * bytes, ECN-CE bytes, retransmitted segments and distinct flows per time
 * bin on chosen interfaces for one short run, and the run is kept on local
 * disk as one checksummed binary file.
 *
 *	struct cw_sampler_opts o = { .sz = sizeof(o), .interval_ns = 1000000 };
 *	struct cw_sample_run *run;
 *	char name[CW_SAMPLE_NAME_MAX];
 *
 *	if (!cw_sampler_record(&o, &run)) {
 *		cw_sample_store_write(cw_sample_store_dir(NULL), run, NULL,
 *				      name, sizeof(name));
 *		cw_sample_run_free(run);
 *	}
 *
 * The agent's schedule takes turns over cw_sampler_schedule[], one run a
 * minute.  Every function returns 0 or -1 after printing what went wrong,
 * unless it says otherwise.
 */
#ifndef CW_AGENT_SAMPLER_H
#define CW_AGENT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CW_SAMPLER_MIN_INTERVAL_NS 10000ULL	 /* 10 us */
#define CW_SAMPLER_MAX_INTERVAL_NS 1000000000ULL /* 1 s */
#define CW_SAMPLER_MIN_SAMPLES	   1
#define CW_SAMPLER_MAX_SAMPLES	   20000
#define CW_SAMPLER_DEF_INTERVAL_NS 1000000ULL
#define CW_SAMPLER_DEF_SAMPLES	   2000
#define CW_SAMPLER_MAX_DEVS	   32
#define CW_SAMPLER_MAX_PREFIXES	   1024

/* The default schedule: one run a minute, taking these intervals in turn. */
extern const uint64_t cw_sampler_schedule[3];
#define CW_SAMPLER_SCHEDULE_PERIOD_NS (60ULL * 1000000000ULL)

struct cw_sampler_opts {
	size_t sz; /* sizeof(struct cw_sampler_opts) */
	/* Interface names; NULL or none: every non-loopback interface up. */
	const char *const *devs;
	size_t n_devs;
	uint64_t interval_ns; /* 0: 1 ms */
	uint32_t samples;     /* bins; 0: 2000 */
	/* In-region prefixes ("10.0.0.0/8", "fd00::/8"); none: all in-region */
	const char *const *in_region;
	size_t n_in_region;
	uint64_t link_speed_bps; /* 0: sum of /sys/class/net/DEV/speed */
	uint32_t flow_entries;	 /* retransmit tracking map; 0: 16384 */
};

/* Counters of one bin, after the CPUs are merged. */
enum cw_sample_field {
	CW_SF_BYTES_IN, /* in-region, then cross-region, for each */
	CW_SF_BYTES_IN_X,
	CW_SF_BYTES_OUT,
	CW_SF_BYTES_OUT_X,
	CW_SF_ECN_IN,
	CW_SF_ECN_IN_X,
	CW_SF_RETRANS_IN,
	CW_SF_RETRANS_IN_X,
	CW_SF_RETRANS_OUT,
	CW_SF_RETRANS_OUT_X,
	CW_SF_FLOWS_IN, /* distinct flows: an estimate beyond 12 */
	CW_SF_FLOWS_IN_X,
	CW_SF_FLOWS_OUT,
	CW_SF_FLOWS_OUT_X,
	CW_SF_MAX,
};
#define CW_SF_FLOWS_FIRST CW_SF_FLOWS_IN

/* "bytes_in", "bytes_in_x", ...: names used in CSV, JSON and plots. */
extern const char *const cw_sample_field_names[CW_SF_MAX];

struct cw_sample_bin {
	uint64_t v[CW_SF_MAX];
	/* Bit (f - CW_SF_FLOWS_FIRST) set: flow sketch f saturated (all bits
	 * set); v[f] is then a lower bound. */
	uint8_t saturated;
};

enum cw_sample_run_flag {
	CW_RUN_INTERRUPTED = 1 << 0, /* stopped early: nbins < samples */
	CW_RUN_REGIONS = 1 << 1,     /* in-region prefixes were configured */
};

#define CW_SAMPLE_HOST_MAX 64
#define CW_SAMPLE_DEV_MAX  256

struct cw_sample_run {
	char host[CW_SAMPLE_HOST_MAX];
	char dev[CW_SAMPLE_DEV_MAX]; /* interfaces, comma-separated */
	uint64_t start_real_ns;	     /* CLOCK_REALTIME of bin 0 */
	uint64_t interval_ns;
	uint64_t link_speed_bps; /* 0: unknown (veth reports none) */
	uint32_t samples;	 /* bins planned */
	uint32_t nbins;		 /* bins recorded, <= samples */
	uint32_t ncpus;
	uint32_t flags;		    /* enum cw_sample_run_flag */
	uint64_t past_end;	    /* packets after the last bin */
	uint64_t seq_map_full;	    /* segments not tracked: map full */
	struct cw_sample_bin *bins; /* nbins of them */
};

struct cw_sample_run *cw_sample_run_new(uint32_t nbins);
void cw_sample_run_free(struct cw_sample_run *run);
/* Sum of field f over all bins. */
uint64_t cw_sample_run_total(const struct cw_sample_run *run,
			     enum cw_sample_field f);

/*
 * Linear counting over a 128-bit sketch: n = -m ln(zeros / m).  Sets
 * *saturated and returns the estimate for one zero bit when all are set.
 */
uint32_t cw_sketch_estimate(const uint64_t bits[2], bool *saturated);

/* ---- kernel side (agent/sampler.c) ------------------------------------ */

/*
 * One whole run: load, attach to every interface, count for
 * samples * interval (less if cw_stop is set), detach, merge the CPUs.
 * The hooks are gone when this returns, also on error.
 */
int cw_sampler_record(const struct cw_sampler_opts *opts,
		      struct cw_sample_run **out);

/* The same in steps, for tests that drive the programs themselves. */
struct cw_sampler;
/* Check the options, resolve interfaces, open, configure and load. */
int cw_sampler_open(const struct cw_sampler_opts *opts,
		    struct cw_sampler **out);
/* Attach ingress and egress on every interface (clsact). */
int cw_sampler_attach(struct cw_sampler *s);
/* Bin 0 begins now; returns the CLOCK_MONOTONIC start. */
uint64_t cw_sampler_start(struct cw_sampler *s);
/* Remove what attach added; safe to call twice. */
void cw_sampler_detach(struct cw_sampler *s);
/* Read and merge the bins of the first `nbins` intervals (0: all). */
int cw_sampler_collect(struct cw_sampler *s, uint32_t nbins,
		       struct cw_sample_run **out);
/* The program's fd (ingress or egress), for bpf_prog_test_run_opts. */
int cw_sampler_prog_fd(const struct cw_sampler *s, bool ingress);
/* Zero every bin and the flow table and stop counting: reuse a loaded
 * sampler for the next run without loading it again. */
int cw_sampler_reset(struct cw_sampler *s);
/* Detach and unload. */
void cw_sampler_free(struct cw_sampler *s);

/* ---- run files and the store (agent/sampler_store.c) ------------------ */

#define CW_SAMPLE_FILE_MAGIC   "CWSAMPLE"
#define CW_SAMPLE_FILE_VERSION 1
#define CW_SAMPLE_FILE_EXT     ".cws"
#define CW_SAMPLE_NAME_MAX     128
#define CW_SAMPLE_DEFAULT_DIR  "/var/lib/causeway/samples"
#define CW_SAMPLE_DEFAULT_KEEP (3ULL * 86400 * 1000000000ULL)
#define CW_SAMPLE_DEFAULT_CAP  (256ULL << 20)

/* Encode to a malloc'd buffer: what the store writes, and Kafka carries. */
int cw_sample_run_encode(const struct cw_sample_run *run, uint8_t **buf,
			 size_t *len);
/*
 * Decode a buffer; never trusts it.  On failure returns -1 with the reason
 * in err (no message printed), so consumers can count and skip.
 */
int cw_sample_run_decode(const uint8_t *buf, size_t len,
			 struct cw_sample_run **out, char *err, size_t errlen);

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

/* ---- export and plots (agent/sampler_export.c) ------------------------ */

int cw_sample_run_csv(FILE *fp, const struct cw_sample_run *run);
int cw_sample_run_json(FILE *fp, const struct cw_sample_run *run);
/* Hand-drawn SVG: throughput, ECN-CE, retransmits and flows over time. */
int cw_sample_run_svg(FILE *fp, const struct cw_sample_run *run);

/* ---- bursts and their connections (agent/sampler_bursts.c) ------------ */

struct cw_burst {
	uint32_t first, last; /* bins, inclusive */
	uint64_t bytes;
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

#endif
