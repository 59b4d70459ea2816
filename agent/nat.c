// SPDX-License-Identifier: MIT
/*
 * DNAT undone from conntrack's reply tuple: the cache and decision logic,
 * and the netlink lookup (libnetfilter_conntrack) in the agent's namespace.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/nat.h"
#include "common/htab.h"
#include "common/log.h"

/* What is known about one client end: the real server (dnat) and the
 * client as the server sees it (snat), where they differ from the socket's. */
struct nat_entry {
	uint64_t used; /* tick of the last use: the bound drops the oldest */
	struct cw_addr addr, laddr;
	uint16_t port, lport;
	bool dnat, snat;
};

struct ct_backend;

struct cw_nat {
	cw_ct_lookup_fn fn;
	void *ctx;
	struct ct_backend *backend; /* owned, when cw_nat_open made it */
	struct cw_htab cache;	    /* cookie -> struct nat_entry */
	size_t cap;
	uint64_t tick;
	struct cw_nat_stats st;
};

struct cw_nat *cw_nat_new(cw_ct_lookup_fn fn, void *ctx, size_t cap)
{
	struct cw_nat *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->fn = fn;
	n->ctx = ctx;
	n->cap = cap ? cap : CW_NAT_CACHE_MAX;
	cw_htab_init(&n->cache, sizeof(uint64_t), sizeof(struct nat_entry));
	return n;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Drop the least recently used half (at least one entry). */
static void evict(struct cw_nat *n)
{
	size_t len = n->cache.len, i, drop = len - len / 2;
	uint64_t *ticks, limit, key;
	struct nat_entry *e;

	if (!len)
		return;
	ticks = malloc(len * sizeof(*ticks));
	if (!ticks) {
		/* No room to choose: forget everything. */
		n->st.evicted += len;
		cw_htab_release(&n->cache);
		cw_htab_init(&n->cache, sizeof(uint64_t),
			     sizeof(struct nat_entry));
		return;
	}
	for (i = 0; i < len; i++)
		ticks[i] =
			((struct nat_entry *)cw_htab_val(&n->cache, i))->used;
	qsort(ticks, len, sizeof(*ticks), cmp_u64);
	limit = ticks[drop - 1];
	free(ticks);
	/* Backwards: a delete moves the last entry, already seen, to i. */
	for (i = len; i-- > 0;) {
		e = cw_htab_val(&n->cache, i);
		if (e->used > limit)
			continue;
		key = *(uint64_t *)cw_htab_key(&n->cache, i);
		cw_htab_delete(&n->cache, &key);
		n->st.evicted++;
	}
}

static bool wanted(const struct cw_conn_record *r)
{
	return r->protocol == IPPROTO_TCP && r->role == CW_REC_ROLE_CLIENT &&
	       r->raddr.family && r->rport;
}

/* The cached answer for r's end, looked up first if there is none. */
static bool lookup(struct cw_nat *n, const struct cw_conn_record *r,
		   struct nat_entry *out)
{
	struct cw_ct_tuple t = {0};
	struct nat_entry *e, v = {0};
	struct cw_ct_reply rep = {0};

	e = cw_htab_get(&n->cache, &r->cookie);
	if (e) {
		e->used = ++n->tick;
		*out = *e;
		return true;
	}
	t.netns = r->netns;
	t.protocol = r->protocol;
	t.src = r->laddr;
	t.dst = r->raddr;
	t.sport = r->lport;
	t.dport = r->rport;
	n->st.lookups++;
	switch (n->fn(n->ctx, &t, &rep)) {
	case CW_CT_FOUND:
		if (rep.src.family && rep.sport &&
		    (cw_addr_cmp(&rep.src, &r->raddr) ||
		     rep.sport != r->rport)) {
			v.dnat = true;
			v.addr = rep.src;
			v.port = rep.sport;
			n->st.undone++;
		}
		/* Where replies go is where the server sees the client. */
		if (rep.dst.family && rep.dport &&
		    (cw_addr_cmp(&rep.dst, &r->laddr) ||
		     rep.dport != r->lport)) {
			v.snat = true;
			v.laddr = rep.dst;
			v.lport = rep.dport;
			n->st.snat++;
		}
		break;
	case CW_CT_ERROR:
		n->st.errors++;
		break;
	case CW_CT_NONE:
		break;
	}
	if (n->cache.len >= n->cap)
		evict(n);
	v.used = ++n->tick;
	e = cw_htab_upsert(&n->cache, &r->cookie, NULL);
	if (e)
		*e = v;
	*out = v;
	return true;
}

void cw_nat_resolve(struct cw_nat *n, const struct cw_conn_record *r)
{
	struct nat_entry e;

	if (n && wanted(r))
		lookup(n, r, &e);
}

void cw_nat_apply(struct cw_nat *n, struct cw_conn_record *r)
{
	struct nat_entry e;

	if (!n || !wanted(r) || !lookup(n, r, &e))
		return;
	if (e.dnat) {
		r->raddr = e.addr;
		r->rport = e.port;
		r->flags |= CW_REC_NAT;
	}
	if (e.snat) {
		r->laddr = e.laddr;
		r->lport = e.lport;
		r->flags |= CW_REC_NAT;
	}
	if (r->flags & CW_REC_CLOSED)
		cw_htab_delete(&n->cache, &r->cookie);
}

void cw_nat_stats(const struct cw_nat *n, struct cw_nat_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	*st = n->st;
	st->cached = n->cache.len;
}

/* ---- conntrack over netlink ------------------------------------------ */

#define CT_MAX_NS 2

struct ct_ns {
	uint32_t inode;
	struct nfct_handle *h;
	bool off;   /* ctnetlink answered "not supported": no more queries */
	bool stale; /* an answer may be left over: drain before the next */
};

struct ct_backend {
	struct ct_ns ns[CT_MAX_NS];
	int n;
	bool warned;
	/* The question, and the answer the callback fills in. */
	const struct cw_ct_tuple *ask;
	bool got, mismatch;
	struct cw_ct_reply reply;
};

/* One address of ct's reply tuple (v4 and v6 attributes) into *a. */
static void ct_addr(struct nf_conntrack *ct, int family,
		    enum nf_conntrack_attr v4, enum nf_conntrack_attr v6,
		    struct cw_addr *a)
{
	uint8_t raw[16];
	uint32_t u;

	memset(a, 0, sizeof(*a));
	if (family == 4 && nfct_attr_is_set(ct, v4) > 0) {
		u = nfct_get_attr_u32(ct, v4);
		a->family = 4;
		memcpy(a->bytes, &u, 4);
	} else if (family == 6 && nfct_attr_is_set(ct, v6) > 0) {
		memcpy(raw, nfct_get_attr(ct, v6), 16);
		cw_addr_from_raw(a, AF_INET6, raw);
	}
}

static uint16_t ct_port(struct nf_conntrack *ct, enum nf_conntrack_attr at)
{
	return nfct_attr_is_set(ct, at) > 0 ? ntohs(nfct_get_attr_u16(ct, at))
					    : 0;
}

enum cw_ct_answer cw_nat_ct_reply(struct nf_conntrack *ct,
				  const struct cw_ct_tuple *t,
				  struct cw_ct_reply *rep)
{
	/*
	 * Only the entry asked for: an answer left over from a query that
	 * timed out must not be taken for this one's.
	 */
	if (nfct_get_attr_u8(ct, ATTR_L4PROTO) != t->protocol ||
	    ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_SRC)) != t->sport ||
	    ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_DST)) != t->dport)
		return CW_CT_ANSWER_OTHER;
	ct_addr(ct, t->src.family, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV6_SRC,
		&rep->src);
	ct_addr(ct, t->src.family, ATTR_REPL_IPV4_DST, ATTR_REPL_IPV6_DST,
		&rep->dst);
	if (!rep->src.family && !rep->dst.family)
		return CW_CT_ANSWER_EMPTY;
	rep->sport = ct_port(ct, ATTR_REPL_PORT_SRC);
	rep->dport = ct_port(ct, ATTR_REPL_PORT_DST);
	return CW_CT_ANSWER_REPLY;
}

static int ct_answer(enum nf_conntrack_msg_type type, struct nf_conntrack *ct,
		     void *data)
{
	struct ct_backend *b = data;

	switch (cw_nat_ct_reply(ct, b->ask, &b->reply)) {
	case CW_CT_ANSWER_OTHER:
		b->mismatch = true;
		break;
	case CW_CT_ANSWER_REPLY:
		b->got = true;
		break;
	case CW_CT_ANSWER_EMPTY:
		break;
	}
	/* Not STOP: the library must go on to read the ack that follows. */
	return NFCT_CB_CONTINUE;
}

/* Read and drop whatever is queued on the socket. */
static void ct_drain(struct ct_ns *ns)
{
	char buf[8192];

	while (recv(nfct_fd(ns->h), buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	ns->stale = false;
}

/* The errors that mean "no conntrack netlink here", not a failure. */
static bool unsupported(int err)
{
	return err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == EINVAL ||
	       err == EAFNOSUPPORT;
}

static enum cw_ct_result ct_query(struct ct_backend *b, struct ct_ns *ns,
				  const struct cw_ct_tuple *t)
{
	struct nf_conntrack *ct = nfct_new();
	uint32_t v4;
	int rc, err;

	if (!ct)
		return CW_CT_ERROR;
	if (t->src.family == 4) {
		nfct_set_attr_u8(ct, ATTR_L3PROTO, AF_INET);
		memcpy(&v4, t->src.bytes, 4);
		nfct_set_attr_u32(ct, ATTR_IPV4_SRC, v4);
		memcpy(&v4, t->dst.bytes, 4);
		nfct_set_attr_u32(ct, ATTR_IPV4_DST, v4);
	} else {
		nfct_set_attr_u8(ct, ATTR_L3PROTO, AF_INET6);
		nfct_set_attr(ct, ATTR_IPV6_SRC, t->src.bytes);
		nfct_set_attr(ct, ATTR_IPV6_DST, t->dst.bytes);
	}
	nfct_set_attr_u8(ct, ATTR_L4PROTO, t->protocol);
	nfct_set_attr_u16(ct, ATTR_PORT_SRC, htons(t->sport));
	nfct_set_attr_u16(ct, ATTR_PORT_DST, htons(t->dport));
	if (ns->stale)
		ct_drain(ns);
	b->ask = t;
	b->got = b->mismatch = false;
	memset(&b->reply, 0, sizeof(b->reply));
	rc = nfct_query(ns->h, NFCT_Q_GET, ct);
	err = errno;
	nfct_destroy(ct);
	if (b->mismatch)
		ns->stale = true;
	if (rc == 0)
		return b->got ? CW_CT_FOUND : CW_CT_NONE;
	if (err == ENOENT)
		return CW_CT_NONE;
	if (unsupported(err)) {
		cw_debug("conntrack in namespace %u: %s: no NAT lookups there",
			 ns->inode, strerror(err));
		ns->off = true;
		return CW_CT_NONE;
	}
	ns->stale = true;
	if (!b->warned) {
		cw_warn("conntrack lookup in namespace %u failed: %s (NAT is "
			"not undone for such connections)",
			ns->inode, strerror(err));
		b->warned = true;
	}
	return CW_CT_ERROR;
}

/* The socket's own namespace first, then the others (the host's). */
static enum cw_ct_result ct_lookup(void *ctx, const struct cw_ct_tuple *t,
				   struct cw_ct_reply *reply)
{
	struct ct_backend *b = ctx;
	enum cw_ct_result res = CW_CT_NONE, r;
	int order[CT_MAX_NS], n = 0, i;

	if (t->src.family != t->dst.family)
		return CW_CT_NONE;
	for (i = 0; i < b->n; i++)
		if (b->ns[i].inode == t->netns)
			order[n++] = i;
	for (i = 0; i < b->n; i++)
		if (b->ns[i].inode != t->netns)
			order[n++] = i;
	for (i = 0; i < n; i++) {
		if (b->ns[order[i]].off)
			continue;
		r = ct_query(b, &b->ns[order[i]], t);
		if (r == CW_CT_FOUND) {
			*reply = b->reply;
			return r;
		}
		if (r == CW_CT_ERROR)
			res = r;
	}
	return res;
}

static uint32_t ns_inode(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint32_t)st.st_ino;
}

/* A descriptor of the namespace with this inode: ip netns names, then /proc. */
static int open_netns(uint32_t inode)
{
	const char *dirs[] = {"/run/netns", "/proc"};
	char path[300];
	struct dirent *de;
	size_t i;
	DIR *d;
	int fd = -1;

	for (i = 0; i < 2 && fd < 0; i++) {
		d = opendir(dirs[i]);
		if (!d)
			continue;
		while (fd < 0 && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			if (i == 0)
				snprintf(path, sizeof(path), "/run/netns/%s",
					 de->d_name);
			else if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				snprintf(path, sizeof(path), "/proc/%s/ns/net",
					 de->d_name);
			else
				continue;
			if (ns_inode(path) == inode)
				fd = open(path, O_RDONLY | O_CLOEXEC);
		}
		closedir(d);
	}
	return fd;
}

static struct nfct_handle *ct_open(struct ct_backend *b)
{
	struct nfct_handle *h = nfct_open(CONNTRACK, 0);
	struct timeval tv = {1, 0};

	if (!h)
		return NULL;
	/* The kernel answers at once; never wait long on a lost reply. */
	setsockopt(nfct_fd(h), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nfct_callback_register(h, NFCT_T_ALL, ct_answer, b);
	return h;
}

static void ct_add(struct ct_backend *b, uint32_t inode, struct nfct_handle *h)
{
	b->ns[b->n].inode = inode;
	b->ns[b->n].h = h;
	b->n++;
}

/* A conntrack handle made inside namespace inode; -1 only if stuck there. */
static int ct_open_in(struct ct_backend *b, uint32_t inode)
{
	int self, fd, err = 0;
	struct nfct_handle *h;

	fd = open_netns(inode);
	if (fd < 0) {
		cw_warn("namespace %u: not found under /run/netns or /proc; "
			"NAT is undone from this host's own conntrack only",
			inode);
		return 0;
	}
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		close(fd);
		cw_warn("unable to open '/proc/thread-self/ns/net': %s; NAT "
			"lookups in namespace %u are off",
			strerror(errno), inode);
		return 0;
	}
	if (setns(fd, CLONE_NEWNET)) {
		cw_warn("unable to enter namespace %u for NAT lookups: %s",
			inode, strerror(errno));
	} else {
		h = ct_open(b);
		if (h)
			ct_add(b, inode, h);
		else
			cw_debug("no conntrack netlink in namespace %u: %s",
				 inode, strerror(errno));
		if (setns(self, CLONE_NEWNET))
			err = cw_error("unable to return to the agent's own "
				       "network namespace: %s",
				       strerror(errno));
	}
	close(self);
	close(fd);
	return err;
}

static void ct_free(struct ct_backend *b)
{
	int i;

	if (!b)
		return;
	for (i = 0; i < b->n; i++)
		nfct_close(b->ns[i].h);
	free(b);
}

int cw_nat_open(struct cw_nat **out, uint32_t netns)
{
	uint32_t self = ns_inode("/proc/self/ns/net");
	struct ct_backend *b;
	struct nfct_handle *h;
	struct cw_nat *n;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return cw_error("out of memory");
	if (netns && netns != self && ct_open_in(b, netns)) {
		ct_free(b);
		return -1;
	}
	h = ct_open(b);
	if (h)
		ct_add(b, self, h);
	else
		cw_debug("no conntrack netlink: %s", strerror(errno));
	if (!b->n) {
		ct_free(b);
		return 0;
	}
	n = cw_nat_new(ct_lookup, b, CW_NAT_CACHE_MAX);
	if (!n) {
		ct_free(b);
		return cw_error("out of memory");
	}
	n->backend = b;
	*out = n;
	return 0;
}

void cw_nat_free(struct cw_nat *n)
{
	if (!n)
		return;
	cw_htab_release(&n->cache);
	ct_free(n->backend);
	free(n);
}
