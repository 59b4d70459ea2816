// SPDX-License-Identifier: MIT
/*
 * A TCP peer with a hostile name, for t_agent_hostile_names.sh.  Its comm
 * is set with prctl(PR_SET_NAME) to bytes given in hex (so an ESC, a
 * newline or invalid UTF-8 gets through any shell), before any socket is
 * made, so the kernel names the owner with it; its command line is the
 * argv it was exec'ed with, whatever the caller put there.
 *
 *   hostile_peer server ADDR PORT COMMHEX [ARG...]
 *	listen, echo every connection until its EOF; runs until killed
 *   hostile_peer client ADDR PORT COMMHEX HOLD [ARG...]
 *	connect, send 4096 bytes, read them back, print
 *	{"pid": N, "bytes": 4096} and stay alive HOLD seconds with the
 *	connection open (the agent reads /proc/PID while it lives)
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK 4096

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void set_comm(const char *hex)
{
	char name[16] = "";
	size_t i, n = strlen(hex) / 2;
	unsigned int b;

	if (n > sizeof(name) - 1)
		n = sizeof(name) - 1;
	for (i = 0; i < n; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			die("comm hex");
		name[i] = (char)b;
	}
	if (prctl(PR_SET_NAME, name, 0, 0, 0))
		die("prctl");
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_port = htons((unsigned short)atoi(port));
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		die("address");
	return sa;
}

static size_t echo(int fd)
{
	char buf[CHUNK];
	ssize_t n;
	size_t total = 0;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, (size_t)n) != n)
			break;
		total += (size_t)n;
	}
	return total;
}

static void server(struct sockaddr_in sa)
{
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), c;

	if (s < 0 ||
	    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16))
		die("listen");
	for (;;) {
		c = accept(s, NULL, NULL);
		if (c < 0)
			die("accept");
		echo(c);
		close(c);
	}
}

static int client(struct sockaddr_in sa, int hold)
{
	char out[CHUNK], in[CHUNK];
	size_t got = 0;
	ssize_t n;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	memset(out, 'h', sizeof(out));
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	if (write(s, out, sizeof(out)) != (ssize_t)sizeof(out))
		die("write");
	while (got < sizeof(in) && (n = read(s, in, sizeof(in) - got)) > 0)
		got += (size_t)n;
	if (got != sizeof(in))
		die("short echo");
	printf("{\"pid\": %d, \"bytes\": %d}\n", (int)getpid(), CHUNK);
	fflush(stdout);
	sleep((unsigned int)hold);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "server")) {
		set_comm(argv[4]);
		server(addr_of(argv[2], argv[3]));
	}
	if (argc >= 6 && !strcmp(argv[1], "client")) {
		set_comm(argv[4]);
		return client(addr_of(argv[2], argv[3]), atoi(argv[5]));
	}
	fprintf(stderr, "usage: hostile_peer server|client ADDR PORT COMMHEX "
			"[HOLD] [ARG...]\n");
	return 1;
}
