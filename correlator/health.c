// SPDX-License-Identifier: MIT
/*
 * Edge health in the pairing and its time buckets (docs/edge-health.md).
 * An end keeps its newest record's health counters, and, only when it has
 * any, its newest histograms in p->hists (most ends have none, and a
 * record's three histograms are 774 bytes).  Like every counter, health
 * is cumulative in the records, so what a record adds to its bucket is
 * the difference from the end's record before: counters by subtraction,
 * histograms bin by bin (cw_rec_hist_delta), the connect time and the
 * failure once, in the bucket of the record that first told them.
 */
#include <string.h>

#include "common/hist.h"
#include "correlator/bucket_impl.h"
#include "correlator/correlator.h"
#include "correlator/pair_impl.h"

bool cw_rec_has_hists(const struct cw_conn_record *r)
{
	return r->rtt.len || r->xchg.len || r->xchg_first.len;
}

void cw_end_health_set(struct cw_end *e, const struct cw_conn_record *r)
{
	e->connect_us = r->connect_us;
	e->fail = r->fail;
	e->resets_in = r->resets_in;
	e->resets_out = r->resets_out;
	e->xchg_pipelined = r->xchg_pipelined;
	e->has_hists |= cw_rec_has_hists(r);
}

const struct cw_end_hists *cw_hists_get(const struct cw_pairing *p,
					const struct end_key *k)
{
	return p->hists.len ? cw_htab_get(&p->hists, k) : NULL;
}

int cw_hists_keep(struct cw_pairing *p, const struct end_key *k,
		  const struct cw_conn_record *r)
{
	struct cw_end_hists *h;

	if (!cw_rec_has_hists(r))
		return 0;
	h = cw_htab_upsert(&p->hists, k, NULL);
	if (!h)
		return -1;
	h->rtt = r->rtt;
	h->xchg = r->xchg;
	h->xchg_first = r->xchg_first;
	return 0;
}

void cw_hists_put(const struct cw_pairing *p, const struct end_key *k,
		  struct cw_conn_record *r)
{
	const struct cw_end_hists *h = cw_hists_get(p, k);

	if (!h)
		return;
	r->rtt = h->rtt;
	r->xchg = h->xchg;
	r->xchg_first = h->xchg_first;
}

void cw_hists_drop(struct cw_pairing *p, const struct end_key *k)
{
	if (p->hists.len)
		cw_htab_delete(&p->hists, k);
}

const struct cw_end_hists *cw_pairing_hists(const struct cw_pairing *p,
					    size_t i)
{
	const struct cw_end *e = cw_pairing_numbers(p, i);

	if (!e->has_hists)
		return NULL;
	return cw_hists_get(p, cw_htab_key(&p->ends, i));
}

void cw_end_health_of(const struct cw_end *e, const struct cw_end_hists *h,
		      struct cw_end_health *out)
{
	memset(out, 0, sizeof(*out));
	out->connect_us = e->connect_us;
	out->fail = e->fail;
	out->resets_in = e->resets_in;
	out->resets_out = e->resets_out;
	out->xchg_pipelined = e->xchg_pipelined;
	if (h) {
		out->rtt = &h->rtt;
		out->xchg = &h->xchg;
		out->xchg_first = &h->xchg_first;
	}
}

/* The gain of one histogram (now over before) merged into *into. */
static int hist_gain(struct cw_rec_hist *into, const struct cw_rec_hist *now,
		     const struct cw_rec_hist *before, bool *any)
{
	static const struct cw_rec_hist none;
	struct cw_hist d = CW_HIST_INIT, acc = CW_HIST_INIT;
	int err = 0;

	if (!now->len)
		return 0;
	if (cw_rec_hist_delta(&d, now, before ? before : &none))
		err = -1;
	else if (d.count) {
		*any = true;
		err = cw_rec_hist_get(into, &acc) || cw_hist_merge(&acc, &d) ||
		      cw_rec_hist_set(into, &acc);
	}
	cw_hist_release(&d);
	cw_hist_release(&acc);
	return err ? -1 : 0;
}

int cw_health_note(struct cw_pairing *p, const struct pend_key *pk,
		   struct pend_val *v, const struct cw_end *e,
		   const struct cw_end *prev, const struct cw_conn_record *r,
		   const struct cw_end_hists *before)
{
	struct cw_buckets *b = &p->bk;
	struct cw_end_hists *g;
	bool any = false, made;

	if (!prev->connect_us && e->connect_us)
		v->connect_us = e->connect_us;
	if (!prev->fail && e->fail)
		v->fail = e->fail;
	v->resets_in = cw_count_add(v->resets_in,
				    cw_count_delta(e->resets_in, prev->resets_in));
	v->resets_out = cw_count_add(
		v->resets_out, cw_count_delta(e->resets_out, prev->resets_out));
	v->xchg_pipelined = cw_count_add(
		v->xchg_pipelined,
		cw_count_delta(e->xchg_pipelined, prev->xchg_pipelined));
	if (!cw_rec_has_hists(r))
		return 0;
	g = cw_htab_upsert(&b->pend_hists, pk, &made);
	if (!g)
		return -1;
	if (hist_gain(&g->rtt, &r->rtt, before ? &before->rtt : NULL, &any) ||
	    hist_gain(&g->xchg, &r->xchg, before ? &before->xchg : NULL,
		      &any) ||
	    hist_gain(&g->xchg_first, &r->xchg_first,
		      before ? &before->xchg_first : NULL, &any))
		return -1;
	v->has_hists |= any || !made;
	if (!v->has_hists)
		cw_htab_delete(&b->pend_hists, pk);
	return 0;
}

void cw_health_fold(struct cw_edge_total *t, const struct pend_val *d,
		    const struct cw_end_hists *h, bool client, bool paired)
{
	struct cw_end_health x = {
		.connect_us = d->connect_us,
		.fail = d->fail,
		.resets_in = d->resets_in,
		.resets_out = d->resets_out,
		.xchg_pipelined = d->xchg_pipelined,
	};

	if (h) {
		x.rtt = &h->rtt;
		x.xchg = &h->xchg;
		x.xchg_first = &h->xchg_first;
	}
	cw_edge_health_end(&t->h, &x, client, paired);
}

void cw_health_pend_drop(struct cw_buckets *b, const struct pend_key *pk)
{
	if (b->pend_hists.len)
		cw_htab_delete(&b->pend_hists, pk);
}

void cw_health_delta_out(const struct cw_buckets *b, const struct pend_key *pk,
			 const struct pend_val *v, struct cw_end_delta *d)
{
	const struct cw_end_hists *h = NULL;

	d->connect_us = v->connect_us;
	d->fail = v->fail;
	d->resets_in = v->resets_in > UINT32_MAX ? UINT32_MAX
						 : (uint32_t)v->resets_in;
	d->resets_out = v->resets_out > UINT32_MAX ? UINT32_MAX
						   : (uint32_t)v->resets_out;
	d->xchg_pipelined = v->xchg_pipelined;
	memset(&d->rtt, 0, sizeof(d->rtt));
	memset(&d->xchg, 0, sizeof(d->xchg));
	memset(&d->xchg_first, 0, sizeof(d->xchg_first));
	if (v->has_hists && b->pend_hists.len)
		h = cw_htab_get(&b->pend_hists, pk);
	if (!h)
		return;
	d->rtt = h->rtt;
	d->xchg = h->xchg;
	d->xchg_first = h->xchg_first;
}

int cw_health_delta_in(struct cw_buckets *b, const struct pend_key *pk,
		       struct pend_val *v, const struct cw_end_delta *d)
{
	struct cw_end_hists *g;
	bool made;

	if (d->connect_us)
		v->connect_us = d->connect_us;
	if (d->fail)
		v->fail = d->fail;
	v->resets_in = cw_count_add(v->resets_in, d->resets_in);
	v->resets_out = cw_count_add(v->resets_out, d->resets_out);
	v->xchg_pipelined = cw_count_add(v->xchg_pipelined, d->xchg_pipelined);
	if (!d->rtt.len && !d->xchg.len && !d->xchg_first.len)
		return 0;
	g = cw_htab_upsert(&b->pend_hists, pk, &made);
	if (!g)
		return -1;
	v->has_hists = 1;
	return cw_rec_hist_merge(&g->rtt, &d->rtt) ||
			       cw_rec_hist_merge(&g->xchg, &d->xchg) ||
			       cw_rec_hist_merge(&g->xchg_first, &d->xchg_first)
		       ? -1
		       : 0;
}

void cw_health_dormant(struct dormant_val *d, const struct cw_end *e)
{
	d->connect_us = e->connect_us;
	d->fail = e->fail;
	d->resets_in = e->resets_in;
	d->resets_out = e->resets_out;
	d->xchg_pipelined = e->xchg_pipelined;
	d->has_hists = e->has_hists;
}

void cw_health_dormant_out(const struct dormant_val *d,
			   struct cw_conn_record *r)
{
	r->connect_us = d->connect_us;
	r->fail = d->fail;
	r->resets_in = d->resets_in;
	r->resets_out = d->resets_out;
	r->xchg_pipelined = d->xchg_pipelined;
}

void cw_health_dormant_in(struct dormant_val *d,
			  const struct cw_conn_record *r)
{
	d->connect_us = r->connect_us;
	d->fail = r->fail;
	d->resets_in = r->resets_in;
	d->resets_out = r->resets_out;
	d->xchg_pipelined = r->xchg_pipelined;
	d->has_hists = cw_rec_has_hists(r);
}
