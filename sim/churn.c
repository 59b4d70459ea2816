// SPDX-License-Identifier: MIT
/*
 * The churn mode: a fleet whose connections open and close over simulated
 * time, the load a long-running correlator sees.  Every host keeps L
 * client connections open; each lives a drawn lifetime, is closed, and is
 * replaced at once by a new one (a new port and new cookies on both
 * hosts).  Both ends publish a record every collection interval while the
 * connection lives (cumulative counters) and a closed record when it ends,
 * as agents do, in simulated-time order; the span's last collection
 * flushes every live end.  With Kafka the records are paced so that
 * simulated time runs speedup times faster than the wall clock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"

/* One live connection: a slot of a host that is never empty. */
struct churn_conn {
	uint64_t open_ns, close_ns, next_ns; /* next_ns: its next records */
	double c2s, s2c, msgs;		     /* per second */
	uint64_t ccookie, scookie;
	uint32_t client, server; /* process: host * nprocs + index */
	uint16_t lport, sport;
	uint32_t srtt_us;
};

struct cw_sim_churn {
	struct sim s;
	struct cw_sim_churn_opts o;
	bool kafka; /* publishing: the span ends as the run does */
	struct churn_conn *conns;
	uint32_t *heap; /* conns by next_ns, earliest first */
	size_t n;
	char (*boot_id)[CW_BOOT_ID_LEN]; /* per host */
	uint64_t start_ns, end_ns;	 /* the simulated span */
	uint64_t wall0, lag_ns;		 /* pacing: start, worst lag */
	uint64_t made, closed, records;
	uint64_t last_ns; /* the simulated time reached: the last collection */
};

/* Heap order: the earlier next_ns first, then the lower slot (stable). */
static bool before(const struct cw_sim_churn *ch, uint32_t a, uint32_t b)
{
	uint64_t ta = ch->conns[a].next_ns, tb = ch->conns[b].next_ns;

	return ta < tb || (ta == tb && a < b);
}

static void heap_down(struct cw_sim_churn *ch, size_t i)
{
	size_t l, m;
	uint32_t t;

	for (;;) {
		l = 2 * i + 1;
		m = i;
		if (l < ch->n && before(ch, ch->heap[l], ch->heap[m]))
			m = l;
		if (l + 1 < ch->n && before(ch, ch->heap[l + 1], ch->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = ch->heap[i];
		ch->heap[i] = ch->heap[m];
		ch->heap[m] = t;
		i = m;
	}
}

/* Its lifetime: uniform from half to one and a half times the mean. */
static uint64_t lifetime(struct cw_sim_churn *ch)
{
	double f = 0.5 + sim_unif(&ch->s);

	return (uint64_t)((double)ch->o.lifetime_ns * f) + 1;
}

/* A server for a client process k: a process of a tier it calls. */
static uint32_t server_for(struct cw_sim_churn *ch, uint32_t k)
{
	struct sim *s = &ch->s;
	enum sim_tier t = s->hosts[k / s->nprocs].procs[k % s->nprocs].tier;
	enum sim_tier want = sim_tiers[t].calls[sim_rnd(s) & 1];
	size_t n = s->nhosts * s->nprocs;
	uint32_t srv;

	if (s->ntier[want])
		srv = (uint32_t)s->by_tier[want][sim_skewed(s, s->ntier[want])];
	else /* a small fleet may lack the tier: anyone serves */
		srv = (uint32_t)(sim_rnd(s) % n);
	/* Not itself: a process does not call its own port. */
	if (srv == k && n > 1)
		srv = (uint32_t)((srv + s->nprocs) % n);
	return srv;
}

/* A new connection in slot i (of host i / live), opened at open_ns. */
static void conn_open(struct cw_sim_churn *ch, size_t i, uint64_t open_ns,
		      uint64_t close_ns)
{
	struct sim *s = &ch->s;
	struct churn_conn *c = &ch->conns[i];
	struct sim_host *h = &s->hosts[i / ch->o.live], *sh;

	c->client = (uint32_t)((i / ch->o.live) * s->nprocs +
			       sim_rnd(s) % s->nprocs);
	c->server = server_for(ch, c->client);
	sh = &s->hosts[c->server / s->nprocs];
	c->open_ns = open_ns;
	c->close_ns = close_ns;
	c->next_ns = open_ns + ch->o.interval_ns;
	if (c->next_ns > close_ns)
		c->next_ns = close_ns;
	c->lport = h->next_port++;
	if (h->next_port < 32768)
		h->next_port = 32768;
	c->sport = sim_tiers[sh->procs[c->server % s->nprocs].tier].port;
	c->ccookie = ++h->cookie;
	c->scookie = ++sh->cookie;
	c->msgs = 0.1 + 10.0 * sim_unif(s);
	c->c2s = c->msgs * (double)(64 + sim_rnd(s) % 512);
	c->s2c = c->msgs * (double)sim_pareto(s, 200, 1.2, 1e6);
	c->srtt_us = 50 + (uint32_t)(sim_rnd(s) % 400);
	ch->made++;
}

/* The record of one end of c at t (closed: its last). */
static void end_record(struct cw_sim_churn *ch, const struct churn_conn *c,
		       bool server, uint64_t t, bool closed,
		       struct cw_conn_record *r)
{
	struct sim *s = &ch->s;
	uint32_t me = server ? c->server : c->client,
		 peer = server ? c->client : c->server;
	const struct sim_host *h = &s->hosts[me / s->nprocs],
			      *ph = &s->hosts[peer / s->nprocs];
	double secs = (double)(t - c->open_ns) / 1e9;
	uint64_t up = (uint64_t)(c->c2s * secs),
		 down = (uint64_t)(c->s2c * secs);

	sim_end_of(h, &h->procs[me % s->nprocs], r);
	memcpy(r->boot_id, ch->boot_id[me / s->nprocs], CW_BOOT_ID_LEN);
	r->role = server ? CW_REC_ROLE_SERVER : CW_REC_ROLE_CLIENT;
	r->lport = server ? c->sport : c->lport;
	r->rport = server ? c->lport : c->sport;
	r->raddr = ph->addr;
	r->cookie = server ? c->scookie : c->ccookie;
	r->bytes_out = server ? down : up;
	r->bytes_in = server ? up : down;
	r->msgs_out = r->msgs_in = 1 + (uint64_t)(c->msgs * secs);
	r->calls_out = r->msgs_out;
	r->calls_in = r->msgs_in;
	/* The server accepted a round trip after the client connected. */
	r->first_ns = c->open_ns + (server ? c->srtt_us * NSEC_PER_USEC : 0);
	r->last_ns = t > r->first_ns ? t : r->first_ns;
	r->srtt_us = c->srtt_us;
	if (closed)
		r->flags |= CW_REC_CLOSED;
}

/* Both ends of c at t, the client's first. */
static void emit_ends(struct cw_sim_churn *ch, const struct churn_conn *c, uint64_t t,
		      bool closed)
{
	struct cw_conn_record r;

	end_record(ch, c, false, t, closed, &r);
	sim_emit(&ch->s, &r);
	end_record(ch, c, true, t, closed, &r);
	sim_emit(&ch->s, &r);
	ch->records += 2;
}

/*
 * Hold records back until the wall clock reaches their simulated time
 * divided by the speedup, serving the producer meanwhile; the worst lag
 * behind that pace is kept for the report.
 */
static void pace(struct cw_sim_churn *ch, uint64_t t)
{
	uint64_t due, now;

	if (!ch->s.kp || !ch->o.speedup)
		return;
	due = ch->wall0 + (t - ch->start_ns) / ch->o.speedup;
	now = cw_now_mono_ns();
	if (now > due && now - due > ch->lag_ns)
		ch->lag_ns = now - due;
	while (now < due && !cw_stop) {
		cw_kafka_producer_poll(ch->s.kp,
				       (int)((due - now) / NSEC_PER_MSEC) + 1);
		now = cw_now_mono_ns();
	}
}

/* Boot ids for the hosts, and every slot's first connection. */
static int churn_setup(struct cw_sim_churn *ch)
{
	size_t i, nslots = ch->o.hosts * ch->o.live;
	uint64_t life, age, open, k;

	ch->conns = calloc(nslots, sizeof(*ch->conns));
	ch->heap = calloc(nslots, sizeof(*ch->heap));
	ch->boot_id = calloc(ch->o.hosts, sizeof(*ch->boot_id));
	if (!ch->conns || !ch->heap || !ch->boot_id)
		return cw_error("out of memory for %zu connections", nslots);
	for (i = 0; i < ch->o.hosts; i++) {
		uint64_t a = sim_rnd(&ch->s), b = sim_rnd(&ch->s);

		snprintf(ch->boot_id[i], CW_BOOT_ID_LEN,
			 "%08llx-%04llx-4%03llx-8%03llx-%012llx",
			 (unsigned long long)(a & 0xffffffff),
			 (unsigned long long)((a >> 32) & 0xffff),
			 (unsigned long long)((a >> 48) & 0xfff),
			 (unsigned long long)(b & 0xfff),
			 (unsigned long long)(b >> 16));
	}
	/* The fleet ran before the span: each slot's connection is part way
	 * through its life, its next records on its interval's beat. */
	for (i = 0; i < nslots; i++) {
		struct churn_conn *c = &ch->conns[i];

		life = lifetime(ch);
		age = (uint64_t)((double)life * sim_unif(&ch->s));
		open = ch->start_ns - age;
		conn_open(ch, i, open, open + life);
		k = (ch->start_ns - open) / ch->o.interval_ns + 1;
		c->next_ns = open + k * ch->o.interval_ns;
		if (c->next_ns > c->close_ns)
			c->next_ns = c->close_ns;
		ch->heap[i] = (uint32_t)i;
	}
	ch->n = nslots;
	for (i = nslots / 2; i-- > 0;)
		heap_down(ch, i);
	return 0;
}

/*
 * The span: the earliest due connection's records, one event at a time,
 * until the span ends (or a signal, or a write failure); then the last
 * collection, every live end at that time.
 */
static void churn_run(struct cw_sim_churn *ch)
{
	struct churn_conn *c;
	uint64_t t = ch->start_ns, last = ch->start_ns;
	size_t i;

	while (!ch->s.failed && !cw_stop) {
		c = &ch->conns[ch->heap[0]];
		t = c->next_ns;
		if (t >= ch->end_ns)
			break;
		pace(ch, t);
		last = t;
		if (t >= c->close_ns) {
			emit_ends(ch, c, t, true);
			ch->closed++;
			conn_open(ch, ch->heap[0], t, t + lifetime(ch));
		} else {
			emit_ends(ch, c, t, false);
			c->next_ns = t + ch->o.interval_ns;
			if (c->next_ns > c->close_ns)
				c->next_ns = c->close_ns;
		}
		heap_down(ch, 0);
	}
	t = t >= ch->end_ns ? ch->end_ns : last;
	ch->last_ns = t;
	pace(ch, t);
	for (i = 0; i < ch->n && !ch->s.failed; i++)
		emit_ends(ch, &ch->conns[i], t, false);
}

/* Where the span starts: fixed for files, so the same seed gives the
 * same bytes; for Kafka, so that it ends as the run does. */
static void churn_clock(struct cw_sim_churn *ch)
{
	uint64_t d = ch->o.duration_ns, now = cw_now_real_ns();

	ch->start_ns = SIM_T0;
	if (ch->kafka)
		ch->start_ns =
			now - d + (ch->o.speedup ? d / ch->o.speedup : 0);
	ch->end_ns = ch->start_ns + d;
}

struct cw_sim_churn *cw_sim_churn_new(const struct cw_sim_churn_opts *o,
				      const struct cw_sim_sink *sink)
{
	struct cw_sim_churn *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		cw_error("out of memory");
		return NULL;
	}
	ch->o = *o;
	ch->kafka = sink->kafka != NULL;
	if (sim_init(&ch->s, o->hosts, o->procs, o->seed))
		goto fail;
	churn_clock(ch);
	if (churn_setup(ch) || sim_sink_open(&ch->s, sink, 0))
		goto fail;
	return ch;
fail:
	cw_sim_churn_free(ch);
	return NULL;
}

void cw_sim_churn_run(struct cw_sim_churn *ch, struct cw_sim_churn_stats *st)
{
	ch->wall0 = cw_now_mono_ns(); /* the pace starts now */
	churn_run(ch);
	*st = (struct cw_sim_churn_stats){
		.made = ch->made,
		.closed = ch->closed,
		.records = ch->records,
		.hosts = ch->s.nhosts,
		.live = ch->n,
		.span_ns = ch->o.duration_ns,
		.reached_ns = ch->last_ns - ch->start_ns,
		.paced = ch->s.kp && ch->o.speedup,
		.lag_ns = ch->lag_ns,
	};
}

int cw_sim_churn_finish(struct cw_sim_churn *ch)
{
	return sim_sink_finish(&ch->s);
}

void cw_sim_churn_free(struct cw_sim_churn *ch)
{
	if (!ch)
		return;
	sim_release(&ch->s);
	free(ch->conns);
	free(ch->heap);
	free(ch->boot_id);
	free(ch);
}

static void report(const struct cw_sim_churn_stats *st, uint64_t speedup)
{
	char span[32], reached[48] = "";

	cw_fmt_duration(st->span_ns, span, sizeof(span));
	if (st->reached_ns < st->span_ns)
		snprintf(reached, sizeof(reached), "%.2f h of ",
			 (double)st->reached_ns / 3600e9);
	cw_info("churn: %" PRIu64 " connections between %zu hosts (%zu "
		"live throughout, %" PRIu64 " closed), %" PRIu64
		" records over %s%s simulated",
		st->made, st->hosts, st->live, st->closed, st->records,
		reached, span);
	if (st->paced)
		cw_info("churn: at most %.1f s behind the pace of %" PRIu64
			" simulated seconds a second",
			(double)st->lag_ns / 1e9, speedup);
}

int cw_sim_churn(const struct cw_sim_churn_opts *o,
		 const struct cw_sim_sink *sink)
{
	struct cw_sim_churn_stats st;
	struct cw_sim_churn *ch;
	int ret;

	cw_catch_signals();
	ch = cw_sim_churn_new(o, sink);
	if (!ch)
		return -1;
	cw_sim_churn_run(ch, &st);
	report(&st, o->speedup);
	if (cw_stop)
		cw_warn("stopped by a signal: the span is cut short");
	ret = cw_sim_churn_finish(ch);
	cw_sim_churn_free(ch);
	return ret;
}
