// SPDX-License-Identifier: MIT
/*
 * io_uring client for the byte-truth tests (tests/lib/bytes_truth.py's
 * uring pattern): connects to HOST PORT, sends SEND bytes by
 * IORING_OP_SEND, shuts its side, reads to EOF by IORING_OP_RECV, and
 * prints one truth line (JSON) with what its own completions returned.
 * Raw syscalls: no liburing here.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/io_uring.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct io_uring_sqe *sqes;
static unsigned *sq_tail, *sq_array, *cq_head, *cq_tail, cq_mask;
static struct io_uring_cqe *cqes;
static int ring;

static int ring_init(void)
{
	struct io_uring_params p = {0};
	char *sq, *cq;

	ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0)
		return -1;
	sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned),
		  PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQ_RING);
	cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
		  PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_CQ_RING);
	sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe),
		    PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -1;
	sq_tail = (unsigned *)(sq + p.sq_off.tail);
	sq_array = (unsigned *)(sq + p.sq_off.array);
	cq_head = (unsigned *)(cq + p.cq_off.head);
	cq_tail = (unsigned *)(cq + p.cq_off.tail);
	cq_mask = *(unsigned *)(cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

/* One operation, submitted and waited for: its result. */
static int ring_io(int op, int fd, void *buf, unsigned len)
{
	unsigned t = *sq_tail, h;
	struct io_uring_sqe *e = &sqes[0];
	int res;

	memset(e, 0, sizeof(*e));
	e->opcode = op;
	e->fd = fd;
	e->addr = (unsigned long)buf;
	e->len = len;
	sq_array[0] = 0;
	__atomic_store_n(sq_tail, t + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0)
		return -1;
	h = *cq_head;
	while (h == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE))
		;
	res = cqes[h & cq_mask].res;
	__atomic_store_n(cq_head, h + 1, __ATOMIC_RELEASE);
	return res;
}

int main(int argc, char **argv)
{
	static char buf[65536];
	struct addrinfo *ai, hint = {.ai_socktype = SOCK_STREAM};
	struct sockaddr_storage la, ra;
	socklen_t ll = sizeof(la), rl = sizeof(ra);
	char lh[64], rh[64], lp[8], rp[8];
	long left, wrote = 0, got = 0, cout = 0, cin = 0;
	int fd, n;

	if (argc != 4 || getaddrinfo(argv[1], argv[2], &hint, &ai)) {
		fprintf(stderr, "usage: uring_client HOST PORT BYTES\n");
		return 2;
	}
	left = atol(argv[3]);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) || ring_init()) {
		perror("uring_client");
		return 1;
	}
	getsockname(fd, (struct sockaddr *)&la, &ll);
	getpeername(fd, (struct sockaddr *)&ra, &rl);
	memset(buf, 'u', sizeof(buf));
	while (left > 0) {
		n = ring_io(IORING_OP_SEND, fd, buf,
			    left < (long)sizeof(buf) ? left : sizeof(buf));
		if (n <= 0)
			break;
		wrote += n, left -= n, cout++;
	}
	shutdown(fd, SHUT_WR);
	while ((n = ring_io(IORING_OP_RECV, fd, buf, sizeof(buf))) > 0)
		got += n, cin++;
	getnameinfo((struct sockaddr *)&la, ll, lh, sizeof(lh), lp, sizeof(lp),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	getnameinfo((struct sockaddr *)&ra, rl, rh, sizeof(rh), rp, sizeof(rp),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	printf("{\"pattern\": \"uring\", \"role\": \"client\", \"laddr\": \"%s\", "
	       "\"lport\": %s, \"raddr\": \"%s\", \"rport\": %s, \"written\": %ld, "
	       "\"read\": %ld, \"pid\": %d, \"calls_out\": %ld, \"calls_in\": %ld, "
	       "\"msgs_out\": %d, \"msgs_in\": %d}\n",
	       lh, lp, rh, rp, wrote, got, getpid(), cout, cin, cout > 0,
	       cin > 0);
	close(fd);
	return n < 0 ? 1 : 0;
}
