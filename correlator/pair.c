// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "correlator/correlator.h"

/* One end of a connection on one host; no padding, hashed as it is. */
struct end_key {
	uint64_t cookie;
	uint64_t generation; /* UDP: first_ns, a flow re-created later */
	uint32_t host;	     /* id in p->hosts */
	uint16_t rport;	     /* UDP */
	uint8_t protocol;
	uint8_t rfamily; /* UDP: the remote address */
	uint8_t raddr[16];
};

/* What is kept of an end's newest record besides its key. */
struct end {
	uint64_t bytes_out, bytes_in;
	uint64_t calls_out, calls_in;
	uint64_t msgs_out, msgs_in;
	uint64_t first_ns, last_ns;
	uint64_t seq;
	uint64_t proc_at; /* its process in p->procs */
	uint32_t proc_room;
	uint32_t owner; /* id in p->owners: the node it makes */
	uint32_t flags;
	uint32_t retrans, srtt_us;
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t protocol, role;
};

struct host_key {
	char name[CW_HOST_LEN]; /* NUL-padded */
};

/* What makes an end's node: a process on a host, or an unknown owner in a
 * network namespace of a host.  No padding. */
struct owner_key {
	uint32_t host;
	uint32_t netns; /* unknown owner only */
	uint32_t tgid;
	uint32_t unknown;
	uint64_t start_ns;
};

/*
 * An end's process, in p->procs: this header, then comm, cmdline,
 * container and pod, each with its NUL, then zeroes to a multiple of 8.
 * Written as ends come, so ingest writes in order instead of looking up.
 */
struct proc_head {
	uint32_t netns;
	uint32_t tgid;
	uint32_t len; /* of the whole, padded */
	uint32_t pad;
	uint64_t start_ns;
	uint64_t cgroup_id;
};

#define PROC_MAX                                                               \
	(sizeof(struct proc_head) + CW_COMM_MAX + CW_CMDLINE_MAX +             \
	 CW_CONTAINER_MAX + CW_POD_MAX + 8)

/* Both ends of one connection share this key. */
struct tuple_key {
	struct cw_addr a, b;
	uint16_t aport, bport;
	uint8_t protocol;
	uint8_t pad[3];
};

void cw_pairing_init(struct cw_pairing *p)
{
	memset(p, 0, sizeof(*p));
	cw_htab_init(&p->ends, sizeof(struct end_key), sizeof(struct end));
	cw_htab_init(&p->hosts, sizeof(struct host_key), sizeof(uint32_t));
	cw_htab_init(&p->owners, sizeof(struct owner_key), sizeof(uint32_t));
}

/* What an end's process takes in p->procs, about. */
#define PROC_TYPICAL 160

int cw_pairing_reserve(struct cw_pairing *p, size_t n)
{
	size_t size = n * PROC_TYPICAL;
	unsigned char *d;

	if (cw_htab_reserve(&p->ends, n))
		return -1;
	if (size > p->procs_size) {
		d = realloc(p->procs, size);
		if (!d)
			return -1;
		p->procs = d;
		p->procs_size = size;
	}
	return 0;
}

/* Forget the records cw_pairing_end() made. */
static void drop_made(struct cw_pairing *p)
{
	size_t i;

	if (!p->made)
		return;
	for (i = 0; i < p->nmade; i++)
		free(p->made[i]);
	free(p->made);
	p->made = NULL;
	p->nmade = 0;
}

void cw_pairing_release(struct cw_pairing *p)
{
	drop_made(p);
	cw_htab_release(&p->ends);
	cw_htab_release(&p->hosts);
	cw_htab_release(&p->owners);
	free(p->procs);
	p->procs = NULL;
	p->procs_used = p->procs_size = 0;
	free(p->partner);
	p->partner = NULL;
}

static void host_key_of(const char *host, struct host_key *k)
{
	size_t len = strnlen(host, sizeof(k->name) - 1);

	memcpy(k->name, host, len);
	memset(k->name + len, 0, sizeof(k->name) - len);
}

static void owner_key_of(const struct cw_conn_record *r, uint32_t host,
			 struct owner_key *k)
{
	memset(k, 0, sizeof(*k));
	k->host = host;
	if (r->flags & CW_REC_NO_OWNER) {
		k->unknown = 1;
		k->netns = r->netns;
	} else {
		k->tgid = r->proc.tgid;
		k->start_ns = r->proc.start_ns;
	}
}

static size_t put_str(unsigned char *to, const char *s, size_t size)
{
	size_t len = strnlen(s, size - 1);

	memcpy(to, s, len);
	to[len] = 0;
	return len + 1;
}

/* Pack an end's netns and process into buf; its length. */
static size_t proc_pack(const struct cw_conn_record *r, unsigned char *buf)
{
	struct proc_head *h = (struct proc_head *)buf;
	const struct cw_process *pr = &r->proc;
	size_t n = sizeof(*h);

	h->netns = r->netns;
	h->tgid = pr->tgid;
	h->pad = 0;
	h->start_ns = pr->start_ns;
	h->cgroup_id = pr->cgroup_id;
	n += put_str(buf + n, pr->comm, sizeof(pr->comm));
	n += put_str(buf + n, pr->cmdline, sizeof(pr->cmdline));
	n += put_str(buf + n, pr->container, sizeof(pr->container));
	n += put_str(buf + n, pr->pod, sizeof(pr->pod));
	while (n % 8)
		buf[n++] = 0;
	h->len = (uint32_t)n;
	return n;
}

static size_t get_str(char *to, const unsigned char *from, size_t size)
{
	size_t len = strlen((const char *)from);

	memcpy(to, from, len);
	memset(to + len, 0, size - len);
	return len + 1;
}

static const struct proc_head *proc_of(const struct cw_pairing *p,
				       const struct end *e)
{
	return (const struct proc_head *)(p->procs + e->proc_at);
}

static void proc_unpack(const struct proc_head *h, struct cw_process *pr)
{
	const unsigned char *s = (const unsigned char *)(h + 1);

	memset(pr, 0, offsetof(struct cw_process, comm));
	pr->tgid = h->tgid;
	pr->start_ns = h->start_ns;
	pr->cgroup_id = h->cgroup_id;
	s += get_str(pr->comm, s, sizeof(pr->comm));
	s += get_str(pr->cmdline, s, sizeof(pr->cmdline));
	s += get_str(pr->container, s, sizeof(pr->container));
	get_str(pr->pod, s, sizeof(pr->pod));
}

/*
 * Keep the packed process (len bytes) of end e: where it was if it is the
 * same or fits, else at the end of the log.  0 or -1.
 */
static int proc_store(struct cw_pairing *p, struct end *e, bool created,
		      const unsigned char *buf, size_t len)
{
	if (!created && len <= e->proc_room) {
		if (memcmp(p->procs + e->proc_at, buf, len))
			memcpy(p->procs + e->proc_at, buf, len);
		return 0;
	}
	if (p->procs_used + len > p->procs_size) {
		size_t size = p->procs_size ? p->procs_size : 65536;
		unsigned char *d;

		while (size < p->procs_used + len)
			size *= 2;
		d = realloc(p->procs, size);

		if (!d)
			return -1;
		p->procs = d;
		p->procs_size = size;
	}
	memcpy(p->procs + p->procs_used, buf, len);
	e->proc_at = p->procs_used;
	e->proc_room = (uint32_t)len;
	p->procs_used += len;
	return 0;
}

static void end_key_of(const struct cw_conn_record *r, uint32_t host,
		       struct end_key *k)
{
	memset(k, 0, sizeof(*k));
	k->host = host;
	k->cookie = r->cookie;
	k->protocol = r->protocol;
	if (r->protocol != 6) {
		k->rfamily = r->raddr.family;
		memcpy(k->raddr, r->raddr.bytes, sizeof(k->raddr));
		k->rport = r->rport;
		k->generation = r->first_ns;
	}
}

long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie)
{
	struct host_key hk;
	struct end_key k;
	long h;

	host_key_of(host, &hk);
	h = cw_htab_index(&p->hosts, &hk);
	if (h < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.host = (uint32_t)h;
	k.cookie = cookie;
	k.protocol = 6;
	return cw_htab_index(&p->ends, &k);
}

void cw_pairing_end_copy(const struct cw_pairing *p, size_t i,
			 struct cw_conn_record *r)
{
	const struct end_key *k = cw_htab_key(&p->ends, i);
	const struct end *e = cw_htab_val(&p->ends, i);
	const struct proc_head *pr = proc_of(p, e);
	const struct host_key *h = cw_htab_key(&p->hosts, k->host);

	memset(r, 0, sizeof(*r));
	memcpy(r->host, h->name, sizeof(r->host));
	r->netns = pr->netns;
	r->cookie = k->cookie;
	r->protocol = e->protocol;
	r->role = e->role;
	r->flags = e->flags;
	r->laddr = e->laddr;
	r->raddr = e->raddr;
	r->lport = e->lport;
	r->rport = e->rport;
	r->bytes_out = e->bytes_out;
	r->bytes_in = e->bytes_in;
	r->calls_out = e->calls_out;
	r->calls_in = e->calls_in;
	r->msgs_out = e->msgs_out;
	r->msgs_in = e->msgs_in;
	r->first_ns = e->first_ns;
	r->last_ns = e->last_ns;
	r->retrans = e->retrans;
	r->srtt_us = e->srtt_us;
	r->seq = e->seq;
	proc_unpack(pr, &r->proc);
}

const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *cp,
					    size_t i)
{
	/* The copies are a cache the caller's struct owns, not its state. */
	struct cw_pairing *p = (struct cw_pairing *)cp;

	if (!p->made && p->ends.len) {
		p->made = calloc(p->ends.len, sizeof(*p->made));
		p->nmade = p->made ? p->ends.len : 0;
	}
	if (i >= p->nmade) {
		cw_pairing_end_copy(p, i, &p->spare);
		return &p->spare;
	}
	if (!p->made[i]) {
		p->made[i] = malloc(sizeof(*p->made[i]));
		if (!p->made[i]) {
			cw_pairing_end_copy(p, i, &p->spare);
			return &p->spare;
		}
		cw_pairing_end_copy(p, i, p->made[i]);
	}
	return p->made[i];
}

static bool newer(const struct cw_conn_record *a, const struct end *b)
{
	uint64_t ta = a->bytes_out + a->bytes_in + a->calls_out + a->calls_in;
	uint64_t tb = b->bytes_out + b->bytes_in + b->calls_out + b->calls_in;

	if ((a->flags & CW_REC_CLOSED) != (b->flags & CW_REC_CLOSED))
		return a->flags & CW_REC_CLOSED;
	if (ta != tb)
		return ta > tb;
	return a->last_ns >= b->last_ns;
}

static void end_set(struct end *e, const struct cw_conn_record *r,
		    uint32_t owner)
{
	e->bytes_out = r->bytes_out;
	e->bytes_in = r->bytes_in;
	e->calls_out = r->calls_out;
	e->calls_in = r->calls_in;
	e->msgs_out = r->msgs_out;
	e->msgs_in = r->msgs_in;
	e->first_ns = r->first_ns;
	e->last_ns = r->last_ns;
	e->seq = r->seq;
	e->owner = owner;
	e->flags = r->flags;
	e->retrans = r->retrans;
	e->srtt_us = r->srtt_us;
	e->laddr = r->laddr;
	e->raddr = r->raddr;
	e->lport = r->lport;
	e->rport = r->rport;
	e->protocol = r->protocol;
	e->role = r->role;
}

/* A record's keys and their hashes, worked out ahead of its lookups. */
struct pending {
	const struct cw_conn_record *r;
	struct end_key ek;
	struct owner_key ok;
	uint32_t eh, oh;
};

/* Apply one record whose keys are ready. */
static int add_one(struct cw_pairing *p, const struct pending *q)
{
	unsigned char buf[PROC_MAX] __attribute__((aligned(8)));
	struct end *e;
	bool created, made;
	long owner;
	uint32_t *id;

	e = cw_htab_upsert_hashed(&p->ends, &q->ek, q->eh, &created);
	if (!e)
		return -1;
	if (!created && !newer(q->r, e)) {
		p->st.records++;
		p->st.stale++;
		return 0;
	}
	/* Other tables than the ends: e stays where it is. */
	id = cw_htab_upsert_hashed(&p->owners, &q->ok, q->oh, &made);
	if (id && made)
		*id = (uint32_t)(p->owners.len - 1);
	owner = id ? (long)*id : -1;
	if (owner < 0 || proc_store(p, e, created, buf, proc_pack(q->r, buf))) {
		if (created)
			cw_htab_delete(&p->ends, &q->ek);
		return -1;
	}
	end_set(e, q->r, (uint32_t)owner);
	p->st.records++;
	return 0;
}

#define BATCH 32

int cw_pairing_add_many(struct cw_pairing *p, const struct cw_conn_record *r,
			size_t n)
{
	struct host_key hk[BATCH];
	struct pending q[BATCH];
	uint32_t hh[BATCH];
	size_t i, k, m;
	long host;

	if (n && p->made)
		drop_made(p);
	for (k = 0; k < n; k += m) {
		m = n - k < BATCH ? n - k : BATCH;
		/* Three rounds, so that each round's memory comes at once. */
		for (i = 0; i < m; i++) {
			host_key_of(r[k + i].host, &hk[i]);
			hh[i] = cw_htab_hash(&p->hosts, &hk[i]);
			cw_htab_prefetch(&p->hosts, hh[i]);
		}
		for (i = 0; i < m; i++) {
			bool made;
			uint32_t *id = cw_htab_upsert_hashed(&p->hosts, &hk[i],
							     hh[i], &made);

			if (!id)
				return -1;
			if (made)
				*id = (uint32_t)(p->hosts.len - 1);
			host = *id;
			q[i].r = &r[k + i];
			end_key_of(q[i].r, (uint32_t)host, &q[i].ek);
			owner_key_of(q[i].r, (uint32_t)host, &q[i].ok);
			q[i].eh = cw_htab_hash(&p->ends, &q[i].ek);
			q[i].oh = cw_htab_hash(&p->owners, &q[i].ok);
			cw_htab_prefetch(&p->ends, q[i].eh);
			cw_htab_prefetch(&p->owners, q[i].oh);
		}
		for (i = 0; i < m; i++) {
			cw_htab_prefetch_entry(&p->ends, q[i].eh);
			cw_htab_prefetch_entry(&p->owners, q[i].oh);
		}
		for (i = 0; i < m; i++)
			if (add_one(p, &q[i]))
				return -1;
	}
	return 0;
}

int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r)
{
	return cw_pairing_add_many(p, r, 1);
}

/* ---- pairing ------------------------------------------------------------ */

static void tuple_of(const struct end *e, struct tuple_key *k)
{
	int c = cw_addr_cmp(&e->laddr, &e->raddr);
	bool flipped = c > 0 || (c == 0 && e->lport > e->rport);

	memset(k, 0, sizeof(*k));
	k->protocol = e->protocol;
	k->a = flipped ? e->raddr : e->laddr;
	k->b = flipped ? e->laddr : e->raddr;
	k->aport = flipped ? e->rport : e->lport;
	k->bport = flipped ? e->lport : e->rport;
}

static bool overlaps(const struct end *x, const struct end *y)
{
	/* Clocks of two hosts differ a little; allow a second of slack. */
	uint64_t slack = 1000000000ULL;

	return x->first_ns <= y->last_ns + slack &&
	       y->first_ns <= x->last_ns + slack;
}

/* Is e the client end?  The agent says so; else the higher port is. */
static bool is_client(const struct end *e)
{
	if (e->role == CW_REC_ROLE_CLIENT)
		return true;
	if (e->role == CW_REC_ROLE_SERVER)
		return false;
	return e->lport > e->rport;
}

static bool complement(const struct end *x, const struct end *y)
{
	return x->lport == y->rport && x->rport == y->lport &&
	       !cw_addr_cmp(&x->laddr, &y->raddr) &&
	       !cw_addr_cmp(&x->raddr, &y->laddr);
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* What the build needs at hand. */
struct builder {
	struct cw_pairing *p;
	struct cw_graph *g;
	long *node_of;		    /* by owner: graph node or -1 */
	struct cw_conn_link *links; /* one per pair or lone end */
	size_t nlinks;
};

static const struct end *end_at(const struct cw_pairing *p, size_t i)
{
	return cw_htab_val(&p->ends, i);
}

/* The graph node of a watched end, made once per owner. */
static long node_for(struct builder *b, const struct end *e)
{
	long *n = &b->node_of[e->owner];
	const struct owner_key *o;
	const struct host_key *h;
	const struct proc_head *pr;
	struct cw_process proc;

	if (*n < 0) {
		o = cw_htab_key(&b->p->owners, e->owner);
		h = cw_htab_key(&b->p->hosts, o->host);
		pr = proc_of(b->p, e);
		proc_unpack(pr, &proc);
		*n = cw_graph_node_for_proc(b->g, h->name, pr->netns,
					    o->unknown, &proc);
	}
	return *n;
}

/* A connection seen from both ends: a the client's, b the server's. */
static void pair_traffic(const struct end *c, const struct end *s,
			 struct cw_conn_traffic *t)
{
	t->bytes_c2s = c->bytes_out;
	t->bytes_s2c = s->bytes_out;
	t->msgs_c2s = c->msgs_out;
	t->msgs_s2c = s->msgs_out;
	t->diff_c2s = (int64_t)(c->bytes_out - s->bytes_in);
	t->diff_s2c = (int64_t)(s->bytes_out - c->bytes_in);
	t->first_ns = c->first_ns < s->first_ns ? c->first_ns : s->first_ns;
	t->last_ns = c->last_ns > s->last_ns ? c->last_ns : s->last_ns;
	t->retrans = c->retrans + s->retrans;
	t->both_ends = 1;
}

/* An end whose partner was not watched. */
static void single_traffic(const struct end *e, struct cw_conn_traffic *t)
{
	bool client = is_client(e);

	t->bytes_c2s = client ? e->bytes_out : e->bytes_in;
	t->bytes_s2c = client ? e->bytes_in : e->bytes_out;
	t->msgs_c2s = client ? e->msgs_out : e->msgs_in;
	t->msgs_s2c = client ? e->msgs_in : e->msgs_out;
	t->first_ns = e->first_ns;
	t->last_ns = e->last_ns;
	t->retrans = e->retrans;
}

#define NO_END UINT32_MAX

static void link_traffic(const struct cw_conn_link *l,
			 struct cw_conn_traffic *t, void *arg)
{
	const struct cw_pairing *p = arg;

	if (l->b == NO_END)
		single_traffic(end_at(p, l->a), t);
	else
		pair_traffic(end_at(p, l->a), end_at(p, l->b), t);
}

static int add_pair(struct builder *b, size_t ci, size_t si)
{
	struct cw_conn_link *l = &b->links[b->nlinks++];
	const struct end *c = end_at(b->p, ci), *s = end_at(b->p, si);
	long cn = node_for(b, c), sn = node_for(b, s);

	if (cn < 0 || sn < 0)
		return -1;
	l->client = (uint32_t)cn;
	l->server = (uint32_t)sn;
	l->a = (uint32_t)ci;
	l->b = (uint32_t)si;
	l->protocol = c->protocol;
	return 0;
}

static int add_single(struct builder *b, size_t i)
{
	struct cw_conn_link *l = &b->links[b->nlinks++];
	const struct end *e = end_at(b->p, i);
	bool client = is_client(e);
	long me = node_for(b, e);
	long other =
		cw_graph_node_external(b->g, &e->raddr, client ? e->rport : 0);

	if (me < 0 || other < 0)
		return -1;
	l->client = (uint32_t)(client ? me : other);
	l->server = (uint32_t)(client ? other : me);
	l->a = (uint32_t)i;
	l->b = NO_END;
	l->protocol = e->protocol;
	return 0;
}

/* Ends grouped by tuple: counted in a table, then placed in one array. */
struct group {
	uint32_t id, n;
};

/*
 * Within one tuple, each end takes the complementary end whose lifetime
 * overlaps its own, preferring opposite roles and then the nearest start:
 * the same tuple can be reused over time, or in namespaces that share an
 * address plan.  Fills p->partner; *units counts pairs and lone ends.
 */
static void pair_group(struct cw_pairing *p, const uint32_t *idx, size_t n,
		       bool *used, size_t *units)
{
	const struct end *x, *y, *best;
	size_t i, j, bj = 0, cands;

	if (n == 2) { /* the common case: one connection, two ends */
		x = end_at(p, idx[0]);
		y = end_at(p, idx[1]);
		if (complement(x, y) && overlaps(x, y) &&
		    !(x->role && y->role && x->role == y->role)) {
			p->partner[idx[0]] = idx[1];
			p->partner[idx[1]] = idx[0];
			p->st.paired++;
			*units += 1;
		} else {
			p->st.unpaired += 2;
			*units += 2;
		}
		return;
	}
	for (i = 0; i < n; i++) {
		if (used[idx[i]])
			continue;
		x = end_at(p, idx[i]);
		best = NULL;
		cands = 0;
		for (j = 0; j < n; j++) {
			if (j == i || used[idx[j]])
				continue;
			y = end_at(p, idx[j]);
			if (!complement(x, y) || !overlaps(x, y))
				continue;
			if (x->role && y->role && x->role == y->role)
				continue;
			cands++;
			if (!best ||
			    distance(x->first_ns, y->first_ns) <
				    distance(x->first_ns, best->first_ns)) {
				best = y;
				bj = j;
			}
		}
		used[idx[i]] = true;
		*units += 1;
		if (!best) {
			p->st.unpaired++;
		} else {
			used[idx[bj]] = true;
			p->partner[idx[i]] = (long)idx[bj];
			p->partner[idx[bj]] = (long)idx[i];
			p->st.paired++;
			p->st.ambiguous += cands > 1;
		}
	}
}

/*
 * Into the graph, in the order the pairs were found: each end when it
 * comes first in its group's order, with its partner if it has one.
 */
static int add_group(struct builder *b, const uint32_t *idx, size_t n,
		     bool *done)
{
	const struct cw_pairing *p = b->p;
	const struct end *x;
	size_t i;
	long q;

	for (i = 0; i < n; i++) {
		if (done[idx[i]])
			continue;
		done[idx[i]] = true;
		x = end_at(p, idx[i]);
		q = p->partner[idx[i]];
		if (q < 0) {
			if (add_single(b, idx[i]))
				return -1;
			continue;
		}
		done[q] = true;
		if (is_client(x) ? add_pair(b, idx[i], (size_t)q)
				 : add_pair(b, (size_t)q, idx[i]))
			return -1;
	}
	return 0;
}

int cw_pairing_build(struct cw_pairing *p, struct cw_graph *g)
{
	size_t n = p->ends.len, ng = 0, i, j, m, units = 0;
	struct builder b = {.p = p, .g = g};
	uint32_t *order = NULL, *gid = NULL, *start = NULL, th[BATCH];
	struct tuple_key tk[BATCH];
	struct cw_htab groups;
	struct group *grp;
	bool *used = NULL, created;
	int err = -1;

	cw_htab_init(&groups, sizeof(tk[0]), sizeof(struct group));
	free(p->partner);
	p->partner = malloc((n ? n : 1) * sizeof(*p->partner));
	order = malloc((n ? n : 1) * sizeof(*order));
	gid = malloc((n ? n : 1) * sizeof(*gid));
	used = calloc(n ? n : 1, sizeof(*used));
	b.node_of = malloc((p->owners.len + 1) * sizeof(*b.node_of));
	if (!order || !gid || !used || !p->partner || !b.node_of ||
	    cw_htab_reserve(&groups, n / 2 + n / 8 + 1))
		goto out;
	for (i = 0; i < n; i++)
		p->partner[i] = -1;
	for (i = 0; i < p->owners.len; i++)
		b.node_of[i] = -1;
	/* Count per tuple, then place: a counting sort by group. */
	for (i = 0; i < n; i += m) {
		m = n - i < BATCH ? n - i : BATCH;
		for (j = 0; j < m; j++) {
			tuple_of(end_at(p, i + j), &tk[j]);
			th[j] = cw_htab_hash(&groups, &tk[j]);
			cw_htab_prefetch(&groups, th[j]);
		}
		for (j = 0; j < m; j++)
			cw_htab_prefetch_entry(&groups, th[j]);
		for (j = 0; j < m; j++) {
			grp = cw_htab_upsert_hashed(&groups, &tk[j], th[j],
						    &created);
			if (!grp)
				goto out;
			if (created)
				grp->id = (uint32_t)(groups.len - 1);
			grp->n++;
			gid[i + j] = grp->id;
		}
	}
	/* Groups in order of their first end; start[k]: where k's go. */
	ng = groups.len;
	start = malloc((ng + 1) * sizeof(*start));
	if (!start)
		goto out;
	for (i = 0, j = 0; i < ng; i++) {
		start[i] = (uint32_t)j;
		j += ((struct group *)cw_htab_val(&groups, i))->n;
	}
	start[ng] = (uint32_t)n;
	cw_htab_release(&groups);
	for (i = 0; i < n; i++)
		order[start[gid[i]]++] = (uint32_t)i;
	free(gid);
	gid = NULL;
	/* Now start[k] is where group k ends, and k + 1 begins. */
	p->st.ends = n;
	p->st.paired = p->st.unpaired = p->st.ambiguous = 0;
	for (i = 0, j = 0; i < ng; j = start[i++])
		pair_group(p, order + j, start[i] - j, used, &units);
	/* Nodes as the ends come, then the edges all at once. */
	b.links = malloc((units + 1) * sizeof(*b.links));
	if (!b.links || cw_graph_reserve(g, g->nnodes + p->owners.len + 64, 0))
		goto out;
	memset(used, 0, n * sizeof(*used));
	for (i = 0, j = 0; i < ng; j = start[i++])
		if (add_group(&b, order + j, start[i] - j, used))
			goto out;
	free(order);
	order = NULL;
	free(start);
	start = NULL;
	free(used);
	used = NULL;
	if (cw_graph_add_links(g, b.links, b.nlinks, link_traffic, p))
		goto out;
	err = 0;
out:
	free(b.links);
	free(order);
	free(gid);
	free(start);
	free(used);
	free(b.node_of);
	cw_htab_release(&groups);
	return err;
}
