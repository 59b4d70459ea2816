// SPDX-License-Identifier: MIT
/*
 * Run files: one compact, versioned, checksummed file per run, written
 * atomically into the store and pruned by age and total size.
 *
 * Layout (little-endian):
 *   0  magic "CWSAMPLE"        8  u16 version      10 u16 header length
 *   12 u32 flags               16 u64 start (CLOCK_REALTIME ns)
 *   24 u64 interval ns         32 u64 link speed (bit/s, 0 unknown)
 *   40 u32 samples planned     44 u32 bins recorded
 *   48 u32 CPUs                52 u32 body length
 *   56 u64 packets past end    64 u64 sequence map full
 *   header length: u8 host length, host, u16 dev length, dev
 *   body: per bin, a varint mask (bit f: field f is non-zero; bit 16 + k:
 *         flow sketch k saturated) and a varint per non-zero field
 *   trailer: u32 CRC-32 (zlib) of everything before it
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/sample_run.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"

#define HDR_FIXED 72
#define SAT_SHIFT 16

const char *const cw_sample_field_names[CW_SF_MAX] = {
	"bytes_in",    "bytes_in_x",	"bytes_out",  "bytes_out_x",
	"ecn_in",      "ecn_in_x",	"retrans_in", "retrans_in_x",
	"retrans_out", "retrans_out_x", "flows_in",   "flows_in_x",
	"flows_out",   "flows_out_x",
};

struct cw_sample_run *cw_sample_run_new(uint32_t nbins)
{
	struct cw_sample_run *run = calloc(1, sizeof(*run));

	if (!run)
		return NULL;
	run->nbins = nbins;
	run->bins = calloc(nbins ?: 1, sizeof(*run->bins));
	if (!run->bins) {
		free(run);
		return NULL;
	}
	return run;
}

void cw_sample_run_free(struct cw_sample_run *run)
{
	if (!run)
		return;
	free(run->bins);
	free(run);
}

static uint64_t total(const struct cw_sample_run *run, enum cw_sample_field f,
		      bool *sat)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < run->nbins; i++)
		sum = cw_u64_add_sat(sum, run->bins[i].v[f], sat);
	return sum;
}

uint64_t cw_sample_run_total(const struct cw_sample_run *run,
			     enum cw_sample_field f)
{
	bool sat = false;

	return total(run, f, &sat);
}

bool cw_sample_run_total_saturated(const struct cw_sample_run *run,
				   enum cw_sample_field f)
{
	bool sat = false;

	total(run, f, &sat);
	return sat;
}

void cw_sample_run_json_fields(struct cw_jsonw *w,
			       const struct cw_sample_run *run)
{
	bool any = false;
	uint32_t i;
	int f;

	cw_jsonw_str(w, "dev", run->dev);
	cw_jsonw_u64(w, "start_ns", run->start_real_ns);
	cw_jsonw_u64(w, "interval_ns", run->interval_ns);
	cw_jsonw_u64(w, "samples", run->samples);
	cw_jsonw_u64(w, "nbins", run->nbins);
	cw_jsonw_u64(w, "link_speed_bps", run->link_speed_bps);
	cw_jsonw_u64(w, "ncpus", run->ncpus);
	cw_jsonw_bool(w, "interrupted", !!(run->flags & CW_RUN_INTERRUPTED));
	cw_jsonw_bool(w, "regions", !!(run->flags & CW_RUN_REGIONS));
	cw_jsonw_u64(w, "past_end", run->past_end);
	cw_jsonw_u64(w, "seq_map_full", run->seq_map_full);
	cw_jsonw_obj_open(w, "totals");
	for (f = 0; f < CW_SF_FLOWS_FIRST; f++) {
		cw_jsonw_u64(w, cw_sample_field_names[f],
			     cw_sample_run_total(run, f));
		any |= cw_sample_run_total_saturated(run, f);
	}
	cw_jsonw_obj_close(w);
	if (any) {
		cw_jsonw_arr_open(w, "totals_saturated");
		for (f = 0; f < CW_SF_FLOWS_FIRST; f++)
			if (cw_sample_run_total_saturated(run, f))
				cw_jsonw_str(w, NULL, cw_sample_field_names[f]);
		cw_jsonw_arr_close(w);
	}
	cw_jsonw_arr_open(w, "bins");
	for (i = 0; i < run->nbins; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_u64(w, "bin", i);
		for (f = 0; f < CW_SF_MAX; f++)
			cw_jsonw_u64(w, cw_sample_field_names[f],
				     run->bins[i].v[f]);
		cw_jsonw_u64(w, "flows_saturated", run->bins[i].saturated);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

/* ---- encoding ---------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n < w->len || CW_GROW(w->p, w->cap, w->len + n, 4096)) {
		w->oom = true;
		return;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put_le(struct wbuf *w, uint64_t v, int bytes)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < bytes; i++)
		b[i] = v >> (8 * i);
	put(w, b, bytes);
}

static void put_varint(struct wbuf *w, uint64_t v)
{
	uint8_t b[10];
	int n = 0;

	do {
		b[n] = v & 0x7f;
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(w, b, n);
}

static void set_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = v >> (8 * i);
}

int cw_sample_run_encode(const struct cw_sample_run *run, uint8_t **buf,
			 size_t *len)
{
	struct wbuf w = {0};
	size_t host_len = strnlen(run->host, sizeof(run->host) - 1);
	size_t dev_len = strnlen(run->dev, sizeof(run->dev) - 1);
	size_t body_at;
	uint32_t i;
	int f;

	put(&w, CW_SAMPLE_FILE_MAGIC, 8);
	put_le(&w, CW_SAMPLE_FILE_VERSION, 2);
	put_le(&w, HDR_FIXED, 2);
	put_le(&w, run->flags, 4);
	put_le(&w, run->start_real_ns, 8);
	put_le(&w, run->interval_ns, 8);
	put_le(&w, run->link_speed_bps, 8);
	put_le(&w, run->samples, 4);
	put_le(&w, run->nbins, 4);
	put_le(&w, run->ncpus, 4);
	put_le(&w, 0, 4); /* body length, set below */
	put_le(&w, run->past_end, 8);
	put_le(&w, run->seq_map_full, 8);
	put_le(&w, host_len, 1);
	put(&w, run->host, host_len);
	put_le(&w, dev_len, 2);
	put(&w, run->dev, dev_len);
	body_at = w.len;
	for (i = 0; i < run->nbins; i++) {
		const struct cw_sample_bin *b = &run->bins[i];
		uint64_t mask = (uint64_t)(b->saturated & 0xf) << SAT_SHIFT;

		for (f = 0; f < CW_SF_MAX; f++)
			if (b->v[f])
				mask |= 1u << f;
		put_varint(&w, mask);
		for (f = 0; f < CW_SF_MAX; f++)
			if (b->v[f])
				put_varint(&w, b->v[f]);
	}
	if (!w.oom)
		set_le(w.p + 52, w.len - body_at, 4);
	put_le(&w, w.oom ? 0 : crc32(0, w.p, w.len), 4);
	if (w.oom) {
		free(w.p);
		return cw_error("out of memory");
	}
	*buf = w.p;
	*len = w.len;
	return 0;
}

/* ---- decoding: nothing in the buffer is trusted ------------------------ */

struct rbuf {
	const uint8_t *p;
	size_t len, off;
};

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int get_varint(struct rbuf *r, uint64_t *out)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (r->off >= r->len)
			return -1;
		b = r->p[r->off++];
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int decode_bins(struct rbuf *r, struct cw_sample_run *run)
{
	uint64_t mask, v;
	uint32_t i;
	int f;

	for (i = 0; i < run->nbins; i++) {
		struct cw_sample_bin *b = &run->bins[i];

		if (get_varint(r, &mask))
			return -1;
		if (mask & ~(((1ull << CW_SF_MAX) - 1) | 0xfull << SAT_SHIFT))
			return -1;
		b->saturated = mask >> SAT_SHIFT;
		for (f = 0; f < CW_SF_MAX; f++) {
			if (!(mask & (1u << f)))
				continue;
			if (get_varint(r, &v) || !v)
				return -1;
			if (f >= CW_SF_FLOWS_FIRST && v > UINT32_MAX)
				return -1;
			b->v[f] = v;
		}
	}
	return r->off == r->len ? 0 : -1;
}

int cw_sample_run_decode(const uint8_t *buf, size_t len,
			 struct cw_sample_run **out, char *err, size_t errlen)
{
	struct cw_sample_run *run = NULL;
	uint32_t samples, nbins, body_len, crc;
	size_t hdr_len, off, host_len, dev_len;
	struct rbuf r;
	unsigned int version;

	*out = NULL;
	if (len < 8 || memcmp(buf, CW_SAMPLE_FILE_MAGIC, 8))
		return cw_err_buf(err, errlen, "not a causeway run file");
	if (len < HDR_FIXED + 3 + 4)
		return cw_err_buf(err, errlen, "truncated (%zu bytes)", len);
	version = get_le(buf + 8, 2);
	if (version != CW_SAMPLE_FILE_VERSION)
		return cw_err_buf(err, errlen, "unsupported version %u",
				  version);
	crc = get_le(buf + len - 4, 4);
	if (crc != crc32(0, buf, len - 4))
		return cw_err_buf(err, errlen,
				  "checksum mismatch (corrupt or "
				  "truncated)");
	hdr_len = get_le(buf + 10, 2);
	samples = get_le(buf + 40, 4);
	nbins = get_le(buf + 44, 4);
	body_len = get_le(buf + 52, 4);
	if (hdr_len < HDR_FIXED || hdr_len + 3 > len - 4)
		return cw_err_buf(err, errlen, "bad header length %zu",
				  hdr_len);
	if (!samples || samples > CW_SAMPLER_MAX_SAMPLES || nbins > samples)
		return cw_err_buf(err, errlen, "bad bin count %u of %u", nbins,
				  samples);
	off = hdr_len;
	host_len = buf[off++];
	if (host_len >= CW_SAMPLE_HOST_MAX || off + host_len + 2 > len - 4)
		return cw_err_buf(err, errlen, "bad host name length");
	off += host_len;
	dev_len = get_le(buf + off, 2);
	off += 2;
	if (dev_len >= CW_SAMPLE_DEV_MAX || off + dev_len > len - 4)
		return cw_err_buf(err, errlen, "bad interface name length");
	off += dev_len;
	if (body_len != len - 4 - off)
		return cw_err_buf(err, errlen, "bad body length %u", body_len);
	run = cw_sample_run_new(nbins);
	if (!run)
		return cw_err_buf(err, errlen, "out of memory");
	run->flags = get_le(buf + 12, 4);
	run->start_real_ns = get_le(buf + 16, 8);
	run->interval_ns = get_le(buf + 24, 8);
	run->link_speed_bps = get_le(buf + 32, 8);
	run->samples = samples;
	run->ncpus = get_le(buf + 48, 4);
	run->past_end = get_le(buf + 56, 8);
	run->seq_map_full = get_le(buf + 64, 8);
	memcpy(run->host, buf + hdr_len + 1, host_len);
	memcpy(run->dev, buf + hdr_len + 3 + host_len, dev_len);
	if (run->interval_ns < CW_SAMPLER_MIN_INTERVAL_NS ||
	    run->interval_ns > CW_SAMPLER_MAX_INTERVAL_NS) {
		cw_sample_run_free(run);
		return cw_err_buf(err, errlen, "bad interval");
	}
	r = (struct rbuf){.p = buf, .len = len - 4, .off = off};
	if (decode_bins(&r, run)) {
		cw_sample_run_free(run);
		return cw_err_buf(err, errlen, "bad bin data");
	}
	*out = run;
	return 0;
}
