// SPDX-License-Identifier: MIT
/*
 * The correlator as a Kafka consumer-group member.  Correlators scale out
 * by partition: connection records are keyed by the canonical 4-tuple, so
 * both ends of a connection reach the same member; timing records are
 * keyed by the window's slot, so one member gets all of a window (every
 * connection through a node), pairs the two ends of each connection from
 * the records themselves and writes the window's paths beside the graph.
 * A window's records' offsets are committed only once its paths are
 * written; connection records' once the snapshot holding them is.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/lag.h"
#include "correlator/live.h"
#include "traces/traces.h"

static bool slot_set_has(const struct cw_slot_set *s, uint64_t slot)
{
	size_t lo = 0, hi = s->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->slot[mid] == slot)
			return true;
		if (s->slot[mid] < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Add slot to s, keeping it ascending; 0 or -1. */
static int slot_set_add(struct cw_slot_set *s, uint64_t slot)
{
	size_t i = s->n;

	if (slot_set_has(s, slot))
		return 0;
	if (CW_GROW(s->slot, s->cap, s->n + 1, 64))
		return cw_error("out of memory");
	while (i && s->slot[i - 1] > slot)
		i--;
	memmove(&s->slot[i + 1], &s->slot[i], (s->n - i) * sizeof(*s->slot));
	s->slot[i] = slot;
	s->n++;
	return 0;
}

static void slot_set_release(struct cw_slot_set *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

bool cw_correlator_written(const struct cw_correlator *c, uint64_t slot)
{
	return slot_set_has(&c->written, slot);
}

/* The slot a line of an output file is about; false if it names none. */
typedef bool (*line_slot_fn)(const char *line, uint64_t *slot);

/* paths.jsonl: each line begins {"slot_ns":N. */
static bool paths_line_slot(const char *line, uint64_t *slot)
{
	unsigned long long v;

	if (sscanf(line, "{\"slot_ns\":%llu", &v) != 1)
		return false;
	*slot = v;
	return true;
}

/*
 * traces.jsonl: every resource of the export request carries the slot as
 * an attribute (cw_traces.window_slot); a JSON string holds no bare
 * quote, so the key cannot be matched inside a service's name.
 */
static bool traces_line_slot(const char *line, uint64_t *slot)
{
	static const char key[] = "{\"key\":\"causeway.window.slot_ns\","
				  "\"value\":{\"intValue\":\"";
	const char *p = strstr(line, key);
	unsigned long long v;

	if (!p || sscanf(p + sizeof(key) - 1, "%llu", &v) != 1)
		return false;
	*slot = v;
	return true;
}

/*
 * The slots of a file's lines into s, as slot_of reads them; a torn last
 * line is cut off so the next one starts on a line of its own.
 */
static int load_slots(struct cw_slot_set *s, const char *path,
		      line_slot_fn slot_of)
{
	char *line = NULL;
	size_t size = 0;
	ssize_t n;
	off_t good = 0;
	uint64_t slot;
	struct stat sb;
	FILE *fp = fopen(path, "r");
	int err = 0;

	if (!fp)
		return errno == ENOENT ? 0
				       : cw_error("unable to read '%s': %s",
						  path, strerror(errno));
	while (!err && (n = getline(&line, &size, fp)) > 0) {
		if (line[n - 1] != '\n')
			break;
		good += n;
		if (slot_of(line, &slot))
			err = slot_set_add(s, slot);
	}
	free(line);
	if (!err && ferror(fp))
		err = cw_error("unable to read '%s': %s", path,
			       strerror(errno));
	fclose(fp);
	if (!err && !stat(path, &sb) && good < sb.st_size) {
		cw_warn("'%s': cutting off a torn last line", path);
		if (truncate(path, good))
			err = cw_error("unable to truncate '%s': %s", path,
				       strerror(errno));
	}
	return err;
}

/* Open DIR/name for appending, its lines' slots into s; 0 or -1. */
static int open_jsonl(struct cw_correlator *c, const char *name,
		      struct cw_slot_set *s, line_slot_fn slot_of, FILE **fp)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", c->o.out, name);
	if (load_slots(s, path, slot_of))
		return -1;
	*fp = fopen(path, "a");
	if (!*fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	return 0;
}

int cw_correlator_open(struct cw_correlator *c,
		       const struct cw_correlator_opts *o,
		       struct cw_kafka_consumer *consumer,
		       const char *timing_topic)
{
	memset(c, 0, sizeof(*c));
	c->o = *o;
	c->consumer = consumer;
	c->timing_topic = timing_topic;
	cw_pairing_init(&c->pairing);
	if (!o->kafka)
		cw_correlator_buckets_on(c, &c->pairing);
	cw_timing_init(&c->timing, o->grace_ns);
	if (o->kafka) {
		c->state_log = cw_kafka_log_new(o->kafka, o->state_topic);
		if (!c->state_log)
			return -1;
		if (o->edges_topic && o->bucket_ns) {
			c->edges_log =
				cw_kafka_log_new(o->kafka, o->edges_topic);
			if (!c->edges_log)
				return -1;
		}
	}
	if (o->paths && o->out &&
	    (open_jsonl(c, "paths.jsonl", &c->written, paths_line_slot,
			&c->jsonl) ||
	     open_jsonl(c, "traces.jsonl", &c->traced, traces_line_slot,
			&c->traces)))
		return -1;
	return 0;
}

int cw_correlator_close(struct cw_correlator *c)
{
	int err = 0;

	cw_timing_release(&c->timing);
	free(c->lags);
	c->lags = NULL;
	cw_pairing_release(&c->pairing);
	cw_correlator_parts_release(c);
	cw_kafka_log_free(c->state_log);
	c->state_log = NULL;
	cw_kafka_log_free(c->edges_log);
	c->edges_log = NULL;
	slot_set_release(&c->written);
	slot_set_release(&c->traced);
	if (c->jsonl && fclose(c->jsonl))
		err = cw_error("unable to write paths.jsonl: %s",
			       strerror(errno));
	c->jsonl = NULL;
	if (c->traces && fclose(c->traces))
		err = cw_error("unable to write traces.jsonl: %s",
			       strerror(errno));
	c->traces = NULL;
	return err;
}

/* One paths.jsonl line: the window, what was paired, then the paths. */
static int write_jsonl(struct cw_correlator *c,
		       const struct cw_timing_window *w,
		       const struct cw_live_stats *st,
		       const struct cw_msgtrace *t, const struct cw_pathset *ps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	struct cw_jsonw j;

	if (!mem)
		return cw_error("out of memory");
	cw_pathset_print_json(mem, t, ps);
	if (fclose(mem) || len < 3 || buf[0] != '{') {
		free(buf);
		return cw_error("out of memory");
	}
	cw_jsonw_init(&j, c->jsonl);
	cw_jsonw_obj_open(&j, NULL);
	cw_jsonw_u64(&j, "slot_ns", w->slot);
	cw_jsonw_u64(&j, "window_start_ns", w->start_ns);
	cw_jsonw_u64(&j, "window_end_ns", w->end_ns);
	cw_jsonw_u64(&j, "records", st->records);
	cw_jsonw_u64(&j, "ends", st->ends);
	cw_jsonw_u64(&j, "paired", st->paired);
	cw_jsonw_u64(&j, "messages", st->messages);
	/* The rest of the object (newline included) is `paths --json`'s. */
	fputc(',', c->jsonl);
	fwrite(buf + 1, 1, len - 1, c->jsonl);
	free(buf);
	if (fflush(c->jsonl) || fdatasync(fileno(c->jsonl)) || ferror(c->jsonl))
		return cw_error("unable to write '%s/paths.jsonl': %s",
				c->o.out, strerror(errno));
	return 0;
}

/* DIR/paths.json (the newest window's) and its paths.jsonl line. */
static int write_paths(struct cw_correlator *c,
		       const struct cw_timing_window *w,
		       const struct cw_live_stats *st,
		       const struct cw_msgtrace *t, const struct cw_pathset *ps)
{
	struct cw_outfile of;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/paths.json", c->o.out);
	if (cw_outfile_open(&of, path))
		return -1;
	cw_pathset_print_json(of.fp, t, ps);
	if (cw_outfile_commit(&of))
		return -1;
	if (!c->jsonl)
		return 0;
	if (cw_correlator_written(c, w->slot)) {
		cw_debug("window %llu: in paths.jsonl already",
			 (unsigned long long)w->slot);
		return 0;
	}
	if (write_jsonl(c, w, st, t, ps))
		return -1;
	return slot_set_add(&c->written, w->slot);
}

/* A POST of a window's traces is tried this often, 0.2 s, 0.4 s, ... apart. */
#define OTLP_TRIES 3

/*
 * POST a window's export request to the OTLP endpoint.  A collector that
 * is down or refuses is tried a few times, then given up on, counted and
 * said once: the window is not held, nor its offsets.
 */
static void post_traces(struct cw_correlator *c, uint64_t slot, const char *buf,
			size_t len)
{
	char why[384] = "";
	int i;

	for (i = 0; i < OTLP_TRIES; i++) {
		if (i)
			usleep(200000U << (i - 1));
		if (!cw_traces_post(c->o.otlp, buf, len, why, sizeof(why))) {
			c->traces_posted++;
			return;
		}
	}
	c->traces_post_failed++;
	cw_warn("window %" PRIu64 ": traces not posted after %d tries (%s): "
		"going on without them",
		slot, OTLP_TRIES, why);
}

/* The line (newline included) as one write to DIR/traces.jsonl; 0 or -1. */
static int append_traces(struct cw_correlator *c, uint64_t slot,
			 const char *buf, size_t len)
{
	if (fwrite(buf, 1, len, c->traces) != len || fflush(c->traces) ||
	    fdatasync(fileno(c->traces)))
		return cw_error("unable to write '%s/traces.jsonl': %s",
				c->o.out, strerror(errno));
	return slot_set_add(&c->traced, slot);
}

/*
 * The traces of window w's MsgWindow records (`agent --traces`) as one
 * OTLP/JSON export request, as the OTLP file exporters write them, trace
 * and span ids salted with the slot so the windows' ids never meet, and
 * every resource naming the slot.  POSTed first, then a line of
 * DIR/traces.jsonl: a window with a line was posted (or given up on), so
 * a restarted member skips it; a crash before the line posts it again,
 * with the same ids.  Before its paths line.  0, or -1 (not written).
 */
static int write_traces(struct cw_correlator *c,
			const struct cw_timing_window *w)
{
	struct cw_traces t;
	struct cw_traces_opts o;
	char *buf = NULL;
	size_t i, len = 0;
	uint64_t slot;
	FILE *mem;
	int err = 0;

	if (!c->traces && !c->o.otlp)
		return 0;
	if (slot_set_has(&c->traced, w->slot)) {
		cw_debug("window %" PRIu64 ": in traces.jsonl already",
			 w->slot);
		return 0;
	}
	cw_traces_init(&t);
	t.id_salt = t.window_slot = w->slot;
	for (i = 0; i < w->nm && !err; i++)
		err = cw_traces_add_wire(&t, &w->mrecs[i]);
	cw_traces_wire_done(&t);
	cw_traces_opts_default(&o);
	if (err || !t.n_msgs || cw_traces_build(&t) || cw_traces_infer(&t, &o))
		goto done;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		err = cw_error("out of memory");
		goto done;
	}
	err = cw_traces_write_otlp(&t, mem);
	if (fclose(mem) || !len || buf[len - 1] != '\n')
		err = err ? err : cw_error("out of memory");
	/* No resource (no span) names the slot: nothing to tell. */
	if (err || !traces_line_slot(buf, &slot))
		goto done;
	if (c->o.otlp)
		post_traces(c, w->slot, buf, len);
	if (c->traces && append_traces(c, w->slot, buf, len)) {
		err = -1;
		goto done;
	}
	c->trace_windows++;
	c->trace_spans += t.n_spans;
	cw_info("window %" PRIu64 ": %zu messages from %zu hosts, %zu spans "
		"built%s",
		w->slot, t.n_msgs, t.wire_hosts, t.n_spans,
		c->traces ? ", their traces in traces.jsonl" : "");
done:
	free(buf);
	cw_traces_release(&t);
	return err;
}

/* Infer the paths of window w and write them; 0, or -1 (not written). */
static int window_done(struct cw_correlator *c,
		       const struct cw_timing_window *w)
{
	struct cw_live_stats st = {0};
	struct cw_msgtrace t;
	struct cw_pathset ps;
	uint64_t t0 = cw_now_mono_ns();
	int err = 0;

	cw_msgtrace_init(&t);
	cw_pathset_init(&ps);
	if (w->nm && write_traces(c, w))
		return -1;
	if (!w->n)
		goto done; /* messages for traces only */
	if (cw_live_trace_windows(w->recs, w->n, true, &t, &st) ||
	    cw_paths_convolution(&t, &c->o.po, &ps)) {
		cw_warn("window %" PRIu64 ": no paths (%zu records, %zu "
			"messages)",
			w->slot, w->n, st.messages);
		c->windows_failed++;
		goto done;
	}
	c->no_conn += st.unknown;
	if (c->o.out && write_paths(c, w, &st, &t, &ps)) {
		err = -1;
		goto done;
	}
	c->windows++;
	cw_info("window %" PRIu64 " (%.1f s): %zu ends (%zu paired, %zu "
		"unpaired), %zu messages: %zu paths in %.0f ms",
		w->slot, (double)(w->end_ns - w->start_ns) / 1e9, st.ends,
		st.paired, st.unpaired, st.messages, ps.n_paths,
		(double)(cw_now_mono_ns() - t0) / 1e6);
done:
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
	return err;
}

static int store_offset(void *arg, int32_t partition, int64_t next)
{
	struct cw_correlator *c = arg;

	/* A correlator fed by hand (tests) has no offsets to store. */
	if (!c->consumer)
		return 0;
	return cw_kafka_offset_store(c->consumer, c->timing_topic, partition,
				     next);
}

/* How often the timing partitions' lag is read (it never waits). */
#define LAG_EVERY_NS (100 * 1000000ULL)

/* Pause or resume a timing partition as cw_timing_ahead() says. */
static void pace(struct cw_correlator *c, struct cw_timing_part *tp)
{
	bool want = cw_timing_ahead(&c->timing, tp->partition);

	if (want == tp->paused ||
	    cw_kafka_consumer_pause(c->consumer, c->timing_topic, tp->partition,
				    want))
		return;
	tp->paused = want;
	c->timing_pauses += want;
	cw_debug("%s [%d]: %s: %zu windows pending, slot %" PRIu64
		 " waits for a partition behind",
		 c->timing_topic, tp->partition, want ? "paused" : "resumed",
		 c->timing.nwins, cw_timing_held_slot(&c->timing));
}

/* Pause or resume every timing partition (one not assigned any more
 * keeps its state: a pause outlives the rebalance that gives it back). */
static void pace_all(struct cw_correlator *c)
{
	size_t i;

	for (i = 0; i < c->timing.nparts; i++)
		pace(c, &c->timing.parts[i]);
}

/*
 * Which timing partitions are behind (lag, or no fetch has told it yet):
 * a window waits for them (event time); and pause those that run so far
 * ahead that pending windows would overflow.  Read at most every
 * LAG_EVERY_NS, from what fetches brought.  0 or -1 (out of memory).
 */
static int timing_lag(struct cw_correlator *c, uint64_t now)
{
	struct cw_timing *tw = &c->timing;
	int n;
	size_t i, k;

	if (!c->consumer || now < c->lag_mono + LAG_EVERY_NS)
		return 0;
	c->lag_mono = now;
	for (;;) {
		n = cw_kafka_consumer_lag(c->consumer, c->lags, c->cap_lags);
		if (n < 0)
			return 0; /* no assignment to read: as it was */
		if ((size_t)n < c->cap_lags)
			break;
		if (CW_GROW(c->lags, c->cap_lags, c->cap_lags + 1, 16))
			return cw_error("out of memory");
	}
	for (i = 0; i < tw->nparts; i++)
		tw->parts[i].behind = false;
	for (k = 0; k < (size_t)n; k++)
		if (!strcmp(c->lags[k].topic, c->timing_topic) &&
		    cw_timing_behind(tw, c->lags[k].partition,
				     c->lags[k].lag > 0 || c->lags[k].high < 0))
			return -1;
	pace_all(c);
	return 0;
}

int cw_correlator_windows_step(struct cw_correlator *c, uint64_t now, bool all)
{
	struct cw_timing_window *w;

	if (!all && timing_lag(c, now))
		return -1;
	while ((w = cw_timing_ready(&c->timing, now, all))) {
		if (window_done(c, w))
			return -1; /* kept: its offsets are not committed */
		cw_timing_pop(&c->timing);
		c->applied_since_commit +=
			cw_timing_commit(&c->timing, store_offset, c);
	}
	return 0;
}

static void count_bad(struct cw_correlator *c, const struct cw_kafka_msg *m,
		      int kind, const char *why)
{
	char where[96];

	snprintf(where, sizeof(where), "%s [%d] offset %lld", m->topic,
		 m->partition, (long long)m->offset);
	cw_wire_errors_count(&c->errors, kind, where, why);
}

/* A timing record: its offset is stored once its window is written. */
static void apply_timing(struct cw_correlator *c, struct cw_kafka_msg *m,
			 struct cw_wire_msg *wm, int kind, const char *why)
{
	if (kind < 0)
		count_bad(c, m, kind, why);
	else if (kind == CW_WIRE_TIMING)
		/* The window takes the msgs (or frees them). */
		cw_timing_add(&c->timing, &wm->timing, m->partition, m->offset,
			      cw_now_mono_ns(), cw_now_real_ns());
	else if (kind == CW_WIRE_MSGS)
		cw_timing_add_msgs(&c->timing, &wm->msgs, m->partition,
				   m->offset, cw_now_mono_ns(),
				   cw_now_real_ns());
	cw_wire_msg_release(wm);
	cw_kafka_msg_release(m);
	/* Read from a backlog, a partition adds windows faster than the
	 * lag is looked at: pause it as soon as it runs ahead. */
	if (c->consumer && c->timing.nwins >= CW_TIMING_MAX_PENDING / 2)
		pace_all(c);
}

/*
 * With partition states: is m the next record of a partition we own?  A
 * record of one we do not own (revoked while it was on its way) or one
 * the state reflects already is skipped; a jump past the next offset is
 * loss (the topic is neither compacted nor transactional, so its offsets
 * run on), said and counted.
 */
static bool owned(struct cw_correlator *c, const struct cw_kafka_msg *m)
{
	struct cw_part_state *ps = cw_correlator_part(c, m->partition);

	if (!ps) {
		c->sst.foreign++;
		return false;
	}
	if (m->offset < ps->next) {
		c->sst.replayed++;
		return false;
	}
	if (m->offset > ps->next) {
		cw_warn("%s [%d]: offsets %" PRId64 " to %" PRId64
			" were never read: %" PRId64 " records lost",
			m->topic, m->partition, ps->next, m->offset - 1,
			m->offset - ps->next);
		ps->lost += (uint64_t)(m->offset - ps->next);
		c->sst.lost += (uint64_t)(m->offset - ps->next);
	}
	ps->next = m->offset + 1;
	return true;
}

/* Where a connection record goes: its partition's state, or the one. */
static struct cw_pairing *pairing_of(struct cw_correlator *c,
				     const struct cw_kafka_msg *m)
{
	struct cw_part_state *ps;

	if (!c->o.kafka)
		return &c->pairing;
	ps = cw_correlator_part(c, m->partition);
	return ps ? &ps->pairing : &c->pairing;
}

/* Apply a connection record; seal the buckets it completes.  0 or -1. */
static int add_conn(struct cw_pairing *p, const struct cw_wire_msg *wm)
{
	if (cw_pairing_add(p, &wm->conn))
		return -1;
	return p->bk.due ? cw_pairing_seal(p) : 0;
}

void cw_correlator_apply(struct cw_correlator *c, struct cw_kafka_msg *m)
{
	static struct cw_wire_msg wm; /* large: keep it off the stack */
	bool timing = c->o.paths && !strcmp(m->topic, c->timing_topic);
	char why[160];
	int kind;

	if (timing) {
		kind = cw_wire_decode(m->value, m->len, &wm, why, sizeof(why));
		/*
		 * A record of a new slot with no room for its window: the
		 * oldest is complete now, as the bound says, rather than at
		 * the batch's end after every such record has been refused.
		 * Catching up, the set fills while windows no partition
		 * behind holds wait out their grace (pace() pauses only past
		 * a held one): complete as the log goes, they lose nothing.
		 * Before this record is seen, so that the offsets stored then
		 * stop short of it.  A failed write stops the run at its next
		 * step, as ever.
		 */
		if ((kind == CW_WIRE_TIMING &&
		     cw_timing_needs_room(&c->timing, wm.timing.slot_ns,
					  cw_now_real_ns())) ||
		    (kind == CW_WIRE_MSGS &&
		     cw_timing_needs_room(&c->timing, wm.msgs.slot_ns,
					  cw_now_real_ns())))
			cw_correlator_windows_step(c, cw_now_mono_ns(), false);
		if (cw_timing_seen(&c->timing, m->partition, m->offset)) {
			cw_wire_msg_release(&wm);
			cw_kafka_msg_release(m);
			return;
		}
		apply_timing(c, m, &wm, kind, why);
		return;
	}
	if (c->o.kafka && !owned(c, m)) {
		cw_kafka_msg_release(m);
		return;
	}
	kind = cw_wire_decode(m->value, m->len, &wm, why, sizeof(why));
	if (kind == CW_WIRE_CONN) {
		/* Set aside before it can move a sealing point. */
		int skew = cw_pairing_skewed(pairing_of(c, m), &wm.conn,
					     c->batch_real ? c->batch_real
							   : cw_now_real_ns(),
					     why, sizeof(why));

		kind = skew ? skew : kind;
	}
	if (kind < 0) {
		count_bad(c, m, kind, why);
	} else if (kind == CW_WIRE_CONN && add_conn(pairing_of(c, m), &wm)) {
		cw_error("out of memory");
		cw_wire_msg_release(&wm);
		cw_kafka_msg_release(m);
		return;
	}
	c->applied += kind == CW_WIRE_CONN;
	cw_wire_msg_release(&wm);
	/* Bad records are applied too: skipping them is their handling. */
	cw_kafka_msg_applied(c->consumer, m);
	c->applied_since_commit++;
}

/* The sealed buckets are in the totals: their own copies can go. */
static void take_sealed(struct cw_correlator *c)
{
	size_t i;

	cw_pairing_take_sealed(&c->pairing);
	for (i = 0; i < c->nparts; i++)
		cw_pairing_take_sealed(&c->parts[i].pairing);
}

int cw_correlator_snapshot(struct cw_correlator *c, bool final)
{
	/*
	 * Buckets first: the snapshot may show the merged view read back
	 * from the edges topic, and a sealed bucket leaves memory (and the
	 * checkpoints) only once it is written.
	 */
	uint64_t t0 = cw_now_mono_ns(), t1, t2, t3, recs = c->edge_records;
	bool written;

	c->period_applied = c->applied - c->snap_applied;
	c->snap_applied = c->applied;
	written = !c->edges_log || !cw_correlator_write_edges(c, final);

	if (!written)
		cw_warn("edge buckets not written: no checkpoint, no commit");
	t1 = cw_now_mono_ns();
	if (c->o.kafka && cw_correlator_merge(c))
		return -1;
	t2 = cw_now_mono_ns();
	if (c->snapshot && c->snapshot(c, final, c->snapshot_arg))
		return -1;
	t3 = cw_now_mono_ns();
	cw_debug("snapshot: %" PRIu64 " edges written in %.3f s, "
		 "merge %.3f s, graph %.3f s; %" PRIu64 " records applied",
		 c->edge_records - recs, (double)(t1 - t0) / 1e9,
		 (double)(t2 - t1) / 1e9, (double)(t3 - t2) / 1e9, c->applied);
	if (!written)
		return 0;
	if (!c->edges_log)
		take_sealed(c);
	/* The checkpoints are the truth; committed offsets follow them. */
	if (c->o.kafka && cw_correlator_checkpoint(c, final))
		return 0;
	if (c->o.paths)
		c->applied_since_commit +=
			cw_timing_commit(&c->timing, store_offset, c);
	if ((c->applied_since_commit || final) &&
	    cw_kafka_consumer_commit(c->consumer) && c->applied_since_commit)
		cw_warn("offset commit failed: records will be read again");
	c->applied_since_commit = 0;
	return 0;
}

/* Records applied between two looks at the clock, at most. */
#define BATCH 256

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double cw_correlator_ingest_cpu(const struct cw_correlator *c)
{
	if (!c->cpu_first)
		return 0;
	return (double)(c->cpu_last - c->cpu_first + c->cpu_after) / 1e9;
}

/* A snapshot, its CPU counted as ingest's once records came. */
static int snapshot_timed(struct cw_correlator *c, bool final)
{
	uint64_t t0 = c->cpu_first ? process_cpu_ns() : 0;
	int err = cw_correlator_snapshot(c, final);

	if (c->cpu_first)
		c->cpu_after += process_cpu_ns() - t0;
	return err;
}

/* A batch of records ended at mono time now: the CPU clock, read at most
 * once a millisecond (a syscall: a trickle of small batches must not pay
 * one each); the snapshots before are inside the span now. */
static void batch_cpu(struct cw_correlator *c, uint64_t now)
{
	if (c->cpu_mono && now < c->cpu_mono + 1000000)
		return;
	c->cpu_mono = now;
	c->cpu_last = process_cpu_ns();
	c->cpu_after = 0;
}

int cw_correlator_run(struct cw_correlator *c, uint64_t duration, uint64_t idle,
		      uint64_t every)
{
	uint64_t start = cw_now_mono_ns(), last = start, snap = start + every;
	uint64_t rebalances = 0, seen = 0, took;
	struct cw_kafka_msg m;
	int64_t ts[BATCH];
	bool member;
	int n, k;

	while (!cw_stop) {
		uint64_t now = cw_now_mono_ns();

		if (duration && now >= start + duration)
			break;
		/*
		 * Idle means no records while holding an assignment: joining
		 * the group and waiting out a rebalance are not idle, and the
		 * idle clock starts again when the assignment changes.
		 */
		member = cw_kafka_consumer_member(c->consumer, &rebalances);
		if (rebalances != seen) {
			seen = rebalances;
			last = now;
		}
		if (idle && member && now >= last + idle)
			break;
		if (c->o.paths && cw_correlator_windows_step(c, now, false))
			return -1;
		if (now >= snap) {
			if (snapshot_timed(c, false))
				return -1;
			/* Time spent writing is neither idle nor reading:
			 * the next snapshot is `every` of reading away. */
			took = cw_now_mono_ns() - now;
			last += took;
			snap = now + took + every;
		}
		n = cw_kafka_consume(c->consumer, 200, &m);
		if (n < 0)
			return -1;
		if (n == 1) {
			/* What is waiting already, with no clock read per
			 * record (a zero timeout reads none either); their
			 * lag is told with one read for the batch. */
			c->batch_real = cw_now_real_ns();
			if (!c->cpu_first)
				c->cpu_first = process_cpu_ns();
			for (k = 0; n == 1 && k < BATCH; k++) {
				ts[k] = m.ts_ms;
				cw_correlator_apply(c, &m);
				if (k + 1 < BATCH)
					n = cw_kafka_consume(c->consumer, 0,
							     &m);
			}
			c->batch_real = 0;
			if (n < 0)
				return -1;
			cw_lag_add_batch(ts, (size_t)k);
			last = cw_now_mono_ns();
			batch_cpu(c, last);
		}
	}
	/* The end: what is pending is as complete as it will get. */
	if (c->o.paths && cw_correlator_windows_step(c, cw_now_mono_ns(), true))
		return -1;
	return snapshot_timed(c, true);
}
