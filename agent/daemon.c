// SPDX-License-Identifier: MIT
/*
 * The host agent's loop: every interval it publishes the connection ends
 * that changed (to Kafka, or as JSON lines) with cumulative counters, so a
 * consumer keeps the newest record per end and never double counts.  It
 * also records sample runs on a schedule, timing windows at wall-clock
 * multiples or on demand, and publishes host and process metadata.  The
 * decisions are in agent/schedule.c; this file does what they decide.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/dns.h"
#include "agent/sampler.h"
#include "agent/workload.h"
#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/util.h"
#include "common/wire.h"
#include "samples/samples.h"

/* Processes remembered as published; past this all are forgotten. */
#define META_SEEN_MAX 65536

volatile sig_atomic_t cw_window_demand;

struct daemon {
	const struct cw_daemon_opts *o;
	struct cw_daemon_stats *st;
	struct cw_agent *a;
	struct cw_jsonw w;
	struct cw_timing_sched ts;
	struct cw_timing_join tj;
	struct cw_sample_sched ss;
	struct cw_sampler *sampler;
	uint64_t sample_end_mono; /* a run counts until then; 0: idle */
	uint64_t sample_seq;
	struct cw_meta_seen seen;
	uint64_t meta_seq, next_meta_mono;
	int err; /* a write failed: stop */
	/* --traces: the message programs (NULL: off) and their records. */
	struct cw_msgs *msgs;
	struct cw_msgs_batch mb;
	uint64_t msgs_lost; /* the kernel's count at the last window's end */
	struct cw_dns *dns; /* --dns: the capture (NULL: off) */
};

/* Queue one metadata record, or write it as a JSON line; counted. */
static void publish_meta(struct daemon *d, struct cw_wire_msg *m)
{
	uint8_t *buf;
	size_t len;

	m->version = CW_WIRE_VERSION;
	if (!d->o->producer) {
		cw_wire_msg_json(&d->w, m);
		cw_jsonw_end_line(&d->w);
	} else if (cw_wire_encode(m, &buf, &len)) {
		cw_error("unable to encode %s metadata",
			 cw_wire_kind_name(m->kind));
		d->st->meta_failures++;
		return;
	} else {
		char key[CW_WIRE_ANYKEY_MAX];
		int err = cw_wire_key(m, key, sizeof(key)) < 0 ||
			  cw_kafka_produce(d->o->producer, m->kind,
					   key[0] ? key : NULL, buf, len);

		free(buf);
		if (err) {
			d->st->meta_failures++;
			return;
		}
	}
	if (m->kind == CW_WIRE_HOST)
		d->st->host_meta++;
	else if (m->kind == CW_WIRE_PROC)
		d->st->proc_meta++;
}

/* Options read only when the caller's struct is new enough to have them. */
#define HAS_OPT(o, f)                                                          \
	((o)->sz >= offsetof(struct cw_daemon_opts, f) + sizeof((o)->f))

/* Everything the agent counts now: for --metrics and host metadata. */
static void health_take(struct daemon *d, struct cw_agent_health *h)
{
	struct cw_spool *spool = HAS_OPT(d->o, spool) ? d->o->spool : NULL;
	struct cw_kafka_producer_stats ks;
	struct cw_spool_stats ss;

	memset(h, 0, sizeof(*h));
	cw_agent_stats(d->a, &h->agent);
	h->daemon = *d->st;
	h->daemon.timing_records = d->tj.records;
	h->daemon.messages = d->tj.messages;
	h->daemon.no_conn = d->tj.no_conn;
	if (d->o->producer)
		cw_kafka_producer_get_stats(d->o->producer, &ks);
	if (spool)
		cw_spool_get_stats(spool, &ss);
	cw_agent_health_kafka(h, d->o->producer ? &ks : NULL,
			      spool ? &ss : NULL);
	if (d->dns)
		cw_dns_stats(d->dns, &h->dns);
}

static void health_post(struct daemon *d)
{
	struct cw_agent_health h;

	if (!HAS_OPT(d->o, metrics) || !d->o->metrics)
		return;
	health_take(d, &h);
	cw_agent_health_post(&h, d->o->metrics);
}

static void publish_host(struct daemon *d)
{
	struct cw_agent_health h;
	struct cw_wire_msg m = {.kind = CW_WIRE_HOST};

	if (cw_host_meta_read(&m.host, cw_agent_host(d->a))) {
		d->st->meta_failures++;
		return;
	}
	snprintf(m.host.agent_version, sizeof(m.host.agent_version), "%s",
		 d->o->version ? d->o->version : "");
	m.host.seq = ++d->meta_seq;
	health_take(d, &h);
	cw_agent_health_meta(&h, &m.host.health);
	publish_meta(d, &m);
}

/* Remember the owner of a record: its use is published every interval. */
static void note_proc(struct daemon *d, const struct cw_conn_record *r)
{
	if (!r->proc.tgid || (r->flags & CW_REC_NO_OWNER))
		return;
	if (cw_meta_seen_add(&d->seen, &r->proc) < 0)
		d->st->meta_failures++;
}

static int publish_proc(const struct cw_proc_meta *pm, void *arg)
{
	struct daemon *d = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_PROC};

	m.proc = *pm;
	m.proc.seq = ++d->meta_seq;
	publish_meta(d, &m);
	return 0;
}

/* Each live process's use now; those gone are forgotten. */
static int usage_step(struct daemon *d)
{
	cw_meta_seen_publish(&d->seen, cw_agent_host(d->a), publish_proc, d);
	if (!d->o->producer && ferror(d->o->out))
		return cw_error("unable to write records: %m");
	return 0;
}

/* One name the DNS capture learned, beside the metadata. */
static int publish_dns(const struct cw_wire_dns *n, void *arg)
{
	struct daemon *d = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_DNS};

	m.dns = *n;
	publish_meta(d, &m);
	return d->o->producer || !ferror(d->o->out)
		       ? 0
		       : (d->err = cw_error("unable to write records: %m"));
}

static int on_record(const struct cw_conn_record *r, void *arg)
{
	struct daemon *d = arg;

	if (d->o->window_ns && cw_timing_join_note(&d->tj, r))
		return d->err = -1;
	note_proc(d, r);
	if (d->o->producer) {
		/* Not queued and not spooled: counted by the producer. */
		cw_kafka_produce_conn(d->o->producer, r);
		return 0;
	}
	cw_conn_record_json(&d->w, r);
	cw_jsonw_end_line(&d->w);
	if (ferror(d->o->out))
		return d->err = cw_error("unable to write records: %m");
	return 0;
}

static int collect(struct daemon *d)
{
	if (cw_agent_collect(d->a, on_record, d) || d->err || usage_step(d))
		return -1;
	if (!d->o->producer && fflush(d->o->out))
		return cw_error("unable to write records: %m");
	health_post(d);
	return 0;
}

static void sample_finish(struct daemon *d, bool interrupted)
{
	struct cw_sample_run *run = NULL;
	char name[CW_SAMPLE_NAME_MAX];

	cw_sampler_detach(d->sampler);
	d->sample_end_mono = 0;
	if (cw_sampler_collect(d->sampler, 0, &run)) {
		d->st->sample_failures++;
		return;
	}
	/* The run names its host as every record of this agent does. */
	snprintf(run->host, sizeof(run->host), "%s", cw_agent_host(d->a));
	if (cw_sample_store_write(cw_sample_store_dir(d->o->samples_store), run,
				  NULL, name, sizeof(name))) {
		d->st->sample_failures++;
	} else {
		d->st->sample_runs++;
		cw_debug("sample run %s%s", name,
			 interrupted ? " (interrupted)" : "");
	}
	/* Published whether or not the store took it; spooled if need be. */
	if (d->o->producer &&
	    !cw_kafka_produce_samples(d->o->producer, run, ++d->sample_seq))
		d->st->samples_published++;
	cw_sample_run_free(run);
}

/* Start a run when one is due; finish it when its bins are full. */
static void sample_step(struct daemon *d)
{
	struct cw_sampler_opts so = {.sz = sizeof(so)};

	if (d->sample_end_mono) {
		if (cw_now_mono_ns() >= d->sample_end_mono)
			sample_finish(d, false);
		return;
	}
	so.interval_ns = cw_sample_sched_due(&d->ss, cw_now_real_ns());
	if (!so.interval_ns)
		return;
	so.samples = CW_SAMPLER_DEF_SAMPLES;
	cw_sampler_free(d->sampler);
	d->sampler = NULL;
	if (cw_sampler_open(&so, &d->sampler) ||
	    cw_sampler_attach(d->sampler)) {
		d->st->sample_failures++;
		return;
	}
	d->sample_end_mono = cw_sampler_start(d->sampler) +
			     so.interval_ns * CW_SAMPLER_DEF_SAMPLES;
}

/* One chunk of one end's window, published or written. */
static int emit_timing(const struct cw_timing_record *c, void *arg)
{
	struct daemon *d = arg;

	if (d->o->producer) {
		if (cw_kafka_produce_timing(d->o->producer, c))
			d->st->timing_failures++;
		return 0;
	}
	cw_timing_window_json(&d->w, c);
	cw_jsonw_end_line(&d->w);
	if (ferror(d->o->out))
		return cw_error("unable to write records: %m");
	return 0;
}

static int on_timing(const struct cw_timing_record *t, void *arg)
{
	struct daemon *d = arg;

	return cw_timing_join_window(&d->tj, t, CW_WIRE_TIMING_CHUNK,
				     emit_timing, d);
}

/* One MsgWindow record, published on the timing topic (its key too). */
static int emit_msgs(const struct cw_wire_msgs *w, void *arg)
{
	struct daemon *d = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_MSGS};
	char key[CW_WIRE_ANYKEY_MAX];
	uint8_t *buf;
	size_t len;

	m.msgs = *w;
	d->st->msgs_records++;
	d->st->msgs_messages += w->n;
	if (cw_wire_encode(&m, &buf, &len) ||
	    cw_wire_key(&m, key, sizeof(key)) < 0) {
		cw_error("unable to encode a window's messages");
		d->st->msgs_failures++;
		return 0;
	}
	if (cw_kafka_produce(d->o->producer, CW_WIRE_TIMING, key, buf, len))
		d->st->msgs_failures++;
	free(buf);
	return 0;
}

/* A window opened: attach the message programs for its length. */
static void msgs_open(struct daemon *d)
{
	if (!d->msgs)
		return;
	cw_msgs_batch_open(&d->mb, d->ts.slot, cw_now_real_ns());
	if (cw_msgs_attach(d->msgs))
		d->st->msgs_failures++;
}

/* What arrived on the ring, into the window's records. */
static int msgs_poll(struct daemon *d)
{
	if (!cw_msgs_attached(d->msgs))
		return 0;
	return cw_msgs_poll(d->msgs, cw_msgs_batch_add_fn, &d->mb);
}

/* The window is over: detach, hand out the rest, the last record. */
static int msgs_close(struct daemon *d)
{
	struct cw_msgs_stats st;
	int err;

	if (!cw_msgs_attached(d->msgs))
		return 0;
	err = cw_msgs_detach(d->msgs, cw_msgs_batch_add_fn, &d->mb);
	cw_msgs_stats(d->msgs, &st);
	d->st->msgs_lost = st.lost;
	if (!err)
		err = cw_msgs_batch_close(&d->mb, cw_now_real_ns(),
					  st.lost - d->msgs_lost);
	d->msgs_lost = st.lost;
	return err;
}

/* Collect the open window: the ends' records first, so each is known. */
static int timing_collect(struct daemon *d)
{
	int err;

	if (msgs_close(d))
		return -1;
	if (collect(d))
		return -1;
	d->tj.slot = d->ts.slot;
	err = cw_agent_window_collect(d->a, on_timing, d);
	d->st->windows++;
	cw_debug("timing window at %" PRIu64 " collected", d->ts.slot);
	cw_timing_sched_closed(&d->ts);
	cw_timing_join_forget_closed(&d->tj);
	return err ? -1 : 0;
}

/* Open windows when due; collect one when it has ended. */
static int timing_step(struct daemon *d)
{
	if (!d->ts.window_ns)
		return 0;
	if (cw_window_demand) {
		cw_window_demand = 0;
		cw_timing_sched_demand(&d->ts, cw_now_real_ns());
		cw_info("timing window on demand at the next multiple of "
			"%" PRIu64 " ms",
			(uint64_t)(d->ts.window_ns / NSEC_PER_MSEC));
	}
	if (d->ts.slot) {
		if (!cw_agent_window_done(d->a))
			return 0;
		if (timing_collect(d))
			return -1;
	}
	if (!cw_timing_sched_due(&d->ts, cw_now_real_ns()))
		return 0;
	if (cw_agent_window_open(d->a, d->ts.window_ns))
		return -1;
	msgs_open(d);
	return 0;
}

static void meta_step(struct daemon *d)
{
	uint64_t now = cw_now_mono_ns();

	if (now < d->next_meta_mono)
		return;
	publish_host(d);
	d->next_meta_mono =
		d->o->meta_every_ns ? now + d->o->meta_every_ns : UINT64_MAX;
}

/* The steady state: one pass per wake-up until the end or a signal. */
static int daemon_loop(struct daemon *d)
{
	uint64_t start = cw_now_mono_ns(), next = start + d->o->interval_ns;
	uint64_t now;

	while (!cw_stop) {
		now = cw_now_mono_ns();
		if (d->o->duration_ns && now >= start + d->o->duration_ns)
			break;
		/* Windows first: a window due opens on its slot, not after a
		 * collection that may take a while (the fleet's windows are
		 * to cover the same instants). */
		if (timing_step(d))
			return -1;
		if (now >= next) {
			if (collect(d))
				return -1;
			next += d->o->interval_ns;
		}
		meta_step(d);
		sample_step(d);
		if (msgs_poll(d) ||
		    (d->dns && cw_dns_poll(d->dns, publish_dns, d)))
			return -1;
		if (d->o->producer)
			cw_kafka_producer_poll(d->o->producer, 0);
		if (cw_agent_poll(d->a, cw_timing_sched_poll_ms(
						&d->ts, cw_now_real_ns())))
			return -1;
	}
	return 0;
}

static void daemon_init(struct daemon *d, struct cw_agent *a,
			const struct cw_daemon_opts *o,
			struct cw_daemon_stats *st)
{
	uint64_t now = cw_now_real_ns();

	memset(d, 0, sizeof(*d));
	memset(st, 0, sizeof(*st));
	d->o = o;
	d->st = st;
	d->a = a;
	if (!o->producer)
		cw_jsonw_init(&d->w, o->out);
	cw_timing_join_init(&d->tj);
	cw_meta_seen_init(&d->seen, META_SEEN_MAX);
	cw_workload_set_root(o->runtime_root);
	cw_sample_sched_init(&d->ss, o->samples_every_ns, now);
	cw_timing_sched_init(&d->ts, o->window_ns, o->window_every_ns, now,
			     false);
	d->msgs = HAS_OPT(o, msgs) && o->producer ? o->msgs : NULL;
	d->dns = HAS_OPT(o, dns) ? o->dns : NULL;
	if (d->msgs) {
		char boot[CW_BOOT_ID_LEN] = "";

		cw_boot_id_read(boot, sizeof(boot));
		cw_msgs_batch_init(&d->mb, cw_agent_host(a), boot,
				   CW_WIRE_MSGS_CHUNK, emit_msgs, d);
	}
	if (o->window_every_ns)
		cw_info("timing windows of %" PRIu64 " ms every %" PRIu64
			" ms, the first at %" PRIu64,
			(uint64_t)(o->window_ns / NSEC_PER_MSEC),
			(uint64_t)(o->window_every_ns / NSEC_PER_MSEC),
			d->ts.next_real);
}

int cw_daemon_run(struct cw_agent *a, const struct cw_daemon_opts *o,
		  struct cw_daemon_stats *st)
{
	struct daemon d;
	int err = -1;

	daemon_init(&d, a, o, st);
	if (daemon_loop(&d))
		goto out;
	/* Flush what is pending before detaching: a window cut short too. */
	if (d.ts.slot) {
		d.tj.stopped_real = cw_now_real_ns();
		if (timing_collect(&d))
			goto out;
	}
	if ((d.dns && cw_dns_poll(d.dns, publish_dns, &d)) || collect(&d))
		goto out;
	/* The last health, with the final counts, for the fleet to see. */
	if (o->producer)
		publish_host(&d);
	if (o->producer)
		cw_kafka_producer_flush(o->producer, 10000);
	health_post(&d); /* what the caller reports next */
	err = 0;
out:
	if (d.sample_end_mono)
		sample_finish(&d, true);
	cw_sampler_free(d.sampler);
	st->timing_records = d.tj.records;
	st->messages = d.tj.messages;
	st->no_conn = d.tj.no_conn;
	cw_timing_join_release(&d.tj);
	cw_meta_seen_release(&d.seen);
	if (d.msgs) {
		cw_msgs_detach(d.msgs, NULL, NULL); /* after an error */
		cw_msgs_batch_release(&d.mb);
	}
	return err;
}

/* ---- causeway run ------------------------------------------------------ */

struct watch {
	struct cw_agent *a;
	struct cw_timing_sched ts;
	cw_record_fn on_record;
	cw_timing_fn on_timing;
	cw_proc_meta_fn on_meta;
	void *ctx;
	struct cw_meta_seen seen;
	int stop;			  /* a callback said so */
	struct cw_metrics_board *metrics; /* or NULL */
	struct cw_dns *dns;		  /* --dns: the capture, or NULL */
	int (*on_dns)(const struct cw_wire_dns *n, void *ctx);
};

/* The agent's collection does not stop on a callback's word: we do. */
static int watch_record(const struct cw_conn_record *r, void *arg)
{
	struct watch *w = arg;

	if (w->on_meta && r->proc.tgid && !(r->flags & CW_REC_NO_OWNER) &&
	    cw_meta_seen_add(&w->seen, &r->proc) < 0)
		w->stop = -1;
	if (!w->stop)
		w->stop = w->on_record(r, w->ctx);
	return w->stop;
}

static int watch_collect(struct watch *w)
{
	struct cw_agent_health h = {0};

	if (cw_agent_collect(w->a, watch_record, w) || w->stop)
		return -1;
	if (w->on_meta && cw_meta_seen_publish(&w->seen, cw_agent_host(w->a),
					       w->on_meta, w->ctx))
		return -1;
	if (w->metrics) {
		cw_agent_stats(w->a, &h.agent);
		if (w->dns)
			cw_dns_stats(w->dns, &h.dns);
		cw_agent_health_post(&h, w->metrics);
	}
	return 0;
}

/* Collect a window that has ended; open the next when it is due. */
static int watch_windows(struct watch *w)
{
	if (!w->ts.window_ns)
		return 0;
	if (w->ts.slot && cw_agent_window_done(w->a)) {
		if (cw_agent_window_collect(w->a, w->on_timing, w->ctx))
			return -1;
		cw_timing_sched_closed(&w->ts);
	}
	if (!cw_timing_sched_due(&w->ts, cw_now_real_ns()))
		return 0;
	return cw_agent_window_open(w->a, w->ts.window_ns);
}

/* cw_agent_watch()'s loop, to the final collection. */
static int watch_loop(struct watch *w, const struct cw_watch_opts *o)
{
	uint64_t start = cw_now_mono_ns(), next = start + o->interval_ns, now;

	while (!cw_stop) {
		now = cw_now_mono_ns();
		if (o->duration_ns && now >= start + o->duration_ns)
			break;
		if (watch_windows(w))
			return -1;
		if (now >= next) {
			if (watch_collect(w))
				return -1;
			next += o->interval_ns;
			if (next < now)
				next = now + o->interval_ns;
		}
		if (cw_agent_poll(w->a, 50) ||
		    (w->dns && cw_dns_poll(w->dns, w->on_dns, w->ctx)))
			return -1;
	}
	if (o->window_ns && cw_agent_window_collect(w->a, w->on_timing, w->ctx))
		return -1;
	if (w->dns && cw_dns_poll(w->dns, w->on_dns, w->ctx))
		return -1;
	return watch_collect(w);
}

int cw_agent_watch(struct cw_agent *a, const struct cw_watch_opts *o,
		   cw_record_fn on_record, cw_timing_fn on_timing, void *ctx)
{
	struct watch w = {.a = a,
			  .on_record = on_record,
			  .on_timing = on_timing,
			  .ctx = ctx};
	int err;

	if (o->sz >= offsetof(struct cw_watch_opts, runtime_root) +
			     sizeof(o->runtime_root)) {
		w.on_meta = o->on_meta;
		cw_workload_set_root(o->runtime_root);
	}
	if (o->sz >=
	    offsetof(struct cw_watch_opts, metrics) + sizeof(o->metrics))
		w.metrics = o->metrics;
	if (o->sz >=
	    offsetof(struct cw_watch_opts, on_dns) + sizeof(o->on_dns)) {
		w.dns = o->dns;
		w.on_dns = o->on_dns;
	}
	cw_timing_sched_init(&w.ts, o->window_ns, o->window_every_ns,
			     cw_now_real_ns(), true);
	cw_meta_seen_init(&w.seen, META_SEEN_MAX);
	/* The first window open before the caller says it is ready: what a
	 * caller starts then is inside it. */
	err = watch_windows(&w);
	if (!err && o->sz >= offsetof(struct cw_watch_opts, on_ready) +
				     sizeof(o->on_ready) && o->on_ready)
		o->on_ready(ctx);
	if (!err)
		err = watch_loop(&w, o);
	cw_meta_seen_release(&w.seen);
	return err;
}
