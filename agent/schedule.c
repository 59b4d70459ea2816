// SPDX-License-Identifier: MIT
/*
 * The daemon's decisions, kept apart from the kernel and the clock so unit
 * tests can drive them with made-up times: when timing windows and sample
 * runs start, and how a window's message starts are joined to their
 * connection and cut into records.
 */
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
