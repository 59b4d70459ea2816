// SPDX-License-Identifier: MIT
/*
 * The HTTP server layer (common/httpd.h) over real sockets: routes (exact,
 * prefix, with and without a query), the JSON 404, 405 and 400, the house
 * headers; a handler that blocks holds only its own client (another is
 * answered meanwhile) and is not cut off by the header deadline; one
 * address gets per_ip connections and no more while another address is
 * still served; a connection that trickles its header is closed at the
 * deadline, and so is one that sends a request line with no end.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/httpd.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int released;

static void hello(void *arg, const struct cw_httpd_req *q,
		  struct cw_httpd_reply *r)
{
	if (!cw_httpd_reply_open(r, 200, "text/plain"))
		fprintf(r->fp, "hello %s %s\n", q->path,
			q->query ? q->query : "-");
}

/* Waits (20 s at most) until the test releases it. */
static void block(void *arg, const struct cw_httpd_req *q,
		  struct cw_httpd_reply *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&lock);
	while (!released)
		if (pthread_cond_timedwait(&cond, &lock, &ts))
			break;
	cw_httpd_reply_open(r, 200, "text/plain");
	fputs(released ? "released\n" : "timed out\n", r->fp);
	pthread_mutex_unlock(&lock);
}

static const struct cw_httpd_route routes[] = {
	{"/hello", hello, 0},
	{"/q", hello, CW_HTTPD_QUERY},
	{"/block", block, 0},
	{"/p/", hello, CW_HTTPD_PREFIX | CW_HTTPD_QUERY},
};

/* A connected socket from `from` (127.0.0.x) to 127.0.0.1:port, or -1. */
static int dial(unsigned port, const char *from)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in src = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, from, &src.sin_addr);
	if (fd < 0 || bind(fd, (void *)&src, sizeof(src)) ||
	    connect(fd, (void *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Everything until the server closes (10 s at most); malloc'd. */
static char *slurp(int fd)
{
	char *buf = calloc(1, 65536);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0;
	ssize_t n;

	while (buf && got < 65535 && poll(&p, 1, 10000) == 1 &&
	       (n = read(fd, buf + got, 65535 - got)) > 0)
		got += (size_t)n;
	close(fd);
	return buf;
}

static char *get_from(unsigned port, const char *from, const char *method,
		      const char *path)
{
	char req[256];
	int fd = dial(port, from);

	if (fd < 0)
		return strdup("");
	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 method, path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return strdup("");
	}
	return slurp(fd);
}

static char *get(unsigned port, const char *path)
{
	return get_from(port, "127.0.0.1", "GET", path);
}

static bool has(const char *r, const char *s)
{
	return r && strstr(r, s);
}

static void test_routes(unsigned port)
{
	char *r;

	r = get(port, "/hello");
	CHECK(has(r, " 200 ") && has(r, "\r\n\r\nhello /hello -\n"));
	CHECK(has(r, "Cache-Control: no-store") &&
	      has(r, "X-Content-Type-Options: nosniff") &&
	      has(r, "Content-Security-Policy: default-src 'self'"));
	free(r);
	r = get(port, "/hello?x=1");
	CHECK(has(r, " 400 ") &&
	      has(r, "{\"error\":\"/hello takes no query\",\"status\":400}"));
	free(r);
	r = get(port, "/q?a=%41&b");
	CHECK(has(r, " 200 ") && has(r, "hello /q a=%41&b\n"));
	free(r);
	r = get(port, "/p/x%2Fy?k=v");
	CHECK(has(r, " 200 ") && has(r, "hello /p/x/y k=v\n"));
	free(r);
	r = get(port, "/nothing");
	CHECK(has(r, " 404 ") && has(r, "\"error\":\"nowhere\""));
	free(r);
	r = get(port, "/hello/");
	CHECK(has(r, " 404 "));
	free(r);
	r = get_from(port, "127.0.0.1", "POST", "/hello");
	CHECK(has(r, " 405 ") && has(r, "read-only"));
	free(r);
	r = get_from(port, "127.0.0.1", "HEAD", "/hello");
	CHECK(has(r, " 200 ") && !has(r, "hello /hello"));
	free(r);
}

static void *get_block(void *arg)
{
	return get(*(unsigned *)arg, "/block");
}

/* One handler waits; another client is answered meanwhile; the waiting
 * one gets its answer although it outlasted the 1 s header deadline. */
static void test_concurrent(unsigned port)
{
	pthread_t t;
	char *r, *b = NULL;

	CHECK(pthread_create(&t, NULL, get_block, &port) == 0);
	usleep(1500 * 1000); /* /block running, past the deadline */
	r = get_from(port, "127.0.0.2", "GET", "/hello");
	CHECK(has(r, " 200 "));
	free(r);
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, (void **)&b);
	CHECK(has(b, " 200 ") && has(b, "released"));
	free(b);
}

/* Seconds until the server closes fd while a header line goes every
 * 300 ms (at most 10 s: then -1). */
static double trickle(int fd, const char *first)
{
	struct timespec t0, t1;
	char buf[512];
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Refused already?  The loop sees it. */
	(void)!send(fd, first, strlen(first), MSG_NOSIGNAL);
	for (i = 0; i < 33; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 300) == 1 && read(fd, buf, sizeof(buf)) <= 0)
			break;
		if (send(fd, "X: y\r\n", 6, MSG_NOSIGNAL) < 0)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	if (i == 33)
		return -1;
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static void test_limits(struct cw_httpd *h, unsigned port)
{
	unsigned long before = cw_httpd_dropped(h);
	double secs;
	char *r;
	int a, b, c;

	usleep(300 * 1000); /* the earlier connections' threads are gone */
	a = dial(port, "127.0.0.1"), b = dial(port, "127.0.0.1");
	c = dial(port, "127.0.0.1");
	/* A third from one address is closed; another address is served. */
	CHECK(a >= 0 && b >= 0 && c >= 0);
	r = slurp(c);
	CHECK(r && !*r);
	free(r);
	r = get_from(port, "127.0.0.2", "GET", "/hello");
	CHECK(has(r, " 200 "));
	free(r);
	/* Trickling a header: closed at the deadline (1 s), not held. */
	secs = trickle(a, "GET /hello HTTP/1.1\r\n");
	CHECK(secs >= 0 && secs < 5);
	/* A request line with no end: closed too. */
	secs = trickle(b, "\x16\x03\x01\x02\x00\x01");
	CHECK(secs >= 0 && secs < 5);
	CHECK(cw_httpd_dropped(h) > before); /* or MHD's idle timeout */
	r = get(port, "/hello");
	CHECK(has(r, " 200 "));
	free(r);
}

int main(void)
{
	struct cw_httpd_opts o = {.listen = "0",
				  .what = "--listen",
				  .routes = routes,
				  .nroutes = 4,
				  .not_found = "nowhere",
				  .csp = "default-src 'self'",
				  .max_conns = 8,
				  .per_ip = 2,
				  .timeout_s = 1};
	struct cw_httpd *h = cw_httpd_start(&o);
	char url[80];
	unsigned port;

	CHECK(h != NULL);
	if (!h)
		return 1;
	port = cw_httpd_port(h);
	cw_httpd_url(h, url, sizeof(url));
	CHECK(port > 0 && !strncmp(url, "http://127.0.0.1:", 17));
	test_routes(port);
	test_concurrent(port);
	test_limits(h, port);
	cw_httpd_stop(h);
	o.listen = "127.0.0.1:x";
	CHECK(cw_httpd_start(&o) == NULL);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_httpd: all checks passed\n");
	return 0;
}
