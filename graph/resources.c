// SPDX-License-Identifier: MIT
/*
 * Resources per process from the agents' samples, and the hosts they run
 * on.  Samples of one process arrive in any order (several files, replays):
 * they are kept, sorted once, and reduced to rates and peaks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "graph/graph.h"

struct proc_key {
	char host[CW_HOST_LEN];
	uint32_t tgid;
	uint32_t pad;
	uint64_t start_ns;
};

static void proc_key_of(struct proc_key *k, const char *host, uint32_t tgid,
			uint64_t start_ns)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->host, sizeof(k->host), "%s", host);
	k->tgid = tgid;
	k->start_ns = start_ns;
}

void cw_resources_init(struct cw_resources *r)
{
	memset(r, 0, sizeof(*r));
	cw_htab_init(&r->procs, sizeof(struct proc_key), sizeof(size_t));
}

void cw_resources_release(struct cw_resources *r)
{
	size_t i;

	for (i = 0; i < r->np; i++)
		free(r->p[i].s);
	free(r->p);
	free(r->hosts);
	cw_htab_release(&r->procs);
	memset(r, 0, sizeof(*r));
}

static int add_host(struct cw_resources *r, const struct cw_host_meta *h)
{
	size_t i;

	for (i = 0; i < r->nhosts; i++) {
		if (strcmp(r->hosts[i].host, h->host))
			continue;
		if (h->time_ns >= r->hosts[i].time_ns)
			r->hosts[i] = *h;
		return 0;
	}
	if (CW_GROW(r->hosts, r->caphosts, r->nhosts + 1, 8))
		return -1;
	r->hosts[r->nhosts++] = *h;
	return 0;
}

static int add_proc(struct cw_resources *r, const struct cw_proc_meta *m)
{
	struct cw_proc_usage *u;
	struct proc_key k;
	bool created;
	size_t *at;

	proc_key_of(&k, m->host, m->proc.tgid, m->proc.start_ns);
	at = cw_htab_upsert(&r->procs, &k, &created);
	if (!at)
		return -1;
	if (created) {
		if (CW_GROW(r->p, r->capp, r->np + 1, 64)) {
			cw_htab_delete(&r->procs, &k);
			return -1;
		}
		*at = r->np++;
		u = &r->p[*at];
		memset(u, 0, sizeof(*u));
		snprintf(u->host, sizeof(u->host), "%s", m->host);
	}
	u = &r->p[*at];
	if (CW_GROW(u->s, u->cap, u->n + 1, 8))
		return -1;
	u->s[u->n++] =
		(struct cw_usage_sample){m->time_ns, m->cpu_ns, m->rss_bytes};
	/* The newest sample's labels and source stand. */
	if (u->n == 1 || m->time_ns >= u->newest_ns) {
		u->proc = m->proc;
		u->source = m->source;
		u->newest_ns = m->time_ns;
	}
	r->finished = false;
	return 0;
}

int cw_resources_add(struct cw_resources *r, const struct cw_wire_msg *m)
{
	if (m->kind == CW_WIRE_HOST)
		return add_host(r, &m->host);
	if (m->kind == CW_WIRE_PROC)
		return add_proc(r, &m->proc);
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct cw_usage_sample *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

void cw_usage_stats_of(const struct cw_usage_sample *s, size_t n,
		       struct cw_usage_stats *st)
{
	double rss = 0, rate;
	uint64_t dt, dc;
	size_t i, used = 0;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	st->known = true;
	for (i = 0; i < n; i++) {
		/* A repeated reading (same instant) counts once. */
		if (i && s[i].time_ns == s[i - 1].time_ns)
			continue;
		used++;
		rss += (double)s[i].rss_bytes;
		if (s[i].rss_bytes > st->rss_peak_bytes)
			st->rss_peak_bytes = s[i].rss_bytes;
		if (!i)
			continue;
		dt = s[i].time_ns - s[i - 1].time_ns;
		/* A counter that went back was restarted: count from 0. */
		dc = s[i].cpu_ns >= s[i - 1].cpu_ns
			     ? s[i].cpu_ns - s[i - 1].cpu_ns
			     : s[i].cpu_ns;
		st->cpu_ns += dc;
		rate = (double)dc / (double)dt;
		if (rate > st->cpu_peak_cores)
			st->cpu_peak_cores = rate;
	}
	st->samples = (uint32_t)used;
	st->span_ns = s[n - 1].time_ns - s[0].time_ns;
	st->rss_bytes = (uint64_t)(rss / (double)used + 0.5);
	st->cpu_cores =
		st->span_ns ? (double)st->cpu_ns / (double)st->span_ns : 0;
}

void cw_usage_stats_sum(struct cw_usage_stats *a,
			const struct cw_usage_stats *b)
{
	if (!b->known)
		return;
	if (!a->known || b->samples < a->samples)
		a->samples = b->samples;
	if (b->span_ns > a->span_ns)
		a->span_ns = b->span_ns;
	a->known = true;
	a->cpu_ns += b->cpu_ns;
	a->cpu_cores += b->cpu_cores;
	a->cpu_peak_cores += b->cpu_peak_cores;
	a->rss_bytes += b->rss_bytes;
	a->rss_peak_bytes += b->rss_peak_bytes;
}

void cw_resources_finish(struct cw_resources *r)
{
	size_t i;

	for (i = 0; i < r->np; i++) {
		struct cw_proc_usage *u = &r->p[i];

		qsort(u->s, u->n, sizeof(*u->s), by_time);
		cw_usage_stats_of(u->s, u->n, &u->st);
	}
	r->finished = true;
}

const struct cw_proc_usage *cw_resources_find(const struct cw_resources *r,
					      const char *host, uint32_t tgid,
					      uint64_t start_ns)
{
	struct proc_key k;
	const size_t *at;

	if (!r || !r->np)
		return NULL;
	proc_key_of(&k, host, tgid, start_ns);
	at = cw_htab_get(&r->procs, &k);
	return at ? &r->p[*at] : NULL;
}

/* Copy the identity p lacks from q (the same process, or its container). */
static void take_identity(struct cw_process *p, const struct cw_process *q)
{
	if (p->container_name[0] || p->pod_name[0] || p->workload[0])
		return;
	memcpy(p->container_name, q->container_name, sizeof(p->container_name));
	memcpy(p->pod_name, q->pod_name, sizeof(p->pod_name));
	memcpy(p->pod_ns, q->pod_ns, sizeof(p->pod_ns));
	memcpy(p->workload_kind, q->workload_kind, sizeof(p->workload_kind));
	memcpy(p->workload, q->workload, sizeof(p->workload));
}

void cw_graph_set_resources(struct cw_graph *g, struct cw_resources *r)
{
	const struct cw_proc_usage *u;
	size_t i;

	g->res = r;
	if (!r)
		return;
	if (!r->finished)
		cw_resources_finish(r);
	for (i = 0; i < g->nnodes; i++) {
		struct cw_node *n = &g->nodes[i];

		if (n->kind != CW_NODE_PROCESS)
			continue;
		u = cw_resources_find(r, n->host, n->proc.tgid,
				      n->proc.start_ns);
		if (u)
			take_identity(&n->proc, &u->proc);
	}
}
