// SPDX-License-Identifier: MIT
/*
 * The hot-path cost of a send and a recv, as CPU time per operation: a
 * loopback TCP connection, a writer thread doing N send() of S bytes and a
 * reader thread recv()-ing them, both in this process (pin it to one CPU
 * with taskset -c 0 so both ends share it).  Prints the process's CPU time
 * (user + system, getrusage) per send+recv pair in ns.
 *
 *	taskset -c 0 pingpong SIZE COUNT
 *	taskset -c 0 pingpong -u SIZE COUNT
 *	taskset -c 0 pingpong -r SIZE COUNT
 *
 * What a hook on sock_send_length / sock_recv_length costs shows up here as
 * ns per pair, free of the throughput noise of short iperf3 runs.
 *
 * With -u, UDP: two unconnected loopback sockets and one thread doing
 * COUNT sendto() of a SIZE datagram and the recvfrom() that takes it, in
 * turn, so no datagram is ever dropped for a full receive buffer.  That
 * prices what the agent's cgroup_skb programs cost per packet (both
 * directions run: egress on the sendto, ingress on the delivery).
 *
 * With -r, request/response: COUNT times, one thread sends SIZE bytes and
 * waits for SIZE back, which a second thread sends once it has read the
 * request; the figure is per exchange (two sends, two recvs).  Every call
 * flips its socket's direction, so every call starts a message: the
 * per-call programs' message path, where a plain stream only counts.
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
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Reads until every byte the writer sends has arrived. */
static void *reader(void *arg)
{
	int fd = *(int *)arg;
	long long want = (long long)size * count;
	char *buf = malloc(size);
	ssize_t n;

	if (!buf)
		die("malloc");
	while (want > 0) {
		n = recv(fd, buf, size, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("recv");
		want -= n;
	}
	free(buf);
	return NULL;
}

static void send_all(int fd, const char *buf)
{
	size_t off = 0;
	ssize_t n;

	while (off < size) {
		n = send(fd, buf + off, size - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("send");
		off += (size_t)n;
	}
}

static void recv_all(int fd, char *buf)
{
	size_t off = 0;
	ssize_t n;

	while (off < size) {
		n = recv(fd, buf + off, size - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("recv");
		off += (size_t)n;
	}
}

/* -r: reads each request whole, then sends the response. */
static void *responder(void *arg)
{
	int fd = *(int *)arg;
	char *buf = malloc(size);
	long i;

	if (!buf)
		die("malloc");
	for (i = 0; i < count; i++) {
		recv_all(fd, buf);
		send_all(fd, buf);
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

/* A connected pair over 127.0.0.1: *w writes, *r reads. */
static void connect_pair(int *w, int *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &len))
		die("listen");
	*w = socket(AF_INET, SOCK_STREAM, 0);
	if (*w < 0 || connect(*w, (void *)&a, sizeof(a)))
		die("connect");
	*r = accept(l, NULL, NULL);
	if (*r < 0)
		die("accept");
	close(l);
}

/* UDP: COUNT sendto/recvfrom pairs in turn; CPU ns per pair. */
static double udp_pairs(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_DGRAM, 0),
	    r = socket(AF_INET, SOCK_DGRAM, 0);
	char *buf = calloc(1, size);
	long long t0, t1;
	ssize_t n;
	long i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!buf || s < 0 || r < 0 || bind(r, (void *)&a, sizeof(a)) ||
	    getsockname(r, (void *)&a, &len))
		die("udp socket");
	t0 = cpu_ns();
	for (i = 0; i < count; i++) {
		if (sendto(s, buf, size, 0, (void *)&a, sizeof(a)) !=
		    (ssize_t)size)
			die("sendto");
		do
			n = recvfrom(r, buf, size, 0, NULL, NULL);
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)size)
			die("recvfrom");
	}
	t1 = cpu_ns();
	close(s);
	close(r);
	free(buf);
	return (double)(t1 - t0) / (double)count;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long long t0, t1;
	char *buf;
	int w, r, one = 1;
	long i;
	int udp = argc == 4 && !strcmp(argv[1], "-u");
	int rr = argc == 4 && !strcmp(argv[1], "-r");
	int opt = udp || rr;

	if (argc != 3 + opt || (size = strtoul(argv[1 + opt], NULL, 10)) == 0 ||
	    (count = strtol(argv[2 + opt], NULL, 10)) <= 0 ||
	    (udp && size > 65507)) {
		fprintf(stderr, "usage: pingpong [-u | -r] SIZE COUNT\n");
		return 2;
	}
	if (udp) {
		printf("%.0f\n", udp_pairs());
		return 0;
	}
	buf = calloc(1, size);
	if (!buf)
		die("calloc");
	connect_pair(&w, &r);
	setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(r, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = cpu_ns();
	if (pthread_create(&t, NULL, rr ? responder : reader, &r))
		die("pthread_create");
	for (i = 0; i < count; i++) {
		send_all(w, buf);
		if (rr)
			recv_all(w, buf);
	}
	pthread_join(t, NULL);
	t1 = cpu_ns();
	printf("%.0f\n", (double)(t1 - t0) / (double)count);
	close(w);
	close(r);
	free(buf);
	return 0;
}
