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

#include "common/sample_run.h"

#define CW_SAMPLER_DEF_INTERVAL_NS 1000000ULL
#define CW_SAMPLER_DEF_SAMPLES	   2000

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

#endif
