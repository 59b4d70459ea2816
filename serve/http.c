// SPDX-License-Identifier: MIT
/*
 * HTTP through libmicrohttpd: one polling thread answers every request
 * (Graphviz is not thread-safe anyway) while the caller's thread follows
 * the sources.  Read-only: GET and HEAD, the built-in assets, the API and
 * the metrics; everything else is a 4xx with a JSON error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "serve/serve_int.h"

int serve_reply_open(struct serve_reply *r, int status, const char *type)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = status;
	r->type = type;
	r->fp = open_memstream(&r->body, &r->len);
	return r->fp ? 0 : -1;
}

int serve_reply_close(struct serve_reply *r)
{
	int err = 0;

	if (r->fp) {
		err = ferror(r->fp) ? -1 : 0;
		if (fclose(r->fp))
			err = -1;
		r->fp = NULL;
	}
	return err;
}

void serve_reply_error(struct serve_reply *r, int status, const char *fmt, ...)
{
	struct cw_jsonw w;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	serve_reply_close(r);
	if (serve_reply_open(r, status, "application/json"))
		return;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "error", msg);
	cw_jsonw_u64(&w, "status", (uint64_t)status);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* The request's whole URI, kept from MHD's URI log callback for its query
 * string: MHD would otherwise hand us only its own parse of it. */
static void *keep_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	return strdup(uri ? uri : "");
}

static void forget_uri(void *cls, struct MHD_Connection *c, void **req,
		       enum MHD_RequestTerminationCode toe)
{
	free(*req);
	*req = NULL;
}

static const struct serve_asset *asset(const char *path)
{
	size_t i;

	for (i = 0; i < serve_nassets; i++)
		if (!strcmp(serve_assets[i].path, path))
			return &serve_assets[i];
	return NULL;
}

static enum MHD_Result respond(struct MHD_Connection *c, int status,
			       const char *type, const void *data, size_t len,
			       enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)data, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; style-src 'self' "
				"'unsafe-inline'; img-src 'self' data:");
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void route(const struct serve_ctx *ctx, const char *url, const char *qs,
		  struct serve_reply *r)
{
	const struct serve_asset *a = NULL;

	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		a = asset("/index.html");
	else if (!strncmp(url, "/assets/", 8))
		a = asset(url + 7);
	if (a) {
		/* Copied: the reply owns its body. */
		if (!serve_reply_open(r, 200, a->type))
			fwrite(a->data, 1, a->len, r->fp);
		if (qs && *qs)
			serve_reply_error(r, 400, "assets take no query");
		return;
	}
	if (!strncmp(url, "/assets/", 8))
		return serve_reply_error(r, 404, "no such asset");
	if (!strcmp(url, "/metrics")) {
		if (qs && *qs)
			return serve_reply_error(r, 400,
						 "/metrics takes no query");
		return serve_metrics(ctx, r);
	}
	if (!strncmp(url, "/api/", 5))
		return serve_api(ctx, url, qs, r);
	serve_reply_error(r, 404, "no such page (the API is under /api/)");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	const struct serve_ctx *ctx = cls;
	struct serve_reply r = {0};
	const char *uri = *req, *qs = NULL;
	enum MHD_Result ret;

	if (uri)
		qs = strchr(uri, '?');
	if (qs)
		qs++;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		serve_reply_error(&r, 405, "read-only: only GET and HEAD");
	else if (*upload_size)
		serve_reply_error(&r, 400, "a GET takes no body");
	else
		route(ctx, url, qs, &r);
	if (serve_reply_close(&r) || !r.body) {
		static const char oom[] = "{\"error\": \"out of memory\"}\n";

		free(r.body);
		return respond(c, 500, "application/json", oom, sizeof(oom) - 1,
			       MHD_RESPMEM_PERSISTENT);
	}
	ret = respond(c, r.status, r.type, r.body, r.len,
		      MHD_RESPMEM_MUST_FREE);
	if (ret != MHD_YES)
		free(r.body);
	return ret;
}

static struct MHD_Daemon *start(const char *listen, struct serve_ctx *ctx)
{
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	bool v6 = false;

	if (cw_listen_parse(listen, "--listen", &ss, &v6))
		return NULL;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
				     (v6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, handle, ctx, MHD_OPTION_SOCK_ADDR,
			     &ss, MHD_OPTION_URI_LOG_CALLBACK, keep_uri, NULL,
			     MHD_OPTION_NOTIFY_COMPLETED, forget_uri, NULL,
			     MHD_OPTION_CONNECTION_LIMIT, 128U,
			     MHD_OPTION_CONNECTION_TIMEOUT, 30U,
			     MHD_OPTION_END);
	if (!d)
		cw_error("unable to listen on '%s': %s", listen,
			 strerror(errno));
	return d;
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

int cw_serve_run(const struct cw_serve_opts *o, volatile int *stop)
{
	const char *listen = o->listen ? o->listen : "127.0.0.1:8080";
	struct serve_ctx ctx = {.samples_dir = o->samples_dir,
				.plan = o->plan,
				.inputs = o->inputs,
				.ninputs = o->ninputs};
	struct serve_source *src = NULL;
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;
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
	d = start(listen, &ctx);
	if (!d)
		goto out;
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	cw_info("serving on http://%.*s:%u/",
		strrchr(listen, ':') ? (int)(strrchr(listen, ':') - listen) : 9,
		strrchr(listen, ':') ? listen : "127.0.0.1",
		info ? info->port : 0);
	while (!*stop)
		if (serve_source_poll(src, 200))
			goto out;
	ret = 0;
out:
	if (d)
		MHD_stop_daemon(d);
	serve_source_free(src);
	serve_model_free(ctx.model);
	serve_feed_free(ctx.feed);
	serve_traces_free(ctx.traces);
	free(paths);
	return ret;
}
