// SPDX-License-Identifier: MIT
/*
 * What `causeway samples` prints: the store's listing, one run's summary,
 * the bursts report, and a run written to a file in one of its formats.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "samples/samples.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"

int cw_sample_run_load(const char *store, const char *name,
		       struct cw_sample_run **run)
{
	char path[4096];

	if (cw_sample_store_resolve(cw_sample_store_dir(store), name, path,
				    sizeof(path)))
		return -1;
	return cw_sample_run_read(path, run);
}

int cw_sample_run_save(const char *path, const struct cw_sample_run *run)
{
	struct cw_outfile of;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	err = cw_sample_run_encode(run, &buf, &len);
	if (!err)
		err = cw_outfile_open(&of, path);
	if (!err && fwrite(buf, 1, len, of.fp) != len) {
		cw_outfile_abort(&of);
		err = cw_error("unable to write '%s'", path);
	} else if (!err) {
		err = cw_outfile_commit(&of);
	}
	free(buf);
	return err;
}

int cw_sample_run_write_as(const char *output, const struct cw_sample_run *run,
			   enum cw_sample_format format)
{
	struct cw_outfile of = {0};
	FILE *fp = stdout;
	int err;

	if (output) {
		if (cw_outfile_open(&of, output))
			return -1;
		fp = of.fp;
	}
	if (format == CW_SAMPLE_SVG)
		err = cw_sample_run_svg(fp, run);
	else if (format == CW_SAMPLE_CSV)
		err = cw_sample_run_csv(fp, run);
	else
		err = cw_sample_run_json(fp, run);
	if (output && err) {
		cw_outfile_abort(&of);
		return cw_error("unable to write '%s'", output);
	}
	return output ? cw_outfile_commit(&of) : err;
}

static const char *fmt_time(uint64_t real_ns, char *buf, size_t len)
{
	time_t secs = real_ns / NSEC_PER_SEC;
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03uZ",
		 (unsigned int)(real_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
	return buf;
}

/* In-region plus cross-region bytes of one direction, held at the top. */
static uint64_t run_bytes(const struct cw_sample_run *run, bool ingress)
{
	bool sat = false;

	if (ingress)
		return cw_u64_add_sat(
			cw_sample_run_total(run, CW_SF_BYTES_IN),
			cw_sample_run_total(run, CW_SF_BYTES_IN_X), &sat);
	return cw_u64_add_sat(cw_sample_run_total(run, CW_SF_BYTES_OUT),
			      cw_sample_run_total(run, CW_SF_BYTES_OUT_X),
			      &sat);
}

static void list_one(FILE *fp, struct cw_jsonw *w,
		     const struct cw_sample_entry *e,
		     const struct cw_sample_run *run)
{
	char tbuf[40], ibuf[32], inb[32], outb[32];

	if (!w) {
		fprintf(fp, "%-32s %-24s %-12s %-8s %6u %10s %10s\n", e->name,
			fmt_time(run->start_real_ns, tbuf, sizeof(tbuf)),
			run->dev,
			cw_fmt_duration(run->interval_ns, ibuf, sizeof(ibuf)),
			run->nbins,
			cw_fmt_bytes(run_bytes(run, true), inb, sizeof(inb)),
			cw_fmt_bytes(run_bytes(run, false), outb,
				     sizeof(outb)));
		return;
	}
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "run", e->name);
	cw_jsonw_u64(w, "start_ns", run->start_real_ns);
	cw_jsonw_str(w, "dev", run->dev);
	cw_jsonw_u64(w, "interval_ns", run->interval_ns);
	cw_jsonw_u64(w, "nbins", run->nbins);
	cw_jsonw_u64(w, "bytes_in", run_bytes(run, true));
	cw_jsonw_u64(w, "bytes_out", run_bytes(run, false));
	cw_jsonw_u64(w, "size", e->size);
	cw_jsonw_obj_close(w);
	cw_jsonw_end_line(w);
}

int cw_sample_store_print(FILE *fp, const char *dir, bool json)
{
	struct cw_sample_entry *v;
	struct cw_sample_run *run;
	char path[4096];
	struct cw_jsonw w;
	size_t n, i;

	if (cw_sample_store_list(dir, &v, &n))
		return -1;
	if (!json)
		fprintf(fp, "%-32s %-24s %-12s %-8s %6s %10s %10s\n", "RUN",
			"START (UTC)", "DEV", "INTERVAL", "BINS", "IN", "OUT");
	cw_jsonw_init(&w, fp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
		if (cw_sample_run_read(path, &run)) {
			if (!json)
				fprintf(fp, "%-32s (unreadable)\n", v[i].name);
			continue;
		}
		list_one(fp, json ? &w : NULL, &v[i], run);
		cw_sample_run_free(run);
	}
	free(v);
	return ferror(fp) ? -1 : 0;
}

int cw_sample_run_summary(FILE *fp, const struct cw_sample_run *run)
{
	uint64_t peak[CW_SF_MAX] = {0};
	char tbuf[40], ibuf[32];
	uint32_t i;
	int f;

	for (i = 0; i < run->nbins; i++)
		for (f = 0; f < CW_SF_MAX; f++)
			if (run->bins[i].v[f] > peak[f])
				peak[f] = run->bins[i].v[f];
	fprintf(fp,
		"host:        %s\n"
		"dev:         %s\n"
		"start:       %s\n"
		"interval:    %s\n"
		"bins:        %u of %u%s\n"
		"link speed:  %" PRIu64 " bit/s%s\n"
		"cpus:        %u\n"
		"regions:     %s\n"
		"past end:    %" PRIu64 " packets\n"
		"seq map full:%" PRIu64 "\n\n",
		run->host, run->dev,
		fmt_time(run->start_real_ns, tbuf, sizeof(tbuf)),
		cw_fmt_duration(run->interval_ns, ibuf, sizeof(ibuf)),
		run->nbins, run->samples,
		run->flags & CW_RUN_INTERRUPTED ? " (interrupted)" : "",
		run->link_speed_bps, run->link_speed_bps ? "" : " (unknown)",
		run->ncpus,
		run->flags & CW_RUN_REGIONS ? "in-region prefixes"
					    : "none (all in-region)",
		run->past_end, run->seq_map_full);
	fprintf(fp, "%-14s %14s %14s\n", "field", "total", "peak bin");
	for (f = 0; f < CW_SF_MAX; f++)
		if (f < CW_SF_FLOWS_FIRST)
			fprintf(fp, "%-14s %14" PRIu64 " %14" PRIu64 "%s\n",
				cw_sample_field_names[f],
				cw_sample_run_total(run, f), peak[f],
				cw_sample_run_total_saturated(run, f)
					? " (saturated)"
					: "");
		else
			fprintf(fp, "%-14s %14s %14" PRIu64 "\n",
				cw_sample_field_names[f], "-", peak[f]);
	return ferror(fp) ? -1 : 0;
}

/* ---- bursts report ----------------------------------------------------- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* min, median and max of v[0..n), in bins, as a JSON object. */
static void stats3(struct cw_jsonw *w, const char *key, uint64_t *v, size_t n)
{
	uint64_t s[3] = {0};

	if (n) {
		qsort(v, n, sizeof(*v), u64_cmp);
		s[0] = v[0];
		s[1] = v[n / 2];
		s[2] = v[n - 1];
	}
	cw_jsonw_obj_open(w, key);
	cw_jsonw_u64(w, "min", s[0]);
	cw_jsonw_u64(w, "median", s[1]);
	cw_jsonw_u64(w, "max", s[2]);
	cw_jsonw_obj_close(w);
}

static void edges_json(struct cw_jsonw *w, const struct cw_sample_run *run,
		       const struct cw_burst *b,
		       const struct cw_sample_bursts_opts *o, size_t *idx)
{
	size_t j, k = cw_burst_attribute(run, b, o->edges, o->n_edges, idx);

	cw_jsonw_arr_open(w, "edges");
	for (j = 0; j < k && j < o->top; j++) {
		const struct cw_burst_edge *e = &o->edges[idx[j]];

		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "comm", e->comm);
		cw_jsonw_i64(w, "pid", e->pid);
		cw_jsonw_str(w, "laddr", e->laddr);
		cw_jsonw_u64(w, "lport", e->lport);
		cw_jsonw_str(w, "raddr", e->raddr);
		cw_jsonw_u64(w, "rport", e->rport);
		cw_jsonw_u64(w, "bytes", e->bytes_out + e->bytes_in);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

static void burst_json(struct cw_jsonw *w, const struct cw_sample_run *run,
		       const struct cw_burst *b,
		       const struct cw_sample_bursts_opts *o, size_t *idx)
{
	double ms = run->interval_ns / 1e6;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "first_bin", b->first);
	cw_jsonw_u64(w, "last_bin", b->last);
	cw_jsonw_double(w, "start_ms", b->first * ms);
	cw_jsonw_double(w, "length_ms", (b->last - b->first + 1) * ms);
	cw_jsonw_u64(w, "bytes", b->bytes);
	if (b->bytes_saturated)
		cw_jsonw_bool(w, "bytes_saturated", true);
	cw_jsonw_double(w, "peak_util", b->peak_util);
	cw_jsonw_u64(w, "max_flows", b->max_flows);
	cw_jsonw_bool(w, "flows_saturated", b->flows_saturated);
	if (o->edges)
		edges_json(w, run, b, o, idx);
	cw_jsonw_obj_close(w);
}

static void bursts_json(struct cw_jsonw *w, const struct cw_sample_run *run,
			bool ingress, const struct cw_burst *b, size_t n,
			const struct cw_sample_bursts_opts *o, size_t *idx)
{
	uint64_t *tmp = calloc(n + 1, sizeof(*tmp));
	size_t i;

	cw_jsonw_obj_open(w, ingress ? "ingress" : "egress");
	cw_jsonw_u64(w, "count", n);
	for (i = 0; tmp && i < n; i++)
		tmp[i] = b[i].last - b[i].first + 1;
	stats3(w, "length_bins", tmp, tmp ? n : 0);
	for (i = 1; tmp && i < n; i++)
		tmp[i - 1] = b[i].first - b[i - 1].last - 1;
	stats3(w, "gap_bins", tmp, tmp && n > 1 ? n - 1 : 0);
	cw_jsonw_arr_open(w, "bursts");
	for (i = 0; i < n; i++)
		burst_json(w, run, &b[i], o, idx);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	free(tmp);
}

static void bursts_text(FILE *fp, const struct cw_sample_run *run, bool ingress,
			const struct cw_burst *b, size_t n,
			const struct cw_sample_bursts_opts *o, size_t *idx)
{
	double ms = run->interval_ns / 1e6;
	size_t i, j, k;

	fprintf(fp, "%s: %zu bursts over %.0f%% of %" PRIu64 " bit/s\n",
		ingress ? "ingress" : "egress", n, o->threshold * 100,
		o->speed_bps);
	if (n)
		fprintf(fp, "  %10s %10s %12s %6s %6s\n", "start_ms",
			"length_ms", "bytes", "peak%", "flows");
	for (i = 0; i < n; i++) {
		fprintf(fp, "  %10.3f %10.3f %12" PRIu64 " %6.0f %5u%s%s\n",
			b[i].first * ms, (b[i].last - b[i].first + 1) * ms,
			b[i].bytes, b[i].peak_util * 100, b[i].max_flows,
			b[i].flows_saturated ? "+" : " ",
			b[i].bytes_saturated ? " (bytes saturated)" : "");
		if (!o->edges)
			continue;
		k = cw_burst_attribute(run, &b[i], o->edges, o->n_edges, idx);
		for (j = 0; j < k && j < o->top; j++) {
			const struct cw_burst_edge *e = &o->edges[idx[j]];

			fprintf(fp,
				"      %s[%" PRId64 "] %s:%u -> %s:%u %" PRIu64
				" bytes\n",
				e->comm, e->pid, e->laddr, e->lport, e->raddr,
				e->rport, e->bytes_out + e->bytes_in);
		}
	}
}

int cw_sample_bursts_report(FILE *fp, const struct cw_sample_run *run,
			    const struct cw_sample_bursts_opts *o)
{
	struct cw_burst *bin = NULL, *bout = NULL;
	size_t nin = 0, nout = 0, *idx;
	struct cw_jsonw w;
	int err = -1;

	idx = calloc(o->n_edges + 1, sizeof(*idx));
	if (!idx) {
		cw_error("out of memory for %zu connections", o->n_edges);
		goto out;
	}
	if (cw_sample_bursts(run, true, o->threshold, o->speed_bps, &bin,
			     &nin) ||
	    cw_sample_bursts(run, false, o->threshold, o->speed_bps, &bout,
			     &nout))
		goto out;
	if (o->json) {
		cw_jsonw_init(&w, fp);
		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_u64(&w, "link_speed_bps", o->speed_bps);
		cw_jsonw_double(&w, "threshold", o->threshold);
		cw_jsonw_u64(&w, "interval_ns", run->interval_ns);
		bursts_json(&w, run, true, bin, nin, o, idx);
		bursts_json(&w, run, false, bout, nout, o, idx);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		bursts_text(fp, run, true, bin, nin, o, idx);
		bursts_text(fp, run, false, bout, nout, o, idx);
	}
	err = ferror(fp) ? -1 : 0;
out:
	free(idx);
	free(bin);
	free(bout);
	return err;
}
