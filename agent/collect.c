// SPDX-License-Identifier: MIT
/*
 * Each interval's records: the kernel's connection state turned into
 * records (roles, owners, NAT undone, the time base moved to the wall
 * clock), messages and calls estimated outside windows, UDP flows, and
 * the collection pass that hands them out.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "agent/agent_impl.h"
#include "common/hist.h"
#include "common/log.h"
#include "common/utf8.h"

/* ---- conversion to records ------------------------------------------- */

struct emit_ctx {
	struct cw_agent *a;
	cw_record_fn fn;
	void *ctx;
	int stop;
	uint64_t start_mono; /* before the iterator read the ends */
};

static struct emit_ctx *cur_emit;

static uint64_t to_real(const struct cw_agent *a, uint64_t mono)
{
	return mono ? (uint64_t)((int64_t)mono + a->mono_to_real) : 0;
}

static void owner_to_process(const struct cw_owner *o, struct cw_process *p)
{
	memset(p, 0, sizeof(*p));
	p->tgid = o->tgid;
	p->start_ns = o->start_ns;
	p->cgroup_id = o->cgroup_id;
	/* The task's comm is whatever it set (prctl, exec name), cut by the
	 * kernel at 15 bytes: clean before it names anything. */
	cw_utf8_clean(p->comm, sizeof(p->comm), o->comm, sizeof(o->comm));
	cw_enrich_process(p);
}

static int pre_role(struct cw_agent *a, const struct cw_conn *c)
{
	struct cw_listen_key key = {c->netns, c->lport, 0};
	__u8 v;

	return bpf_map_lookup_elem(bpf_map__fd(a->skel->maps.listeners), &key,
				   &v)
		       ? CW_REC_ROLE_CLIENT
		       : CW_REC_ROLE_SERVER;
}

/* Who the end is: namespace, cookie, protocol, role and addresses. */
static void conn_to_tuple(struct cw_agent *a, const struct cw_conn *c,
			  struct cw_conn_record *r)
{
	int af = c->family == 10 ? AF_INET6 : AF_INET;

	memset(r, 0, sizeof(*r));
	r->netns = c->netns;
	r->cookie = c->cookie;
	r->protocol = c->protocol;
	r->role = c->role;
	if (c->flags & CW_F_PREEXISTING && !r->role)
		r->role = pre_role(a, c);
	cw_addr_from_raw(&r->laddr, af, c->laddr);
	cw_addr_from_raw(&r->raddr, af, c->raddr);
	r->lport = c->lport;
	r->rport = c->rport;
}

void agent_nat_resolve_closed(struct cw_agent *a, const struct cw_conn *c)
{
	struct cw_conn_record r;

	if (!a->nat || c->protocol != IPPROTO_TCP)
		return;
	conn_to_tuple(a, c, &r);
	cw_nat_resolve(a->nat, &r);
}

/* ---- messages outside windows (--hooks sampled) ------------------------
 *
 * The per-call programs count calls and messages only while a window has
 * them attached; the kernel also notes the bytes of the calls they saw
 * (sbytes).  Outside windows the bytes are exact (tcp_sock's counters)
 * and the messages are estimated from them:
 *
 *	msgs = counted + (bytes - sbytes) * counted / sbytes
 *
 * per direction, with the messages per byte of all the end's windows.
 * Per byte, not per second: the bytes already follow the rate, idle
 * spells and bursts exactly, and what the ratio must carry over from the
 * windows, the message size, is a property of the protocol that changes
 * far less than the rate does; a rate estimate would count messages on an
 * idle connection.  All the end's windows, not the last: a steady size
 * mix gives the least noise.  An end no window has seen borrows the newest
 * ratio of its service (server port; address and port a client calls),
 * so short connections that live between windows are estimated too; with
 * neither, only what was counted is given, and sampled_ppm says 0.
 * Figures handed out never go back (consumers take deltas).
 */
static bool svc_of(const struct cw_conn *c, struct svc_key *k)
{
	memset(k, 0, sizeof(*k));
	k->netns = c->netns;
	k->role = c->role;
	if (c->role == CW_ROLE_SERVER) {
		k->port = c->lport;
	} else if (c->role == CW_ROLE_CLIENT) {
		k->port = c->rport;
		memcpy(k->addr, c->raddr, sizeof(k->addr));
	} else {
		return false;
	}
	return true;
}

/* The ratios to use for c: its own where its windows saw bytes, else its
 * service's; its own are kept as the service's newest. */
static void est_ratio_of(struct cw_agent *a, const struct cw_conn *c,
			 struct est_ratio *er)
{
	const uint64_t sb[2] = {c->sbytes_out, c->sbytes_in};
	const uint64_t m[2] = {c->msgs_out, c->msgs_in};
	const uint64_t k[2] = {c->calls_out, c->calls_in};
	struct est_ratio *svc = NULL;
	struct svc_key key;
	int d;

	memset(er, 0, sizeof(*er));
	if (svc_of(c, &key)) {
		if (a->est_svcs.len >= EST_MAX)
			cw_htab_release(&a->est_svcs);
		svc = cw_htab_upsert(&a->est_svcs, &key, NULL);
	}
	for (d = 0; d < 2; d++) {
		if (sb[d]) {
			er->msgs[d] = (double)m[d] / (double)sb[d];
			er->calls[d] = (double)k[d] / (double)sb[d];
			er->have[d] = true;
			if (svc) {
				svc->msgs[d] = er->msgs[d];
				svc->calls[d] = er->calls[d];
				svc->have[d] = true;
			}
		} else if (svc && svc->have[d]) {
			er->msgs[d] = svc->msgs[d];
			er->calls[d] = svc->calls[d];
			er->have[d] = true;
		}
	}
}

static uint64_t est_one(uint64_t counted, uint64_t unseen, double per_byte,
			uint64_t floor)
{
	uint64_t v = counted + (uint64_t)((double)unseen * per_byte + 0.5);

	return v > floor ? v : floor;
}

/* r's calls, messages and estimate block, from the kernel's c. */
static void est_fill(struct cw_agent *a, const struct cw_conn *c,
		     struct cw_conn_record *r)
{
	const uint64_t b[2] = {r->bytes_out, r->bytes_in};
	uint64_t sb[2] = {c->sbytes_out, c->sbytes_in}, unseen[2], seen;
	struct est_end *ee, none;
	struct est_ratio er;
	int d;

	r->sampled_msgs_out = c->msgs_out;
	r->sampled_msgs_in = c->msgs_in;
	if (!a->estimating || c->protocol != IPPROTO_TCP) {
		r->sampled_ppm = c->protocol == IPPROTO_TCP ? CW_PPM : 0;
		return;
	}
	for (d = 0; d < 2; d++) {
		sb[d] = sb[d] < b[d] ? sb[d] : b[d];
		unseen[d] = b[d] - sb[d];
	}
	seen = sb[0] + sb[1];
	r->sampled_ppm = b[0] + b[1] ? (uint32_t)(seen * (double)CW_PPM /
						  (double)(b[0] + b[1]))
				     : CW_PPM;
	if (!unseen[0] && !unseen[1]) {
		if (c->flags & CW_F_CLOSED)
			cw_htab_delete(&a->est_ends, &c->cookie);
		return; /* every byte went by a counting program */
	}
	r->flags |= CW_REC_MSGS_EST;
	est_ratio_of(a, c, &er);
	if (a->est_ends.len >= EST_MAX)
		cw_htab_release(&a->est_ends);
	ee = cw_htab_upsert(&a->est_ends, &c->cookie, NULL);
	if (!ee) {
		memset(&none, 0, sizeof(none));
		ee = &none;
	}
	ee->msgs[0] = est_one(c->msgs_out, er.have[0] ? unseen[0] : 0,
			      er.msgs[0], ee->msgs[0]);
	ee->msgs[1] = est_one(c->msgs_in, er.have[1] ? unseen[1] : 0,
			      er.msgs[1], ee->msgs[1]);
	ee->calls[0] = est_one(c->calls_out, er.have[0] ? unseen[0] : 0,
			       er.calls[0], ee->calls[0]);
	ee->calls[1] = est_one(c->calls_in, er.have[1] ? unseen[1] : 0,
			       er.calls[1], ee->calls[1]);
	r->msgs_out = ee->msgs[0];
	r->msgs_in = ee->msgs[1];
	r->calls_out = ee->calls[0];
	r->calls_in = ee->calls[1];
	if (c->flags & CW_F_CLOSED)
		cw_htab_delete(&a->est_ends, &c->cookie);
}

/* ---- connection health ------------------------------------------------
 *
 * What the kernel noted at the end's transitions (bpf/conn.bpf.c,
 * "Connection health") goes into the record as it is; the RTT is the
 * agent's: each record of an established TCP end carries the kernel's
 * smoothed RTT of that moment (the collection's reading, or the close's),
 * and each reading is added to the end's histogram, which the record
 * carries whole (cumulative, like every counter in it), once per reading
 * (the kernel stamps each, srtt_ns).  An end the
 * iterator skips (nothing moved since the last collection) gives no
 * reading: an idle connection's srtt is its last one again.  Nothing is
 * read per packet.
 */
static void rtt_end_free(struct cw_agent *a, size_t i)
{
	struct rtt_end *e = cw_htab_val(&a->rtt_ends, i);

	cw_hist_release(&e->h);
}

void agent_health_release(struct cw_agent *a)
{
	size_t i;

	for (i = 0; i < a->rtt_ends.len; i++)
		rtt_end_free(a, i);
	cw_htab_release(&a->rtt_ends);
}

static void health_fill(struct cw_agent *a, const struct cw_conn *c,
			struct cw_conn_record *r)
{
	struct rtt_end *e;
	bool created;
	long i;

	r->connect_us = c->connect_us;
	r->fail = c->fail;
	r->resets_in = c->resets_in;
	r->resets_out = c->resets_out;
	if (c->protocol != IPPROTO_TCP || !(c->flags & CW_F_ESTABLISHED))
		return;
	if (!c->srtt_us && !cw_htab_get(&a->rtt_ends, &c->cookie))
		return;
	if (a->rtt_ends.len >= EST_MAX)
		agent_health_release(a);
	e = cw_htab_upsert(&a->rtt_ends, &c->cookie, &created);
	if (!e)
		return;
	if (created)
		e->h = (struct cw_hist)CW_HIST_INIT;
	/* Once per reading: a record sent again (exchange.c) has none new. */
	if (c->srtt_us && c->srtt_ns != e->srtt_ns) {
		cw_hist_add(&e->h, (uint64_t)c->srtt_us * 1000, 1);
		e->srtt_ns = c->srtt_ns;
	}
	if (cw_rec_hist_set(&r->rtt, &e->h))
		memset(&r->rtt, 0, sizeof(r->rtt));
	if (c->flags & CW_F_CLOSED) {
		i = cw_htab_index(&a->rtt_ends, &c->cookie);
		if (i >= 0)
			rtt_end_free(a, (size_t)i);
		cw_htab_delete(&a->rtt_ends, &c->cookie);
	}
}

static void conn_to_record(struct cw_agent *a, const struct cw_conn *c,
			   struct cw_conn_record *r)
{
	conn_to_tuple(a, c, r);
	snprintf(r->host, sizeof(r->host), "%s", a->host);
	memcpy(r->boot_id, a->boot_id, sizeof(r->boot_id));
	if (c->flags & CW_F_CLOSED)
		r->flags |= CW_REC_CLOSED;
	if (c->flags & CW_F_PREEXISTING)
		r->flags |= CW_REC_PREEXISTING;
	r->bytes_out = c->bytes_out;
	r->bytes_in = c->bytes_in;
	r->calls_out = c->calls_out;
	r->calls_in = c->calls_in;
	r->msgs_out = c->msgs_out;
	r->msgs_in = c->msgs_in;
	r->first_ns = to_real(a, c->first_ns);
	r->last_ns = to_real(a, c->last_ns ? c->last_ns : c->first_ns);
	r->retrans = c->retrans;
	r->srtt_us = c->srtt_us;
	est_fill(a, c, r);
	health_fill(a, c, r);
	if (c->flags & CW_F_OWNER || c->owner_tentative) {
		owner_to_process(&c->owner, &r->proc);
	} else {
		r->flags |= CW_REC_NO_OWNER;
		a->unowned_left = true;
	}
}

static void emit(struct cw_agent *a, struct cw_conn_record *r)
{
	r->seq = ++a->seq;
	a->st.records++;
	if (!cur_emit->stop)
		cur_emit->stop = cur_emit->fn(r, cur_emit->ctx);
}

static void emit_conn(struct cw_agent *a, const void *data)
{
	struct cw_conn_record r;

	conn_to_record(a, data, &r);
	cw_xchg_record(&a->xchg, data, &r, cur_emit->start_mono);
	/* One conntrack lookup per client end, at its first record. */
	cw_nat_apply(a->nat, &r);
	emit(a, &r);
}

static void emit_again(void *a, const void *c)
{
	emit_conn(a, c);
}

static void udp_to_record(struct cw_agent *a, const struct cw_udp_key *k,
			  const struct cw_udp_flow *f, bool closed)
{
	int af = k->family == 10 ? AF_INET6 : AF_INET;
	struct cw_conn_record r = {0};

	snprintf(r.host, sizeof(r.host), "%s", a->host);
	memcpy(r.boot_id, a->boot_id, sizeof(r.boot_id));
	r.netns = f->netns;
	r.cookie = k->cookie;
	r.protocol = IPPROTO_UDP;
	r.flags = closed ? CW_REC_CLOSED : 0;
	cw_addr_from_raw(&r.laddr, af, f->laddr);
	cw_addr_from_raw(&r.raddr, af, k->raddr);
	r.lport = f->lport;
	r.rport = k->rport;
	r.bytes_out = f->bytes_out;
	r.bytes_in = f->bytes_in;
	r.calls_out = r.msgs_out = f->dgrams_out;
	r.calls_in = r.msgs_in = f->dgrams_in;
	r.first_ns = to_real(a, f->first_ns);
	r.last_ns = to_real(a, f->last_ns);
	if (f->owner.tgid)
		owner_to_process(&f->owner, &r.proc);
	else
		r.flags |= CW_REC_NO_OWNER;
	emit(a, &r);
}

/*
 * UDP flows that changed are emitted with their running totals; idle ones
 * are read-and-deleted (atomically: nothing counted in between is lost) and
 * emitted once more as closed.
 */
static int collect_udp(struct cw_agent *a, uint64_t now)
{
	int fd = bpf_map__fd(a->skel->maps.udp_flows);
	struct cw_udp_key key, next, *prev = NULL, *idle = NULL;
	size_t nidle = 0, cap = 0, i;
	struct cw_udp_flow f;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &f))
			continue;
		if (f.last_ns + UDP_IDLE_NS < now) {
			if (CW_GROW(idle, cap, nidle + 1, 64))
				break;
			idle[nidle++] = key;
		} else if (f.last_ns + UDP_COARSE_SLACK_NS >= a->since_mono) {
			udp_to_record(a, &key, &f, false);
		}
	}
	for (i = 0; i < nidle; i++)
		if (!bpf_map_lookup_and_delete_elem(fd, &idle[i], &f))
			udp_to_record(a, &idle[i], &f, true);
	free(idle);
	return 0;
}

/* kprobe variant: aggregates live in a hash the iterator cannot walk. */
static int collect_hash(struct cw_agent *a)
{
	int fd = bpf_map__fd(a->skel->maps.conn_hash);
	__u64 key, next, *prev = NULL;
	struct cw_conn c;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &c))
			continue;
		if (c.protocol != IPPROTO_TCP ||
		    !(c.flags & CW_F_ESTABLISHED) || c.last_ns < a->since_mono)
			continue;
		emit_conn(a, &c);
	}
	return 0;
}

static void read_stats(struct cw_agent *a)
{
	int fd = bpf_map__fd(a->skel->maps.stats);
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, sum[CW_STAT_MAX] = {0};
	__u32 i;
	int c;

	if (ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return;
	for (i = 0; i < CW_STAT_MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			sum[i] += vals[c];
	}
	free(vals);
	a->st.close_lost = sum[CW_STAT_CLOSE_LOST];
	a->st.event_lost = sum[CW_STAT_EVENT_LOST];
	a->st.storage_fail = sum[CW_STAT_STORAGE_FAIL];
	a->st.udp_map_full = sum[CW_STAT_UDP_MAP_FULL];
	a->st.connect_failed = sum[CW_STAT_CONNECT_FAILED];
	a->st.no_owner = sum[CW_STAT_NO_OWNER];
	a->st.timing_lost = sum[CW_STAT_TIMING_LOST];
}

int cw_agent_collect(struct cw_agent *a, cw_record_fn fn, void *ctx)
{
	uint64_t start = cw_now_mono_ns();
	struct emit_ctx ec = {a, fn, ctx, 0, start};
	size_t i;
	int err = 0;

	cur_emit = &ec;
	a->mono_to_real = cw_mono_to_real_offset();
	if (a->mode != CW_MODE_AGGREGATE)
		goto out;
	/*
	 * Owners of server ends, with no per-call program: scan the fd tables
	 * when an end was established with none (the kernel counts those),
	 * and now and then while some stay unknown.  The scan costs a walk of
	 * every task's files, so it is not run every interval for nothing.
	 */
	if (a->skel->bss->unowned_ends != a->unowned_seen ||
	    (a->unowned_left && a->st.collections % RESCAN_EVERY == 0))
		a->need_scan = true;
	if (a->need_scan) {
		a->unowned_seen = a->skel->bss->unowned_ends;
		a->unowned_left = false;
		agent_scan_files(a);
	}
	/* Drain close records first: a closed end is then final. */
	ring_buffer__consume(a->rb);
	/* And the message starts before them, for its exchange times. */
	if (a->timing_rb && a->window_ns)
		ring_buffer__consume(a->timing_rb);
	a->skel->bss->collect_since_ns = a->since_mono;
	if (a->collect_link)
		err = agent_run_iter(a->collect_link, sizeof(struct cw_conn),
				     emit_conn, a);
	else if (a->attach == CW_ATTACH_KPROBE)
		err = collect_hash(a);
	ring_buffer__consume(a->rb);
	if (a->timing_rb && a->window_ns)
		ring_buffer__consume(a->timing_rb);
	for (i = 0; i < a->pending.len; i++)
		emit_conn(a, cw_htab_val(&a->pending, i));
	cw_htab_release(&a->pending);
	/* Ends idle since exchanges were timed for them: sent again. */
	cw_xchg_flush(&a->xchg, emit_again, a);
	if (!err)
		err = collect_udp(a, start);
out:
	read_stats(a);
	a->since_mono = start;
	a->st.collections++;
	cur_emit = NULL;
	return err;
}
