// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/sample_run.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/wire.h"
#include "common/wire.pb-c.h"

typedef Causeway__Wire__Envelope pb_envelope;
typedef Causeway__Wire__ConnRecord pb_conn;
typedef Causeway__Wire__Process pb_process;
typedef Causeway__Wire__HostMeta pb_host;
typedef Causeway__Wire__ProcessMeta pb_procmeta;
typedef Causeway__Wire__TimingWindow pb_timing;
typedef Causeway__Wire__SampleRun pb_samples;

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

static int encode_conn(pb_envelope *env, const struct cw_conn_record *r,
		       uint8_t **buf, size_t *len)
{
	pb_conn c;
	pb_process p;
	struct process_strs t;
	char host[CW_HOST_LEN];

	causeway__wire__conn_record__init(&c);
	c.host = cstr(r->host, sizeof(r->host), host);
	c.netns = r->netns;
	c.cookie = r->cookie;
	c.protocol = r->protocol;
	c.role = (Causeway__Wire__Role)r->role;
	c.flags = r->flags;
	c.laddr.data = (uint8_t *)r->laddr.bytes;
	c.laddr.len = addr_len(&r->laddr);
	c.lport = r->lport;
	c.raddr.data = (uint8_t *)r->raddr.bytes;
	c.raddr.len = addr_len(&r->raddr);
	c.rport = r->rport;
	c.bytes_out = r->bytes_out;
	c.bytes_in = r->bytes_in;
	c.calls_out = r->calls_out;
	c.calls_in = r->calls_in;
	c.msgs_out = r->msgs_out;
	c.msgs_in = r->msgs_in;
	c.first_ns = r->first_ns;
	c.last_ns = r->last_ns;
	c.retrans = r->retrans;
	c.srtt_us = r->srtt_us;
	c.seq = r->seq;
	process_to_pb(&p, &r->proc, &t);
	c.process = &p;
	env->kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_CONN;
	env->conn = &c;
	return pack(env, buf, len);
}

static int encode_host(pb_envelope *env, const struct cw_host_meta *hm,
		       uint8_t **buf, size_t *len)
{
	pb_host h;
	char t[4][CW_HOST_LEN];

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
	char host[CW_HOST_LEN];
	int ret;

	if (timing_lists_fill(&l, t))
		return -1;
	causeway__wire__timing_window__init(&w);
	w.host = cstr(t->host, sizeof(t->host), host);
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

int cw_wire_encode(const struct cw_wire_msg *m, uint8_t **buf, size_t *len)
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
	}
	m->kind = 0;
}

int cw_wire_encode_conn(const struct cw_conn_record *r, uint8_t **buf,
			size_t *len)
{
	pb_envelope env;

	causeway__wire__envelope__init(&env);
	env.version = CW_WIRE_VERSION;
	return encode_conn(&env, r, buf, len);
}

/* Decoding. */

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
	memcpy(dst, s ? s : "", n + 1);
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
	    get_str(d, "process.pod", p->pod, proc->pod, sizeof(proc->pod)))
		return CW_WIRE_EMALFORMED;
	return 0;
}

static int decode_conn(struct decode_ctx *d, const pb_conn *c,
		       struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	if (get_str(d, "host", c->host, r->host, sizeof(r->host)) ||
	    get_u(d, "protocol", c->protocol, UINT8_MAX) ||
	    get_u(d, "role", (uint32_t)c->role, UINT8_MAX) ||
	    get_u(d, "lport", c->lport, UINT16_MAX) ||
	    get_u(d, "rport", c->rport, UINT16_MAX) ||
	    get_addr(d, "laddr", &c->laddr, &r->laddr) ||
	    get_addr(d, "raddr", &c->raddr, &r->raddr) ||
	    get_process(d, c->process, &r->proc))
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
		    sizeof(hm->agent_version)))
		return CW_WIRE_EMALFORMED;
	hm->cpus = h->cpus;
	hm->mem_bytes = h->mem_bytes;
	hm->time_ns = h->time_ns;
	hm->seq = h->seq;
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
	return CW_WIRE_PROC;
}

static int decode_timing(struct decode_ctx *d, const pb_timing *w,
			 struct cw_timing_record *t)
{
	uint64_t ts;
	size_t i, n = w->n_ts_delta_ns;

	memset(t, 0, sizeof(*t));
	if (get_str(d, "host", w->host, t->host, sizeof(t->host)) ||
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

int cw_wire_decode(const uint8_t *buf, size_t len, struct cw_wire_msg *out,
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
	}
	return "unknown";
}

static int endpoint_cmp(const struct cw_addr *a, uint16_t aport,
			const struct cw_addr *b, uint16_t bport)
{
	int c = cw_addr_cmp(a, b);

	if (c)
		return c;
	return aport < bport ? -1 : aport > bport;
}

static const char *endpoint_str(const struct cw_addr *a, uint16_t port,
				char *buf, size_t len)
{
	char s[64];

	cw_addr_str(a, s, sizeof(s));
	snprintf(buf, len, a->family == 6 ? "[%s]:%u" : "%s:%u", s, port);
	return buf;
}

static int endpoints_key(int protocol, const struct cw_addr *lo,
			 uint16_t loport, const struct cw_addr *hi,
			 uint16_t hiport, char *buf, size_t len)
{
	char a[64], b[64], proto[8];
	int n;

	if (endpoint_cmp(lo, loport, hi, hiport) > 0) {
		const struct cw_addr *ta = lo;
		uint16_t tp = loport;

		lo = hi, loport = hiport;
		hi = ta, hiport = tp;
	}
	if (protocol == 6 || protocol == 17)
		snprintf(proto, sizeof(proto), "%s", cw_proto_name(protocol));
	else
		snprintf(proto, sizeof(proto), "ip%u", protocol);
	n = snprintf(buf, len, "%s:%s-%s", proto,
		     endpoint_str(lo, loport, a, sizeof(a)),
		     endpoint_str(hi, hiport, b, sizeof(b)));
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int cw_wire_timing_conn_key(const struct cw_timing_record *t, char *buf,
			    size_t len)
{
	return endpoints_key(t->protocol, &t->laddr, t->lport, &t->raddr,
			     t->rport, buf, len);
}

int cw_wire_key(const struct cw_wire_msg *m, char *buf, size_t len)
{
	int n;

	if (!len)
		return -1;
	buf[0] = 0;
	switch (m->kind) {
	case CW_WIRE_CONN:
		return cw_wire_conn_key(&m->conn, buf, len);
	case CW_WIRE_TIMING:
		n = snprintf(buf, len, "%" PRIu64, m->timing.slot_ns);
		break;
	case CW_WIRE_SAMPLES:
		if (!m->samples.run)
			return -1;
		n = snprintf(buf, len, "%.*s/%.*s",
			     (int)strnlen(m->samples.run->host,
					  sizeof(m->samples.run->host)),
			     m->samples.run->host,
			     (int)strnlen(m->samples.run->dev,
					  sizeof(m->samples.run->dev)),
			     m->samples.run->dev);
		break;
	default:
		return 0;
	}
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int cw_wire_conn_key(const struct cw_conn_record *r, char *buf, size_t len)
{
	return endpoints_key(r->protocol, &r->laddr, r->lport, &r->raddr,
			     r->rport, buf, len);
}

void cw_wire_errors_count(struct cw_wire_errors *e, int err, const char *where,
			  const char *reason)
{
	unsigned int i =
		err < 0 && err >= -CW_WIRE_NERR ? (unsigned int)-err : 0;

	e->count[i]++;
	if (e->logged[i])
		return;
	e->logged[i] = true;
	cw_warn("skipping %s record%s%s%s%s (further ones are counted, not "
		"logged)",
		i ? cw_wire_strerror(err) : "bad", where ? " at " : "",
		where ? where : "", reason && *reason ? ": " : "",
		reason ? reason : "");
}

uint64_t cw_wire_errors_total(const struct cw_wire_errors *e)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i <= CW_WIRE_NERR; i++)
		n += e->count[i];
	return n;
}

void cw_wire_errors_report(const struct cw_wire_errors *e, const char *what)
{
	char buf[256];
	size_t off = 0;
	int i;

	if (!cw_wire_errors_total(e))
		return;
	for (i = 0; i <= CW_WIRE_NERR && off < sizeof(buf); i++) {
		if (!e->count[i])
			continue;
		off += snprintf(buf + off, sizeof(buf) - off,
				"%s%" PRIu64 " %s", off ? ", " : "",
				e->count[i], i ? cw_wire_strerror(-i) : "bad");
	}
	cw_warn("%s: skipped %s", what, buf);
}

/* ---- JSON ------------------------------------------------------------- */

/* A sample run: the fields of `causeway samples export --format json`. */
static void samples_json(struct cw_jsonw *w, const struct cw_wire_samples *s)
{
	const struct cw_sample_run *run = s->run;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "samples");
	cw_jsonw_str(w, "host", run->host);
	cw_jsonw_u64(w, "seq", s->seq);
	cw_sample_run_json_fields(w, run);
	cw_jsonw_obj_close(w);
}

void cw_wire_msg_json(struct cw_jsonw *w, const struct cw_wire_msg *m)
{
	switch (m->kind) {
	case CW_WIRE_TIMING:
		cw_timing_window_json(w, &m->timing);
		break;
	case CW_WIRE_SAMPLES:
		samples_json(w, &m->samples);
		break;
	case CW_WIRE_CONN:
		cw_conn_record_json(w, &m->conn);
		break;
	case CW_WIRE_HOST:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "host");
		cw_jsonw_str(w, "host", m->host.host);
		cw_jsonw_u64(w, "seq", m->host.seq);
		cw_jsonw_str(w, "hostname", m->host.hostname);
		cw_jsonw_str(w, "kernel", m->host.kernel);
		cw_jsonw_str(w, "agent_version", m->host.agent_version);
		cw_jsonw_u64(w, "cpus", m->host.cpus);
		cw_jsonw_u64(w, "mem_bytes", m->host.mem_bytes);
		cw_jsonw_u64(w, "time_ns", m->host.time_ns);
		cw_jsonw_obj_close(w);
		break;
	case CW_WIRE_PROC:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "process");
		cw_jsonw_str(w, "host", m->proc.host);
		cw_jsonw_u64(w, "seq", m->proc.seq);
		cw_process_json(w, 0, &m->proc.proc);
		cw_jsonw_u64(w, "rss_bytes", m->proc.rss_bytes);
		cw_jsonw_u64(w, "cpu_ns", m->proc.cpu_ns);
		cw_jsonw_u64(w, "time_ns", m->proc.time_ns);
		cw_jsonw_obj_close(w);
		break;
	}
}
