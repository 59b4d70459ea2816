// SPDX-License-Identifier: MIT
/*
 * The daemon's decisions, kept apart from the kernel and the clock so unit
 * tests can drive them with made-up times: when timing windows and sample
 * runs start, and how a window's message starts are joined to their
 * connection and cut into records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/sampler.h"
#include "common/log.h"
#include "common/util.h"

void cw_timing_sched_init(struct cw_timing_sched *ts, uint64_t window_ns,
			  uint64_t every_ns, uint64_t now_real, bool first_now)
{
	memset(ts, 0, sizeof(*ts));
	ts->window_ns = window_ns;
	ts->every_ns = every_ns;
	if (every_ns)
		ts->next_real = first_now ? now_real
					  : cw_window_next(now_real, every_ns);
}

uint64_t cw_timing_sched_demand(struct cw_timing_sched *ts, uint64_t now_real)
{
	uint64_t at = cw_window_next(now_real, ts->window_ns);

	if (!ts->demand_real || at < ts->demand_real)
		ts->demand_real = at;
	return ts->demand_real;
}

bool cw_timing_sched_due(struct cw_timing_sched *ts, uint64_t now_real)
{
	uint64_t at;

	if (!ts->window_ns || ts->slot)
		return false;
	if (ts->every_ns && now_real >= ts->next_real) {
		at = ts->next_real;
		ts->next_real = cw_window_next(now_real, ts->every_ns);
	} else if (ts->demand_real && now_real >= ts->demand_real) {
		at = ts->demand_real;
	} else {
		return false;
	}
	/* One window at a time: a demand due now is served by this one. */
	if (ts->demand_real && ts->demand_real <= now_real)
		ts->demand_real = 0;
	/* A slot of 0 would read as "none open": the epoch is no window. */
	ts->slot = at ? at : 1;
	return true;
}

void cw_timing_sched_closed(struct cw_timing_sched *ts)
{
	ts->slot = 0;
}

int cw_timing_sched_poll_ms(const struct cw_timing_sched *ts, uint64_t now_real)
{
	uint64_t at = UINT64_MAX;

	if (!ts->window_ns || ts->slot)
		return 50;
	if (ts->every_ns)
		at = ts->next_real;
	if (ts->demand_real && ts->demand_real < at)
		at = ts->demand_real;
	if (at == UINT64_MAX || at >= now_real + 50 * NSEC_PER_MSEC)
		return 50;
	return at > now_real ? (int)((at - now_real) / NSEC_PER_MSEC) : 0;
}

void cw_timing_join_init(struct cw_timing_join *j)
{
	memset(j, 0, sizeof(*j));
	cw_htab_init(&j->ends, sizeof(uint64_t), sizeof(struct cw_conn_record));
}

void cw_timing_join_release(struct cw_timing_join *j)
{
	cw_htab_release(&j->ends);
}

int cw_timing_join_note(struct cw_timing_join *j,
			const struct cw_conn_record *r)
{
	struct cw_conn_record *e = cw_htab_upsert(&j->ends, &r->cookie, NULL);

	if (!e)
		return cw_error("out of memory for connection ends");
	*e = *r;
	return 0;
}

/* The window as published: cut where the agent stopped, stretched to
 * cover its messages (the two clocks may disagree by a hair). */
static void window_extent(const struct cw_timing_join *j,
			  const struct cw_timing_record *t,
			  struct cw_timing_record *c)
{
	uint64_t end = t->window_start_ns + t->window_ns;

	if (j->stopped_real && j->stopped_real < end &&
	    j->stopped_real >= t->window_start_ns)
		end = j->stopped_real;
	if (t->n && t->msgs[0].ts_ns < c->window_start_ns)
		c->window_start_ns = t->msgs[0].ts_ns;
	if (t->n && t->msgs[t->n - 1].ts_ns > end)
		end = t->msgs[t->n - 1].ts_ns;
	c->window_ns = end - c->window_start_ns;
}

int cw_timing_join_window(struct cw_timing_join *j,
			  const struct cw_timing_record *t, size_t chunk,
			  cw_timing_fn fn, void *ctx)
{
	const struct cw_conn_record *r = cw_htab_get(&j->ends, &t->cookie);
	struct cw_timing_record c = *t;
	size_t off = 0;
	int err;

	c.slot_ns = j->slot;
	if (r)
		cw_timing_record_set_conn(&c, r);
	else
		j->no_conn++;
	window_extent(j, t, &c);
	j->messages += t->n;
	do {
		c.msgs = t->msgs + off;
		c.n = t->n - off < chunk ? t->n - off : chunk;
		c.seq = ++j->seq;
		off += c.n;
		j->records++;
		err = fn(&c, ctx);
		if (err)
			return err;
	} while (off < t->n);
	return 0;
}

void cw_timing_join_forget_closed(struct cw_timing_join *j)
{
	size_t i = 0;

	while (i < j->ends.len) {
		const struct cw_conn_record *r = cw_htab_val(&j->ends, i);

		if (r->flags & CW_REC_CLOSED)
			cw_htab_delete(&j->ends, cw_htab_key(&j->ends, i));
		else
			i++;
	}
}

void cw_sample_sched_init(struct cw_sample_sched *ss, uint64_t every_ns,
			  uint64_t now_real)
{
	memset(ss, 0, sizeof(*ss));
	ss->every_ns = every_ns;
	ss->next_real = cw_window_next(now_real, every_ns ? every_ns : 1);
}

uint64_t cw_sample_sched_due(struct cw_sample_sched *ss, uint64_t now_real)
{
	if (!ss->every_ns || now_real < ss->next_real)
		return 0;
	ss->next_real = cw_window_next(now_real, ss->every_ns);
	return cw_sampler_schedule[ss->turn++ % 3];
}

/* ---- agent --traces: a window's messages as MsgWindow records -------- */

void cw_msgs_batch_init(struct cw_msgs_batch *b, const char *host,
			const char *boot_id, size_t chunk, cw_wire_msgs_fn fn,
			void *ctx)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->w.host, sizeof(b->w.host), "%s", host ? host : "");
	snprintf(b->w.boot_id, sizeof(b->w.boot_id), "%s",
		 boot_id ? boot_id : "");
	cw_htab_init(&b->idx, sizeof(uint64_t), sizeof(uint32_t));
	b->chunk =
		chunk && chunk <= CW_WIRE_MSGS_MAX ? chunk : CW_WIRE_MSGS_CHUNK;
	b->fn = fn;
	b->ctx = ctx;
}

static void batch_clear(struct cw_msgs_batch *b)
{
	b->w.n = b->w.nsocks = 0;
	cw_htab_release(&b->idx);
	cw_htab_init(&b->idx, sizeof(uint64_t), sizeof(uint32_t));
}

void cw_msgs_batch_open(struct cw_msgs_batch *b, uint64_t slot_ns,
			uint64_t now_real)
{
	batch_clear(b);
	b->w.slot_ns = slot_ns;
	b->w.chunk = 0;
	b->open_real = now_real;
}

/* Hand the record out: its times cover its messages. */
static int batch_emit(struct cw_msgs_batch *b, bool last, uint64_t now_real)
{
	struct cw_wire_msgs *w = &b->w;
	size_t i;
	int err;

	/* An empty record spans the window so far on this host. */
	w->start_ns = w->end_ns = w->n ? w->msgs[0].start_ns : now_real;
	if (!w->n && b->open_real && b->open_real < now_real)
		w->start_ns = b->open_real;
	for (i = 0; i < w->n; i++) {
		if (w->msgs[i].start_ns < w->start_ns)
			w->start_ns = w->msgs[i].start_ns;
		if (w->msgs[i].end_ns > w->end_ns)
			w->end_ns = w->msgs[i].end_ns;
	}
	w->last = last;
	w->seq = ++b->records;
	b->messages += w->n;
	err = b->fn(w, b->ctx);
	w->chunk++;
	batch_clear(b);
	return err;
}

/* The index of s in the record's sockets, added on first use; -1. */
static long batch_sock(struct cw_msgs_batch *b, const struct cw_msgs_sock *s)
{
	struct cw_wire_msock *ws;
	uint32_t *ix;
	bool created;

	ix = cw_htab_upsert(&b->idx, &s->cookie, &created);
	if (!ix)
		return -1;
	if (!created)
		return *ix;
	if (CW_GROW(b->w.socks, b->cap_socks, b->w.nsocks + 1, 64)) {
		cw_htab_delete(&b->idx, &s->cookie);
		return -1;
	}
	ws = &b->w.socks[b->w.nsocks];
	memset(ws, 0, sizeof(*ws));
	ws->cookie = s->cookie;
	ws->netns = s->netns;
	ws->tgid = s->tgid;
	ws->laddr = s->laddr;
	ws->raddr = s->raddr;
	ws->lport = s->lport;
	ws->rport = s->rport;
	ws->role = s->role == CW_MSGS_ROLE_CONNECTED ? CW_REC_ROLE_CLIENT
						     : CW_REC_ROLE_SERVER;
	ws->role_seen = s->role_seen;
	*ix = (uint32_t)b->w.nsocks;
	return (long)b->w.nsocks++;
}

int cw_msgs_batch_add_fn(const struct cw_msgs_obs *o, void *batch)
{
	struct cw_msgs_batch *b = batch;
	struct cw_wire_mmsg *m;
	long sock, ctx = -1;

	if (CW_GROW(b->w.msgs, b->cap_msgs, b->w.n + 1, 256))
		return cw_error("out of memory for a window's messages");
	sock = batch_sock(b, o->sock);
	if (sock >= 0 && o->ctx)
		ctx = batch_sock(b, o->ctx);
	if (sock < 0 || (o->ctx && ctx < 0))
		return cw_error("out of memory for a window's sockets");
	m = &b->w.msgs[b->w.n++];
	memset(m, 0, sizeof(*m));
	m->start_ns = o->start_ns;
	m->end_ns = o->end_ns < o->start_ns ? o->start_ns : o->end_ns;
	m->bytes = o->bytes;
	m->sock = (uint32_t)sock;
	m->ctx = o->ctx ? (uint32_t)ctx + 1 : 0;
	m->tid = o->tid;
	m->seq = o->seq;
	m->ctx_seq = o->ctx_seq;
	m->ctx_open = o->ctx_open;
	m->ctx_loop = o->ctx_loop;
	m->out = o->dir == CW_MSGS_DIR_OUT;
	if (b->w.n < b->chunk)
		return 0;
	return batch_emit(b, false, o->end_ns);
}

int cw_msgs_batch_close(struct cw_msgs_batch *b, uint64_t now_real,
			uint64_t lost)
{
	int err;

	b->w.lost = lost;
	err = batch_emit(b, true, now_real);
	b->w.lost = 0;
	return err;
}

void cw_msgs_batch_release(struct cw_msgs_batch *b)
{
	free(b->w.socks);
	free(b->w.msgs);
	cw_htab_release(&b->idx);
	memset(b, 0, sizeof(*b));
}
