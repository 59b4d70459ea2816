// SPDX-License-Identifier: MIT
/*
 * The cost of request-reply traffic, where every call is a new message:
 * a loopback TCP connection, a client thread sending a request of SIZE
 * bytes and reading the reply, a server thread reading it and replying
 * with SIZE bytes, COUNT times.  Pin it to one CPU (taskset -c 0) so both
 * ends share it.  Prints the process's CPU time (user + system,
 * getrusage) per round trip in ns: two sends, two recvs, four messages.
 *
 *	taskset -c 0 reqrep SIZE COUNT
 *
 * bench/pingpong.c streams one way, so a per-message program there runs
 * its cheap path (the same message goes on); here it runs its costly one
 * (a message ends, a new one starts) on every call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static size_t size;
static long count;

static void die(const char *what)
{
	fprintf(stderr, "reqrep: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Read exactly n bytes. */
static void read_all(int fd, char *buf, size_t n)
{
	ssize_t r;

	while (n) {
		r = recv(fd, buf, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("recv");
		n -= (size_t)r, buf += r;
	}
}

static void write_all(int fd, const char *buf, size_t n)
{
	ssize_t r;

	while (n) {
		r = send(fd, buf, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("send");
		n -= (size_t)r, buf += r;
	}
}

static void *server(void *arg)
{
	int fd = *(int *)arg;
	char *buf = calloc(1, size);
	long i;

	if (!buf)
		die("calloc");
	for (i = 0; i < count; i++) {
		read_all(fd, buf, size);
		write_all(fd, buf, size);
	}
	free(buf);
	return NULL;
}

static long long cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int l, c, s, one = 1;
	long long t0, t1;
	pthread_t t;
	char *buf;
	long i;

	if (argc != 3 || (size = strtoul(argv[1], NULL, 10)) == 0 ||
	    (count = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: reqrep SIZE COUNT\n");
		return 2;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &len))
		die("listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (void *)&a, sizeof(a)))
		die("connect");
	s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	buf = calloc(1, size);
	if (!buf || pthread_create(&t, NULL, server, &s))
		die("server thread");
	t0 = cpu_ns();
	for (i = 0; i < count; i++) {
		write_all(c, buf, size);
		read_all(c, buf, size);
	}
	t1 = cpu_ns();
	pthread_join(t, NULL);
	printf("%.0f\n", (double)(t1 - t0) / (double)count);
	free(buf);
	return 0;
}
