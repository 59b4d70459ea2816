// SPDX-License-Identifier: MIT
/*
 * Pairing the ends (correlator/pair.c keeps them): ends grouped by their
 * connection tuple, each end's tuple interned as its records come (so a
 * pairing, at every seal, hashes no end again), and within one tuple each
 * end matched to its partner.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/pair_impl.h"

static const struct cw_end *end_at(const struct cw_pairing *p, size_t i)
{
	return cw_htab_val(&p->ends, i);
}

static void tuple_of(const struct cw_pairing *p, const struct cw_end *e,
		     struct tuple_key *k)
{
	int c = cw_addr_cmp(&e->laddr, &e->raddr);
	bool flipped = c > 0 || (c == 0 && e->lport > e->rport);
	const struct owner_key *o;

	memset(k, 0, sizeof(*k));
	k->protocol = e->protocol;
	k->a = flipped ? e->raddr : e->laddr;
	k->b = flipped ? e->laddr : e->raddr;
	k->aport = flipped ? e->rport : e->lport;
	k->bport = flipped ? e->lport : e->rport;
	if (cw_addr_is_local(&e->laddr) || cw_addr_is_local(&e->raddr)) {
		o = cw_htab_key(&p->owners, e->owner);
		k->host = o->host + 1;
		k->netns = cw_pairing_proc(p, e)->netns;
	}
}

static bool overlaps(const struct cw_end *x, const struct cw_end *y)
{
	/* Clocks of two hosts differ a little; allow a second of slack. */
	uint64_t slack = 1000000000ULL;

	return x->first_ns <= y->last_ns + slack &&
	       y->first_ns <= x->last_ns + slack;
}

bool cw_end_is_client(const struct cw_end *e)
{
	if (e->role == CW_REC_ROLE_CLIENT)
		return true;
	if (e->role == CW_REC_ROLE_SERVER)
		return false;
	return e->lport > e->rport;
}

static bool complement(const struct cw_end *x, const struct cw_end *y)
{
	return x->lport == y->rport && x->rport == y->lport &&
	       !cw_addr_cmp(&x->laddr, &y->raddr) &&
	       !cw_addr_cmp(&x->raddr, &y->laddr);
}

/* Could x and y be the two ends of one connection? */
static bool may_pair(const struct cw_end *x, const struct cw_end *y)
{
	return complement(x, y) && overlaps(x, y) &&
	       !(x->role && y->role && x->role == y->role);
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The unused end of idx[] end idx[i] pairs with, or -1; *cands: how many
 * could have been. */
static long best_partner(const struct cw_pairing *p, const uint32_t *idx,
			 size_t n, size_t i, const bool *used, size_t *cands)
{
	const struct cw_end *x = end_at(p, idx[i]), *y, *best = NULL;
	size_t j;
	long bj = -1;

	*cands = 0;
	for (j = 0; j < n; j++) {
		if (j == i || used[idx[j]])
			continue;
		y = end_at(p, idx[j]);
		if (!may_pair(x, y))
			continue;
		(*cands)++;
		if (!best || distance(x->first_ns, y->first_ns) <
				     distance(x->first_ns, best->first_ns)) {
			best = y;
			bj = (long)j;
		}
	}
	return bj;
}

/*
 * Within one tuple, each end takes the complementary end whose lifetime
 * overlaps its own, preferring opposite roles and then the nearest start:
 * the same tuple can be reused over time, or in namespaces that share an
 * address plan.  Fills p->partner.
 */
static void pair_group(struct cw_pairing *p, const uint32_t *idx, size_t n,
		       bool *used)
{
	size_t i, cands;
	long bj;

	if (n == 2) { /* the common case: one connection, two ends */
		if (may_pair(end_at(p, idx[0]), end_at(p, idx[1]))) {
			p->partner[idx[0]] = idx[1];
			p->partner[idx[1]] = idx[0];
			p->st.paired++;
		} else {
			p->st.unpaired += 2;
		}
		return;
	}
	for (i = 0; i < n; i++) {
		if (used[idx[i]])
			continue;
		bj = best_partner(p, idx, n, i, used, &cands);
		used[idx[i]] = true;
		if (bj < 0) {
			p->st.unpaired++;
			continue;
		}
		used[idx[bj]] = true;
		p->partner[idx[i]] = (long)idx[bj];
		p->partner[idx[bj]] = (long)idx[i];
		p->st.paired++;
		p->st.ambiguous += cands > 1;
	}
}

/* ---- each end's tuple, kept as ends come and go ------------------------- */

/* The entry number of value v of h. */
static uint32_t entry_of(const struct cw_htab *h, const void *v)
{
	return (uint32_t)(((const unsigned char *)v -
			   (const unsigned char *)cw_htab_val(h, 0)) /
			  h->entry_size);
}

int cw_pairing_tuple_note(struct cw_pairing *p, size_t i, bool created)
{
	struct tuple_key k;
	void *v;

	tuple_of(p, end_at(p, i), &k);
	/* The same tuple as its record before: nearly every update. */
	if (!created &&
	    !memcmp(cw_htab_key(&p->tuples, p->end_tuple[i]), &k, sizeof(k)))
		return 0;
	if (CW_GROW(p->end_tuple, p->cap_end_tuple, i + 1, 1024))
		return -1;
	v = cw_htab_upsert(&p->tuples, &k, NULL);
	if (!v)
		return -1;
	p->end_tuple[i] = entry_of(&p->tuples, v);
	return 0;
}

void cw_pairing_tuple_drop(struct cw_pairing *p, size_t i)
{
	/* The ends' table moved its last entry into i (cw_htab_delete()). */
	if (i < p->ends.len)
		p->end_tuple[i] = p->end_tuple[p->ends.len];
}

int cw_pairing_tuples_compact(struct cw_pairing *p)
{
	size_t i, n = p->ends.len;
	struct cw_htab tuples;
	struct tuple_key k;
	uint32_t *id;
	void *v;

	if (p->tuples.len <= 2 * n + 1024)
		return 0;
	cw_htab_init(&tuples, sizeof(struct tuple_key), 0);
	id = malloc((n + 1) * sizeof(*id));
	if (!id || cw_htab_reserve(&tuples, n))
		goto fail;
	/* New ids apart: the old ones stay until every end has one. */
	for (i = 0; i < n; i++) {
		tuple_of(p, end_at(p, i), &k);
		v = cw_htab_upsert(&tuples, &k, NULL);
		if (!v)
			goto fail;
		id[i] = entry_of(&tuples, v);
	}
	if (n)
		memcpy(p->end_tuple, id, n * sizeof(*id));
	free(id);
	cw_htab_release(&p->tuples);
	p->tuples = tuples;
	return 0;
fail:
	free(id);
	cw_htab_release(&tuples);
	return -1;
}

/*
 * Order the ends by group (a counting sort, groups in order of their
 * first end) into p->order; p->group_end[k]: where group k ends.  0 or -1.
 */
static int order_ends(struct cw_pairing *p)
{
	size_t n = p->ends.len, nt = p->tuples.len, ng = 0, i, j;
	uint32_t *gid = malloc((nt ? nt : 1) * sizeof(*gid)), *start;
	uint32_t *cnt = NULL;

	if (!gid)
		return -1;
	memset(gid, 0xff, (nt ? nt : 1) * sizeof(*gid));
	/* Group numbers in order of each tuple's first end. */
	for (i = 0; i < n; i++)
		if (gid[p->end_tuple[i]] == UINT32_MAX)
			gid[p->end_tuple[i]] = (uint32_t)ng++;
	start = malloc((ng + 1) * sizeof(*start));
	cnt = calloc(ng + 1, sizeof(*cnt));
	if (!start || !cnt) {
		free(gid);
		free(start);
		free(cnt);
		return -1;
	}
	for (i = 0; i < n; i++)
		cnt[gid[p->end_tuple[i]]]++;
	for (i = 0, j = 0; i < ng; i++) {
		start[i] = (uint32_t)j;
		j += cnt[i];
	}
	start[ng] = (uint32_t)n;
	for (i = 0; i < n; i++)
		p->order[start[gid[p->end_tuple[i]]]++] = (uint32_t)i;
	/* Now start[k] is where group k ends, and k + 1 begins. */
	p->group_end = start;
	p->ngroups = ng;
	free(gid);
	free(cnt);
	return 0;
}

void cw_pairing_unpair(struct cw_pairing *p)
{
	free(p->partner);
	free(p->order);
	free(p->group_end);
	p->partner = NULL;
	p->order = p->group_end = NULL;
	p->ngroups = 0;
}

int cw_pairing_pair(struct cw_pairing *p)
{
	size_t n = p->ends.len, i, j;
	bool *used;

	/* Still valid: every change of the ends drops it.  A snapshot pairs
	 * for its counters, its open buckets and its graph: once will do. */
	if (p->partner)
		return 0;
	cw_pairing_unpair(p);
	p->partner = malloc((n ? n : 1) * sizeof(*p->partner));
	p->order = malloc((n ? n : 1) * sizeof(*p->order));
	used = calloc(n ? n : 1, sizeof(*used));
	if (!p->partner || !p->order || !used || order_ends(p)) {
		free(used);
		cw_pairing_unpair(p);
		return -1;
	}
	for (i = 0; i < n; i++)
		p->partner[i] = -1;
	p->st.ends = n;
	p->st.paired = p->st.unpaired = p->st.ambiguous = 0;
	for (i = 0, j = 0; i < p->ngroups; j = p->group_end[i++])
		pair_group(p, p->order + j, p->group_end[i] - j, used);
	free(used);
	/* Ends folded into their edges and freed count as they were. */
	p->st.ends += p->bk.s.gone_ends;
	p->st.paired += p->bk.s.gone_paired;
	p->st.unpaired += p->bk.s.gone_unpaired;
	return 0;
}
