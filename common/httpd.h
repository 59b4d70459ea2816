/* SPDX-License-Identifier: MIT */
/*
 * One HTTP server for all of causeway: serve's page, API and metrics and
 * the agent's and `causeway run`'s --metrics, over libmicrohttpd.  A route
 * table maps paths to handlers; a handler fills a reply in memory (status,
 * type, body) and the server sends it with the house headers (no-store,
 * nosniff, an optional Content-Security-Policy).  Read-only: a method
 * other than GET and HEAD is a 405, a path no route takes a 404, a query
 * on a route that takes none a 400, every error a JSON object
 * {"error": "...", "status": N}.
 *
 * Threads and limits, the same for every server:
 *  - a thread per connection (libmicrohttpd's), so a handler that takes
 *    long (a Graphviz layout) holds only its own client while the others,
 *    a Prometheus scrape included, are answered.  Handlers therefore run
 *    concurrently: each must be thread-safe, or its route marked
 *    CW_HTTPD_SERIAL to run one at a time.  A pool of threads would not
 *    do: a connection kept alive on a busy worker waits for it.
 *  - at most max_conns connections (so at most that many threads), and
 *    per_ip of them from one address, so one client cannot take every
 *    slot: the next connection from it is closed at once.
 *  - a connection has timeout_s to send a whole request header, counted
 *    from its opening or from its previous answer, and is closed when it
 *    has not: a slow client (slowloris: a header line now and then) or a
 *    request line that never ends (binary bytes, a TLS hello) does not
 *    keep its slot.  A malformed request that libmicrohttpd parses gets
 *    its 400; one it cannot parse (no method) is closed.
 *  - bound beyond loopback, the start warns: there is no authentication
 *    (causeway-serve(1) says how to put a proxy that has some in front).
 *
 *	static void hello(void *arg, const struct cw_httpd_req *q,
 *			  struct cw_httpd_reply *r)
 *	{
 *		if (!cw_httpd_reply_open(r, 200, "text/plain"))
 *			fputs("hello\n", r->fp);
 *	}
 *	static const struct cw_httpd_route routes[] = {{"/hello", hello, 0}};
 *	struct cw_httpd_opts o = {.listen = "8080", .what = "--listen",
 *				  .routes = routes, .nroutes = 1};
 *	struct cw_httpd *h = cw_httpd_start(&o);	// serving from now
 *	...
 *	cw_httpd_stop(h);
 *
 * Functions returning int give 0, or -1 after a message, unless they say
 * otherwise.
 */
#ifndef CW_HTTPD_H
#define CW_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

/*
 * "ADDR:PORT", "[V6]:PORT" or a bare "PORT" (then on 127.0.0.1: loopback
 * unless an address is named) into a socket address; `what` names the
 * option in the message ("--metrics").
 */
int cw_listen_parse(const char *s, const char *what,
		    struct sockaddr_storage *ss, bool *v6);

/* A response being made: the body in memory, its status and type. */
struct cw_httpd_reply {
	int status;
	const char *type; /* static text */
	char *body;
	size_t len;
	FILE *fp; /* open_memstream onto body while open */
};

/* Start (or restart) the body with this status and type: 0, or -1 (out of
 * memory, no message: the server answers 500). */
int cw_httpd_reply_open(struct cw_httpd_reply *r, int status,
			const char *type);
/* Close the stream: 0, or -1 (out of memory). */
int cw_httpd_reply_close(struct cw_httpd_reply *r);
/* Replace the reply with {"error": msg, "status": status}. */
void cw_httpd_reply_error(struct cw_httpd_reply *r, int status,
			  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One request, as a handler sees it. */
struct cw_httpd_req {
	const char *path;   /* %-decoded, without the query */
	const char *query;  /* as sent, after the '?'; NULL: none */
	const char *method; /* GET or HEAD */
	struct cw_httpd *httpd; /* the server answering */
};

/* Fill r (left empty: a 500); never fails otherwise. */
typedef void cw_httpd_fn(void *arg, const struct cw_httpd_req *q,
			 struct cw_httpd_reply *r);

enum {
	CW_HTTPD_PREFIX = 1, /* path is a prefix ("/api/") */
	CW_HTTPD_QUERY = 2,  /* takes a query string (else a 400) */
	CW_HTTPD_SERIAL = 4, /* not thread-safe: one request at a time */
};

/* The first route whose path matches the request's answers it. */
struct cw_httpd_route {
	const char *path;
	cw_httpd_fn *fn;
	unsigned flags;
};

struct cw_httpd_opts {
	const char *listen; /* as cw_listen_parse takes it */
	const char *what;   /* the option, for messages ("--listen") */
	const struct cw_httpd_route *routes; /* kept by pointer: static */
	size_t nroutes;
	void *arg;		/* handed to every handler */
	const char *not_found;	/* the 404's message; NULL: "no such page" */
	const char *csp;	/* Content-Security-Policy; NULL: none */
	unsigned max_conns;	/* connections at once; 0: 128 */
	unsigned per_ip;	/* of them from one address; 0: max_conns/4 */
	unsigned timeout_s;	/* for each request's header; 0: 10 */
};

struct cw_httpd;

/*
 * Bind and serve from threads of the server's own; warn when the address
 * is not loopback.  NULL after a message when the address is bad or cannot
 * be bound.
 */
struct cw_httpd *cw_httpd_start(const struct cw_httpd_opts *o);
/* The port bound (useful with port 0). */
unsigned cw_httpd_port(const struct cw_httpd *h);
/* "http://127.0.0.1:8080", "http://[::1]:8080": the address bound. */
void cw_httpd_url(const struct cw_httpd *h, char *buf, size_t len);
/* Connections closed for sending no whole header in time, so far. */
unsigned long cw_httpd_dropped(struct cw_httpd *h);
/* The server's own counters as Prometheus text (a /metrics handler adds
 * them): causeway_http_header_timeouts_total, the count above. */
void cw_httpd_prom(struct cw_httpd *h, FILE *fp);
/* Stop listening, close every connection (waiting for running handlers). */
void cw_httpd_stop(struct cw_httpd *h);

#endif
