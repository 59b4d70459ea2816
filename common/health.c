// SPDX-License-Identifier: MIT
/*
 * Edge health (docs/edge-health.md): what one end's numbers give its
 * edge, sums of edges, the network-time rule, and the JSON keys every
 * output writes.  Counters saturate; histograms merge bin by bin, so any
 * order of sums gives the same edge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/jsonw.h"
#include "common/record.h"
#include "common/wire.h"

/* src's samples into dst; an out-of-memory merge leaves dst as it was
 * (the edge loses those samples, never counts them twice). */
static void hist_into(struct cw_rec_hist *dst, const struct cw_rec_hist *src)
{
	if (src->len)
		(void)cw_rec_hist_merge(dst, src);
}

void cw_edge_health_add(struct cw_edge_health *t,
			const struct cw_edge_health *x)
{
	if (!x)
		return;
	t->conns_refused = cw_count_add(t->conns_refused, x->conns_refused);
	t->conns_timeout = cw_count_add(t->conns_timeout, x->conns_timeout);
	t->resets_by_client =
		cw_count_add(t->resets_by_client, x->resets_by_client);
	t->resets_by_server =
		cw_count_add(t->resets_by_server, x->resets_by_server);
	t->xchg_pipelined = cw_count_add(t->xchg_pipelined, x->xchg_pipelined);
	hist_into(&t->connect, &x->connect);
	hist_into(&t->rtt, &x->rtt);
	hist_into(&t->client, &x->client);
	hist_into(&t->client_first, &x->client_first);
	hist_into(&t->server, &x->server);
}

int cw_edge_health_more(struct cw_edge_health **t,
			const struct cw_edge_health *x)
{
	if (!cw_edge_health_any(x))
		return 0;
	if (!*t) {
		*t = malloc(sizeof(**t));
		if (!*t)
			return -1;
		**t = *x;
		return 0;
	}
	cw_edge_health_add(*t, x);
	return 0;
}

struct cw_edge_health *cw_edge_health_dup(const struct cw_edge_health *h)
{
	struct cw_edge_health *d = NULL;

	(void)cw_edge_health_more(&d, h);
	return d;
}

void cw_edge_health_free(struct cw_edge_health **h)
{
	free(*h);
	*h = NULL;
}

void cw_wire_edge_set_total(struct cw_wire_edge *w,
			    const struct cw_edge_total *t)
{
	w->t = *t;
	w->t.h = NULL;
	if (t->h)
		w->h = *t->h;
	else
		memset(&w->h, 0, sizeof(w->h));
}

bool cw_end_health_any(const struct cw_end_health *e)
{
	return e->connect_us || e->fail || e->resets_in || e->resets_out ||
	       e->xchg_pipelined || (e->rtt && e->rtt->len) ||
	       (e->xchg && e->xchg->len) ||
	       (e->xchg_first && e->xchg_first->len);
}

/* What end e gives the edge into t (a block). */
static void end_into(struct cw_edge_health *t, const struct cw_end_health *e,
		     bool client, bool paired)
{
	uint64_t *mine = client ? &t->resets_by_client : &t->resets_by_server;
	uint64_t *theirs = client ? &t->resets_by_server : &t->resets_by_client;

	if (client && e->connect_us) {
		struct cw_hist h = CW_HIST_INIT;
		struct cw_rec_hist one;

		if (!cw_hist_add(&h, (uint64_t)e->connect_us * 1000, 1) &&
		    !cw_rec_hist_set(&one, &h))
			hist_into(&t->connect, &one);
		cw_hist_release(&h);
	}
	if (client && e->fail == CW_REC_FAIL_REFUSED)
		t->conns_refused = cw_count_add(t->conns_refused, 1);
	if (client && e->fail == CW_REC_FAIL_TIMEOUT)
		t->conns_timeout = cw_count_add(t->conns_timeout, 1);
	/* A reset is counted by its sender; the receiver's count only when
	 * the sender's end was not watched. */
	*mine = cw_count_add(*mine, e->resets_out);
	if (!paired)
		*theirs = cw_count_add(*theirs, e->resets_in);
	t->xchg_pipelined = cw_count_add(t->xchg_pipelined, e->xchg_pipelined);
	if (e->rtt)
		hist_into(&t->rtt, e->rtt);
	if (e->xchg)
		hist_into(client ? &t->client : &t->server, e->xchg);
	if (client && e->xchg_first)
		hist_into(&t->client_first, e->xchg_first);
}

int cw_edge_health_end(struct cw_edge_health **t, const struct cw_end_health *e,
		       bool client, bool paired)
{
	if (!cw_end_health_any(e))
		return 0;
	if (!*t && !(*t = calloc(1, sizeof(**t))))
		return -1;
	end_into(*t, e, client, paired);
	return 0;
}

bool cw_edge_health_any(const struct cw_edge_health *h)
{
	return h && (h->conns_refused || h->conns_timeout || h->resets_by_client ||
	       h->resets_by_server || h->xchg_pipelined || h->connect.len ||
	       h->rtt.len || h->client.len || h->client_first.len ||
	       h->server.len);
}

uint64_t cw_edge_network_ns(const struct cw_edge_health *h, double q)
{
	struct cw_hist c = CW_HIST_INIT, s = CW_HIST_INIT;
	uint64_t a = 0, b = 0;

	if (h && !cw_rec_hist_get(&h->client, &c) &&
	    !cw_rec_hist_get(&h->server, &s) && c.count && s.count) {
		a = cw_hist_quantile(&c, q);
		b = cw_hist_quantile(&s, q);
	}
	cw_hist_release(&c);
	cw_hist_release(&s);
	return a > b ? a - b : 0;
}

const char *const cw_health_q_names[CW_HEALTH_NQ] = {
	"connect", "rtt", "client", "client_first", "server", "network"};

void cw_edge_health_q(const struct cw_edge_health *h,
		      struct cw_health_q q[CW_HEALTH_NQ])
{
	static const struct cw_edge_health none;
	const struct cw_rec_hist *hs[5];
	struct cw_hist x = CW_HIST_INIT;
	size_t i;

	if (!h)
		h = &none;
	hs[0] = &h->connect;
	hs[1] = &h->rtt;
	hs[2] = &h->client;
	hs[3] = &h->client_first;
	hs[4] = &h->server;
	for (i = 0; i < CW_HEALTH_NETWORK; i++) {
		if (cw_rec_hist_get(hs[i], &x))
			cw_hist_reset(&x);
		q[i].count = x.count;
		q[i].p50 = cw_hist_quantile(&x, 0.5);
		q[i].p90 = cw_hist_quantile(&x, 0.9);
		q[i].p99 = cw_hist_quantile(&x, 0.99);
	}
	cw_hist_release(&x);
	/* The network-time rule (docs/edge-health.md): client minus server
	 * at each quantile, over the fewer of their exchanges. */
	q[CW_HEALTH_NETWORK].count =
		q[CW_HEALTH_CLIENT].count < q[CW_HEALTH_SERVER].count
			? q[CW_HEALTH_CLIENT].count
			: q[CW_HEALTH_SERVER].count;
	q[CW_HEALTH_NETWORK].p50 = cw_edge_network_ns(h, 0.5);
	q[CW_HEALTH_NETWORK].p90 = cw_edge_network_ns(h, 0.9);
	q[CW_HEALTH_NETWORK].p99 = cw_edge_network_ns(h, 0.99);
}

void cw_edge_health_json(struct cw_jsonw *w, const struct cw_edge_health *h)
{
	struct cw_health_q q[CW_HEALTH_NQ];
	char key[64];
	size_t i;

	if (!cw_edge_health_any(h))
		return;
	cw_jsonw_u64(w, "conns_refused", h->conns_refused);
	cw_jsonw_u64(w, "conns_timeout", h->conns_timeout);
	cw_jsonw_u64(w, "resets_by_client", h->resets_by_client);
	cw_jsonw_u64(w, "resets_by_server", h->resets_by_server);
	cw_jsonw_u64(w, "xchg_pipelined", h->xchg_pipelined);
	cw_edge_health_q(h, q);
	for (i = 0; i < CW_HEALTH_NQ; i++) {
		snprintf(key, sizeof(key), "%s_count", cw_health_q_names[i]);
		cw_jsonw_u64(w, key, q[i].count);
		snprintf(key, sizeof(key), "%s_p50_ns", cw_health_q_names[i]);
		cw_jsonw_u64(w, key, q[i].p50);
		snprintf(key, sizeof(key), "%s_p90_ns", cw_health_q_names[i]);
		cw_jsonw_u64(w, key, q[i].p90);
		snprintf(key, sizeof(key), "%s_p99_ns", cw_health_q_names[i]);
		cw_jsonw_u64(w, key, q[i].p99);
	}
}
