// SPDX-License-Identifier: MIT
/*
 * Sample runs for the page: the store's runs per host, one run's totals
 * and bursts (with the processes active in each, from the connection
 * records being served), and its plot as `causeway samples plot` draws it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "samples/samples.h"
#include "serve/serve_int.h"

#define RUNS_MAX    200 /* newest runs listed */
#define BURSTS_MAX  50	/* per direction */
#define ATTRIB_MAX  5	/* processes per burst */
#define BURST_SHARE 0.5 /* of the link speed, or of the busiest bin */

static void run_json(struct cw_jsonw *w, const char *name,
		     const struct cw_sample_run *run, uint64_t size)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "name", name);
	cw_jsonw_str(w, "host", run->host);
	cw_jsonw_str(w, "dev", run->dev);
	cw_jsonw_u64(w, "start_ms", run->start_real_ns / NSEC_PER_MSEC);
	cw_jsonw_u64(w, "interval_ns", run->interval_ns);
	cw_jsonw_u64(w, "nbins", run->nbins);
	cw_jsonw_u64(w, "size", size);
	cw_jsonw_obj_close(w);
}

/* The runs Kafka brought, oldest first as the store lists its own. */
static void list_feed(struct serve_feed *f, struct cw_jsonw *w)
{
	size_t i;

	serve_feed_lock(f);
	for (i = 0; i < f->nruns; i++)
		run_json(w, f->runs[i].name, f->runs[i].run,
			 sizeof(struct cw_sample_bin) * f->runs[i].run->nbins);
	serve_feed_unlock(f);
}

static void list_runs(const struct serve_ctx *c, struct serve_reply *r)
{
	struct cw_sample_entry *e = NULL;
	struct cw_sample_run *run;
	char path[4096];
	struct cw_jsonw w;
	size_t n = 0, i;

	if (c->samples_dir && cw_sample_store_list(c->samples_dir, &e, &n))
		return serve_reply_error(r, 500,
					 "unable to list the runs in "
					 "'%s' (see the log)",
					 c->samples_dir);
	if (serve_reply_open(r, 200, "application/json"))
		goto out;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	if (c->samples_dir)
		cw_jsonw_str(&w, "store", c->samples_dir);
	else
		cw_jsonw_null(&w, "store");
	/* Runs from Kafka come first, then the store's. */
	cw_jsonw_bool(&w, "kafka", c->feed->kafka);
	cw_jsonw_arr_open(&w, "runs");
	list_feed(c->feed, &w);
	for (i = n > RUNS_MAX ? n - RUNS_MAX : 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->samples_dir,
			 e[i].name);
		if (cw_sample_run_read(path, &run))
			continue;
		run_json(&w, e[i].name, run, e[i].size);
		cw_sample_run_free(run);
	}
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
out:
	free(e);
}

/* A run named by the page: a name in the store or "latest", never a path. */
static int load_run(const struct serve_ctx *c, const char *name,
		    struct cw_sample_run **run, struct serve_reply *r)
{
	char path[4096];
	struct stat st;

	if (c->feed->kafka && (*run = serve_feed_copy_run(c->feed, name)))
		return 0;
	if (!c->samples_dir && c->feed->kafka) {
		serve_reply_error(r, 404, "'run': no run '%s'", name);
		return -1;
	}
	if (!c->samples_dir) {
		serve_reply_error(r, 404, "no sample store (--samples DIR)");
		return -1;
	}
	if (strchr(name, '/') || name[0] == '.') {
		serve_reply_error(r, 400, "'run': a run's name, not a path");
		return -1;
	}
	if (cw_sample_store_resolve(c->samples_dir, name, path, sizeof(path)) ||
	    stat(path, &st)) {
		serve_reply_error(r, 404, "'run': no run '%s'", name);
		return -1;
	}
	if (cw_sample_run_read(path, run)) {
		serve_reply_error(r, 500, "'run': unable to read '%s'", name);
		return -1;
	}
	return 0;
}

/* The reference for bursts: the link's speed, else the busiest bin's. */
static uint64_t reference_bps(const struct cw_sample_run *run, bool ingress)
{
	enum cw_sample_field a = ingress ? CW_SF_BYTES_IN : CW_SF_BYTES_OUT;
	uint64_t max = 0, b;
	uint32_t i;

	if (run->link_speed_bps)
		return run->link_speed_bps;
	for (i = 0; i < run->nbins; i++) {
		b = run->bins[i].v[a] + run->bins[i].v[a + 1];
		max = b > max ? b : max;
	}
	return (uint64_t)((double)max * 8e9 / (double)run->interval_ns);
}

static void json_burst(struct cw_jsonw *w, const struct cw_sample_run *run,
		       const struct cw_burst *b,
		       const struct cw_burst_edge *edges, size_t nedges,
		       size_t *idx)
{
	size_t k, n;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(
		w, "start_us",
		(run->start_real_ns + (uint64_t)b->first * run->interval_ns) /
			NSEC_PER_USEC);
	cw_jsonw_double(w, "duration_s",
			(double)(b->last - b->first + 1) * run->interval_ns /
				1e9);
	cw_jsonw_u64(w, "bytes", b->bytes);
	cw_jsonw_double(w, "peak_util", b->peak_util);
	cw_jsonw_u64(w, "max_flows", b->max_flows);
	cw_jsonw_arr_open(w, "processes");
	n = nedges ? cw_burst_attribute(run, b, edges, nedges, idx) : 0;
	for (k = 0; k < n && k < ATTRIB_MAX; k++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "comm", edges[idx[k]].comm);
		cw_jsonw_i64(w, "pid", edges[idx[k]].pid);
		cw_jsonw_u64(w, "bytes",
			     edges[idx[k]].bytes_out + edges[idx[k]].bytes_in);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

static void json_bursts(struct cw_jsonw *w, const struct cw_sample_run *run,
			bool ingress, const struct cw_burst_edge *edges,
			size_t nedges, size_t *idx)
{
	uint64_t ref = reference_bps(run, ingress);
	struct cw_burst *b = NULL;
	size_t n = 0, i;

	cw_jsonw_obj_open(w, ingress ? "ingress" : "egress");
	cw_jsonw_u64(w, "reference_bps", ref);
	cw_jsonw_str(w, "reference",
		     run->link_speed_bps ? "link speed" : "busiest bin");
	cw_jsonw_arr_open(w, "bursts");
	if (ref && !cw_sample_bursts(run, ingress, BURST_SHARE, ref, &b, &n))
		for (i = 0; i < n && i < BURSTS_MAX; i++)
			json_burst(w, run, &b[i], edges, nedges, idx);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	free(b);
}

/* The connection records served, for attribution: JSON files only. */
static void load_edges(const struct serve_ctx *c, struct cw_burst_edge **e,
		       size_t *n)
{
	char path[4096];
	struct stat st;

	*e = NULL, *n = 0;
	if (!c->ninputs || stat(c->inputs[0], &st))
		return;
	snprintf(path, sizeof(path), "%s%s", c->inputs[0],
		 S_ISDIR(st.st_mode) ? "/conns.jsonl" : "");
	if (cw_burst_edges_load(path, e, n))
		*e = NULL, *n = 0;
}

static void one_run(const struct serve_ctx *c, const struct cw_serve_query *q,
		    struct serve_reply *r)
{
	struct cw_burst_edge *edges;
	struct cw_sample_run *run;
	size_t nedges, *idx;
	struct cw_jsonw w;
	int f;

	if (load_run(c, q->run, &run, r))
		return;
	load_edges(c, &edges, &nedges);
	idx = calloc(nedges + 1, sizeof(*idx));
	if (!idx || serve_reply_open(r, 200, "application/json"))
		goto out;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "name", q->run);
	cw_jsonw_str(&w, "host", run->host);
	cw_jsonw_str(&w, "dev", run->dev);
	cw_jsonw_u64(&w, "start_ms", run->start_real_ns / NSEC_PER_MSEC);
	cw_jsonw_u64(&w, "interval_ns", run->interval_ns);
	cw_jsonw_u64(&w, "nbins", run->nbins);
	cw_jsonw_u64(&w, "link_speed_bps", run->link_speed_bps);
	cw_jsonw_obj_open(&w, "totals");
	for (f = 0; f < CW_SF_FLOWS_FIRST; f++)
		cw_jsonw_u64(&w, cw_sample_field_names[f],
			     cw_sample_run_total(run, (enum cw_sample_field)f));
	cw_jsonw_obj_close(&w);
	json_bursts(&w, run, false, edges, nedges, idx);
	json_bursts(&w, run, true, edges, nedges, idx);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
out:
	free(idx);
	free(edges);
	cw_sample_run_free(run);
}

void serve_samples(const struct serve_ctx *c, const struct cw_serve_query *q,
		   bool plot, struct serve_reply *r)
{
	struct cw_sample_run *run;

	if (!plot && !q->run[0])
		return list_runs(c, r);
	if (plot && !q->run[0])
		return serve_reply_error(r, 400, "'run' is required");
	if (!plot)
		return one_run(c, q, r);
	if (load_run(c, q->run, &run, r))
		return;
	if (!serve_reply_open(r, 200, "image/svg+xml") &&
	    cw_sample_run_svg(r->fp, run))
		serve_reply_error(r, 500, "unable to plot the run");
	cw_sample_run_free(run);
}
