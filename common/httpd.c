// SPDX-License-Identifier: MIT
/*
 * The HTTP server layer over libmicrohttpd (MHD): a thread per connection,
 * the route table, the replies, and a sweeper thread of ours for the
 * header deadline.  MHD's own timeout is an idle one (any byte resets it),
 * which a client sending a header line every few seconds never reaches:
 * so each connection is listed with the time it started waiting for a
 * request, and the sweeper shuts down the socket of one that waited too
 * long.  The list entry goes (under the lock) in MHD's "closed" callback,
 * which runs before MHD closes the socket, so the sweeper never touches a
 * descriptor that was closed and maybe reused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/httpd.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"

#define SWEEP_MS 250 /* how often the header deadline is checked */

/* One connection, for the header deadline. */
struct conn {
	struct conn *prev, *next;
	int fd;
	uint64_t since_ms; /* opened, or its last answer sent */
	bool busy;	   /* a request's header came: being answered */
	bool dropped;
};

struct cw_httpd {
	struct MHD_Daemon *d;
	const struct cw_httpd_route *routes;
	size_t nroutes;
	void *arg;
	const char *not_found, *csp;
	uint64_t timeout_ms;
	struct sockaddr_storage ss;
	pthread_mutex_t serial; /* CW_HTTPD_SERIAL handlers */
	pthread_mutex_t lock;	/* what follows */
	pthread_cond_t wake;
	struct conn *conns;
	unsigned long dropped;
	bool stopping, sweeping;
	pthread_t sweeper;
};

int cw_listen_parse(const char *s, const char *what,
		    struct sockaddr_storage *ss, bool *v6)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':'), *port = colon ? colon + 1 : s;
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	uint64_t p;
	size_t n;

	if (cw_parse_u64(port, 0, 65535, &p))
		return cw_error("%s '%s': want ADDR:PORT or PORT", what, s);
	n = colon ? (size_t)(colon - s) : 0;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		memcpy(host, s + 1, n - 2), host[n - 2] = '\0';
	else if (n && n < sizeof(host))
		memcpy(host, s, n), host[n] = '\0';
	else if (!colon)
		snprintf(host, sizeof(host), "127.0.0.1");
	else
		return cw_error("%s '%s': want ADDR:PORT or PORT", what, s);
	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return cw_error("%s '%s': '%s' is not an IP address", what, s,
				host);
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}

/* ---- replies ------------------------------------------------------------ */

int cw_httpd_reply_open(struct cw_httpd_reply *r, int status, const char *type)
{
	if (r->fp)
		fclose(r->fp);
	r->fp = NULL;
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = status;
	r->type = type;
	r->fp = open_memstream(&r->body, &r->len);
	return r->fp ? 0 : -1;
}

int cw_httpd_reply_close(struct cw_httpd_reply *r)
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

void cw_httpd_reply_error(struct cw_httpd_reply *r, int status,
			  const char *fmt, ...)
{
	struct cw_jsonw w;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cw_httpd_reply_open(r, status, "application/json"))
		return;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "error", msg);
	cw_jsonw_u64(&w, "status", (uint64_t)status);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* ---- the header deadline ------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* MHD's connection callback: list a connection when it opens, unlist it
 * when it closes (before MHD closes its socket). */
static void on_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
		    enum MHD_ConnectionNotificationCode code)
{
	struct cw_httpd *h = cls;
	struct conn *k = *socket_ctx;
	const union MHD_ConnectionInfo *fd;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		fd = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CONNECTION_FD);
		/* Unlisted (out of memory): MHD's idle timeout still holds. */
		if (!fd || !(k = calloc(1, sizeof(*k))))
			return;
		k->fd = fd->connect_fd;
		k->since_ms = now_ms();
		pthread_mutex_lock(&h->lock);
		k->next = h->conns;
		if (h->conns)
			h->conns->prev = k;
		h->conns = k;
		pthread_mutex_unlock(&h->lock);
		*socket_ctx = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&h->lock);
	if (k->prev)
		k->prev->next = k->next;
	else
		h->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&h->lock);
	free(k);
	*socket_ctx = NULL;
}

/* A request's header came (busy), or its answer went (waiting again). */
static void mark(struct cw_httpd *h, struct MHD_Connection *c, bool busy)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = i ? i->socket_context : NULL;

	if (!k)
		return;
	pthread_mutex_lock(&h->lock);
	k->busy = busy;
	k->since_ms = now_ms();
	pthread_mutex_unlock(&h->lock);
}

/* Shut down (MHD then closes) each connection past its header deadline. */
static void *sweep(void *arg)
{
	struct cw_httpd *h = arg;
	struct timespec ts;
	struct conn *k;
	uint64_t now;

	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		now = now_ms();
		for (k = h->conns; k; k = k->next) {
			if (k->busy || k->dropped ||
			    now - k->since_ms < h->timeout_ms)
				continue;
			shutdown(k->fd, SHUT_RDWR);
			k->dropped = true;
			h->dropped++;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SWEEP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* ---- requests ----------------------------------------------------------- */

/* The request's whole URI, kept from MHD's URI log callback for its query
 * string: MHD would otherwise hand us only its own parse of it. */
static void *keep_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	return strdup(uri ? uri : "");
}

static void completed(void *cls, struct MHD_Connection *c, void **req,
		      enum MHD_RequestTerminationCode toe)
{
	free(*req);
	*req = NULL;
	mark(cls, c, false);
}

static const struct cw_httpd_route *find(const struct cw_httpd *h,
					 const char *path)
{
	const struct cw_httpd_route *rt;
	size_t i;

	for (i = 0; i < h->nroutes; i++) {
		rt = &h->routes[i];
		if (rt->flags & CW_HTTPD_PREFIX
			    ? !strncmp(path, rt->path, strlen(rt->path))
			    : !strcmp(path, rt->path))
			return rt;
	}
	return NULL;
}

static void dispatch(struct cw_httpd *h, const struct cw_httpd_req *q,
		     struct cw_httpd_reply *r)
{
	const struct cw_httpd_route *rt = find(h, q->path);

	if (!rt)
		return cw_httpd_reply_error(r, 404, "%s", h->not_found);
	if (!(rt->flags & CW_HTTPD_QUERY) && q->query && *q->query)
		return cw_httpd_reply_error(r, 400, "%s takes no query",
					    q->path);
	if (rt->flags & CW_HTTPD_SERIAL)
		pthread_mutex_lock(&h->serial);
	rt->fn(h->arg, q, r);
	if (rt->flags & CW_HTTPD_SERIAL)
		pthread_mutex_unlock(&h->serial);
}

static enum MHD_Result respond(const struct cw_httpd *h,
			       struct MHD_Connection *c, int status,
			       const char *type, void *data, size_t len,
			       enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, data, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (h->csp)
		MHD_add_response_header(resp, "Content-Security-Policy",
					h->csp);
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	static char oom[] = "{\"error\": \"out of memory\", \"status\": 500}\n";
	struct cw_httpd *h = cls;
	struct cw_httpd_reply r = {0};
	struct cw_httpd_req q = {.path = url, .method = method, .httpd = h};
	const char *uri = *req;
	enum MHD_Result ret;

	mark(h, c, true);
	if (uri && (q.query = strchr(uri, '?')))
		q.query++;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		cw_httpd_reply_error(&r, 405, "read-only: only GET and HEAD");
	else if (*upload_size)
		cw_httpd_reply_error(&r, 400, "a GET takes no body");
	else
		dispatch(h, &q, &r);
	if (cw_httpd_reply_close(&r) || !r.body) {
		free(r.body);
		return respond(h, c, 500, "application/json", oom,
			       sizeof(oom) - 1, MHD_RESPMEM_PERSISTENT);
	}
	ret = respond(h, c, r.status, r.type, r.body, r.len,
		      MHD_RESPMEM_MUST_FREE);
	if (ret != MHD_YES)
		free(r.body);
	return ret;
}

/* ---- the server --------------------------------------------------------- */

static bool loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *in6 = (const void *)ss;
	const struct sockaddr_in *in = (const void *)ss;

	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
			in6->sin6_addr.s6_addr[12] == 127);
	return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
}

void cw_httpd_url(const struct cw_httpd *h, char *buf, size_t len)
{
	const struct sockaddr_in6 *in6 = (const void *)&h->ss;
	const struct sockaddr_in *in = (const void *)&h->ss;
	char addr[INET6_ADDRSTRLEN] = "?";
	bool v6 = h->ss.ss_family == AF_INET6;

	inet_ntop(h->ss.ss_family,
		  v6 ? (const void *)&in6->sin6_addr
		     : (const void *)&in->sin_addr,
		  addr, sizeof(addr));
	snprintf(buf, len, "http://%s%s%s:%u", v6 ? "[" : "", addr,
		 v6 ? "]" : "", cw_httpd_port(h));
}

static void release(struct cw_httpd *h)
{
	pthread_mutex_destroy(&h->serial);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->wake);
	free(h);
}

static struct cw_httpd *alloc(const struct cw_httpd_opts *o)
{
	struct cw_httpd *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;

	if (!h) {
		cw_error("out of memory");
		return NULL;
	}
	h->routes = o->routes;
	h->nroutes = o->nroutes;
	h->arg = o->arg;
	h->not_found = o->not_found ? o->not_found : "no such page";
	h->csp = o->csp;
	h->timeout_ms = (o->timeout_s ? o->timeout_s : 10) * 1000ULL;
	pthread_mutex_init(&h->serial, NULL);
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	return h;
}

struct cw_httpd *cw_httpd_start(const struct cw_httpd_opts *o)
{
	unsigned max = o->max_conns ? o->max_conns : 128;
	unsigned per_ip = o->per_ip ? o->per_ip : (max + 3) / 4;
	unsigned timeout = o->timeout_s ? o->timeout_s : 10;
	struct cw_httpd *h;
	bool v6 = false;
	int err;

	if (!(h = alloc(o)))
		return NULL;
	if (cw_listen_parse(o->listen, o->what, &h->ss, &v6))
		goto fail;
	h->d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &h->ss,
		MHD_OPTION_URI_LOG_CALLBACK, keep_uri, h,
		MHD_OPTION_NOTIFY_COMPLETED, completed, h,
		MHD_OPTION_NOTIFY_CONNECTION, on_conn, h,
		MHD_OPTION_CONNECTION_LIMIT, max,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_END);
	if (!h->d) {
		cw_error("unable to listen on '%s': %s", o->listen,
			 strerror(errno));
		goto fail;
	}
	err = pthread_create(&h->sweeper, NULL, sweep, h);
	if (err) {
		cw_error("unable to start a thread: %s", strerror(err));
		MHD_stop_daemon(h->d);
		goto fail;
	}
	h->sweeping = true;
	if (!loopback(&h->ss))
		cw_warn("%s '%s' is beyond loopback: whoever reaches it can "
			"read it, with no authentication (put a proxy that "
			"authenticates in front: see causeway-serve(1))",
			o->what, o->listen);
	return h;
fail:
	release(h);
	return NULL;
}

unsigned cw_httpd_port(const struct cw_httpd *h)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : 0;
}

unsigned long cw_httpd_dropped(struct cw_httpd *h)
{
	unsigned long n;

	pthread_mutex_lock(&h->lock);
	n = h->dropped;
	pthread_mutex_unlock(&h->lock);
	return n;
}

void cw_httpd_prom(struct cw_httpd *h, FILE *fp)
{
	static const char name[] = "causeway_http_header_timeouts_total";

	cw_prom_header(fp, name, CW_METRIC_COUNTER,
		       "Connections closed for sending no whole request "
		       "header in time (slow clients).");
	fprintf(fp, "%s %lu\n", name, cw_httpd_dropped(h));
}

void cw_httpd_stop(struct cw_httpd *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	if (h->sweeping)
		pthread_join(h->sweeper, NULL);
	MHD_stop_daemon(h->d);
	release(h);
}
