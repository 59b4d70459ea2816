// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "correlator/correlator.h"

/* One end of a connection on one host. */
struct end_key {
	char host[CW_HOST_LEN];
	uint64_t cookie;
	uint64_t generation; /* UDP: first_ns, a flow re-created later */
	struct cw_addr raddr;
	uint16_t rport;
	uint8_t protocol;
	uint8_t pad[5];
};

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
	cw_htab_init(&p->ends, sizeof(struct end_key),
		     sizeof(struct cw_conn_record));
}

void cw_pairing_release(struct cw_pairing *p)
{
	cw_htab_release(&p->ends);
	free(p->partner);
	p->partner = NULL;
}

long cw_pairing_find(const struct cw_pairing *p, const char *host,
		     uint64_t cookie)
{
	struct end_key k;

	memset(&k, 0, sizeof(k));
	snprintf(k.host, sizeof(k.host), "%s", host);
	k.cookie = cookie;
	k.protocol = 6;
	return cw_htab_index(&p->ends, &k);
}

const struct cw_conn_record *cw_pairing_end(const struct cw_pairing *p,
					    size_t i)
{
	return cw_htab_val(&p->ends, i);
}

static void end_key_of(const struct cw_conn_record *r, struct end_key *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->host, sizeof(k->host), "%s", r->host);
	k->cookie = r->cookie;
	k->protocol = r->protocol;
	if (r->protocol != 6) {
		k->raddr = r->raddr;
		k->rport = r->rport;
		k->generation = r->first_ns;
	}
}

static bool newer(const struct cw_conn_record *a,
		  const struct cw_conn_record *b)
{
	uint64_t ta = a->bytes_out + a->bytes_in + a->calls_out + a->calls_in;
	uint64_t tb = b->bytes_out + b->bytes_in + b->calls_out + b->calls_in;

	if ((a->flags & CW_REC_CLOSED) != (b->flags & CW_REC_CLOSED))
		return a->flags & CW_REC_CLOSED;
	if (ta != tb)
		return ta > tb;
	return a->last_ns >= b->last_ns;
}

int cw_pairing_add(struct cw_pairing *p, const struct cw_conn_record *r)
{
	struct cw_conn_record *slot;
	struct end_key k;
	bool created;

	end_key_of(r, &k);
	slot = cw_htab_upsert(&p->ends, &k, &created);
	if (!slot)
		return -1;
	p->st.records++;
	if (created || newer(r, slot))
		*slot = *r;
	else
		p->st.stale++;
	return 0;
}

static void tuple_of(const struct cw_conn_record *r, struct tuple_key *k,
		     bool *flipped)
{
	int c = cw_addr_cmp(&r->laddr, &r->raddr);

	memset(k, 0, sizeof(*k));
	k->protocol = r->protocol;
	*flipped = c > 0 || (c == 0 && r->lport > r->rport);
	k->a = *flipped ? r->raddr : r->laddr;
	k->b = *flipped ? r->laddr : r->raddr;
	k->aport = *flipped ? r->rport : r->lport;
	k->bport = *flipped ? r->lport : r->rport;
}

static bool overlaps(const struct cw_conn_record *x,
		     const struct cw_conn_record *y)
{
	/* Clocks of two hosts differ a little; allow a second of slack. */
	uint64_t slack = 1000000000ULL;

	return x->first_ns <= y->last_ns + slack &&
	       y->first_ns <= x->last_ns + slack;
}

/* Is r the client end?  The agent says so; else the higher port is. */
static bool is_client(const struct cw_conn_record *r)
{
	if (r->role == CW_REC_ROLE_CLIENT)
		return true;
	if (r->role == CW_REC_ROLE_SERVER)
		return false;
	return r->lport > r->rport;
}

static int add_pair(struct cw_graph *g, const struct cw_conn_record *c,
		    const struct cw_conn_record *s)
{
	struct cw_conn_traffic t = { 0 };
	long cn = cw_graph_node_for_end(g, c), sn = cw_graph_node_for_end(g, s);

	if (cn < 0 || sn < 0)
		return -1;
	t.protocol = c->protocol;
	t.bytes_c2s = c->bytes_out;
	t.bytes_s2c = s->bytes_out;
	t.msgs_c2s = c->msgs_out;
	t.msgs_s2c = s->msgs_out;
	t.diff_c2s = (int64_t)(c->bytes_out - s->bytes_in);
	t.diff_s2c = (int64_t)(s->bytes_out - c->bytes_in);
	t.first_ns = c->first_ns < s->first_ns ? c->first_ns : s->first_ns;
	t.last_ns = c->last_ns > s->last_ns ? c->last_ns : s->last_ns;
	t.retrans = c->retrans + s->retrans;
	t.both_ends = 1;
	return cw_graph_add(g, (size_t)cn, (size_t)sn, &t);
}

static int add_single(struct cw_graph *g, const struct cw_conn_record *r)
{
	struct cw_conn_traffic t = { 0 };
	bool client = is_client(r);
	long me = cw_graph_node_for_end(g, r);
	long other = cw_graph_node_external(g, &r->raddr,
					    client ? r->rport : 0);

	if (me < 0 || other < 0)
		return -1;
	t.protocol = r->protocol;
	t.bytes_c2s = client ? r->bytes_out : r->bytes_in;
	t.bytes_s2c = client ? r->bytes_in : r->bytes_out;
	t.msgs_c2s = client ? r->msgs_out : r->msgs_in;
	t.msgs_s2c = client ? r->msgs_in : r->msgs_out;
	t.first_ns = r->first_ns;
	t.last_ns = r->last_ns;
	t.retrans = r->retrans;
	return cw_graph_add(g, (size_t)(client ? me : other),
			    (size_t)(client ? other : me), &t);
}

/* Ends grouped by tuple: an index list per tuple, in one flat array. */
struct group {
	size_t first, n;
};

static bool complement(const struct cw_conn_record *x,
		       const struct cw_conn_record *y)
{
	return x->lport == y->rport && x->rport == y->lport &&
	       !cw_addr_cmp(&x->laddr, &y->raddr) &&
	       !cw_addr_cmp(&x->raddr, &y->laddr);
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * Within one tuple, each end takes the complementary end whose lifetime
 * overlaps its own, preferring opposite roles and then the nearest start:
 * the same tuple can be reused over time, or in namespaces that share an
 * address plan.
 */
static int pair_group(struct cw_pairing *p, struct cw_graph *g,
		      const size_t *idx, size_t n, bool *used)
{
	const struct cw_conn_record *x, *y, *best;
	size_t i, j, bj = 0, cands;
	int err;

	for (i = 0; i < n; i++) {
		if (used[idx[i]])
			continue;
		x = cw_htab_val(&p->ends, idx[i]);
		best = NULL;
		cands = 0;
		for (j = 0; j < n; j++) {
			if (j == i || used[idx[j]])
				continue;
			y = cw_htab_val(&p->ends, idx[j]);
			if (!complement(x, y) || !overlaps(x, y))
				continue;
			if (x->role && y->role && x->role == y->role)
				continue;
			cands++;
			if (!best || distance(x->first_ns, y->first_ns) <
					     distance(x->first_ns, best->first_ns)) {
				best = y;
				bj = j;
			}
		}
		used[idx[i]] = true;
		if (!best) {
			p->st.unpaired++;
			err = add_single(g, x);
		} else {
			used[idx[bj]] = true;
			p->partner[idx[i]] = (long)idx[bj];
			p->partner[idx[bj]] = (long)idx[i];
			p->st.paired++;
			p->st.ambiguous += cands > 1;
			err = is_client(x) ? add_pair(g, x, best) :
					     add_pair(g, best, x);
		}
		if (err)
			return -1;
	}
	return 0;
}

int cw_pairing_build(struct cw_pairing *p, struct cw_graph *g)
{
	size_t n = p->ends.len, i, j, *order = NULL;
	struct cw_htab groups;
	struct tuple_key tk;
	bool *used = NULL, flipped;
	struct group *grp;
	int err = -1;

	cw_htab_init(&groups, sizeof(tk), sizeof(struct group));
	order = calloc(n ? n : 1, sizeof(*order));
	free(p->partner);
	p->partner = malloc((n ? n : 1) * sizeof(*p->partner));
	if (p->partner)
		for (i = 0; i < n; i++)
			p->partner[i] = -1;
	used = calloc(n ? n : 1, sizeof(*used));
	if (!order || !used || !p->partner)
		goto out;
	/* Count per tuple, then place: a counting sort by group. */
	for (i = 0; i < n; i++) {
		tuple_of(cw_htab_val(&p->ends, i), &tk, &flipped);
		grp = cw_htab_upsert(&groups, &tk, NULL);
		if (!grp)
			goto out;
		grp->n++;
	}
	for (i = 0, j = 0; i < groups.len; i++) {
		grp = cw_htab_val(&groups, i);
		grp->first = j;
		j += grp->n;
		grp->n = 0;
	}
	for (i = 0; i < n; i++) {
		tuple_of(cw_htab_val(&p->ends, i), &tk, &flipped);
		grp = cw_htab_get(&groups, &tk);
		order[grp->first + grp->n++] = i;
	}
	p->st.ends = n;
	p->st.paired = p->st.unpaired = p->st.ambiguous = 0;
	for (i = 0; i < groups.len; i++) {
		grp = cw_htab_val(&groups, i);
		if (pair_group(p, g, order + grp->first, grp->n, used))
			goto out;
	}
	err = 0;
out:
	free(order);
	free(used);
	cw_htab_release(&groups);
	return err;
}
