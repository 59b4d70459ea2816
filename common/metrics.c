// SPDX-License-Identifier: MIT
/*
 * Prometheus text and the /metrics server, a route of common/httpd.c's
 * server: each scrape writes a copy of the board taken under its lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/httpd.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/utf8.h"
#include "common/util.h"

static const char *type_name(enum cw_metric_type t)
{
	return t == CW_METRIC_GAUGE	  ? "gauge"
	       : t == CW_METRIC_HISTOGRAM ? "histogram"
					  : "counter";
}

void cw_prom_header(FILE *fp, const char *name, enum cw_metric_type type,
		    const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		type_name(type));
}

void cw_prom_label(FILE *fp, const char *name, const char *v)
{
	size_t n = strlen(v), ch;

	fprintf(fp, "%s=\"", name);
	for (; *v; v += ch, n -= ch) {
		ch = cw_utf8_next(v, n);
		if (*v == '\\' || *v == '"')
			fputc('\\', fp);
		if (!ch)
			fputs("\xef\xbf\xbd", fp), ch = 1;
		else if (*v == '\n')
			fputs("\\n", fp);
		else
			fwrite(v, 1, ch, fp);
	}
	fputc('"', fp);
}

const double cw_prom_latency_le[] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05,	0.1,	 0.25,	 0.5,	1,	2.5,   5,    10,
};
const size_t cw_prom_latency_nle = CW_ARRAY_SIZE(cw_prom_latency_le);

void cw_prom_hist(FILE *fp, const char *name, const char *labels,
		  const struct cw_hist *h, const double *le, size_t nle)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t below = 0;
	double sum = 0;
	size_t b = 0, i;

	/* bins are sorted: each bound takes those that end at or under it */
	for (i = 0; i < nle; i++) {
		uint64_t ns = (uint64_t)(le[i] * 1e9 + 0.5);

		for (; b < h->n && cw_hist_upper(h->bin[b].idx) <= ns; b++)
			below += h->bin[b].count;
		fprintf(fp, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels,
			sep, le[i], (unsigned long long)below);
	}
	fprintf(fp, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		(unsigned long long)h->count);
	for (i = 0; i < h->n; i++)
		sum += (double)h->bin[i].count *
		       ((double)cw_hist_lower(h->bin[i].idx) +
			(double)cw_hist_upper(h->bin[i].idx)) /
		       2e9;
	fprintf(fp, "%s_sum{%s} %.9g\n", name, labels, sum);
	fprintf(fp, "%s_count{%s} %llu\n", name, labels,
		(unsigned long long)h->count);
}

struct cw_metrics_board {
	pthread_mutex_t lock;
	const struct cw_metric_def *defs;
	size_t n;
	char *label_name, *label_value;
	uint64_t *values;
	bool set;
};

struct cw_metrics_board *cw_metrics_board_new(const struct cw_metric_def *defs,
					      size_t n, const char *label_name,
					      const char *label_value)
{
	struct cw_metrics_board *b = calloc(1, sizeof(*b));

	if (!b)
		goto oom;
	pthread_mutex_init(&b->lock, NULL);
	b->defs = defs;
	b->n = n;
	b->values = calloc(n + 1, sizeof(*b->values));
	if (!b->values)
		goto oom;
	if (label_name) {
		b->label_name = strdup(label_name);
		b->label_value = strdup(label_value ? label_value : "");
		if (!b->label_name || !b->label_value)
			goto oom;
	}
	return b;
oom:
	cw_error("out of memory");
	cw_metrics_board_free(b);
	return NULL;
}

void cw_metrics_board_set(struct cw_metrics_board *b, const uint64_t *values)
{
	pthread_mutex_lock(&b->lock);
	memcpy(b->values, values, b->n * sizeof(*values));
	b->set = true;
	pthread_mutex_unlock(&b->lock);
}

int cw_metrics_board_write(struct cw_metrics_board *b, FILE *fp)
{
	uint64_t *v = calloc(b->n + 1, sizeof(*v));
	bool set;
	size_t i;

	if (!v)
		return -1;
	pthread_mutex_lock(&b->lock);
	memcpy(v, b->values, b->n * sizeof(*v));
	set = b->set;
	pthread_mutex_unlock(&b->lock);
	for (i = 0; set && i < b->n; i++) {
		cw_prom_header(fp, b->defs[i].name, b->defs[i].type,
			       b->defs[i].help);
		fputs(b->defs[i].name, fp);
		if (b->label_name) {
			fputc('{', fp);
			cw_prom_label(fp, b->label_name, b->label_value);
			fputc('}', fp);
		}
		fprintf(fp, " %llu\n", (unsigned long long)v[i]);
	}
	free(v);
	return set && !ferror(fp) ? 0 : -1;
}

void cw_metrics_board_free(struct cw_metrics_board *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->values);
	free(b->label_name);
	free(b->label_value);
	free(b);
}

struct cw_metrics_server {
	struct cw_httpd *h;
	struct cw_metrics_board *board;
};

static void scrape(void *arg, const struct cw_httpd_req *q,
		   struct cw_httpd_reply *r)
{
	struct cw_metrics_server *s = arg;

	if (cw_httpd_reply_open(r, 200, "text/plain; version=0.0.4"))
		return;
	if (cw_metrics_board_write(s->board, r->fp))
		cw_httpd_reply_error(r, 503, "no values yet");
	else
		cw_httpd_prom(q->httpd, r->fp);
}

static const struct cw_httpd_route routes[] = {
	{"/metrics", scrape, 0},
};

struct cw_metrics_server *cw_metrics_server_start(const char *listen,
						  struct cw_metrics_board *b)
{
	struct cw_httpd_opts o = {.listen = listen,
				  .what = "--metrics",
				  .routes = routes,
				  .nroutes = CW_ARRAY_SIZE(routes),
				  .not_found = "see /metrics",
				  .max_conns = 32,
				  .per_ip = 4,
				  .timeout_s = 10};
	struct cw_metrics_server *s = calloc(1, sizeof(*s));
	char url[80];

	if (!s) {
		cw_error("out of memory");
		return NULL;
	}
	s->board = b;
	o.arg = s;
	s->h = cw_httpd_start(&o);
	if (!s->h) {
		free(s);
		return NULL;
	}
	cw_httpd_url(s->h, url, sizeof(url));
	cw_info("metrics at %s/metrics", url);
	return s;
}

unsigned cw_metrics_server_port(const struct cw_metrics_server *s)
{
	return cw_httpd_port(s->h);
}

void cw_metrics_server_stop(struct cw_metrics_server *s)
{
	if (!s)
		return;
	cw_httpd_stop(s->h);
	free(s);
}
