/* SPDX-License-Identifier: MIT */
/*
 * A sample run: the fine-timescale counters of one host's interfaces over
 * one run of fixed-width bins (after Meta's Millisampler), and its compact,
 * versioned, checksummed encoding.  That encoding is what the agent's store
 * writes as a run file and what Kafka carries in a SampleRun record, so it
 * lives in the shared layer beside the connection record.
 *
 *	uint8_t *buf; size_t len;
 *	struct cw_sample_run *copy;
 *	char why[128];
 *
 *	if (!cw_sample_run_encode(run, &buf, &len) &&
 *	    !cw_sample_run_decode(buf, len, &copy, why, sizeof(why)))
 *		cw_sample_run_free(copy);
 *
 * Every function returns 0 or -1 after printing what went wrong, unless it
 * says otherwise.
 */
#ifndef CW_COMMON_SAMPLE_RUN_H
#define CW_COMMON_SAMPLE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limits of a run, checked by the recorder and by the decoder. */
#define CW_SAMPLER_MIN_INTERVAL_NS 10000ULL	 /* 10 us */
#define CW_SAMPLER_MAX_INTERVAL_NS 1000000000ULL /* 1 s */
#define CW_SAMPLER_MIN_SAMPLES	   1
#define CW_SAMPLER_MAX_SAMPLES	   20000
#define CW_SAMPLER_MAX_DEVS	   32
#define CW_SAMPLER_MAX_PREFIXES	   1024

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
/*
 * Sum of field f over all bins, held at UINT64_MAX rather than wrapping
 * (cw_sample_run_total_saturated() then says so).
 */
uint64_t cw_sample_run_total(const struct cw_sample_run *run,
			     enum cw_sample_field f);
/* true when cw_sample_run_total(run, f) was held at UINT64_MAX. */
bool cw_sample_run_total_saturated(const struct cw_sample_run *run,
				   enum cw_sample_field f);

/* a + b held at UINT64_MAX; *sat set (never cleared) when it was. */
static inline uint64_t cw_u64_add_sat(uint64_t a, uint64_t b, bool *sat)
{
	if (a > UINT64_MAX - b) {
		*sat = true;
		return UINT64_MAX;
	}
	return a + b;
}

struct cw_jsonw;
/*
 * The one JSON form of a run, written into an object the caller opened
 * (after its own leading keys): dev, start_ns, ... totals, bins.  A total
 * held at UINT64_MAX adds "totals_saturated": [names].
 */
void cw_sample_run_json_fields(struct cw_jsonw *w,
			       const struct cw_sample_run *run);

#define CW_SAMPLE_FILE_MAGIC   "CWSAMPLE"
#define CW_SAMPLE_FILE_VERSION 1
/* A run file or record larger than this is refused unread. */
#define CW_SAMPLE_FILE_MAX (64u << 20)

/* Encode to a malloc'd buffer: what the store writes, and Kafka carries. */
int cw_sample_run_encode(const struct cw_sample_run *run, uint8_t **buf,
			 size_t *len);
/*
 * Decode a buffer; never trusts it.  On failure returns -1 with the reason
 * in err (no message printed), so consumers can count and skip.
 */
int cw_sample_run_decode(const uint8_t *buf, size_t len,
			 struct cw_sample_run **out, char *err, size_t errlen);

#endif
