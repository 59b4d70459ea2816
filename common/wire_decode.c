// SPDX-License-Identifier: MIT
/*
 * Decoding wire envelopes into records: every field checked against the
 * record's bounds (lengths, list sizes, deltas past a window), strings made
 * clean, one line saying what was wrong and where.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sample_run.h"
#include "common/utf8.h"
#include "common/hist.h"
#include "common/wire.h"
#include "common/wire_pb.h"

static void health_from_pb(struct cw_host_health *x, const pb_host *h)
{
	x->records = h->records;
	x->delivered = h->delivered;
	x->lost = h->lost;
	x->spooled = h->spooled;
	x->spool_records = h->spool_records;
	x->spool_evicted = h->spool_evicted;
	x->kernel_lost = h->kernel_lost;
	x->map_full = h->map_full;
	x->no_owner = h->no_owner;
	x->windows = h->windows;
}

struct decode_ctx {
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int
fail(struct decode_ctx *d, int code, const char *fmt, ...)
{
	va_list ap;

	if (d->err && d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int get_str(struct decode_ctx *d, const char *field, const char *s,
		   char *dst, size_t cap)
{
	size_t n = s ? strlen(s) : 0;

	if (n >= cap)
		return fail(d, CW_WIRE_EMALFORMED,
			    "field '%s' is %zu bytes long (at most %zu)", field,
			    n, cap - 1);
	/* Any producer may send any bytes: names leave here clean. */
	cw_utf8_clean(dst, cap, s ? s : "", n);
	return 0;
}

static int get_u(struct decode_ctx *d, const char *field, uint64_t v,
		 uint64_t max)
{
	if (v > max)
		return fail(d, CW_WIRE_EMALFORMED,
			    "field '%s' is %" PRIu64 " (at most %" PRIu64 ")",
			    field, v, max);
	return 0;
}

static int get_addr(struct decode_ctx *d, const char *field,
		    const ProtobufCBinaryData *b, struct cw_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (b->len != 0 && b->len != 4 && b->len != 16)
		return fail(d, CW_WIRE_EMALFORMED,
			    "field '%s' has %zu bytes (want 4 or 16)", field,
			    b->len);
	if (b->len)
		memcpy(a->bytes, b->data, b->len);
	a->family = b->len == 16 ? 6 : b->len == 4 ? 4 : 0;
	return 0;
}

static int get_process(struct decode_ctx *d, const pb_process *p,
		       struct cw_process *proc)
{
	memset(proc, 0, sizeof(*proc));
	if (!p)
		return 0;
	proc->tgid = p->tgid;
	proc->start_ns = p->start_ns;
	proc->cgroup_id = p->cgroup_id;
	if (get_str(d, "process.comm", p->comm, proc->comm,
		    sizeof(proc->comm)) ||
	    get_str(d, "process.cmdline", p->cmdline, proc->cmdline,
		    sizeof(proc->cmdline)) ||
	    get_str(d, "process.container", p->container, proc->container,
		    sizeof(proc->container)) ||
	    get_str(d, "process.pod", p->pod, proc->pod, sizeof(proc->pod)) ||
	    get_str(d, "process.container_name", p->container_name,
		    proc->container_name, sizeof(proc->container_name)) ||
	    get_str(d, "process.pod_name", p->pod_name, proc->pod_name,
		    sizeof(proc->pod_name)) ||
	    get_str(d, "process.namespace", p->namespace_, proc->pod_ns,
		    sizeof(proc->pod_ns)) ||
	    get_str(d, "process.workload_kind", p->workload_kind,
		    proc->workload_kind, sizeof(proc->workload_kind)) ||
	    get_str(d, "process.workload", p->workload, proc->workload,
		    sizeof(proc->workload)))
		return CW_WIRE_EMALFORMED;
	return 0;
}

/* A histogram field (ConnRecord 34-36): at most the room, well formed. */
static int get_hist(struct decode_ctx *d, const char *field,
		    const ProtobufCBinaryData *b, struct cw_rec_hist *h)
{
	if (!cw_rec_hist_valid(b->data, b->len))
		return fail(d, CW_WIRE_EMALFORMED,
			    "field '%s' is not a histogram of at most %d "
			    "bytes (%zu bytes)",
			    field, CW_REC_HIST_MAX, b->len);
	h->len = (uint16_t)b->len;
	if (b->len)
		memcpy(h->b, b->data, b->len);
	return 0;
}

/* The edge-health block (fields 30-37). */
static int decode_conn_health(struct decode_ctx *d, const pb_conn *c,
			      struct cw_conn_record *r)
{
	if (get_u(d, "fail", (uint32_t)c->fail, UINT8_MAX) ||
	    get_hist(d, "rtt_hist", &c->rtt_hist, &r->rtt) ||
	    get_hist(d, "xchg_hist", &c->xchg_hist, &r->xchg) ||
	    get_hist(d, "xchg_first_hist", &c->xchg_first_hist,
		     &r->xchg_first))
		return CW_WIRE_EMALFORMED;
	r->connect_us = c->connect_us;
	r->fail = (uint8_t)c->fail;
	r->resets_in = c->resets_in;
	r->resets_out = c->resets_out;
	r->xchg_pipelined = c->xchg_pipelined;
	return 0;
}

static int decode_conn(struct decode_ctx *d, const pb_conn *c,
		       struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	if (get_str(d, "host", c->host, r->host, sizeof(r->host)) ||
	    get_str(d, "boot_id", c->boot_id, r->boot_id, sizeof(r->boot_id)) ||
	    get_u(d, "protocol", c->protocol, UINT8_MAX) ||
	    get_u(d, "role", (uint32_t)c->role, UINT8_MAX) ||
	    get_u(d, "lport", c->lport, UINT16_MAX) ||
	    get_u(d, "rport", c->rport, UINT16_MAX) ||
	    get_addr(d, "laddr", &c->laddr, &r->laddr) ||
	    get_addr(d, "raddr", &c->raddr, &r->raddr) ||
	    get_process(d, c->process, &r->proc) ||
	    decode_conn_health(d, c, r))
		return CW_WIRE_EMALFORMED;
	r->netns = c->netns;
	r->cookie = c->cookie;
	r->protocol = (uint8_t)c->protocol;
	r->role = (uint8_t)c->role;
	r->flags = c->flags;
	r->lport = (uint16_t)c->lport;
	r->rport = (uint16_t)c->rport;
	r->bytes_out = c->bytes_out;
	r->bytes_in = c->bytes_in;
	r->calls_out = c->calls_out;
	r->calls_in = c->calls_in;
	r->msgs_out = c->msgs_out;
	r->msgs_in = c->msgs_in;
	r->first_ns = c->first_ns;
	r->last_ns = c->last_ns;
	r->retrans = c->retrans;
	r->srtt_us = c->srtt_us;
	r->seq = c->seq;
	r->sampled_msgs_out = c->sampled_msgs_out;
	r->sampled_msgs_in = c->sampled_msgs_in;
	r->sampled_ppm = c->sampled_ppm > CW_PPM ? CW_PPM : c->sampled_ppm;
	return CW_WIRE_CONN;
}

static int decode_host(struct decode_ctx *d, const pb_host *h,
		       struct cw_host_meta *hm)
{
	memset(hm, 0, sizeof(*hm));
	if (get_str(d, "host", h->host, hm->host, sizeof(hm->host)) ||
	    get_str(d, "hostname", h->hostname, hm->hostname,
		    sizeof(hm->hostname)) ||
	    get_str(d, "kernel", h->kernel, hm->kernel, sizeof(hm->kernel)) ||
	    get_str(d, "agent_version", h->agent_version, hm->agent_version,
		    sizeof(hm->agent_version)) ||
	    get_str(d, "boot_id", h->boot_id, hm->boot_id, sizeof(hm->boot_id)))
		return CW_WIRE_EMALFORMED;
	hm->cpus = h->cpus;
	hm->mem_bytes = h->mem_bytes;
	hm->time_ns = h->time_ns;
	hm->seq = h->seq;
	health_from_pb(&hm->health, h);
	return CW_WIRE_HOST;
}

static int decode_proc(struct decode_ctx *d, const pb_procmeta *m,
		       struct cw_proc_meta *pm)
{
	memset(pm, 0, sizeof(*pm));
	if (get_str(d, "host", m->host, pm->host, sizeof(pm->host)) ||
	    get_process(d, m->process, &pm->proc))
		return CW_WIRE_EMALFORMED;
	pm->rss_bytes = m->rss_bytes;
	pm->cpu_ns = m->cpu_ns;
	pm->time_ns = m->time_ns;
	pm->seq = m->seq;
	pm->source = m->source == CAUSEWAY__WIRE__USAGE_SOURCE__USAGE_CGROUP
			     ? CW_USAGE_CGROUP
			     : CW_USAGE_PROC;
	pm->rss_hwm_bytes = m->rss_hwm_bytes;
	return CW_WIRE_PROC;
}

static int decode_timing(struct decode_ctx *d, const pb_timing *w,
			 struct cw_timing_record *t)
{
	uint64_t ts;
	size_t i, n = w->n_ts_delta_ns;

	memset(t, 0, sizeof(*t));
	if (get_str(d, "host", w->host, t->host, sizeof(t->host)) ||
	    get_str(d, "boot_id", w->boot_id, t->boot_id, sizeof(t->boot_id)) ||
	    get_u(d, "protocol", w->protocol, UINT8_MAX) ||
	    get_u(d, "role", (uint32_t)w->role, UINT8_MAX) ||
	    get_u(d, "lport", w->lport, UINT16_MAX) ||
	    get_u(d, "rport", w->rport, UINT16_MAX) ||
	    get_addr(d, "laddr", &w->laddr, &t->laddr) ||
	    get_addr(d, "raddr", &w->raddr, &t->raddr) ||
	    get_process(d, w->process, &t->proc))
		return CW_WIRE_EMALFORMED;
	if (w->start_ns > w->end_ns)
		return fail(d, CW_WIRE_EMALFORMED,
			    "window ends (%" PRIu64
			    ") before it starts (%" PRIu64 ")",
			    w->end_ns, w->start_ns);
	if (n > CW_WIRE_TIMING_MAX)
		return fail(d, CW_WIRE_EMALFORMED,
			    "%zu messages in one window record (at most %u)", n,
			    CW_WIRE_TIMING_MAX);
	if (w->n_sizes != n || w->dirs.len != (n + 7) / 8)
		return fail(d, CW_WIRE_EMALFORMED,
			    "%zu message starts but %zu sizes and %zu "
			    "direction bytes (want %zu)",
			    n, w->n_sizes, w->dirs.len, (n + 7) / 8);
	if (n % 8 && w->dirs.data[n / 8] >> (n % 8))
		return fail(d, CW_WIRE_EMALFORMED,
			    "direction bits set past the last message");
	t->netns = w->netns;
	t->cookie = w->cookie;
	t->protocol = (uint8_t)w->protocol;
	t->role = (uint8_t)w->role;
	t->flags = w->flags;
	t->lport = (uint16_t)w->lport;
	t->rport = (uint16_t)w->rport;
	t->has_conn = t->protocol != 0;
	t->slot_ns = w->slot_ns;
	t->window_start_ns = w->start_ns;
	t->window_ns = w->end_ns - w->start_ns;
	t->seq = w->seq;
	t->msgs = malloc((n ? n : 1) * sizeof(*t->msgs));
	if (!t->msgs)
		return fail(d, CW_WIRE_EMALFORMED,
			    "out of memory for %zu messages", n);
	ts = w->start_ns;
	for (i = 0; i < n; i++) {
		if (w->ts_delta_ns[i] > w->end_ns - ts) {
			free(t->msgs);
			t->msgs = NULL;
			return fail(d, CW_WIRE_EMALFORMED,
				    "message %zu starts after the window ends",
				    i);
		}
		ts += w->ts_delta_ns[i];
		t->msgs[i] = (struct cw_msg_obs){
			.ts_ns = ts,
			.bytes = w->sizes[i],
			.dir = w->dirs.data[i / 8] & (1u << (i % 8))
				       ? CW_OBS_IN
				       : CW_OBS_OUT,
		};
	}
	t->n = n;
	return CW_WIRE_TIMING;
}

static int decode_samples(struct decode_ctx *d, const pb_samples *r,
			  struct cw_wire_samples *out)
{
	struct cw_sample_run *run = NULL;
	char why[128];

	memset(out, 0, sizeof(*out));
	if (!r->run.len)
		return fail(d, CW_WIRE_EMALFORMED, "sample run without a run");
	if (cw_sample_run_decode(r->run.data, r->run.len, &run, why,
				 sizeof(why)))
		return fail(d, CW_WIRE_EMALFORMED, "sample run: %s", why);
	/* The header fields repeat the run's: they must agree. */
	if (strcmp(r->host ? r->host : "", run->host) ||
	    strcmp(r->device ? r->device : "", run->dev) ||
	    r->start_ns != run->start_real_ns ||
	    r->interval_ns != run->interval_ns || r->samples != run->samples ||
	    r->nbins != run->nbins) {
		cw_sample_run_free(run);
		return fail(d, CW_WIRE_EMALFORMED,
			    "sample run header disagrees with the run it "
			    "carries");
	}
	out->seq = r->seq;
	out->run = run;
	return CW_WIRE_SAMPLES;
}

static int decode_node(struct decode_ctx *d, const char *field,
		       const pb_edge_node *p, struct cw_edge_node *n)
{
	memset(n, 0, sizeof(*n));
	if (!p)
		return fail(d, CW_WIRE_EMALFORMED, "edge without its %s",
			    field);
	if (get_u(d, "node kind", p->kind, CW_EDGE_NODE_EXTERNAL) ||
	    get_u(d, "node port", p->port, UINT16_MAX) ||
	    get_str(d, "node host", p->host, n->host, sizeof(n->host)) ||
	    get_addr(d, "node addr", &p->addr, &n->addr) ||
	    get_process(d, p->process, &n->proc))
		return CW_WIRE_EMALFORMED;
	n->kind = (uint8_t)p->kind;
	n->netns = p->netns;
	n->port = (uint16_t)p->port;
	return 0;
}

/* An edge's health (EdgeBucket 27-36). */
static int decode_edge_health(struct decode_ctx *d, const pb_edge *e,
			      struct cw_edge_health *h)
{
	memset(h, 0, sizeof(*h));
	if (get_hist(d, "connect_hist", &e->connect_hist, &h->connect) ||
	    get_hist(d, "rtt_hist", &e->rtt_hist, &h->rtt) ||
	    get_hist(d, "client_hist", &e->client_hist, &h->client) ||
	    get_hist(d, "client_first_hist", &e->client_first_hist,
		     &h->client_first) ||
	    get_hist(d, "server_hist", &e->server_hist, &h->server))
		return CW_WIRE_EMALFORMED;
	h->conns_refused = e->conns_refused;
	h->conns_timeout = e->conns_timeout;
	h->resets_by_client = e->resets_by_client;
	h->resets_by_server = e->resets_by_server;
	h->xchg_pipelined = e->xchg_pipelined;
	return 0;
}

/* An end's delta's health (EndDelta 9-16). */
static int decode_delta_health(struct decode_ctx *d, const pb_end_delta *x,
			       struct cw_end_delta *y)
{
	if (get_u(d, "fail", x->fail, UINT8_MAX) ||
	    get_u(d, "resets_in", x->resets_in, UINT32_MAX) ||
	    get_u(d, "resets_out", x->resets_out, UINT32_MAX) ||
	    get_hist(d, "rtt_hist", &x->rtt_hist, &y->rtt) ||
	    get_hist(d, "xchg_hist", &x->xchg_hist, &y->xchg) ||
	    get_hist(d, "xchg_first_hist", &x->xchg_first_hist,
		     &y->xchg_first))
		return CW_WIRE_EMALFORMED;
	y->connect_us = x->connect_us;
	y->fail = (uint8_t)x->fail;
	y->resets_in = (uint32_t)x->resets_in;
	y->resets_out = (uint32_t)x->resets_out;
	y->xchg_pipelined = x->xchg_pipelined;
	return 0;
}

static int decode_edge_into(struct decode_ctx *d, const pb_edge *e,
			    struct cw_wire_edge *w)
{
	memset(w, 0, sizeof(*w));
	if (get_str(d, "group", e->group, w->group, sizeof(w->group)) ||
	    get_str(d, "topic", e->topic, w->topic, sizeof(w->topic)) ||
	    get_u(d, "partition", e->partition, INT32_MAX) ||
	    get_u(d, "protocol", e->protocol, UINT8_MAX) ||
	    decode_node(d, "client", e->client, &w->client) ||
	    decode_node(d, "server", e->server, &w->server))
		return CW_WIRE_EMALFORMED;
	if (e->offset < 0)
		return fail(d, CW_WIRE_EMALFORMED, "edge at offset %" PRId64,
			    e->offset);
	w->partition = (int32_t)e->partition;
	w->offset = e->offset;
	w->bucket_ns = e->bucket_ns;
	w->width_ns = e->width_ns;
	w->sealed = e->sealed;
	w->protocol = (uint8_t)e->protocol;
	w->t.conns = e->conns;
	w->t.paired = e->paired;
	w->t.bytes_c2s = e->bytes_c2s;
	w->t.bytes_s2c = e->bytes_s2c;
	w->t.msgs_c2s = e->msgs_c2s;
	w->t.msgs_s2c = e->msgs_s2c;
	w->t.diff_c2s = e->diff_c2s;
	w->t.diff_s2c = e->diff_s2c;
	w->t.first_ns = e->first_ns;
	w->t.last_ns = e->last_ns;
	w->t.retrans = e->retrans;
	w->t.est_conns = e->est_conns;
	w->t.sampled_bytes = e->sampled_bytes;
	w->t.has_sampled = e->has_sampled;
	w->set_size = e->set_size;
	w->set_index = e->set_index;
	return decode_edge_health(d, e, &w->h);
}

static int decode_edge(struct decode_ctx *d, const pb_edge *e,
		       struct cw_wire_edge *w)
{
	return decode_edge_into(d, e, w) ? CW_WIRE_EMALFORMED : CW_WIRE_EDGE;
}

/*
 * An EdgeSet: each edge whole, the set's fields in it.  At least one
 * edge, at most CW_WIRE_EDGES_MAX, none past set_size.
 */
static int decode_edges(struct decode_ctx *d, const pb_edges *r,
			struct cw_wire_edges *s)
{
	struct cw_wire_edge head;
	size_t i, n = r->n_edges;

	memset(s, 0, sizeof(*s));
	memset(&head, 0, sizeof(head));
	if (get_str(d, "group", r->group, head.group, sizeof(head.group)) ||
	    get_str(d, "topic", r->topic, head.topic, sizeof(head.topic)) ||
	    get_u(d, "partition", r->partition, INT32_MAX))
		return CW_WIRE_EMALFORMED;
	if (r->offset < 0 || !n || n > CW_WIRE_EDGES_MAX ||
	    (uint64_t)r->first + n > r->set_size)
		return fail(d, CW_WIRE_EMALFORMED,
			    "edge set at offset %" PRId64 " with edges %" PRIu32
			    " + %zu of %" PRIu32,
			    r->offset, r->first, n, r->set_size);
	s->e = malloc(n * sizeof(*s->e));
	if (!s->e)
		return fail(d, CW_WIRE_EMALFORMED, "out of memory");
	for (i = 0; i < n; i++) {
		struct cw_wire_edge *w = &s->e[i];
		pb_edge x = *r->edges[i];

		/* The record's own fields stand for the edge's, which a
		 * reader ignores (docs/wire.md), whatever they hold. */
		x.group = x.topic = (char *)"";
		x.partition = 0, x.offset = 0;
		if (decode_edge_into(d, &x, w)) {
			free(s->e);
			s->e = NULL;
			return CW_WIRE_EMALFORMED;
		}
		memcpy(w->group, head.group, sizeof(w->group));
		memcpy(w->topic, head.topic, sizeof(w->topic));
		w->partition = (int32_t)r->partition;
		w->offset = r->offset;
		w->bucket_ns = r->bucket_ns;
		w->width_ns = r->width_ns;
		w->sealed = r->sealed;
		w->set_size = r->set_size;
		w->set_index = r->first + (uint32_t)i;
	}
	s->n = n;
	return CW_WIRE_EDGES;
}

static void decode_bucket_state(const pb_bucket_state *b,
				struct cw_bucket_state *k)
{
	k->width_ns = b->width_ns;
	k->ttl_ns = b->ttl_ns;
	k->lateness_ns = b->lateness_ns;
	k->watermark_ns = b->watermark_ns;
	k->sealed_ns = b->sealed_ns;
	k->gone_ends = b->gone_ends;
	k->gone_paired = b->gone_paired;
	k->gone_unpaired = b->gone_unpaired;
	k->late = b->late;
	k->dormant = b->dormant;
	k->revived = b->revived;
	k->sealed_records = b->sealed_records;
}

/* A checkpoint chunk's bucket parts (fields 12-15) into st; 0 or error. */
static int decode_state_buckets(struct decode_ctx *d, const pb_state *s,
				struct cw_wire_state *st)
{
	size_t i, nd = s->n_deltas, ne = s->n_edges;

	if ((s->n_end_flags && s->n_end_flags != s->n_ends) ||
	    nd > CW_WIRE_STATE_MAX * 4 || ne > CW_WIRE_STATE_MAX)
		return fail(d, CW_WIRE_EMALFORMED,
			    "state chunk with %zu end flags for %zu ends, %zu "
			    "deltas, %zu edges",
			    s->n_end_flags, s->n_ends, nd, ne);
	if (s->n_end_flags) {
		st->end_flags = malloc(s->n_ends * sizeof(*st->end_flags));
		if (!st->end_flags)
			return fail(d, CW_WIRE_EMALFORMED, "out of memory");
		memcpy(st->end_flags, s->end_flags,
		       s->n_ends * sizeof(*st->end_flags));
	}
	st->deltas = malloc((nd ? nd : 1) * sizeof(*st->deltas));
	st->edges = malloc((ne ? ne : 1) * sizeof(*st->edges));
	if (!st->deltas || !st->edges)
		return fail(d, CW_WIRE_EMALFORMED, "out of memory");
	for (i = 0; i < nd; i++) {
		const pb_end_delta *x = s->deltas[i];
		struct cw_end_delta *y = &st->deltas[i];

		memset(y, 0, sizeof(*y));
		y->end = x->end;
		y->bucket_ns = x->bucket_ns;
		y->bytes_out = x->bytes_out;
		y->bytes_in = x->bytes_in;
		y->msgs_out = x->msgs_out;
		y->msgs_in = x->msgs_in;
		y->retrans = x->retrans;
		y->last_ns = x->last_ns;
		if (decode_delta_health(d, x, y))
			return CW_WIRE_EMALFORMED;
	}
	st->ndeltas = nd;
	for (i = 0; i < ne; i++)
		if (decode_edge_into(d, s->edges[i], &st->edges[i]))
			return CW_WIRE_EMALFORMED;
	st->nedges = ne;
	if (s->buckets)
		decode_bucket_state(s->buckets, &st->bk);
	return 0;
}

static void state_free(struct cw_wire_state *st)
{
	free(st->ends);
	free(st->end_flags);
	free(st->deltas);
	free(st->edges);
	st->ends = NULL;
	st->end_flags = NULL;
	st->deltas = NULL;
	st->edges = NULL;
	st->n = st->ndeltas = st->nedges = 0;
}

static int decode_state(struct decode_ctx *d, const pb_state *s,
			struct cw_wire_state *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	if (get_str(d, "group", s->group, st->group, sizeof(st->group)) ||
	    get_str(d, "topic", s->topic, st->topic, sizeof(st->topic)))
		return CW_WIRE_EMALFORMED;
	if (s->n_ends > CW_WIRE_STATE_MAX)
		return fail(d, CW_WIRE_EMALFORMED,
			    "%zu ends in one state chunk (at most %u)",
			    s->n_ends, CW_WIRE_STATE_MAX);
	if (s->offset < 0 || s->chunk >= s->chunks || s->partition > INT32_MAX)
		return fail(d, CW_WIRE_EMALFORMED,
			    "state chunk %u of %u, partition %u at offset "
			    "%" PRId64,
			    s->chunk, s->chunks, s->partition, s->offset);
	st->ends = malloc((s->n_ends ? s->n_ends : 1) * sizeof(*st->ends));
	if (!st->ends)
		return fail(d, CW_WIRE_EMALFORMED, "out of memory for %zu ends",
			    s->n_ends);
	for (i = 0; i < s->n_ends; i++)
		if (decode_conn(d, s->ends[i], &st->ends[i]) < 0) {
			state_free(st);
			return CW_WIRE_EMALFORMED;
		}
	if (decode_state_buckets(d, s, st)) {
		state_free(st);
		return CW_WIRE_EMALFORMED;
	}
	st->n = s->n_ends;
	st->partition = (int32_t)s->partition;
	st->offset = s->offset;
	st->checkpoint = s->checkpoint;
	st->chunk = s->chunk;
	st->chunks = s->chunks;
	st->records = s->records;
	st->stale = s->stale;
	st->lost = s->lost;
	return CW_WIRE_STATE;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift;

	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/*
 * Find the Envelope's version by walking its top-level fields only, so that
 * a future version whose body we could not parse is still told apart from
 * garbage.  0 (no version field) or -1 if the top level is not protobuf.
 */
static int peek_version(const uint8_t *p, size_t len, uint64_t *version)
{
	const uint8_t *end = p + len;
	uint64_t tag, v;

	*version = 0;
	while (p < end) {
		if (read_varint(&p, end, &tag) || tag >> 3 == 0)
			return -1;
		switch (tag & 7) {
		case 0:
			if (read_varint(&p, end, &v))
				return -1;
			if (tag >> 3 == 1)
				*version = v;
			break;
		case 1:
			if (end - p < 8)
				return -1;
			p += 8;
			break;
		case 2:
			if (read_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			p += v;
			break;
		case 5:
			if (end - p < 4)
				return -1;
			p += 4;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

static int decode_msock(struct decode_ctx *d, const pb_msock *p,
			struct cw_wire_msock *s)
{
	memset(s, 0, sizeof(*s));
	if (get_u(d, "socket lport", p->lport, UINT16_MAX) ||
	    get_u(d, "socket rport", p->rport, UINT16_MAX) ||
	    get_u(d, "socket role", (uint32_t)p->role, CW_REC_ROLE_SERVER) ||
	    get_addr(d, "socket laddr", &p->laddr, &s->laddr) ||
	    get_addr(d, "socket raddr", &p->raddr, &s->raddr))
		return CW_WIRE_EMALFORMED;
	s->cookie = p->cookie;
	s->netns = p->netns;
	s->tgid = p->tgid;
	s->lport = (uint16_t)p->lport;
	s->rport = (uint16_t)p->rport;
	s->role = (uint8_t)p->role;
	s->role_seen = p->role_seen;
	return 0;
}

/* A message inside its record's times, naming sockets the record has. */
static int decode_mmsg(struct decode_ctx *d, const pb_mmsg *p,
		       const struct cw_wire_msgs *w, struct cw_wire_mmsg *m)
{
	uint64_t span = w->end_ns - w->start_ns;

	if (p->sock >= w->nsocks || p->ctx_sock > w->nsocks)
		return fail(d, CW_WIRE_EMALFORMED,
			    "a message names socket %u or %u of %zu", p->sock,
			    p->ctx_sock, w->nsocks);
	if (p->start_ns > span || p->dur_ns > span - p->start_ns)
		return fail(d, CW_WIRE_EMALFORMED,
			    "a message outside its record's times");
	m->start_ns = w->start_ns + p->start_ns;
	m->end_ns = m->start_ns + p->dur_ns;
	m->bytes = p->bytes;
	m->sock = p->sock;
	m->ctx = p->ctx_sock;
	m->tid = p->tid;
	m->seq = p->seq;
	m->ctx_seq = p->ctx_seq;
	m->ctx_open = p->ctx_open;
	m->ctx_loop = p->ctx_loop && p->ctx_sock;
	m->out = p->out;
	return 0;
}

static int decode_msgs_lists(struct decode_ctx *d, const pb_msgs *r,
			     struct cw_wire_msgs *w)
{
	size_t i;

	w->socks = calloc(r->n_sockets + 1, sizeof(*w->socks));
	w->msgs = calloc(r->n_msgs + 1, sizeof(*w->msgs));
	if (!w->socks || !w->msgs)
		return fail(d, CW_WIRE_EMALFORMED,
			    "out of memory for %zu messages", r->n_msgs);
	w->nsocks = r->n_sockets;
	for (i = 0; i < r->n_sockets; i++)
		if (decode_msock(d, r->sockets[i], &w->socks[i]))
			return CW_WIRE_EMALFORMED;
	for (i = 0; i < r->n_msgs; i++)
		if (decode_mmsg(d, r->msgs[i], w, &w->msgs[i]))
			return CW_WIRE_EMALFORMED;
	w->n = r->n_msgs;
	return 0;
}

static int decode_msgs(struct decode_ctx *d, const pb_msgs *r,
		       struct cw_wire_msgs *w)
{
	memset(w, 0, sizeof(*w));
	if (get_str(d, "host", r->host, w->host, sizeof(w->host)) ||
	    get_str(d, "boot_id", r->boot_id, w->boot_id, sizeof(w->boot_id)))
		return CW_WIRE_EMALFORMED;
	if (r->start_ns > r->end_ns)
		return fail(d, CW_WIRE_EMALFORMED,
			    "messages end (%" PRIu64
			    ") before they start (%" PRIu64 ")",
			    r->end_ns, r->start_ns);
	if (r->n_msgs > CW_WIRE_MSGS_MAX || r->n_sockets > 2 * CW_WIRE_MSGS_MAX)
		return fail(d, CW_WIRE_EMALFORMED,
			    "%zu messages and %zu sockets in one record (at "
			    "most %u and %u)",
			    r->n_msgs, r->n_sockets, CW_WIRE_MSGS_MAX,
			    2 * CW_WIRE_MSGS_MAX);
	w->slot_ns = r->slot_ns;
	w->start_ns = r->start_ns;
	w->end_ns = r->end_ns;
	w->seq = r->seq;
	w->chunk = r->chunk;
	w->last = r->last;
	w->lost = r->lost;
	if (decode_msgs_lists(d, r, w)) {
		free(w->socks);
		free(w->msgs);
		w->socks = NULL;
		w->msgs = NULL;
		w->nsocks = w->n = 0;
		return CW_WIRE_EMALFORMED;
	}
	return CW_WIRE_MSGS;
}

int cw_wire_decode(const uint8_t *buf, size_t len, struct cw_wire_msg *out,
		   char *err, size_t errlen)
{
	if (cw_wire_decode_conn_fast(buf, len, out) == CW_WIRE_CONN) {
		if (err && errlen)
			err[0] = 0;
		return CW_WIRE_CONN;
	}
	return cw_wire_decode_pb(buf, len, out, err, errlen);
}

int cw_wire_decode_pb(const uint8_t *buf, size_t len, struct cw_wire_msg *out,
		      char *err, size_t errlen)
{
	struct decode_ctx d = {err, errlen};
	pb_envelope *env;
	uint64_t version;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!buf || !len)
		return fail(&d, CW_WIRE_EMALFORMED, "empty record");
	if (peek_version(buf, len, &version))
		return fail(&d, CW_WIRE_EMALFORMED,
			    "not a protobuf envelope (%zu bytes)", len);
	if (version == 0)
		return fail(&d, CW_WIRE_EMALFORMED, "no schema version");
	if (version != CW_WIRE_VERSION)
		return fail(&d, CW_WIRE_EVERSION,
			    "schema version %" PRIu64 " (this build reads %d)",
			    version, CW_WIRE_VERSION);
	env = causeway__wire__envelope__unpack(NULL, len, buf);
	if (!env)
		return fail(&d, CW_WIRE_EMALFORMED,
			    "undecodable version %" PRIu64 " envelope",
			    version);
	out->version = env->version;
	switch (env->kind_case) {
	case CAUSEWAY__WIRE__ENVELOPE__KIND_CONN:
		ret = decode_conn(&d, env->conn, &out->conn);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_HOST:
		ret = decode_host(&d, env->host, &out->host);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_PROCESS:
		ret = decode_proc(&d, env->process, &out->proc);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_TIMING:
		ret = decode_timing(&d, env->timing, &out->timing);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_SAMPLES:
		ret = decode_samples(&d, env->samples, &out->samples);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_STATE:
		ret = decode_state(&d, env->state, &out->state);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_EDGE:
		ret = decode_edge(&d, env->edge, &out->edge);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_MSGS:
		ret = decode_msgs(&d, env->msgs, &out->msgs);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_EDGES:
		ret = decode_edges(&d, env->edges, &out->edges);
		break;
	case CAUSEWAY__WIRE__ENVELOPE__KIND_DNS:
		ret = cw_wire_dns_from_pb(env->dns, &out->dns, err ? err : NULL,
					  err ? errlen : 0);
		break;
	default:
		ret = fail(&d, CW_WIRE_EKIND,
			   "no record kind this build knows");
		break;
	}
	causeway__wire__envelope__free_unpacked(env, NULL);
	out->kind = ret > 0 ? ret : 0;
	return ret;
}

const char *cw_wire_strerror(int err)
{
	switch (err) {
	case CW_WIRE_EMALFORMED:
		return "malformed";
	case CW_WIRE_EVERSION:
		return "unknown version";
	case CW_WIRE_EKIND:
		return "unknown kind";
	case CW_WIRE_EFUTURE:
		return "future";
	case CW_WIRE_EPAST:
		return "past";
	}
	return "unknown error";
}

const char *cw_wire_kind_name(int kind)
{
	switch (kind) {
	case CW_WIRE_CONN:
		return "conn";
	case CW_WIRE_HOST:
		return "host";
	case CW_WIRE_PROC:
		return "process";
	case CW_WIRE_TIMING:
		return "timing";
	case CW_WIRE_SAMPLES:
		return "samples";
	case CW_WIRE_STATE:
		return "state";
	case CW_WIRE_EDGE:
		return "edge";
	case CW_WIRE_MSGS:
		return "msgs";
	case CW_WIRE_DNS:
		return "dns";
	case CW_WIRE_EDGES:
		return "edges";
	}
	return "unknown";
}
