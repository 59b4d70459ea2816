// SPDX-License-Identifier: MIT
/*
 * serve's routes on common/httpd.h's server (a thread per connection,
 * limits and timeouts there) while the caller's thread follows the
 * sources.  Read-only: the built-in assets, the API and the metrics;
 * everything else is a 4xx with a JSON error.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/httpd.h"
#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"

static const struct serve_asset *asset(const char *path)
{
	size_t i;

	for (i = 0; i < serve_nassets; i++)
		if (!strcmp(serve_assets[i].path, path))
			return &serve_assets[i];
	return NULL;
}

static void page(void *arg, const struct cw_httpd_req *q,
		 struct cw_httpd_reply *r)
{
	const struct serve_asset *a;

	if (!strncmp(q->path, "/assets/", 8))
		a = asset(q->path + 7);
	else
		a = asset("/index.html");
	if (!a)
		return cw_httpd_reply_error(r, 404, "no such asset");
	/* Copied: the reply owns its body. */
	if (!cw_httpd_reply_open(r, 200, a->type))
		fwrite(a->data, 1, a->len, r->fp);
}

static void metrics(void *arg, const struct cw_httpd_req *q,
		    struct cw_httpd_reply *r)
{
	serve_metrics(arg, r);
	if (r->status == 200 && r->fp)
		cw_httpd_prom(q->httpd, r->fp);
}

static void api(void *arg, const struct cw_httpd_req *q,
		struct cw_httpd_reply *r)
{
	serve_api(arg, q->path, q->query, r);
}

/* The traces file is re-read by the request that finds it changed, with
 * no lock of its own (serve/traces.c): its two readers take turns. */
static const struct cw_httpd_route routes[] = {
	{"/", page, 0},
	{"/index.html", page, 0},
	{"/assets/", page, CW_HTTPD_PREFIX},
	{"/metrics", metrics, 0},
	{"/api/traces", api, CW_HTTPD_QUERY | CW_HTTPD_SERIAL},
	{"/api/stats", api, CW_HTTPD_QUERY | CW_HTTPD_SERIAL},
	{"/api/", api, CW_HTTPD_PREFIX | CW_HTTPD_QUERY},
};

static struct cw_httpd *start(const char *listen, struct serve_ctx *ctx)
{
	struct cw_httpd_opts o = {
		.listen = listen,
		.what = "--listen",
		.routes = routes,
		.nroutes = CW_ARRAY_SIZE(routes),
		.arg = ctx,
		.not_found = "no such page (the API is under /api/)",
		.csp = "default-src 'self'; style-src 'self' 'unsafe-inline'; "
		       "img-src 'self' data:",
		.max_conns = 128,
		.per_ip = 32,
		.timeout_s = 10,
	};
	struct cw_httpd *h = cw_httpd_start(&o);
	char url[80];

	if (h) {
		cw_httpd_url(h, url, sizeof(url));
		cw_info("serving on %s/", url);
	}
	return h;
}

/* paths.json of the first run folder, unless a file was named. */
static char *paths_file(const struct cw_serve_opts *o)
{
	struct stat st;
	char *p;
	size_t i;

	if (o->paths)
		return strdup(o->paths);
	for (i = 0; i < o->ninputs; i++) {
		if (stat(o->inputs[i], &st) || !S_ISDIR(st.st_mode))
			continue;
		if (asprintf(&p, "%s/paths.json", o->inputs[i]) < 0)
			return NULL;
		return p;
	}
	return NULL;
}

/*
 * A --paths or --plan file named on the command line is read again for
 * every request (a run or a planner may rewrite it), so a bad state later
 * is a 500; bad at start, it is an error.  Answered once as the page
 * would ask, with the reply's error as the message.  0 or -1.
 */
static int check_file(const struct serve_ctx *c, const char *path,
		      const char *api)
{
	struct serve_reply r = {0};
	struct json_object *o = NULL, *e;
	int ret = 0;

	if (access(path, R_OK))
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	serve_api(c, api, NULL, &r);
	if (cw_httpd_reply_close(&r))
		ret = cw_error("out of memory");
	else if (r.status >= 400) {
		o = r.body ? json_tokener_parse(r.body) : NULL;
		ret = cw_error("%s", o && json_object_object_get_ex(o, "error",
								    &e)
					     ? json_object_get_string(e)
					     : "unreadable");
	}
	json_object_put(o);
	free(r.body);
	return ret;
}

int cw_serve_run(const struct cw_serve_opts *o, volatile int *stop)
{
	const char *listen = o->listen ? o->listen : "127.0.0.1:8080";
	struct serve_ctx ctx = {.samples_dir = o->samples_dir,
				.plan = o->plan,
				.inputs = o->inputs,
				.ninputs = o->ninputs};
	struct serve_source *src = NULL;
	struct cw_httpd *d = NULL;
	char *paths = paths_file(o);
	int ret = -1;

	ctx.paths = paths;
	ctx.model = serve_model_new(o->window_ns ? o->window_ns
						 : 10 * NSEC_PER_SEC);
	ctx.feed = serve_feed_new(o->brokers != NULL);
	if (!ctx.model || !ctx.feed)
		goto out;
	src = serve_source_new(o, ctx.model, ctx.feed);
	if (!src)
		goto out;
	if (o->traces && !(ctx.traces = serve_traces_new(o->traces)))
		goto out;
	if ((o->paths && check_file(&ctx, o->paths, "/api/paths")) ||
	    (o->plan && check_file(&ctx, o->plan, "/api/plan")))
		goto out;
	d = start(listen, &ctx);
	if (!d)
		goto out;
	while (!*stop)
		if (serve_source_poll(src, 200))
			goto out;
	ret = 0;
out:
	cw_httpd_stop(d);
	serve_source_free(src);
	serve_model_free(ctx.model);
	serve_feed_free(ctx.feed);
	serve_traces_free(ctx.traces);
	free(paths);
	return ret;
}
