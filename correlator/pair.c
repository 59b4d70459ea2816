// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/bucket_impl.h"
#include "correlator/correlator.h"
#include "correlator/pair_impl.h"

void cw_pairing_init(struct cw_pairing *p)
{
	memset(p, 0, sizeof(*p));
	cw_htab_init(&p->ends, sizeof(struct end_key), sizeof(struct cw_end));
	cw_htab_init(&p->hosts, sizeof(struct host_key), sizeof(uint32_t));
	cw_htab_init(&p->owners, sizeof(struct owner_key), sizeof(uint32_t));
	cw_htab_init(&p->hists, sizeof(struct end_key),
		     sizeof(struct cw_end_hists));
	cw_htab_init(&p->tuples, sizeof(struct tuple_key), 0);
	cw_buckets_init(&p->bk);
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
	cw_htab_release(&p->hists);
	free(p->procs);
	p->procs = NULL;
	p->procs_used = p->procs_size = p->procs_live = 0;
	cw_pairing_unpair(p);
	cw_htab_release(&p->tuples);
	free(p->end_tuple);
	p->end_tuple = NULL;
	p->cap_end_tuple = 0;
	cw_buckets_release(&p->bk);
}

static void host_key_of(const char *host, const char *boot, struct host_key *k)
{
	size_t len = strnlen(host, sizeof(k->name) - 1);
	size_t blen = strnlen(boot, sizeof(k->boot) - 1);

	memcpy(k->name, host, len);
	memset(k->name + len, 0, sizeof(k->name) - len);
	memcpy(k->boot, boot, blen);
	memset(k->boot + blen, 0, sizeof(k->boot) - blen);
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
				       const struct cw_end *e)
{
	return (const struct proc_head *)(p->procs + e->proc_at);
}

static void proc_unpack(const struct proc_head *h, struct cw_process *pr)
{
	const unsigned char *s = (const unsigned char *)(h + 1);

	memset(pr, 0, offsetof(struct cw_process, comm));
	/* The workload identity is not packed: it reads as "". */
	memset(pr->container_name, 0,
	       sizeof(*pr) - offsetof(struct cw_process, container_name));
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
static int proc_store(struct cw_pairing *p, struct cw_end *e, bool created,
		      const unsigned char *buf, size_t len)
{
	if (!created && len <= e->proc_room) {
		if (memcmp(p->procs + e->proc_at, buf, len))
			memcpy(p->procs + e->proc_at, buf, len);
		return 0;
	}
	if (CW_GROW(p->procs, p->procs_size, p->procs_used + len, 65536))
		return -1;
	memcpy(p->procs + p->procs_used, buf, len);
	p->procs_live += len - (created ? 0 : e->proc_room);
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

const struct proc_head *cw_pairing_proc(const struct cw_pairing *p,
					const struct cw_end *e)
{
	return proc_of(p, e);
}

void cw_pairing_proc_unpack(const struct proc_head *h, struct cw_process *pr)
{
	proc_unpack(h, pr);
}

void cw_pairing_end_key(const struct cw_conn_record *r, uint32_t host,
			struct end_key *k)
{
	end_key_of(r, host, k);
}

long cw_pairing_host(struct cw_pairing *p, const char *host, const char *boot)
{
	struct host_key hk;
	uint32_t *id;
	bool made;

	host_key_of(host, boot, &hk);
	id = cw_htab_upsert(&p->hosts, &hk, &made);
	if (!id)
		return -1;
	if (made)
		*id = (uint32_t)(p->hosts.len - 1);
	return (long)*id;
}

void cw_pairing_forget(struct cw_pairing *p)
{
	drop_made(p);
	cw_pairing_unpair(p);
}

long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     const char *boot_id, uint64_t cookie)
{
	struct host_key hk;
	struct end_key k;
	long h;

	host_key_of(host, boot_id, &hk);
	h = cw_htab_index(&p->hosts, &hk);
	if (h < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.host = (uint32_t)h;
	k.cookie = cookie;
	k.protocol = 6;
	return cw_htab_index(&p->ends, &k);
}

void cw_end_id_of(const struct cw_conn_record *r, struct cw_end_id *id)
{
	memset(id, 0, sizeof(*id));
	memcpy(id->host, r->host, strnlen(r->host, sizeof(id->host) - 1));
	memcpy(id->boot_id, r->boot_id,
	       strnlen(r->boot_id, sizeof(id->boot_id) - 1));
	id->cookie = r->cookie;
	id->protocol = r->protocol;
	if (r->protocol != 6) {
		id->raddr = r->raddr;
		id->rport = r->rport;
		id->generation = r->first_ns;
	}
}

long cw_pairing_find_id(const struct cw_pairing *p, const struct cw_end_id *id)
{
	struct host_key hk;
	struct end_key k;
	long h;

	host_key_of(id->host, id->boot_id, &hk);
	h = cw_htab_index(&p->hosts, &hk);
	if (h < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.host = (uint32_t)h;
	k.cookie = id->cookie;
	k.protocol = id->protocol;
	k.generation = id->generation;
	k.rport = id->rport;
	k.rfamily = id->raddr.family;
	memcpy(k.raddr, id->raddr.bytes, sizeof(k.raddr));
	return cw_htab_index(&p->ends, &k);
}

const struct cw_end *cw_pairing_numbers(const struct cw_pairing *p, size_t i)
{
	return cw_htab_val(&p->ends, i);
}

size_t cw_pairing_owners(const struct cw_pairing *p)
{
	return p->owners.len;
}

void cw_pairing_owner(const struct cw_pairing *p, size_t i,
		      struct cw_end_owner *o)
{
	const struct cw_end *e = cw_htab_val(&p->ends, i);
	const struct owner_key *ok = cw_htab_key(&p->owners, e->owner);
	const struct host_key *h = cw_htab_key(&p->hosts, ok->host);
	const struct proc_head *pr = proc_of(p, e);

	o->host = h->name;
	o->netns = pr->netns;
	o->unknown = ok->unknown;
	proc_unpack(pr, &o->proc);
}

void cw_pairing_end_copy(const struct cw_pairing *p, size_t i,
			 struct cw_conn_record *r)
{
	const struct end_key *k = cw_htab_key(&p->ends, i);
	const struct cw_end *e = cw_htab_val(&p->ends, i);
	const struct proc_head *pr = proc_of(p, e);
	const struct host_key *h = cw_htab_key(&p->hosts, k->host);

	memset(r, 0, sizeof(*r));
	memcpy(r->host, h->name, sizeof(r->host));
	memcpy(r->boot_id, h->boot, sizeof(r->boot_id));
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
	r->sampled_ppm = e->sampled_ppm;
	r->connect_us = e->connect_us;
	r->fail = e->fail;
	r->resets_in = e->resets_in;
	r->resets_out = e->resets_out;
	r->xchg_pipelined = e->xchg_pipelined;
	if (e->has_hists)
		cw_hists_put(p, k, r);
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

static bool newer(const struct cw_conn_record *a, const struct cw_end *b)
{
	/* Saturating: counters near 2^64 must not look like a few bytes. */
	uint64_t ta = cw_count_add(cw_count_add(a->bytes_out, a->bytes_in),
				   cw_count_add(a->calls_out, a->calls_in));
	uint64_t tb = cw_count_add(cw_count_add(b->bytes_out, b->bytes_in),
				   cw_count_add(b->calls_out, b->calls_in));

	if ((a->flags & CW_REC_CLOSED) != (b->flags & CW_REC_CLOSED))
		return a->flags & CW_REC_CLOSED;
	if (ta != tb)
		return ta > tb;
	return a->last_ns >= b->last_ns;
}

static void end_set(struct cw_end *e, const struct cw_conn_record *r,
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
	e->sampled_ppm = r->sampled_ppm;
	cw_end_health_set(e, r);
}

/* A record's keys and their hashes, worked out ahead of its lookups. */
struct pending {
	const struct cw_conn_record *r;
	struct end_key ek;
	struct owner_key ok;
	uint32_t eh, oh;
};

/* Could end e's tuple differ from what it was (prev, in netns before)? */
static bool tuple_moved(const struct cw_end *prev, const struct cw_end *e,
			uint32_t netns_before, uint32_t netns)
{
	return prev->owner != e->owner || netns_before != netns ||
	       prev->lport != e->lport || prev->rport != e->rport ||
	       prev->protocol != e->protocol ||
	       memcmp(&prev->laddr, &e->laddr, sizeof(e->laddr)) ||
	       memcmp(&prev->raddr, &e->raddr, sizeof(e->raddr));
}

/* End e's entry number. */
static size_t end_index(const struct cw_pairing *p, const struct cw_end *e)
{
	return (size_t)(((const unsigned char *)e -
			 (const unsigned char *)cw_htab_val(&p->ends, 0)) /
			p->ends.entry_size);
}

/* Apply one record whose keys are ready. */
static int add_one(struct cw_pairing *p, const struct pending *q)
{
	unsigned char buf[PROC_MAX] __attribute__((aligned(8)));
	struct cw_end *e;
	bool created, made;
	long owner;
	uint32_t *id, netns = 0;
	struct cw_end prev = {0};

	e = cw_htab_upsert_hashed(&p->ends, &q->ek, q->eh, &created);
	if (!e)
		return -1;
	if (!created && !newer(q->r, e)) {
		p->st.records++;
		p->st.stale++;
		return 0;
	}
	if (!created) {
		prev = *e;
		netns = proc_of(p, e)->netns;
	} else if (p->bk.s.width_ns && !p->bk.loading)
		e->acct = cw_buckets_revive(p, &q->ek, &prev) ? prev.acct : 0;
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
	if ((created || tuple_moved(&prev, e, netns, q->r->netns)) &&
	    cw_pairing_tuple_note(p, end_index(p, e), created)) {
		if (created) {
			p->procs_live -= e->proc_room;
			cw_htab_delete(&p->ends, &q->ek);
		}
		return -1;
	}
	p->st.records++;
	if (p->bk.s.width_ns && !p->bk.loading &&
	    cw_buckets_note(p, e, &q->ek, &prev, q->r))
		return -1;
	/* After the note, which measured the gain from the ones before. */
	return cw_hists_keep(p, &q->ek, q->r);
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
	if (n && p->partner)
		cw_pairing_unpair(p);
	for (k = 0; k < n; k += m) {
		m = n - k < BATCH ? n - k : BATCH;
		/* Three rounds, so that each round's memory comes at once. */
		for (i = 0; i < m; i++) {
			host_key_of(r[k + i].host, r[k + i].boot_id, &hk[i]);
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

int cw_pairing_add_all(struct cw_pairing *dst, const struct cw_pairing *src)
{
	struct cw_conn_record *r = malloc(BATCH * sizeof(*r));
	size_t i, n = src->ends.len, m = 0;
	int err = 0;

	if (!r)
		return -1;
	for (i = 0; i < n && !err; i++) {
		cw_pairing_end_copy(src, i, &r[m++]);
		if (m == BATCH || i + 1 == n) {
			err = cw_pairing_add_many(dst, r, m);
			m = 0;
		}
	}
	free(r);
	return err;
}

/* The processes of the ends kept, packed again from the start. */
static int compact_procs(struct cw_pairing *p, size_t live)
{
	unsigned char *d = malloc(live ? live : 1);
	size_t i, at = 0;
	struct cw_end *e;

	if (!d)
		return -1;
	for (i = 0; i < p->ends.len; i++) {
		e = cw_htab_val(&p->ends, i);
		memcpy(d + at, p->procs + e->proc_at, e->proc_room);
		e->proc_at = at;
		at += e->proc_room;
	}
	free(p->procs);
	p->procs = d;
	p->procs_size = live ? live : 1;
	p->procs_used = at;
	return 0;
}

/*
 * The owners of the ends kept, numbered again.  Each keeps the node the
 * buckets found for it (bk.owner_node): looking a node up again costs
 * its process unpacked and a kilobyte-long key hashed.
 */
static int compact_owners(struct cw_pairing *p)
{
	struct cw_buckets *b = &p->bk;
	size_t n = p->ends.len, i;
	long *node = malloc((n + 1) * sizeof(*node));
	uint32_t *to = malloc((n + 1) * sizeof(*to)), *id;
	struct cw_htab owners;
	struct owner_key k;
	struct cw_end *e;
	bool made;

	cw_htab_init(&owners, sizeof(struct owner_key), sizeof(uint32_t));
	if (!node || !to)
		goto fail;
	/* The new ids first, every end left as it is: a failure halfway
	 * leaves no end numbered in a table that is then dropped. */
	for (i = 0; i < n; i++) {
		e = cw_htab_val(&p->ends, i);
		k = *(struct owner_key *)cw_htab_key(&p->owners, e->owner);
		id = cw_htab_upsert(&owners, &k, &made);
		if (!id)
			goto fail;
		if (made) {
			*id = (uint32_t)(owners.len - 1);
			node[*id] = e->owner < b->owner_nodes
					    ? b->owner_node[e->owner]
					    : -1;
		}
		to[i] = *id;
	}
	for (i = 0; i < n; i++)
		((struct cw_end *)cw_htab_val(&p->ends, i))->owner = to[i];
	free(to);
	cw_htab_release(&p->owners);
	p->owners = owners;
	cw_buckets_drop_owners(b);
	b->owner_node = node;
	b->owner_nodes = owners.len;
	b->cap_owner_node = n + 1;
	return 0;
fail:
	cw_htab_release(&owners);
	free(node);
	free(to);
	return -1;
}

int cw_pairing_compact(struct cw_pairing *p)
{
	size_t live = p->procs_live; /* kept as ends come and go: no walk */

	cw_pairing_forget(p);
	if (p->procs_used > 2 * live + 65536 && compact_procs(p, live))
		return -1;
	if (p->owners.len > 2 * p->ends.len + 1024 && compact_owners(p))
		return -1;
	return cw_pairing_tuples_compact(p);
}
