// SPDX-License-Identifier: MIT
/*
 * TCP messages from a pcap, for traces: per connection, a message is a run
 * of payload in one direction (start at its first packet, end at its
 * last), seen leaving the sender and arriving at the receiver.  The side
 * that sent the SYN is the client; without a SYN in the capture, the side
 * with the higher port.  Nodes are named by address.
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "traces/traces.h"

struct pconn {
	uint8_t key[36]; /* lower endpoint, then higher: addr16 port2 */
	uint32_t id;	 /* 0: free slot */
	int8_t client;	 /* 0 lower, 1 higher, -1 unknown */
	int8_t sender;	 /* of the open run, -1 none */
	uint64_t t0, t1, bytes;
	char name[2][INET6_ADDRSTRLEN];
};

struct ptable {
	struct pconn *c;
	size_t n, cap;
};

static uint64_t key_hash(const uint8_t *k)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < 36; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	return h;
}

static struct pconn *conn_get(struct ptable *tb, const uint8_t *key)
{
	size_t i, mask;

	if (2 * (tb->n + 1) > tb->cap) {
		struct ptable nt = {.cap = tb->cap ? 2 * tb->cap : 256};

		nt.c = calloc(nt.cap, sizeof(*nt.c));
		if (!nt.c)
			return NULL;
		for (i = 0; i < tb->cap; i++) {
			size_t j = key_hash(tb->c[i].key) & (nt.cap - 1);

			if (!tb->c[i].id)
				continue;
			while (nt.c[j].id)
				j = (j + 1) & (nt.cap - 1);
			nt.c[j] = tb->c[i];
		}
		free(tb->c);
		tb->c = nt.c, tb->cap = nt.cap;
	}
	mask = tb->cap - 1;
	for (i = key_hash(key) & mask; tb->c[i].id; i = (i + 1) & mask)
		if (!memcmp(tb->c[i].key, key, 36))
			return &tb->c[i];
	memcpy(tb->c[i].key, key, 36);
	tb->c[i].id = (uint32_t)++tb->n;
	tb->c[i].client = tb->c[i].sender = -1;
	return &tb->c[i];
}

/* The open run becomes a message at both ends. */
static int flush(struct cw_traces *t, struct pconn *c)
{
	struct cw_tmsg m = {.start_ns = c->t0,
			    .end_ns = c->t1,
			    .bytes = c->bytes,
			    .conn = c->id};
	int s = c->sender, a, b;

	if (s < 0)
		return 0;
	c->sender = -1;
	if (c->client < 0) {
		uint16_t p0, p1;

		memcpy(&p0, c->key + 16, 2), memcpy(&p1, c->key + 34, 2);
		c->client = ntohs(p1) > ntohs(p0);
	}
	a = cw_traces_node(t, c->name[s]);
	b = cw_traces_node(t, c->name[!s]);
	if (a < 0 || b < 0)
		return cw_error("out of memory for node names");
	m.node = (uint32_t)a, m.peer = (uint32_t)b, m.dir = CW_TDIR_OUT;
	m.role = s == c->client ? CW_TROLE_CONNECTED : CW_TROLE_ACCEPTED;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.node = (uint32_t)b, m.peer = (uint32_t)a, m.dir = CW_TDIR_IN;
	m.role = s == c->client ? CW_TROLE_ACCEPTED : CW_TROLE_CONNECTED;
	return cw_traces_add_msg(t, &m);
}

static int ip_offset(int lt, const uint8_t *p, uint32_t len)
{
	uint32_t off = 0;
	uint16_t type;

	if (lt == DLT_RAW)
		return 0;
	off = lt == DLT_EN10MB ? 12 : 14;
	if (len < off + 2)
		return -1;
	type = (uint16_t)(p[off] << 8 | p[off + 1]);
	if (lt == DLT_EN10MB && type == 0x8100 && len >= off + 6)
		off += 4, type = (uint16_t)(p[off] << 8 | p[off + 1]);
	return type == 0x0800 || type == 0x86dd ? (int)off + 2 : -1;
}

/* Endpoints (addr16 port2 each) and payload length; -1 if not TCP. */
static int parse_tcp(const uint8_t *ip, uint32_t len, uint8_t ep[2][18],
		     uint8_t *flags, int *family)
{
	uint32_t ihl, total, thl, n = 4;

	memset(ep, 0, 36);
	if (len >= 20 && (ip[0] >> 4) == 4) {
		ihl = (ip[0] & 15u) * 4;
		total = (uint32_t)(ip[2] << 8 | ip[3]);
		if (ip[9] != 6 || ihl < 20 || total > len || total < ihl + 20)
			return -1;
		memcpy(ep[0], ip + 12, 4), memcpy(ep[1], ip + 16, 4);
	} else if (len >= 40 && (ip[0] >> 4) == 6) {
		ihl = 40, n = 16;
		total = 40 + (uint32_t)(ip[4] << 8 | ip[5]);
		if (ip[6] != 6 || total > len || total < ihl + 20)
			return -1;
		memcpy(ep[0], ip + 8, 16), memcpy(ep[1], ip + 24, 16);
	} else {
		return -1;
	}
	*family = n == 4 ? AF_INET : AF_INET6;
	memcpy(ep[0] + 16, ip + ihl, 2), memcpy(ep[1] + 16, ip + ihl + 2, 2);
	thl = (ip[ihl + 12] >> 4) * 4u;
	*flags = ip[ihl + 13];
	if (thl < 20 || ihl + thl > total)
		return -1;
	return (int)(total - ihl - thl);
}

static int one_packet(struct cw_traces *t, struct ptable *tb, int lt,
		      const struct pcap_pkthdr *h, const uint8_t *p)
{
	uint8_t ep[2][18], key[36], flags;
	int off = ip_offset(lt, p, h->caplen), len, fam, s;
	uint64_t ts = (uint64_t)h->ts.tv_sec * NSEC_PER_SEC +
		      (uint64_t)h->ts.tv_usec * NSEC_PER_USEC;
	struct pconn *c;

	if (off < 0)
		return 0;
	len = parse_tcp(p + off, h->caplen - (uint32_t)off, ep, &flags, &fam);
	if (len < 0 || !memcmp(ep[0], ep[1], 16))
		return 0; /* not TCP, or one host talking to itself */
	s = memcmp(ep[0], ep[1], 18) > 0; /* the sender is the higher end */
	memcpy(key, ep[s], 18), memcpy(key + 18, ep[!s], 18);
	c = conn_get(tb, key);
	if (!c)
		return cw_error("out of memory for connections");
	if (!c->name[0][0]) {
		inet_ntop(fam, ep[s], c->name[0], sizeof(c->name[0]));
		inet_ntop(fam, ep[!s], c->name[1], sizeof(c->name[1]));
	}
	if ((flags & 0x12) == 0x02)
		c->client = (int8_t)s; /* SYN without ACK: the opener */
	if (len == 0)
		return 0;
	if (c->sender != s) {
		if (flush(t, c))
			return -1;
		c->sender = (int8_t)s, c->t0 = ts, c->bytes = 0;
	}
	c->t1 = ts, c->bytes += (uint64_t)len;
	return 0;
}

int cw_traces_read_pcap(struct cw_traces *t, const char *path)
{
	char eb[PCAP_ERRBUF_SIZE];
	struct ptable tb = {0};
	struct pcap_pkthdr *h;
	const u_char *p;
	pcap_t *pc;
	int rc = 0, err = 0, lt;
	size_t i;

	pc = pcap_open_offline_with_tstamp_precision(
		path, PCAP_TSTAMP_PRECISION_MICRO, eb);
	if (!pc)
		return cw_error("unable to read pcap '%s': %s", path, eb);
	lt = pcap_datalink(pc);
	if (lt != DLT_EN10MB && lt != DLT_LINUX_SLL && lt != DLT_RAW)
		err = cw_error("'%s': link type %s is not supported", path,
			       pcap_datalink_val_to_name(lt));
	while (!err && (rc = pcap_next_ex(pc, &h, &p)) == 1)
		err = one_packet(t, &tb, lt, h, p);
	if (!err && rc == PCAP_ERROR)
		err = cw_error("'%s': %s", path, pcap_geterr(pc));
	for (i = 0; !err && i < tb.cap; i++)
		if (tb.c[i].id)
			err = flush(t, &tb.c[i]);
	if (!err && !t->n_msgs)
		err = cw_error("'%s': no TCP payload", path);
	free(tb.c);
	pcap_close(pc);
	return err;
}
