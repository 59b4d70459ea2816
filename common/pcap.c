// SPDX-License-Identifier: MIT
/*
 * The one packet-capture reader: `paths` stamps a message at its first
 * packet, `traces` needs its start, end and size, so the runs are tracked
 * here and handed out at either moment (common/pcap.h).
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/pcap.h"
#include "common/util.h"

/* An endpoint: 16 address bytes, then the port in network order. */
#define EP_LEN 18

struct run_key {
	uint8_t ep[2][EP_LEN]; /* lower endpoint first */
	uint8_t pad[4];	       /* zero: the table hashes 8 bytes at a time */
};

struct run {
	uint32_t conn;
	int8_t client;	  /* 0 lower, 1 higher, -1 not seen opening */
	int8_t sender;	  /* of the open run, -1 none */
	uint16_t port[2]; /* network order, lower endpoint first */
	uint64_t t0, t1, bytes;
	char name[2][INET6_ADDRSTRLEN];
};

struct reader {
	struct cw_htab conns;
	enum cw_pcap_when when;
	cw_pcap_msg_fn fn;
	void *ctx;
};

/* Offset of the IP header for the link types we read, or -1. */
static int ip_offset(int lt, const uint8_t *p, uint32_t len)
{
	uint32_t off;
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

/* Source and destination endpoints and payload length; -1 if not TCP. */
static int parse_tcp(const uint8_t *ip, uint32_t len, uint8_t ep[2][EP_LEN],
		     uint8_t *flags, int *family)
{
	uint32_t ihl, total, thl;

	memset(ep, 0, 2 * EP_LEN);
	if (len >= 20 && (ip[0] >> 4) == 4) {
		ihl = (ip[0] & 15u) * 4;
		total = (uint32_t)(ip[2] << 8 | ip[3]);
		if (ip[9] != 6 || ihl < 20 || total > len || total < ihl + 20)
			return -1;
		memcpy(ep[0], ip + 12, 4), memcpy(ep[1], ip + 16, 4);
		*family = AF_INET;
	} else if (len >= 40 && (ip[0] >> 4) == 6) {
		ihl = 40;
		total = 40 + (uint32_t)(ip[4] << 8 | ip[5]);
		if (ip[6] != 6 || total > len || total < ihl + 20)
			return -1;
		memcpy(ep[0], ip + 8, 16), memcpy(ep[1], ip + 24, 16);
		*family = AF_INET6;
	} else {
		return -1;
	}
	memcpy(ep[0] + 16, ip + ihl, 2), memcpy(ep[1] + 16, ip + ihl + 2, 2);
	thl = (ip[ihl + 12] >> 4) * 4u;
	*flags = ip[ihl + 13];
	if (thl < 20 || ihl + thl > total)
		return -1;
	return (int)(total - ihl - thl);
}

static int emit(struct reader *rd, const struct run *c, int s)
{
	struct cw_pcap_msg m = {.start_ns = c->t0,
				.end_ns = c->t1,
				.bytes = c->bytes,
				.conn = c->conn,
				.from = c->name[s],
				.to = c->name[!s],
				.from_port = ntohs(c->port[s]),
				.to_port = ntohs(c->port[!s])};
	int client = c->client;

	if (client < 0) { /* no SYN seen: the higher port is the client */
		uint16_t p0, p1;

		p0 = ntohs(c->port[0]), p1 = ntohs(c->port[1]);
		client = p1 > p0;
	}
	m.from_client = s == client;
	return rd->fn(rd->ctx, &m);
}

/* The open run, if any, becomes a message (at its end). */
static int run_end(struct reader *rd, struct run *c)
{
	int s = c->sender;

	if (s < 0)
		return 0;
	c->sender = -1;
	return rd->when == CW_PCAP_AT_END ? emit(rd, c, s) : 0;
}

static struct run *run_get(struct reader *rd, uint8_t ep[2][EP_LEN], int s,
			   int family)
{
	struct run_key k = {0};
	struct run *c;
	bool created;

	memcpy(k.ep[0], ep[s], EP_LEN), memcpy(k.ep[1], ep[!s], EP_LEN);
	c = cw_htab_upsert(&rd->conns, &k, &created);
	if (!c || !created)
		return c;
	c->conn = (uint32_t)rd->conns.len;
	c->client = c->sender = -1;
	memcpy(&c->port[0], k.ep[0] + 16, 2),
		memcpy(&c->port[1], k.ep[1] + 16, 2);
	inet_ntop(family, k.ep[0], c->name[0], sizeof(c->name[0]));
	inet_ntop(family, k.ep[1], c->name[1], sizeof(c->name[1]));
	return c;
}

static int one_packet(struct reader *rd, int lt, const struct pcap_pkthdr *h,
		      const uint8_t *p)
{
	uint8_t ep[2][EP_LEN], flags;
	int off = ip_offset(lt, p, h->caplen), len, fam, s, err;
	uint64_t ts = (uint64_t)h->ts.tv_sec * NSEC_PER_SEC +
		      (uint64_t)h->ts.tv_usec * NSEC_PER_USEC;
	struct run *c;

	if (off < 0)
		return 0;
	len = parse_tcp(p + off, h->caplen - (uint32_t)off, ep, &flags, &fam);
	if (len < 0 || !memcmp(ep[0], ep[1], 16))
		return 0; /* not TCP, or a host talking to itself */
	s = memcmp(ep[0], ep[1], EP_LEN) > 0; /* 1: the higher end sends */
	c = run_get(rd, ep, s, fam);
	if (!c)
		return cw_error("out of memory for connections");
	if ((flags & 0x12) == 0x02)
		c->client = (int8_t)s; /* SYN without ACK: the opener */
	if (len == 0)
		return 0;
	if (c->sender != s) {
		if ((err = run_end(rd, c)))
			return err;
		c->sender = (int8_t)s, c->t0 = ts, c->bytes = 0;
		c->t1 = ts, c->bytes = (uint64_t)len;
		return rd->when == CW_PCAP_AT_START ? emit(rd, c, s) : 0;
	}
	c->t1 = ts, c->bytes += (uint64_t)len;
	return 0;
}

int cw_pcap_read_messages(const char *path, enum cw_pcap_when when,
			  cw_pcap_msg_fn fn, void *ctx)
{
	struct reader rd = {.when = when, .fn = fn, .ctx = ctx};
	char eb[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *p;
	pcap_t *pc;
	int rc = 0, err = 0, lt;
	size_t i;

	pc = pcap_open_offline_with_tstamp_precision(
		path, PCAP_TSTAMP_PRECISION_MICRO, eb);
	if (!pc)
		return cw_error("unable to read pcap '%s': %s", path, eb);
	cw_htab_init(&rd.conns, sizeof(struct run_key), sizeof(struct run));
	lt = pcap_datalink(pc);
	if (lt != DLT_EN10MB && lt != DLT_LINUX_SLL && lt != DLT_RAW)
		err = cw_error("'%s': link type %s is not supported", path,
			       pcap_datalink_val_to_name(lt));
	while (!err && (rc = pcap_next_ex(pc, &h, &p)) == 1)
		err = one_packet(&rd, lt, h, p);
	if (!err && rc == PCAP_ERROR)
		err = cw_error("'%s': %s", path, pcap_geterr(pc));
	for (i = 0; !err && i < rd.conns.len; i++)
		err = run_end(&rd, cw_htab_val(&rd.conns, i));
	cw_htab_release(&rd.conns);
	pcap_close(pc);
	return err;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcasecmp(s + a - b, suf);
}

bool cw_pcap_is_capture(const unsigned char *head, size_t n, const char *path)
{
	uint32_t v;

	if (n >= 4) {
		memcpy(&v, head, 4);
		if (v == 0xa1b2c3d4 || v == 0xd4c3b2a1 || v == 0xa1b23c4d ||
		    v == 0x4d3cb2a1 || v == 0x0a0d0d0a)
			return true;
	}
	return path &&
	       (has_suffix(path, ".pcap") || has_suffix(path, ".pcapng"));
}
