// SPDX-License-Identifier: MIT
/*
 * Messages from a packet capture.  A passive tap sees both ends of every
 * connection with one clock, so each message is stamped once and recorded
 * as leaving its sender and arriving at its receiver at that instant.
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "paths/paths.h"

struct tcp_conn {
	uint8_t key[36]; /* lower endpoint first: addr16 port2, addr16 port2 */
	int last_sender; /* 0 lower, 1 upper, -1 none yet */
	bool used;
};

struct conn_table {
	struct tcp_conn *c;
	size_t n, cap;
};

struct endpoint {
	uint8_t addr[16];
	uint16_t port;
	int family;
};

static uint64_t key_hash(const uint8_t *k)
{
	uint64_t h = 1469598103934665603ULL;
	int i;

	for (i = 0; i < 36; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	return h;
}

/*
 * Doubles the open-addressed table by rehashing into a new one: not an
 * array that grows in place, so CW_GROW does not fit; calloc checks the
 * product and the doubling is checked here.
 */
static int table_grow(struct conn_table *tb)
{
	size_t cap = tb->cap ? tb->cap * 2 : 256, i, j;
	struct tcp_conn *c;

	if (cap < tb->cap)
		return -1;
	c = calloc(cap, sizeof(*c));
	if (!c)
		return -1;
	for (i = 0; i < tb->cap; i++) {
		if (!tb->c[i].used)
			continue;
		j = key_hash(tb->c[i].key) & (cap - 1);
		while (c[j].used)
			j = (j + 1) & (cap - 1);
		c[j] = tb->c[i];
	}
	free(tb->c);
	tb->c = c;
	tb->cap = cap;
	return 0;
}

static struct tcp_conn *conn_get(struct conn_table *tb, const uint8_t *key)
{
	size_t j;

	if ((tb->n + 1) * 2 > tb->cap && table_grow(tb))
		return NULL;
	j = key_hash(key) & (tb->cap - 1);
	while (tb->c[j].used && memcmp(tb->c[j].key, key, 36))
		j = (j + 1) & (tb->cap - 1);
	if (!tb->c[j].used) {
		tb->c[j].used = true;
		memcpy(tb->c[j].key, key, 36);
		tb->c[j].last_sender = -1;
		tb->n++;
	}
	return &tb->c[j];
}

static void ep_name(const struct endpoint *e, char *buf, size_t len)
{
	inet_ntop(e->family, e->addr, buf, (socklen_t)len);
}

/* Offset of the IP header for the link types we read, or -1. */
static int ip_offset(int linktype, const uint8_t *p, uint32_t caplen)
{
	int off;
	uint16_t et;

	switch (linktype) {
	case DLT_EN10MB:
		off = 12;
		break;
	case DLT_LINUX_SLL:
		off = 14;
		break;
	case DLT_RAW:
		return 0;
	default:
		return -1;
	}
	if (caplen < (uint32_t)off + 2)
		return -1;
	et = (uint16_t)(p[off] << 8 | p[off + 1]);
	if (et == 0x8100 && linktype == DLT_EN10MB) {
		off += 4;
		if (caplen < (uint32_t)off + 2)
			return -1;
		et = (uint16_t)(p[off] << 8 | p[off + 1]);
	}
	return et == 0x0800 || et == 0x86dd ? off + 2 : -1;
}

/* TCP payload length and the two endpoints, or -1 if not TCP. */
static int parse_tcp(const uint8_t *ip, uint32_t len, struct endpoint *s,
		     struct endpoint *d)
{
	uint32_t ihl, total, thl;

	memset(s, 0, sizeof(*s));
	memset(d, 0, sizeof(*d));
	if (len >= 20 && (ip[0] >> 4) == 4) {
		ihl = (ip[0] & 15u) * 4;
		total = (uint32_t)(ip[2] << 8 | ip[3]);
		if (ip[9] != 6 || ihl < 20 || total > len || total < ihl + 20)
			return -1;
		s->family = d->family = AF_INET;
		memcpy(s->addr, ip + 12, 4);
		memcpy(d->addr, ip + 16, 4);
	} else if (len >= 40 && (ip[0] >> 4) == 6) {
		ihl = 40;
		total = 40 + (uint32_t)(ip[4] << 8 | ip[5]);
		if (ip[6] != 6 || total > len || total < ihl + 20)
			return -1;
		s->family = d->family = AF_INET6;
		memcpy(s->addr, ip + 8, 16);
		memcpy(d->addr, ip + 24, 16);
	} else {
		return -1;
	}
	s->port = (uint16_t)(ip[ihl] << 8 | ip[ihl + 1]);
	d->port = (uint16_t)(ip[ihl + 2] << 8 | ip[ihl + 3]);
	thl = (ip[ihl + 12] >> 4) * 4u;
	if (thl < 20 || ihl + thl > total)
		return -1;
	return (int)(total - ihl - thl);
}

static int add_message(struct cw_msgtrace *t, uint64_t ts,
		       const struct endpoint *s, const struct endpoint *d,
		       uint64_t bytes)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int from, to;

	ep_name(s, a, sizeof(a));
	ep_name(d, b, sizeof(b));
	if (!strcmp(a, b))
		return 0; /* loopback chatter has no hop to infer */
	from = cw_msgtrace_node(t, a);
	to = cw_msgtrace_node(t, b);
	if (from < 0 || to < 0)
		return cw_error("out of memory");
	if (cw_msgtrace_add(t, ts, (uint32_t)from, (uint32_t)to, CW_MSG_OUT,
			    bytes))
		return -1;
	return cw_msgtrace_add(t, ts, (uint32_t)to, (uint32_t)from, CW_MSG_IN,
			       bytes);
}

static int one_packet(struct cw_msgtrace *t, struct conn_table *tb,
		      int linktype, const struct pcap_pkthdr *h,
		      const uint8_t *p)
{
	struct endpoint s, d;
	uint8_t key[36];
	struct tcp_conn *c;
	int off = ip_offset(linktype, p, h->caplen), payload, sender;
	uint64_t ts;

	if (off < 0)
		return 0;
	payload = parse_tcp(p + off, h->caplen - (uint32_t)off, &s, &d);
	if (payload <= 0)
		return 0;
	sender = memcmp(&s, &d, sizeof(s)) > 0;
	memcpy(key, sender ? d.addr : s.addr, 16);
	memcpy(key + 16, sender ? &d.port : &s.port, 2);
	memcpy(key + 18, sender ? s.addr : d.addr, 16);
	memcpy(key + 34, sender ? &s.port : &d.port, 2);
	c = conn_get(tb, key);
	if (!c)
		return cw_error("out of memory");
	if (c->last_sender == sender)
		return 0; /* same direction: the message continues */
	c->last_sender = sender;
	ts = (uint64_t)h->ts.tv_sec * 1000000000ULL +
	     (uint64_t)h->ts.tv_usec * 1000ULL;
	return add_message(t, ts, &s, &d, (uint64_t)payload);
}

int cw_msgtrace_read_pcap(struct cw_msgtrace *t, const char *path)
{
	char eb[PCAP_ERRBUF_SIZE];
	struct conn_table tb = {0};
	struct pcap_pkthdr *h;
	const u_char *p;
	pcap_t *pc;
	int rc, err = 0, lt;

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
	free(tb.c);
	pcap_close(pc);
	return err;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcasecmp(s + a - b, suf);
}

static bool is_pcap(FILE *fp, const char *path)
{
	uint8_t m[4] = {0};
	uint32_t v;
	size_t n = fread(m, 1, 4, fp);

	rewind(fp);
	memcpy(&v, m, 4);
	if (n == 4 && (v == 0xa1b2c3d4 || v == 0xd4c3b2a1 || v == 0xa1b23c4d ||
		       v == 0x4d3cb2a1 || v == 0x0a0d0d0a))
		return true;
	return has_suffix(path, ".pcap") || has_suffix(path, ".pcapng");
}

int cw_msgtrace_read_file(struct cw_msgtrace *t, const char *path)
{
	FILE *fp = fopen(path, "r");
	int err;

	if (!fp)
		return cw_error("unable to open '%s': %m", path);
	if (is_pcap(fp, path)) {
		fclose(fp);
		err = cw_msgtrace_read_pcap(t, path);
	} else {
		err = cw_msgtrace_read_csv(t, fp, path);
		fclose(fp);
	}
	return err ? err : cw_msgtrace_finish(t, path);
}
