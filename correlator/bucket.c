// SPDX-License-Identifier: MIT
/*
 * Time buckets of edge totals.  A record's delta since its end's record
 * before waits in the bucket of its last_ns (pend) until the bucket is
 * sealed; then the ends are paired and each delta is folded into the
 * total of its edge, keyed by the edge's nodes rather than by ends, so
 * the ends can go.  Nothing here reads the clock: the watermark is the
 * newest last_ns applied, so the same records make the same buckets.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/bucket_impl.h"
#include "correlator/pair_impl.h"

void cw_buckets_init(struct cw_buckets *b)
{
	memset(b, 0, sizeof(*b));
	cw_htab_init(&b->nodes, sizeof(struct cw_node_key),
		     sizeof(struct cw_edge_node));
	cw_htab_init(&b->total, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	cw_htab_init(&b->sealed, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	cw_htab_init(&b->pend, sizeof(struct pend_key),
		     sizeof(struct pend_val));
	cw_htab_init(&b->dormant, sizeof(struct end_key),
		     sizeof(struct dormant_val));
	cw_htab_init(&b->pend_hists, sizeof(struct pend_key),
		     sizeof(struct cw_end_hists));
}

void cw_buckets_drop_owners(struct cw_buckets *b)
{
	free(b->owner_node);
	b->owner_node = NULL;
	b->owner_nodes = b->cap_owner_node = 0;
}

void cw_buckets_release(struct cw_buckets *b)
{
	cw_buckets_drop_owners(b);
	cw_htab_release(&b->nodes);
	cw_edge_totals_release(&b->total);
	cw_edge_totals_release(&b->sealed);
	cw_htab_release(&b->pend);
	cw_htab_release(&b->dormant);
	cw_htab_release(&b->pend_hists);
}

void cw_pairing_buckets(struct cw_pairing *p, uint64_t width_ns,
			uint64_t ttl_ns, uint64_t lateness_ns)
{
	p->bk.s.width_ns = width_ns;
	p->bk.s.ttl_ns = ttl_ns;
	p->bk.s.lateness_ns = lateness_ns;
}

int cw_pairing_skewed(const struct cw_pairing *p, const struct cw_conn_record *r,
		      uint64_t now_real, char *why, size_t len)
{
	uint64_t ahead = now_real + CW_SKEW_AHEAD_NS, seal = seal_point(&p->bk);
	uint64_t t = r->first_ns > r->last_ns ? r->first_ns : r->last_ns;
	char d[32];

	if (t > ahead) {
		snprintf(why, len,
			 "%s %" PRIu64 " is %" PRIu64 " s ahead of the clock "
			 "(the skew bound is %s)",
			 t == r->last_ns ? "last_ns" : "first_ns", t,
			 (uint64_t)((t - now_real) / 1000000000ULL),
			 cw_fmt_duration(CW_SKEW_AHEAD_NS, d, sizeof(d)));
		return CW_WIRE_EFUTURE;
	}
	if (r->last_ns < CW_SKEW_FLOOR_NS) {
		snprintf(why, len, "last_ns %" PRIu64 " is before 2000",
			 r->last_ns);
		return CW_WIRE_EPAST;
	}
	if (seal > CW_SKEW_BEHIND_NS && r->last_ns < seal - CW_SKEW_BEHIND_NS) {
		snprintf(why, len,
			 "last_ns %" PRIu64 " is %" PRIu64 " s before what its "
			 "partition has sealed (the skew bound is %s)",
			 r->last_ns, (uint64_t)((seal - r->last_ns) / 1000000000ULL),
			 cw_fmt_duration(CW_SKEW_BEHIND_NS, d, sizeof(d)));
		return CW_WIRE_EPAST;
	}
	return 0;
}

int cw_buckets_note(struct cw_pairing *p, struct cw_end *e,
		    const struct end_key *k, const struct cw_end *prev,
		    const struct cw_conn_record *r)
{
	struct cw_buckets *b = &p->bk;
	struct pend_key pk;
	struct pend_val *v;
	bool created;

	memset(&pk, 0, sizeof(pk));
	pk.bucket = bucket_of(b, e->last_ns);
	if (pk.bucket < b->s.sealed_ns) {
		pk.bucket = b->s.sealed_ns; /* late: into the oldest open */
		b->s.late++;
	}
	pk.ek = *k;
	v = cw_htab_upsert(&b->pend, &pk, &created);
	if (!v)
		return -1;
	e->npend += created;
	/* Saturating: an end reporting 2^64 - 1 bytes makes no wrap. */
	v->bytes_out = cw_count_add(v->bytes_out,
				    cw_count_delta(e->bytes_out, prev->bytes_out));
	v->bytes_in = cw_count_add(v->bytes_in,
				   cw_count_delta(e->bytes_in, prev->bytes_in));
	v->msgs_out = cw_count_add(v->msgs_out,
				   cw_count_delta(e->msgs_out, prev->msgs_out));
	v->msgs_in = cw_count_add(v->msgs_in,
				  cw_count_delta(e->msgs_in, prev->msgs_in));
	v->retrans = cw_count_add(v->retrans,
				  cw_count_delta(e->retrans, prev->retrans));
	if (e->last_ns > v->last_ns)
		v->last_ns = e->last_ns;
	if (cw_health_note(p, &pk, v, e, prev, r,
			   prev->has_hists ? cw_hists_get(p, k) : NULL))
		return -1;
	if (e->last_ns > b->s.watermark_ns) {
		b->s.watermark_ns = e->last_ns;
		b->due |= seal_point(b) > b->s.sealed_ns;
	}
	return 0;
}

bool cw_buckets_revive(struct cw_pairing *p, const struct end_key *k,
		       struct cw_end *prev)
{
	struct dormant_val *d = cw_htab_get(&p->bk.dormant, k);

	if (!d)
		return false;
	prev->bytes_out = d->bytes_out;
	prev->bytes_in = d->bytes_in;
	prev->msgs_out = d->msgs_out;
	prev->msgs_in = d->msgs_in;
	prev->retrans = d->retrans;
	prev->acct = d->acct;
	prev->connect_us = d->connect_us;
	prev->fail = d->fail;
	prev->resets_in = d->resets_in;
	prev->resets_out = d->resets_out;
	prev->xchg_pipelined = d->xchg_pipelined;
	prev->has_hists = d->has_hists;
	/* Live again: counted with the live ends, not the gone ones. */
	p->bk.s.gone_ends--;
	p->bk.s.gone_unpaired -= d->carried == 1;
	p->bk.s.gone_paired -= d->carried == 2;
	cw_htab_delete(&p->bk.dormant, k);
	p->bk.s.revived++;
	return true;
}

/* ---- folding deltas into edges ------------------------------------------ */

/* What a fold works with: where to, whose counted flags, node cache. */
struct folder {
	struct cw_pairing *p;
	struct cw_htab *out;
	uint32_t *acct; /* a copy of the ends' flags, or NULL: the ends' */
	long *owner_node; /* p->bk.owner_node, grown to every owner */
};

/* The owners' node cache, with room for every owner; NULL (no memory). */
static long *owner_nodes(struct cw_pairing *p)
{
	struct cw_buckets *b = &p->bk;
	size_t n = cw_pairing_owners(p), i;

	if (CW_GROW(b->owner_node, b->cap_owner_node, n + 1, 1024))
		return NULL;
	for (i = b->owner_nodes; i < n; i++)
		b->owner_node[i] = -1;
	if (n > b->owner_nodes)
		b->owner_nodes = n;
	return b->owner_node;
}

static uint32_t *acct_of(struct folder *f, size_t i)
{
	struct cw_end *e = cw_htab_val(&f->p->ends, i);

	return f->acct ? &f->acct[i] : &e->acct;
}

/*
 * The node of end i's owner, interned: its key made from the owner's and
 * the process's heads, the whole node (a kilobyte) only when it is new.
 */
static long owner_node_make(struct cw_pairing *p, size_t i)
{
	const struct cw_end *e = cw_pairing_numbers(p, i);
	const struct owner_key *ok = cw_htab_key(&p->owners, e->owner);
	const char *host =
		((const struct host_key *)cw_htab_key(&p->hosts, ok->host))
			->name;
	const struct proc_head *pr = cw_pairing_proc(p, e);
	size_t len = strnlen(host, CW_HOST_LEN - 1);
	struct cw_htab *h = &p->bk.nodes;
	struct cw_edge_node *v;
	struct cw_node_key k;
	bool created;

	memset(&k, 0, sizeof(k));
	k.kind = ok->unknown ? CW_EDGE_NODE_UNKNOWN : CW_EDGE_NODE_PROCESS;
	memcpy(k.host, host, len);
	if (ok->unknown) {
		k.netns = pr->netns;
	} else {
		k.tgid = pr->tgid;
		k.start_ns = pr->start_ns;
	}
	v = cw_htab_upsert(h, &k, &created);
	if (!v)
		return -1;
	if (created) { /* zeroed */
		v->kind = k.kind;
		memcpy(v->host, host, len);
		v->netns = pr->netns;
		if (!ok->unknown)
			cw_pairing_proc_unpack(pr, &v->proc);
	}
	return (long)(((unsigned char *)v -
		       (unsigned char *)cw_htab_val(h, 0)) /
		      h->entry_size);
}

static long owner_node(struct folder *f, size_t i)
{
	const struct cw_end *e = cw_pairing_numbers(f->p, i);

	if (f->owner_node[e->owner] < 0)
		f->owner_node[e->owner] = owner_node_make(f->p, i);
	return f->owner_node[e->owner];
}

static long external_node(struct folder *f, const struct cw_end *e, bool client)
{
	static struct cw_edge_node n;

	memset(&n, 0, sizeof(n));
	n.kind = CW_EDGE_NODE_EXTERNAL;
	n.addr = e->raddr;
	n.port = client ? e->rport : 0;
	return cw_buckets_node(&f->p->bk, &n);
}

/* The bytes of `bytes` whose messages were counted (correlator/graph.c). */
static void sampled(struct cw_edge_total *t, const struct cw_end *e,
		    uint64_t bytes)
{
	uint32_t ppm = e->sampled_ppm ? e->sampled_ppm : CW_PPM;

	t->has_sampled |= e->sampled_ppm || (e->flags & CW_REC_MSGS_EST);
	t->sampled_bytes = cw_count_add(
		t->sampled_bytes, cw_count_of((double)bytes * ppm / CW_PPM));
}

/* Bytes and messages each way into t, saturating. */
static void add_dirs(struct cw_edge_total *t, uint64_t bytes_c2s,
		     uint64_t bytes_s2c, uint64_t msgs_c2s, uint64_t msgs_s2c)
{
	t->bytes_c2s = cw_count_add(t->bytes_c2s, bytes_c2s);
	t->bytes_s2c = cw_count_add(t->bytes_s2c, bytes_s2c);
	t->msgs_c2s = cw_count_add(t->msgs_c2s, msgs_c2s);
	t->msgs_s2c = cw_count_add(t->msgs_s2c, msgs_s2c);
}

/* a + b, both signed differences, saturating. */
static int64_t diff_sum(int64_t a, int64_t b)
{
	return b < 0 ? cw_diff_add(a, b == INT64_MIN ? (uint64_t)INT64_MAX + 1
						      : (uint64_t)-b,
				   true)
		     : cw_diff_add(a, (uint64_t)b, false);
}

/* Count end i's connection (and its partner q's) once, where first met. */
static void count_conn(struct folder *f, struct cw_edge_total *t, size_t i,
		       long q)
{
	const struct cw_end *e = cw_pairing_numbers(f->p, i);
	const struct cw_end *pe = q >= 0 ? cw_pairing_numbers(f->p, q) : NULL;
	uint32_t *a = acct_of(f, i), *c = q >= 0 ? acct_of(f, q) : a;
	uint32_t flags = e->flags | (pe ? pe->flags : 0);

	if (!(*a & CW_END_COUNTED) && !(*c & CW_END_COUNTED)) {
		t->conns++;
		t->paired += pe != NULL;
		t->est_conns += (flags & CW_REC_MSGS_EST) != 0;
	}
	*a |= CW_END_COUNTED;
	*c |= CW_END_COUNTED;
}

/* The delta d of end i (paired by p->partner) into bucket kb's edge;
 * h: its histograms' gain, NULL none. */
static int fold(struct folder *f, uint64_t kb, size_t i,
		const struct pend_val *d, const struct cw_end_hists *h)
{
	const struct cw_end *e = cw_pairing_numbers(f->p, i), *pe = NULL;
	long q = f->p->partner[i], me = owner_node(f, i), other;
	bool client = cw_end_is_client(e);
	struct cw_edge_total *t;
	struct edge_key k;
	uint64_t first = e->first_ns;

	if (q >= 0) {
		pe = cw_pairing_numbers(f->p, (size_t)q);
		other = owner_node(f, (size_t)q);
		if (pe->first_ns && (!first || pe->first_ns < first))
			first = pe->first_ns;
	} else {
		other = external_node(f, e, client);
	}
	if (me < 0 || other < 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.bucket = kb;
	k.client = (uint32_t)(client ? me : other);
	k.server = (uint32_t)(client ? other : me);
	k.protocol = e->protocol;
	t = cw_htab_upsert(f->out, &k, NULL);
	if (!t)
		return -1;
	if (pe) { /* each end gives what it sent; diffs: sent - received */
		uint64_t *sent = client ? &t->bytes_c2s : &t->bytes_s2c;
		uint64_t *msgs = client ? &t->msgs_c2s : &t->msgs_s2c;
		int64_t *mine = client ? &t->diff_c2s : &t->diff_s2c;
		int64_t *theirs = client ? &t->diff_s2c : &t->diff_c2s;

		*sent = cw_count_add(*sent, d->bytes_out);
		*msgs = cw_count_add(*msgs, d->msgs_out);
		*mine = cw_diff_add(*mine, d->bytes_out, false);
		*theirs = cw_diff_add(*theirs, d->bytes_in, true);
		sampled(t, e, d->bytes_out);
	} else {
		add_dirs(t, client ? d->bytes_out : d->bytes_in,
			 client ? d->bytes_in : d->bytes_out,
			 client ? d->msgs_out : d->msgs_in,
			 client ? d->msgs_in : d->msgs_out);
		sampled(t, e, cw_count_add(d->bytes_out, d->bytes_in));
	}
	count_conn(f, t, i, q);
	t->retrans = cw_count_add(t->retrans, d->retrans);
	cw_health_fold(t, d, h, client, pe != NULL);
	if (first && (!t->first_ns || first < t->first_ns))
		t->first_ns = first;
	if (d->last_ns > t->last_ns)
		t->last_ns = d->last_ns;
	return 0;
}

void cw_edge_total_add(struct cw_edge_total *t, const struct cw_edge_total *x)
{
	t->conns = cw_count_add(t->conns, x->conns);
	t->paired = cw_count_add(t->paired, x->paired);
	add_dirs(t, x->bytes_c2s, x->bytes_s2c, x->msgs_c2s, x->msgs_s2c);
	t->diff_c2s = diff_sum(t->diff_c2s, x->diff_c2s);
	t->diff_s2c = diff_sum(t->diff_s2c, x->diff_s2c);
	t->retrans = cw_count_add(t->retrans, x->retrans);
	(void)cw_edge_health_more(&t->h, x->h);
	t->est_conns = cw_count_add(t->est_conns, x->est_conns);
	t->sampled_bytes = cw_count_add(t->sampled_bytes, x->sampled_bytes);
	t->has_sampled |= x->has_sampled;
	if (x->first_ns && (!t->first_ns || x->first_ns < t->first_ns))
		t->first_ns = x->first_ns;
	if (x->last_ns > t->last_ns)
		t->last_ns = x->last_ns;
}

/* A folder over p (paired) into out; 0 or -1.  acct: fold for real. */
static int folder_init(struct folder *f, struct cw_pairing *p,
		       struct cw_htab *out, bool real)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	f->p = p;
	f->out = out;
	f->owner_node = owner_nodes(p);
	if (!f->owner_node)
		return -1;
	if (real)
		return 0;
	f->acct = malloc((p->ends.len + 1) * sizeof(*f->acct));
	if (!f->acct)
		return -1;
	for (i = 0; i < p->ends.len; i++)
		f->acct[i] = cw_pairing_numbers(p, i)->acct;
	return 0;
}

static void folder_release(struct folder *f)
{
	free(f->acct);
}

/*
 * Fold the deltas of buckets before `to` (all: every one) into f->out,
 * under their bucket (or 0 when whole); with drop, forget them.  0 or -1.
 */
static int fold_pend(struct folder *f, uint64_t to, bool whole, bool drop)
{
	struct cw_buckets *b = &f->p->bk;
	const struct pend_val *v;
	struct pend_key k;
	size_t j;
	long i;

	for (j = b->pend.len; j-- > 0;) {
		k = *(struct pend_key *)cw_htab_key(&b->pend, j);
		if (k.bucket >= to)
			continue;
		i = cw_htab_index(&f->p->ends, &k.ek);
		v = cw_htab_val(&b->pend, j);
		if (i >= 0 &&
		    fold(f, whole ? 0 : k.bucket, (size_t)i, v,
			 v->has_hists ? cw_htab_get(&b->pend_hists, &k) : NULL))
			return -1;
		if (!drop)
			continue;
		if (i >= 0)
			((struct cw_end *)cw_htab_val(&f->p->ends, i))->npend--;
		cw_health_pend_drop(b, &k);
		cw_htab_delete(&b->pend, &k);
	}
	return 0;
}

/* Add each edge of from into to, under its own bucket or bucket 0. */
static int add_edges(struct cw_htab *to, const struct cw_htab *from, bool whole)
{
	struct edge_key k;
	struct cw_edge_total *t;
	size_t j;

	for (j = 0; j < from->len; j++) {
		k = *(struct edge_key *)cw_htab_key(from, j);
		if (whole)
			k.bucket = 0;
		t = cw_htab_upsert(to, &k, NULL);
		if (!t)
			return -1;
		cw_edge_total_add(t, cw_htab_val(from, j));
	}
	return 0;
}

/* ---- sealing and freeing ------------------------------------------------- */

/* Can end i go?  Its buckets are sealed, and it closed or fell silent. */
static bool retirable(const struct cw_buckets *b, const struct cw_end *e)
{
	if (e->npend)
		return false;
	if ((e->flags & CW_REC_CLOSED) && e->last_ns < b->s.sealed_ns)
		return true;
	return b->s.watermark_ns > e->last_ns + b->s.ttl_ns;
}

/* Keep end i's totals: it fell silent, but it was not closed. */
static int make_dormant(struct cw_pairing *p, size_t i, uint8_t carried)
{
	const struct cw_end *e = cw_pairing_numbers(p, i);
	struct dormant_val *d;

	d = cw_htab_upsert(&p->bk.dormant, cw_htab_key(&p->ends, i), NULL);
	if (!d)
		return -1;
	d->bytes_out = e->bytes_out;
	d->bytes_in = e->bytes_in;
	d->msgs_out = e->msgs_out;
	d->msgs_in = e->msgs_in;
	d->first_ns = e->first_ns;
	d->last_ns = e->last_ns;
	d->retrans = e->retrans;
	d->acct = e->acct;
	d->flags = e->flags;
	d->carried = carried;
	cw_health_dormant(d, e);
	p->bk.s.dormant++;
	return 0;
}

/* Which ends go: a pair only together, so neither is left alone. */
static void choose(struct cw_pairing *p, uint8_t *gone)
{
	struct cw_buckets *b = &p->bk;
	size_t i, n = p->ends.len;
	long q;

	for (i = 0; i < n; i++) {
		if (!retirable(b, cw_pairing_numbers(p, i)))
			continue;
		q = p->partner[i];
		if (q >= 0 && !retirable(b, cw_pairing_numbers(p, (size_t)q)))
			continue;
		/* gone[i]: 1 + the counter it adds to (as make_dormant()). */
		gone[i] = 1;
		b->s.gone_ends++;
		if (q < 0) {
			b->s.gone_unpaired++;
			gone[i] = 2;
		} else if ((size_t)q > i) {
			b->s.gone_paired++;
			gone[i] = 3;
		}
	}
}

/* Free the ends whose buckets are sealed and that closed or fell silent. */
static int retire(struct cw_pairing *p)
{
	size_t i, n = p->ends.len;
	uint8_t *gone = calloc(n + 1, 1);
	struct end_key k;
	int err = 0;

	if (!gone)
		return -1;
	choose(p, gone);
	/* From the last: a delete moves the last entry, already seen, in. */
	for (i = n; i-- > 0 && !err;) {
		if (!gone[i])
			continue;
		k = *(struct end_key *)cw_htab_key(&p->ends, i);
		if (!(cw_pairing_numbers(p, i)->flags & CW_REC_CLOSED))
			err = make_dormant(p, i, (uint8_t)(gone[i] - 1));
		else
			cw_hists_drop(p, &k); /* a dormant one keeps them */
		p->procs_live -= cw_pairing_numbers(p, i)->proc_room;
		cw_htab_delete(&p->ends, &k);
		cw_pairing_tuple_drop(p, i);
	}
	free(gone);
	cw_pairing_forget(p);
	return err;
}

/* ---- the view: what is kept of the sealed buckets ------------------------ */

void cw_pairing_view(struct cw_pairing *p, uint64_t view_ns)
{
	p->bk.view_ns = view_ns;
}

/* Where the view starts after sealing up to sealed (bucket starts). */
static uint64_t view_from(const struct cw_buckets *b, uint64_t sealed)
{
	return sealed > b->view_ns ? sealed - b->view_ns : 0;
}

/*
 * With a view, the sealed totals are kept per bucket and those before the
 * view are forgotten: each time its start passes a step (an eighth of the
 * view, at least a bucket), so the walk is rare and memory holds at most
 * a view and a step of buckets.  The steps depend on the buckets sealed
 * alone: a restored state forgets at the same seals.  The nodes no edge
 * names any more go with them, but only while no sealed bucket waits to
 * be written: those name every node they ever did, and walking them at
 * each step cost more the longer the writer waited.  Otherwise they go
 * once the sealed buckets are written (cw_pairing_take_sealed()), which
 * is the usual case: the seal that calls this has just added its edges
 * to the sealed set, so only a seal that folded no edge compacts here.
 * 0 or -1.
 */
static int forget(struct cw_buckets *b, uint64_t sealed_before)
{
	uint64_t step = b->view_ns / 8 / b->s.width_ns * b->s.width_ns;
	uint64_t from = view_from(b, b->s.sealed_ns);
	struct cw_edge_total *t;
	uint32_t *id = NULL;
	struct edge_key k;
	size_t j;
	int err;

	if (step < b->s.width_ns)
		step = b->s.width_ns;
	if (from / step == view_from(b, sealed_before) / step)
		return 0;
	/* The nodes the edges kept name, marked on the way for the node
	 * compaction after: one walk of the totals, not two. */
	if (!b->sealed.len && b->nodes.len >= 1024 &&
	    !(id = cw_buckets_node_marks(b)))
		return -1;
	/* From the last: a delete moves the last entry, already seen, in. */
	for (j = b->total.len; j-- > 0;) {
		k = *(struct edge_key *)cw_htab_key(&b->total, j);
		if (k.bucket >= from) {
			if (id)
				id[k.client] = id[k.server] = 0;
			continue;
		}
		t = cw_htab_val(&b->total, j);
		cw_edge_health_free(&t->h);
		cw_htab_delete(&b->total, &k);
	}
	err = id ? cw_buckets_compact_nodes(b, id) : 0;
	free(id);
	return err;
}

int cw_pairing_seal(struct cw_pairing *p)
{
	struct cw_buckets *b = &p->bk;
	uint64_t to = seal_point(b), before;
	struct cw_htab fresh;
	struct folder f;
	int err = -1;

	if (!b->s.width_ns || to <= b->s.sealed_ns) {
		b->due = false;
		return 0;
	}
	/*
	 * A seal pairs and walks every live end: after an eighth of them in
	 * records, so that a backlog sweeping through many buckets costs a
	 * few walks, not one per bucket.  Counted in records, not time, so
	 * a restored state seals at the same records.
	 */
	if (p->st.records - b->s.sealed_records < p->ends.len / 8)
		return 0;
	b->due = false;
	b->s.sealed_records = p->st.records;
	memset(&f, 0, sizeof(f));
	cw_htab_init(&fresh, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	if (cw_pairing_pair(p) || folder_init(&f, p, &fresh, true) ||
	    fold_pend(&f, to, false, true) ||
	    add_edges(&b->sealed, &fresh, false) ||
	    add_edges(&b->total, &fresh, !b->view_ns))
		goto out;
	before = b->s.sealed_ns;
	b->s.sealed_ns = to;
	err = retire(p) || cw_pairing_compact(p) ||
			      (b->view_ns && forget(b, before))
		      ? -1
		      : 0;
out:
	folder_release(&f);
	cw_edge_totals_release(&fresh);
	return err;
}

/* ---- what the buckets hold ---------------------------------------------- */

/* Call fn on each edge of h (nodes of b). */
static int each_edge(const struct cw_buckets *b, const struct cw_htab *h,
		     const struct cw_htab *also, cw_edge_fn fn, void *arg)
{
	const struct edge_key *k;
	const struct cw_edge_total *x;
	struct cw_edge_total t;
	size_t j;
	int r;

	for (j = 0; j < h->len; j++) {
		k = cw_htab_key(h, j);
		x = also ? cw_htab_get(also, k) : NULL;
		if (!x) { /* as it stands: no copy */
			r = fn(cw_htab_val(&b->nodes, k->client),
			       cw_htab_val(&b->nodes, k->server), k->protocol,
			       k->bucket, cw_htab_val(h, j), arg);
			if (r)
				return r;
			continue;
		}
		/* A sum of its own: its health a block of its own too. */
		t = *(const struct cw_edge_total *)cw_htab_val(h, j);
		t.h = cw_edge_health_dup(t.h);
		cw_edge_total_add(&t, x);
		r = fn(cw_htab_val(&b->nodes, k->client),
		       cw_htab_val(&b->nodes, k->server), k->protocol,
		       k->bucket, &t, arg);
		cw_edge_health_free(&t.h);
		if (r)
			return r;
	}
	return 0;
}

/* The open buckets folded as they stand (whole: summed) into *open. */
static int fold_open(struct cw_pairing *p, struct cw_htab *open, bool whole)
{
	struct folder f;
	int err = -1;

	memset(&f, 0, sizeof(f));
	cw_htab_init(open, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	if (cw_pairing_pair(p) || folder_init(&f, p, open, false))
		goto out;
	err = fold_pend(&f, UINT64_MAX, whole, false);
out:
	folder_release(&f);
	return err;
}

/* The sealed totals in the view, summed over buckets, into *sum. */
static int view_sum(const struct cw_buckets *b, struct cw_htab *sum)
{
	uint64_t from = view_from(b, b->s.sealed_ns);
	struct cw_edge_total *t;
	struct edge_key k;
	size_t j;

	for (j = 0; j < b->total.len; j++) {
		k = *(struct edge_key *)cw_htab_key(&b->total, j);
		if (k.bucket < from)
			continue;
		k.bucket = 0;
		t = cw_htab_upsert(sum, &k, NULL);
		if (!t)
			return -1;
		cw_edge_total_add(t, cw_htab_val(&b->total, j));
	}
	return 0;
}

int cw_pairing_edges(struct cw_pairing *p, cw_edge_fn fn, void *arg)
{
	struct cw_buckets *b = &p->bk;
	struct cw_htab open, rest, sum;
	const struct cw_htab *total = &b->total;
	struct edge_key *k;
	size_t j;
	int r = -1;

	cw_htab_init(&rest, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	cw_htab_init(&sum, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	cw_htab_init(&open, sizeof(struct edge_key),
		     sizeof(struct cw_edge_total));
	if (b->view_ns) {
		if (view_sum(b, &sum))
			goto out;
		total = &sum;
	}
	if (fold_open(p, &open, true))
		goto out;
	/* The open part of edges not sealed yet, after the sealed ones. */
	for (j = 0; j < open.len; j++) {
		k = cw_htab_key(&open, j);
		if (!cw_htab_get(total, k) && !cw_htab_upsert(&rest, k, NULL))
			goto out;
	}
	/* Moved, health and all: open's are not read again for these. */
	for (j = 0; j < rest.len; j++) {
		struct cw_edge_total *from =
			cw_htab_get(&open, cw_htab_key(&rest, j));

		*(struct cw_edge_total *)cw_htab_val(&rest, j) = *from;
		from->h = NULL;
	}
	r = each_edge(b, total, &open, fn, arg);
	if (!r)
		r = each_edge(b, &rest, NULL, fn, arg);
out:
	cw_edge_totals_release(&open);
	cw_edge_totals_release(&rest);
	cw_edge_totals_release(&sum);
	return r;
}

int cw_pairing_buckets_each(struct cw_pairing *p, bool open, cw_edge_fn fn,
			    void *arg)
{
	struct cw_htab o;
	int r = 0;

	/* Folded first: it may intern nodes, and the nodes fn is given
	 * stay where they are until p changes. */
	if (open)
		r = fold_open(p, &o, false);
	else
		cw_htab_init(&o, sizeof(struct edge_key),
			     sizeof(struct cw_edge_total));
	if (!r)
		r = each_edge(&p->bk, &p->bk.sealed, NULL, fn, arg);
	if (!r)
		r = each_edge(&p->bk, &o, NULL, fn, arg);
	cw_edge_totals_release(&o);
	return r;
}

void cw_pairing_take_sealed(struct cw_pairing *p)
{
	cw_edge_totals_release(&p->bk.sealed);
	/* The nodes only they named can go now (forget() left them); out
	 * of memory, they stay until the next time. */
	if (p->bk.view_ns)
		(void)cw_buckets_compact_nodes(&p->bk, NULL);
}

size_t cw_pairing_live_ends(const struct cw_pairing *p)
{
	return p->ends.len;
}

static size_t htab_bytes(const struct cw_htab *h)
{
	return h->cap * h->entry_size + h->slots * sizeof(*h->index);
}

size_t cw_pairing_bytes(const struct cw_pairing *p)
{
	const struct cw_buckets *b = &p->bk;

	return htab_bytes(&p->ends) + htab_bytes(&p->hosts) +
	       htab_bytes(&p->owners) + p->procs_size + htab_bytes(&b->nodes) +
	       htab_bytes(&b->total) + htab_bytes(&b->sealed) +
	       htab_bytes(&b->pend) + htab_bytes(&b->dormant) +
	       htab_bytes(&p->hists) + htab_bytes(&b->pend_hists) +
	       htab_bytes(&p->tuples) + p->cap_end_tuple * sizeof(uint32_t);
}
