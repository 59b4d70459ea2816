// SPDX-License-Identifier: MIT
/*
 * The kprobe variant's socket ids (bpf/conn.bpf.c, sk_id_new()): never
 * the socket's kernel address, unique, above the loader's base and below
 * 2^63 (where no kernel address is), gone from the hash at close.
 *
 * kprobes are not built into the kernels here, so the kprobe programs
 * cannot load; the id scheme is the variant's hash path (use_sk_hash),
 * which the tracepoint programs run just as well when the loader sets it.
 * So: the tracepoint variant's programs, loaded with use_sk_hash on and
 * attached, real loopback TCP connections, and the conn_hash map read
 * back, whose keys are the sockets' addresses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/agent.h"
#include "bpf/conn.h"
#include "check.h"
#include "common/util.h"
#include "conn.skel.h"

#define PAIRS 50

static int listen_lo(uint16_t *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s, PAIRS) || getsockname(s, (struct sockaddr *)&sa, &len))
		return -1;
	*port = ntohs(sa.sin_port);
	return s;
}

/* PAIRS connections to port, a byte each way; fds in cli[] and srv[]. */
static int connect_pairs(int ls, uint16_t port, int *cli, int *srv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char b = 'x';
	int i;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	for (i = 0; i < PAIRS; i++) {
		cli[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cli[i] < 0 ||
		    connect(cli[i], (struct sockaddr *)&sa, sizeof(sa)))
			return -1;
		srv[i] = accept(ls, NULL, NULL);
		if (srv[i] < 0 || write(cli[i], &b, 1) != 1 ||
		    read(srv[i], &b, 1) != 1 || write(srv[i], &b, 1) != 1 ||
		    read(cli[i], &b, 1) != 1)
			return -1;
	}
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Our ends in the hash: checks each id; returns how many there are. */
static size_t check_ids(int fd, uint16_t port, uint64_t base)
{
	uint64_t key, next, *prev = NULL, ids[4 * PAIRS];
	struct cw_conn c;
	size_t n = 0, i;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &c) ||
		    (c.lport != port && c.rport != port))
			continue;
		CHECK(c.cookie != key); /* the address never leaves */
		CHECK(c.cookie > base);
		CHECK(c.cookie < (1ULL << 63));
		CHECK(key >= (1ULL << 63)); /* the key is a kernel address */
		if (n < CW_ARRAY_SIZE(ids))
			ids[n++] = c.cookie;
	}
	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	for (i = 1; i < n; i++)
		CHECK(ids[i] != ids[i - 1]);
	return n;
}

int main(void)
{
	struct conn_bpf *skel;
	int cli[PAIRS], srv[PAIRS], ls, i, fd;
	uint64_t base = cw_now_real_ns();
	uint16_t port = 0;
	size_t n;

	if (geteuid() != 0) {
		printf("SKIP: needs root to load BPF programs\n");
		return 77;
	}
	skel = conn_bpf__open();
	CHECK(skel);
	if (!skel)
		return 1;
	CHECK(!cw_variant_prepare(skel, CW_ATTACH_TRACEPOINT, CW_MODE_AGGREGATE,
				  false, false));
	skel->rodata->use_sk_hash = true;
	skel->rodata->sk_id_base = base;
	skel->rodata->self_tgid = 0;
	bpf_map__set_max_entries(skel->maps.events, getpagesize());
	CHECK(!conn_bpf__load(skel));
	CHECK(!conn_bpf__attach(skel));
	fd = bpf_map__fd(skel->maps.conn_hash);

	ls = listen_lo(&port);
	CHECK(ls >= 0);
	CHECK(!connect_pairs(ls, port, cli, srv));
	n = check_ids(fd, port, base);
	/* Both ends of every pair, and the listener's own entry at most. */
	CHECK(n >= 2 * PAIRS);
	printf("%zu ends with ids\n", n);

	for (i = 0; i < PAIRS; i++) {
		close(cli[i]);
		close(srv[i]);
	}
	close(ls);
	usleep(200 * 1000); /* the close transitions run in softirq */
	n = check_ids(fd, port, base);
	CHECK(n == 0); /* removed at close: nothing left to reuse */
	conn_bpf__destroy(skel);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
