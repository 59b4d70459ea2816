// SPDX-License-Identifier: MIT
/*
 * Steady connection churn for bench/bench_soak.sh: many short TCP
 * connections a second and a set of long ones, for as long as asked.
 *
 *   churn server ADDR PORT
 *	echo every connection (epoll, one thread) until killed
 *   churn client ADDR PORT RATE LONG SECS
 *	for SECS seconds: RATE short connections a second, paced (connect,
 *	100 bytes each way, close), and LONG connections held open that
 *	exchange 512 bytes each way every 100 ms; then print one JSON line
 *	{"short": N, "short_failed": N, "long": N, "long_rounds": N}
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SHORT_BYTES 100
#define LONG_BYTES  512
#define LONG_MAX    1024

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_port = htons((unsigned short)atoi(port));
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		die("address");
	return sa;
}

static void server(struct sockaddr_in sa)
{
	struct epoll_event ev = {.events = EPOLLIN}, evs[256];
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), ep, n, i, fd;
	char buf[4096];
	ssize_t got;

	if (s < 0 ||
	    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 4096))
		die("listen");
	ep = epoll_create1(0);
	ev.data.fd = s;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev))
		die("epoll");
	for (;;) {
		n = epoll_wait(ep, evs, 256, -1);
		for (i = 0; i < n; i++) {
			fd = evs[i].data.fd;
			if (fd == s) {
				fd = accept(s, NULL, NULL);
				if (fd < 0)
					continue;
				ev.data.fd = fd;
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				continue;
			}
			got = read(fd, buf, sizeof(buf));
			/* Small messages: the echo always fits the buffer. */
			if (got <= 0 || write(fd, buf, (size_t)got) != got)
				close(fd);
		}
	}
}

static int exchange(int fd, size_t len)
{
	char buf[LONG_BYTES];
	size_t got = 0;
	ssize_t n;

	memset(buf, 'c', len);
	if (write(fd, buf, len) != (ssize_t)len)
		return -1;
	while (got < len && (n = read(fd, buf, len - got)) > 0)
		got += (size_t)n;
	return got == len ? 0 : -1;
}

static int one_short(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc = -1;

	if (fd < 0)
		return -1;
	if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		rc = exchange(fd, SHORT_BYTES);
	close(fd);
	return rc;
}

static void client(struct sockaddr_in sa, double rate, int nlong, double secs)
{
	int longs[LONG_MAX], i, one = 1;
	unsigned long done = 0, failed = 0, rounds = 0;
	double start, t, next_long;

	if (nlong > LONG_MAX)
		nlong = LONG_MAX;
	for (i = 0; i < nlong; i++) {
		longs[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (longs[i] < 0 ||
		    connect(longs[i], (struct sockaddr *)&sa, sizeof(sa)))
			die("long connection");
		setsockopt(longs[i], IPPROTO_TCP, TCP_NODELAY, &one,
			   sizeof(one));
	}
	start = next_long = now_s();
	while ((t = now_s()) < start + secs) {
		if (t >= next_long) {
			for (i = 0; i < nlong; i++)
				if (exchange(longs[i], LONG_BYTES))
					die("long exchange");
			rounds++;
			next_long += 0.1;
		}
		if (done + failed < (t - start) * rate) {
			if (one_short(&sa))
				failed++;
			else
				done++;
		} else {
			usleep(200);
		}
	}
	for (i = 0; i < nlong; i++)
		close(longs[i]);
	printf("{\"short\": %lu, \"short_failed\": %lu, \"long\": %d, "
	       "\"long_rounds\": %lu}\n",
	       done, failed, nlong, rounds);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		server(addr_of(argv[2], argv[3]));
	if (argc == 7 && !strcmp(argv[1], "client")) {
		client(addr_of(argv[2], argv[3]), atof(argv[4]), atoi(argv[5]),
		       atof(argv[6]));
		return 0;
	}
	fprintf(stderr, "usage: churn server ADDR PORT\n"
			"       churn client ADDR PORT RATE LONG SECS\n");
	return 1;
}
