// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/sample_run.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/wire.h"

#include "common/wire_pb.h"

/*
 * Record strings are fixed arrays that a careless filler may leave without
 * a terminator; protobuf-c would run off their end, so copy those.
 */
static char *cstr(const char *s, size_t cap, char *tmp)
{
	if (memchr(s, 0, cap))
		return (char *)s;
	memcpy(tmp, s, cap - 1);
	tmp[cap - 1] = 0;
	return tmp;
}

struct process_strs {
	char comm[CW_COMM_MAX], cmdline[CW_CMDLINE_MAX];
	char container[CW_CONTAINER_MAX], pod[CW_POD_MAX];
	char container_name[CW_NAME_MAX], pod_name[CW_NAME_MAX];
	char pod_ns[CW_NS_MAX], workload_kind[CW_KIND_MAX];
	char workload[CW_NAME_MAX];
};

static void process_to_pb(pb_process *p, const struct cw_process *proc,
			  struct process_strs *t)
{
	causeway__wire__process__init(p);
	p->tgid = proc->tgid;
	p->start_ns = proc->start_ns;
	p->cgroup_id = proc->cgroup_id;
	p->comm = cstr(proc->comm, sizeof(proc->comm), t->comm);
	p->cmdline = cstr(proc->cmdline, sizeof(proc->cmdline), t->cmdline);
	p->container =
		cstr(proc->container, sizeof(proc->container), t->container);
	p->pod = cstr(proc->pod, sizeof(proc->pod), t->pod);
	p->container_name =
		cstr(proc->container_name, sizeof(proc->container_name),
		     t->container_name);
	p->pod_name = cstr(proc->pod_name, sizeof(proc->pod_name), t->pod_name);
	p->namespace_ = cstr(proc->pod_ns, sizeof(proc->pod_ns), t->pod_ns);
	p->workload_kind = cstr(proc->workload_kind,
				sizeof(proc->workload_kind), t->workload_kind);
	p->workload = cstr(proc->workload, sizeof(proc->workload), t->workload);
}

static size_t addr_len(const struct cw_addr *a)
{
	return a->family == 6 ? 16 : a->family == 4 ? 4 : 0;
}

static int pack(const pb_envelope *env, uint8_t **buf, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(&env->base);

	/* malloc(0) may return NULL; an Envelope is never empty anyway. */
	*buf = malloc(n ? n : 1);
	if (!*buf)
		return -1;
	*len = protobuf_c_message_pack(&env->base, *buf);
	return 0;
}

/* A record's histogram as bytes (a len past the room: none). */
static void hist_to_pb(ProtobufCBinaryData *b, const struct cw_rec_hist *h)
{
	b->data = (uint8_t *)h->b;
	b->len = h->len <= CW_REC_HIST_MAX ? h->len : 0;
}

/* Strings of a record that may lack their terminator, copied. */
struct conn_strs {
	char host[CW_HOST_LEN], boot[CW_BOOT_ID_LEN];
	struct process_strs proc;
};

static void conn_to_pb(pb_conn *c, pb_process *p, struct conn_strs *t,
		       const struct cw_conn_record *r)
{
	causeway__wire__conn_record__init(c);
	c->host = cstr(r->host, sizeof(r->host), t->host);
	c->boot_id = cstr(r->boot_id, sizeof(r->boot_id), t->boot);
	c->netns = r->netns;
	c->cookie = r->cookie;
	c->protocol = r->protocol;
	c->role = (Causeway__Wire__Role)r->role;
	c->flags = r->flags;
	c->laddr.data = (uint8_t *)r->laddr.bytes;
	c->laddr.len = addr_len(&r->laddr);
	c->lport = r->lport;
	c->raddr.data = (uint8_t *)r->raddr.bytes;
	c->raddr.len = addr_len(&r->raddr);
	c->rport = r->rport;
	c->bytes_out = r->bytes_out;
	c->bytes_in = r->bytes_in;
	c->calls_out = r->calls_out;
	c->calls_in = r->calls_in;
	c->msgs_out = r->msgs_out;
	c->msgs_in = r->msgs_in;
	c->first_ns = r->first_ns;
	c->last_ns = r->last_ns;
	c->retrans = r->retrans;
	c->srtt_us = r->srtt_us;
	c->seq = r->seq;
	c->sampled_msgs_out = r->sampled_msgs_out;
	c->sampled_msgs_in = r->sampled_msgs_in;
	c->sampled_ppm = r->sampled_ppm;
	c->connect_us = r->connect_us;
	c->fail = (Causeway__Wire__Fail)r->fail;
	c->resets_in = r->resets_in;
	c->resets_out = r->resets_out;
	hist_to_pb(&c->rtt_hist, &r->rtt);
	hist_to_pb(&c->xchg_hist, &r->xchg);
	hist_to_pb(&c->xchg_first_hist, &r->xchg_first);
	c->xchg_pipelined = r->xchg_pipelined;
	process_to_pb(p, &r->proc, &t->proc);
	c->process = p;
}

static int encode_conn(pb_envelope *env, const struct cw_conn_record *r,
		       uint8_t **buf, size_t *len)
{
	pb_conn c;
	pb_process p;
	struct conn_strs t;

	conn_to_pb(&c, &p, &t, r);
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_CONN;
	env->conn = &c;
	return pack(env, buf, len);
}

/* Strings of an edge node that may lack their terminator, copied. */
struct node_strs {
	char host[CW_HOST_LEN];
	struct process_strs proc;
};

static void node_to_pb(pb_edge_node *pn, pb_process *pp, struct node_strs *t,
		       const struct cw_edge_node *n)
{
	causeway__wire__edge_node__init(pn);
	pn->kind = n->kind;
	pn->host = cstr(n->host, sizeof(n->host), t->host);
	pn->netns = n->netns;
	pn->port = n->port;
	pn->addr.data = (uint8_t *)n->addr.bytes;
	pn->addr.len = addr_len(&n->addr);
	if (n->kind == CW_EDGE_NODE_PROCESS) {
		process_to_pb(pp, &n->proc, &t->proc);
		pn->process = pp;
	}
}

/* Room for one EdgeBucket's parts, so no field points at the stack. */
struct edge_pb {
	pb_edge e;
	pb_edge_node c, s;
	pb_process cp, sp;
	struct node_strs ct, st;
	char group[CW_WIRE_NAME_MAX], topic[CW_WIRE_NAME_MAX];
};

static void edge_to_pb(struct edge_pb *x, const struct cw_wire_edge *w)
{
	pb_edge *e = &x->e;

	causeway__wire__edge_bucket__init(e);
	e->group = cstr(w->group, sizeof(w->group), x->group);
	e->topic = cstr(w->topic, sizeof(w->topic), x->topic);
	e->partition = (uint32_t)w->partition;
	e->offset = w->offset;
	e->bucket_ns = w->bucket_ns;
	e->width_ns = w->width_ns;
	e->sealed = w->sealed;
	node_to_pb(&x->c, &x->cp, &x->ct, &w->client);
	node_to_pb(&x->s, &x->sp, &x->st, &w->server);
	e->client = &x->c;
	e->server = &x->s;
	e->protocol = w->protocol;
	e->conns = w->t.conns;
	e->paired = w->t.paired;
	e->bytes_c2s = w->t.bytes_c2s;
	e->bytes_s2c = w->t.bytes_s2c;
	e->msgs_c2s = w->t.msgs_c2s;
	e->msgs_s2c = w->t.msgs_s2c;
	e->diff_c2s = w->t.diff_c2s;
	e->diff_s2c = w->t.diff_s2c;
	e->first_ns = w->t.first_ns;
	e->last_ns = w->t.last_ns;
	e->retrans = w->t.retrans;
	e->est_conns = w->t.est_conns;
	e->sampled_bytes = w->t.sampled_bytes;
	e->has_sampled = w->t.has_sampled != 0;
	e->set_size = w->set_size;
	e->set_index = w->set_index;
	e->conns_refused = w->h.conns_refused;
	e->conns_timeout = w->h.conns_timeout;
	e->resets_by_client = w->h.resets_by_client;
	e->resets_by_server = w->h.resets_by_server;
	e->xchg_pipelined = w->h.xchg_pipelined;
	hist_to_pb(&e->connect_hist, &w->h.connect);
	hist_to_pb(&e->rtt_hist, &w->h.rtt);
	hist_to_pb(&e->client_hist, &w->h.client);
	hist_to_pb(&e->client_first_hist, &w->h.client_first);
	hist_to_pb(&e->server_hist, &w->h.server);
}

static int encode_edge(pb_envelope *env, const struct cw_wire_edge *w,
		       uint8_t **buf, size_t *len)
{
	struct edge_pb *x = malloc(sizeof(*x));
	int ret;

	if (!x)
		return -1;
	edge_to_pb(x, w);
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_EDGE;
	env->edge = &x->e;
	ret = pack(env, buf, len);
	free(x);
	return ret;
}

/* An EdgeSet: e[0]'s set fields, each edge's own fields. */
static int encode_edges(pb_envelope *env, const struct cw_wire_edges *w,
			uint8_t **buf, size_t *len)
{
	struct edge_pb *x = malloc((w->n + 1) * sizeof(*x));
	pb_edge **ep = malloc((w->n + 1) * sizeof(*ep));
	char group[CW_WIRE_NAME_MAX], topic[CW_WIRE_NAME_MAX];
	pb_edges r;
	size_t i;
	int ret = -1;

	if (!x || !ep || !w->n)
		goto out;
	causeway__wire__edge_set__init(&r);
	r.group = cstr(w->e[0].group, sizeof(w->e[0].group), group);
	r.topic = cstr(w->e[0].topic, sizeof(w->e[0].topic), topic);
	r.partition = (uint32_t)w->e[0].partition;
	r.offset = w->e[0].offset;
	r.bucket_ns = w->e[0].bucket_ns;
	r.width_ns = w->e[0].width_ns;
	r.sealed = w->e[0].sealed;
	r.set_size = w->e[0].set_size;
	r.first = w->e[0].set_index;
	for (i = 0; i < w->n; i++) {
		pb_edge *e = &x[i].e;

		edge_to_pb(&x[i], &w->e[i]);
		/* The set's fields are the record's, once. */
		e->group = e->topic = (char *)protobuf_c_empty_string;
		e->partition = 0;
		e->offset = 0;
		e->bucket_ns = e->width_ns = 0;
		e->sealed = false;
		e->set_size = e->set_index = 0;
		ep[i] = e;
	}
	r.n_edges = w->n;
	r.edges = ep;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_EDGES;
	env->edges = &r;
	ret = pack(env, buf, len);
out:
	free(x);
	free(ep);
	return ret;
}

/* The bucket parts of a checkpoint chunk, pointing into *parts. */
struct state_buckets {
	struct edge_pb *edges;
	pb_edge **ep;
	pb_end_delta *d;
	pb_end_delta **dp;
	pb_bucket_state bk;
};

static void state_buckets_free(struct state_buckets *b)
{
	free(b->edges);
	free(b->ep);
	free(b->d);
	free(b->dp);
}

static void bucket_state_to_pb(pb_bucket_state *b,
			       const struct cw_bucket_state *k)
{
	causeway__wire__bucket_state__init(b);
	b->width_ns = k->width_ns;
	b->ttl_ns = k->ttl_ns;
	b->lateness_ns = k->lateness_ns;
	b->watermark_ns = k->watermark_ns;
	b->sealed_ns = k->sealed_ns;
	b->gone_ends = k->gone_ends;
	b->gone_paired = k->gone_paired;
	b->gone_unpaired = k->gone_unpaired;
	b->late = k->late;
	b->dormant = k->dormant;
	b->revived = k->revived;
	b->sealed_records = k->sealed_records;
}

static int state_buckets_to_pb(pb_state *s, struct state_buckets *b,
			       const struct cw_wire_state *st)
{
	size_t i, nd = st->ndeltas, ne = st->nedges;

	memset(b, 0, sizeof(*b));
	if (nd > CW_WIRE_STATE_MAX * 4 || ne > CW_WIRE_STATE_MAX)
		return -1;
	b->edges = malloc((ne ? ne : 1) * sizeof(*b->edges));
	b->ep = malloc((ne ? ne : 1) * sizeof(*b->ep));
	b->d = malloc((nd ? nd : 1) * sizeof(*b->d));
	b->dp = malloc((nd ? nd : 1) * sizeof(*b->dp));
	if (!b->edges || !b->ep || !b->d || !b->dp)
		return -1;
	for (i = 0; i < ne; i++) {
		edge_to_pb(&b->edges[i], &st->edges[i]);
		b->ep[i] = &b->edges[i].e;
	}
	for (i = 0; i < nd; i++) {
		const struct cw_end_delta *d = &st->deltas[i];

		causeway__wire__end_delta__init(&b->d[i]);
		b->d[i].end = d->end;
		b->d[i].bucket_ns = d->bucket_ns;
		b->d[i].bytes_out = d->bytes_out;
		b->d[i].bytes_in = d->bytes_in;
		b->d[i].msgs_out = d->msgs_out;
		b->d[i].msgs_in = d->msgs_in;
		b->d[i].retrans = d->retrans;
		b->d[i].last_ns = d->last_ns;
		b->d[i].connect_us = d->connect_us;
		b->d[i].fail = d->fail;
		b->d[i].resets_in = d->resets_in;
		b->d[i].resets_out = d->resets_out;
		b->d[i].xchg_pipelined = d->xchg_pipelined;
		hist_to_pb(&b->d[i].rtt_hist, &d->rtt);
		hist_to_pb(&b->d[i].xchg_hist, &d->xchg);
		hist_to_pb(&b->d[i].xchg_first_hist, &d->xchg_first);
		b->dp[i] = &b->d[i];
	}
	s->n_edges = ne;
	s->edges = b->ep;
	s->n_deltas = nd;
	s->deltas = b->dp;
	if (st->end_flags) {
		s->n_end_flags = st->n;
		s->end_flags = (uint32_t *)st->end_flags;
	}
	if (st->bk.width_ns) {
		bucket_state_to_pb(&b->bk, &st->bk);
		s->buckets = &b->bk;
	}
	return 0;
}

/* A checkpoint chunk: its header, then each end as a ConnRecord. */
static int encode_state(pb_envelope *env, const struct cw_wire_state *st,
			uint8_t **buf, size_t *len)
{
	char group[CW_WIRE_NAME_MAX], topic[CW_WIRE_NAME_MAX];
	pb_conn *c = calloc(st->n ? st->n : 1, sizeof(*c));
	pb_conn **cp = calloc(st->n ? st->n : 1, sizeof(*cp));
	pb_process *p = calloc(st->n ? st->n : 1, sizeof(*p));
	struct conn_strs *t = malloc((st->n ? st->n : 1) * sizeof(*t));
	struct state_buckets b = {0};
	pb_state s;
	size_t i;
	int ret = -1;

	if (!c || !cp || !p || !t || st->n > CW_WIRE_STATE_MAX)
		goto out;
	causeway__wire__state_chunk__init(&s);
	s.group = cstr(st->group, sizeof(st->group), group);
	s.topic = cstr(st->topic, sizeof(st->topic), topic);
	s.partition = st->partition;
	s.offset = st->offset;
	s.checkpoint = st->checkpoint;
	s.chunk = st->chunk;
	s.chunks = st->chunks;
	s.records = st->records;
	s.stale = st->stale;
	s.lost = st->lost;
	for (i = 0; i < st->n; i++) {
		conn_to_pb(&c[i], &p[i], &t[i], &st->ends[i]);
		cp[i] = &c[i];
	}
	s.n_ends = st->n;
	s.ends = cp;
	if (state_buckets_to_pb(&s, &b, st))
		goto out;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_STATE;
	env->state = &s;
	ret = pack(env, buf, len);
out:
	state_buckets_free(&b);
	free(c);
	free(cp);
	free(p);
	free(t);
	return ret;
}

/* HostMeta 10-19 (decoding: wire_decode.c). */
static void health_to_pb(pb_host *h, const struct cw_host_health *x)
{
	h->records = x->records;
	h->delivered = x->delivered;
	h->lost = x->lost;
	h->spooled = x->spooled;
	h->spool_records = x->spool_records;
	h->spool_evicted = x->spool_evicted;
	h->kernel_lost = x->kernel_lost;
	h->map_full = x->map_full;
	h->no_owner = x->no_owner;
	h->windows = x->windows;
}

static int encode_host(pb_envelope *env, const struct cw_host_meta *hm,
		       uint8_t **buf, size_t *len)
{
	pb_host h;
	char t[4][CW_HOST_LEN], boot[CW_BOOT_ID_LEN];

	causeway__wire__host_meta__init(&h);
	h.host = cstr(hm->host, sizeof(hm->host), t[0]);
	h.hostname = cstr(hm->hostname, sizeof(hm->hostname), t[1]);
	h.kernel = cstr(hm->kernel, sizeof(hm->kernel), t[2]);
	h.agent_version =
		cstr(hm->agent_version, sizeof(hm->agent_version), t[3]);
	h.cpus = hm->cpus;
	h.mem_bytes = hm->mem_bytes;
	h.time_ns = hm->time_ns;
	h.seq = hm->seq;
	h.boot_id = cstr(hm->boot_id, sizeof(hm->boot_id), boot);
	health_to_pb(&h, &hm->health);
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_HOST;
	env->host = &h;
	return pack(env, buf, len);
}

static int encode_proc(pb_envelope *env, const struct cw_proc_meta *pm,
		       uint8_t **buf, size_t *len)
{
	pb_procmeta m;
	pb_process p;
	struct process_strs t;
	char host[CW_HOST_LEN];

	causeway__wire__process_meta__init(&m);
	m.host = cstr(pm->host, sizeof(pm->host), host);
	process_to_pb(&p, &pm->proc, &t);
	m.process = &p;
	m.rss_bytes = pm->rss_bytes;
	m.cpu_ns = pm->cpu_ns;
	m.time_ns = pm->time_ns;
	m.seq = pm->seq;
	m.source = pm->source == CW_USAGE_CGROUP
			   ? CAUSEWAY__WIRE__USAGE_SOURCE__USAGE_CGROUP
			   : CAUSEWAY__WIRE__USAGE_SOURCE__USAGE_PROC;
	m.rss_hwm_bytes = pm->rss_hwm_bytes;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_PROCESS;
	env->process = &m;
	return pack(env, buf, len);
}

/* The lists of a timing window: deltas, sizes and the direction bitmap. */
struct timing_lists {
	uint64_t *deltas;
	uint32_t *sizes;
	uint8_t *dirs;
};

static void timing_lists_free(struct timing_lists *l)
{
	free(l->deltas);
	free(l->sizes);
	free(l->dirs);
}

static int timing_lists_fill(struct timing_lists *l,
			     const struct cw_timing_record *t)
{
	uint64_t prev = t->window_start_ns, end;
	size_t i;

	memset(l, 0, sizeof(*l));
	if (t->n > CW_WIRE_TIMING_MAX ||
	    t->window_ns > UINT64_MAX - t->window_start_ns)
		return -1;
	end = t->window_start_ns + t->window_ns;
	l->deltas = malloc((t->n ? t->n : 1) * sizeof(*l->deltas));
	l->sizes = malloc((t->n ? t->n : 1) * sizeof(*l->sizes));
	l->dirs = calloc(t->n / 8 + 1, 1);
	if (!l->deltas || !l->sizes || !l->dirs)
		goto fail;
	for (i = 0; i < t->n; i++) {
		const struct cw_msg_obs *o = &t->msgs[i];

		/* Sorted, inside the window: what the decoder will demand. */
		if (o->ts_ns < prev || o->ts_ns > end)
			goto fail;
		l->deltas[i] = o->ts_ns - prev;
		prev = o->ts_ns;
		l->sizes[i] = o->bytes;
		if (o->dir == CW_OBS_IN)
			l->dirs[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	return 0;
fail:
	timing_lists_free(l);
	return -1;
}

static int encode_timing(pb_envelope *env, const struct cw_timing_record *t,
			 uint8_t **buf, size_t *len)
{
	struct timing_lists l;
	pb_timing w;
	pb_process p;
	struct process_strs ps;
	char host[CW_HOST_LEN], boot[CW_BOOT_ID_LEN];
	int ret;

	if (timing_lists_fill(&l, t))
		return -1;
	causeway__wire__timing_window__init(&w);
	w.host = cstr(t->host, sizeof(t->host), host);
	w.boot_id = cstr(t->boot_id, sizeof(t->boot_id), boot);
	w.netns = t->netns;
	w.cookie = t->cookie;
	w.protocol = t->protocol;
	w.role = (Causeway__Wire__Role)t->role;
	w.flags = t->flags;
	w.laddr.data = (uint8_t *)t->laddr.bytes;
	w.laddr.len = addr_len(&t->laddr);
	w.lport = t->lport;
	w.raddr.data = (uint8_t *)t->raddr.bytes;
	w.raddr.len = addr_len(&t->raddr);
	w.rport = t->rport;
	process_to_pb(&p, &t->proc, &ps);
	w.process = &p;
	w.slot_ns = t->slot_ns;
	w.start_ns = t->window_start_ns;
	w.end_ns = t->window_start_ns + t->window_ns;
	w.seq = t->seq;
	w.n_ts_delta_ns = t->n;
	w.ts_delta_ns = l.deltas;
	w.n_sizes = t->n;
	w.sizes = l.sizes;
	w.dirs.data = l.dirs;
	w.dirs.len = (t->n + 7) / 8;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_TIMING;
	env->timing = &w;
	ret = pack(env, buf, len);
	timing_lists_free(&l);
	return ret;
}

static int encode_samples(pb_envelope *env, const struct cw_sample_run *run,
			  uint64_t seq, uint8_t **buf, size_t *len)
{
	char host[CW_SAMPLE_HOST_MAX], dev[CW_SAMPLE_DEV_MAX];
	pb_samples r;
	uint8_t *enc;
	size_t n;
	int ret;

	if (!run || cw_sample_run_encode(run, &enc, &n))
		return -1;
	causeway__wire__sample_run__init(&r);
	r.host = cstr(run->host, sizeof(run->host), host);
	r.device = cstr(run->dev, sizeof(run->dev), dev);
	r.start_ns = run->start_real_ns;
	r.interval_ns = run->interval_ns;
	r.samples = run->samples;
	r.nbins = run->nbins;
	r.seq = seq;
	r.run.data = enc;
	r.run.len = n;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_SAMPLES;
	env->samples = &r;
	ret = pack(env, buf, len);
	free(enc);
	return ret;
}

/* ---- MsgWindow (agent --traces) ---------------------------------------- */

/* The sub-messages of a MsgWindow, in two arrays each (values, pointers). */
struct msgs_pb {
	pb_msock *socks, **psocks;
	pb_mmsg *msgs, **pmsgs;
};

static void msgs_pb_free(struct msgs_pb *x)
{
	free(x->socks);
	free(x->psocks);
	free(x->msgs);
	free(x->pmsgs);
}

static void msock_to_pb(pb_msock *p, const struct cw_wire_msock *s)
{
	causeway__wire__msg_socket__init(p);
	p->cookie = s->cookie;
	p->netns = s->netns;
	p->tgid = s->tgid;
	p->laddr.data = (uint8_t *)s->laddr.bytes;
	p->laddr.len = addr_len(&s->laddr);
	p->lport = s->lport;
	p->raddr.data = (uint8_t *)s->raddr.bytes;
	p->raddr.len = addr_len(&s->raddr);
	p->rport = s->rport;
	p->role = (Causeway__Wire__Role)s->role;
	p->role_seen = s->role_seen;
}

/* What the decoder will demand: messages inside [start_ns, end_ns] with
 * sockets that exist, at most CW_WIRE_MSGS_MAX. */
static int mmsg_to_pb(pb_mmsg *p, const struct cw_wire_mmsg *m,
		      const struct cw_wire_msgs *w)
{
	if (m->start_ns < w->start_ns || m->end_ns < m->start_ns ||
	    m->end_ns > w->end_ns || m->sock >= w->nsocks || m->ctx > w->nsocks)
		return -1;
	causeway__wire__msg__init(p);
	p->sock = m->sock;
	p->start_ns = m->start_ns - w->start_ns;
	p->dur_ns = m->end_ns - m->start_ns;
	p->bytes = m->bytes;
	p->tid = m->tid;
	p->out = m->out;
	p->seq = m->seq;
	p->ctx_sock = m->ctx;
	p->ctx_seq = m->ctx_seq;
	p->ctx_open = m->ctx_open;
	p->ctx_loop = m->ctx_loop;
	return 0;
}

static int msgs_to_pb(struct msgs_pb *x, const struct cw_wire_msgs *w)
{
	size_t i;

	memset(x, 0, sizeof(*x));
	if (w->n > CW_WIRE_MSGS_MAX || w->nsocks > 2 * CW_WIRE_MSGS_MAX ||
	    w->start_ns > w->end_ns)
		return -1;
	x->socks = calloc(w->nsocks + 1, sizeof(*x->socks));
	x->psocks = calloc(w->nsocks + 1, sizeof(*x->psocks));
	x->msgs = calloc(w->n + 1, sizeof(*x->msgs));
	x->pmsgs = calloc(w->n + 1, sizeof(*x->pmsgs));
	if (!x->socks || !x->psocks || !x->msgs || !x->pmsgs)
		goto fail;
	for (i = 0; i < w->nsocks; i++) {
		msock_to_pb(&x->socks[i], &w->socks[i]);
		x->psocks[i] = &x->socks[i];
	}
	for (i = 0; i < w->n; i++) {
		if (mmsg_to_pb(&x->msgs[i], &w->msgs[i], w))
			goto fail;
		x->pmsgs[i] = &x->msgs[i];
	}
	return 0;
fail:
	msgs_pb_free(x);
	return -1;
}

static int encode_msgs(pb_envelope *env, const struct cw_wire_msgs *w,
		       uint8_t **buf, size_t *len)
{
	char host[CW_HOST_LEN], boot[CW_BOOT_ID_LEN];
	struct msgs_pb x;
	pb_msgs r;
	int ret;

	if (msgs_to_pb(&x, w))
		return -1;
	causeway__wire__msg_window__init(&r);
	r.host = cstr(w->host, sizeof(w->host), host);
	r.boot_id = cstr(w->boot_id, sizeof(w->boot_id), boot);
	r.slot_ns = w->slot_ns;
	r.start_ns = w->start_ns;
	r.end_ns = w->end_ns;
	r.seq = w->seq;
	r.chunk = w->chunk;
	r.last = w->last;
	r.lost = w->lost;
	r.n_sockets = w->nsocks;
	r.sockets = x.psocks;
	r.n_msgs = w->n;
	r.msgs = x.pmsgs;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_MSGS;
	env->msgs = &r;
	ret = pack(env, buf, len);
	msgs_pb_free(&x);
	return ret;
}

int cw_wire_encode(const struct cw_wire_msg *m, uint8_t **buf, size_t *len)
{
	int r = 1;

	if (m->kind == CW_WIRE_CONN)
		r = cw_wire_encode_conn_fast(&m->conn, buf, len);
	else if (m->kind == CW_WIRE_EDGE)
		r = cw_wire_encode_edge_fast(&m->edge, buf, len);
	else if (m->kind == CW_WIRE_STATE)
		r = cw_wire_encode_state_fast(&m->state, buf, len);
	else if (m->kind == CW_WIRE_EDGES)
		r = cw_wire_encode_edges_fast(&m->edges, buf, len);
	return r == 1 ? cw_wire_encode_pb(m, buf, len) : r;
}

int cw_wire_encode_pb(const struct cw_wire_msg *m, uint8_t **buf, size_t *len)
{
	pb_envelope env;

	causeway__wire__envelope__init(&env);
	env.version = CW_WIRE_VERSION;
	switch (m->kind) {
	case CW_WIRE_CONN:
		return encode_conn(&env, &m->conn, buf, len);
	case CW_WIRE_HOST:
		return encode_host(&env, &m->host, buf, len);
	case CW_WIRE_PROC:
		return encode_proc(&env, &m->proc, buf, len);
	case CW_WIRE_TIMING:
		return encode_timing(&env, &m->timing, buf, len);
	case CW_WIRE_SAMPLES:
		return encode_samples(&env, m->samples.run, m->samples.seq, buf,
				      len);
	case CW_WIRE_STATE:
		return encode_state(&env, &m->state, buf, len);
	case CW_WIRE_EDGE:
		return encode_edge(&env, &m->edge, buf, len);
	case CW_WIRE_EDGES:
		return encode_edges(&env, &m->edges, buf, len);
	case CW_WIRE_MSGS:
		return encode_msgs(&env, &m->msgs, buf, len);
	case CW_WIRE_DNS:
		return cw_wire_dns_encode(&env, &m->dns, buf, len);
	}
	return -1;
}

int cw_wire_encode_timing(const struct cw_timing_record *t, uint8_t **buf,
			  size_t *len)
{
	pb_envelope env;

	causeway__wire__envelope__init(&env);
	env.version = CW_WIRE_VERSION;
	return encode_timing(&env, t, buf, len);
}

int cw_wire_encode_samples(const struct cw_sample_run *run, uint64_t seq,
			   uint8_t **buf, size_t *len)
{
	pb_envelope env;

	causeway__wire__envelope__init(&env);
	env.version = CW_WIRE_VERSION;
	return encode_samples(&env, run, seq, buf, len);
}

void cw_wire_msg_release(struct cw_wire_msg *m)
{
	if (!m)
		return;
	if (m->kind == CW_WIRE_TIMING) {
		free(m->timing.msgs);
		m->timing.msgs = NULL;
		m->timing.n = 0;
	} else if (m->kind == CW_WIRE_SAMPLES) {
		cw_sample_run_free(m->samples.run);
		m->samples.run = NULL;
	} else if (m->kind == CW_WIRE_STATE) {
		free(m->state.ends);
		free(m->state.end_flags);
		free(m->state.deltas);
		free(m->state.edges);
		m->state.ends = NULL;
		m->state.end_flags = NULL;
		m->state.deltas = NULL;
		m->state.edges = NULL;
		m->state.n = m->state.ndeltas = m->state.nedges = 0;
	} else if (m->kind == CW_WIRE_EDGES) {
		free(m->edges.e);
		m->edges.e = NULL;
		m->edges.n = 0;
	} else if (m->kind == CW_WIRE_MSGS) {
		free(m->msgs.socks);
		free(m->msgs.msgs);
		m->msgs.socks = NULL;
		m->msgs.msgs = NULL;
		m->msgs.nsocks = m->msgs.n = 0;
	}
	m->kind = 0;
}

int cw_wire_encode_conn(const struct cw_conn_record *r, uint8_t **buf,
			size_t *len)
{
	pb_envelope env;
	int ret = cw_wire_encode_conn_fast(r, buf, len);

	if (ret != 1)
		return ret;

	causeway__wire__envelope__init(&env);
	env.version = CW_WIRE_VERSION;
	return encode_conn(&env, r, buf, len);
}
