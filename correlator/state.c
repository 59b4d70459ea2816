// SPDX-License-Identifier: MIT
/*
 * A member's state per input partition, and its checkpoints in
 * <prefix>.state.  The pairing state of a partition at an offset is a
 * function of the partition's records before it, so a checkpoint names
 * the offset it reflects and a member that restores it seeks there: the
 * group's committed offsets are never the truth, and any checkpoint at an
 * offset (whichever member wrote it) is as good as another.  Restore takes
 * the whole checkpoint of highest offset; one cut short by a crash is
 * skipped, an older one from a member that lost its partitions loses.
 *
 * The state topic is compacted (cleanup.policy=compact): the brokers keep
 * the newest record of each key.  So every chunk has a key of its own,
 * "<group>/<topic>/<partition>/<slot>/<chunk>", and a partition's
 * checkpoints alternate between two slots: one cut short by a crash
 * overwrites part of its slot only, and the other slot still holds the
 * last whole one however the log was compacted.  A checkpoint with fewer
 * chunks than its slot held deletes the rest (tombstones: null values).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"

struct cw_part_state *cw_correlator_part(struct cw_correlator *c,
					 int32_t partition)
{
	size_t i;

	for (i = 0; i < c->nparts; i++)
		if (c->parts[i].partition == partition)
			return &c->parts[i];
	return NULL;
}

/* A new, empty state for partition, kept in partition order; or NULL. */
static struct cw_part_state *part_add(struct cw_correlator *c,
				      int32_t partition)
{
	size_t i = c->nparts;

	if (CW_GROW(c->parts, c->cap_parts, c->nparts + 1, 16))
		return NULL;
	while (i && c->parts[i - 1].partition > partition)
		i--;
	memmove(&c->parts[i + 1], &c->parts[i],
		(c->nparts - i) * sizeof(*c->parts));
	c->nparts++;
	memset(&c->parts[i], 0, sizeof(c->parts[i]));
	c->parts[i].partition = partition;
	c->parts[i].saved = -1;
	cw_pairing_init(&c->parts[i].pairing);
	cw_correlator_buckets_on(c, &c->parts[i].pairing);
	return &c->parts[i];
}

static void part_drop(struct cw_correlator *c, struct cw_part_state *ps)
{
	size_t i = (size_t)(ps - c->parts);

	cw_pairing_release(&ps->pairing);
	memmove(&c->parts[i], &c->parts[i + 1],
		(c->nparts - i - 1) * sizeof(*c->parts));
	c->nparts--;
}

void cw_correlator_parts_release(struct cw_correlator *c)
{
	while (c->nparts)
		part_drop(c, &c->parts[c->nparts - 1]);
	free(c->parts);
	c->parts = NULL;
	c->cap_parts = 0;
}

/* The state topic's partition that holds input partition p's. */
static int state_partition(struct cw_correlator *c, int32_t p)
{
	/* Made compacted if missing: the newest record of each key kept. */
	if (c->state_partitions <= 0 &&
	    !cw_kafka_log_topic_config(c->state_log, "cleanup.policy",
				       "compact"))
		c->state_partitions = cw_kafka_log_partitions(c->state_log);
	return c->state_partitions > 0 ? p % c->state_partitions : -1;
}

/* ---- writing ------------------------------------------------------------ */

#define STATE_KEY_MAX (2 * CW_WIRE_NAME_MAX + 48)
/* More chunks than any checkpoint has (500 ends each): a key naming one
 * past it is not ours. */
#define STATE_CHUNKS_MAX (1u << 22)

/* The prefix of a partition's checkpoint keys: readers skip others'. */
static void state_key(const struct cw_correlator *c, int32_t partition,
		      char *key, size_t size)
{
	snprintf(key, size, "%s/%s/%d", c->o.group, c->o.conns_topic,
		 partition);
}

/* Encode and queue chunk `chunk` of slot `slot` (m NULL: delete it, a
 * tombstone); 0 or -1. */
static int put_chunk(struct cw_correlator *c, int sp,
		     const struct cw_part_state *ps, uint32_t chunk,
		     struct cw_wire_msg *m)
{
	char key[STATE_KEY_MAX];
	uint8_t *buf = NULL;
	size_t len = 0, n;
	int err;

	state_key(c, ps->partition, key, sizeof(key));
	n = strlen(key);
	snprintf(key + n, sizeof(key) - n, "/%u/%u", ps->slot, chunk);
	if (m && cw_wire_encode(m, &buf, &len))
		return cw_error("out of memory encoding a checkpoint");
	err = cw_kafka_log_put(c->state_log, sp, key, buf, len);
	free(buf);
	c->sst.chunks += !err && m;
	return err;
}

/* The chunks of partition ps's checkpoint, queued into its slot, and
 * tombstones for the slot's chunks past them; 0 or -1. */
static int put_checkpoint(struct cw_correlator *c, struct cw_part_state *ps,
			  int sp)
{
	static struct cw_wire_msg m; /* large: keep it off the stack */
	struct cw_wire_state *st = &m.state;
	uint32_t k;
	int err = 0;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_STATE;
	snprintf(st->group, sizeof(st->group), "%s", c->o.group);
	snprintf(st->topic, sizeof(st->topic), "%s", c->o.conns_topic);
	st->partition = ps->partition;
	st->offset = ps->next;
	st->checkpoint = cw_now_real_ns();
	st->chunks = (uint32_t)cw_pairing_chunks(&ps->pairing);
	st->records = ps->pairing.st.records;
	st->stale = ps->pairing.st.stale;
	st->lost = ps->lost;
	for (k = 0; k < st->chunks && !err; k++) {
		st->chunk = k;
		if (cw_pairing_chunk(&ps->pairing, k, st))
			err = cw_error("out of memory for a checkpoint");
		else
			err = put_chunk(c, sp, ps, k, &m);
	}
	for (k = st->chunks; k < ps->slot_chunks[ps->slot] && !err; k++)
		err = put_chunk(c, sp, ps, k, NULL);
	if (!err)
		ps->slot_chunks[ps->slot] = st->chunks;
	cw_wire_msg_release(&m);
	return err;
}

/*
 * Is ps's checkpoint due?  A checkpoint writes all of a partition's ends,
 * so it waits until the records applied since the last one reach a
 * quarter of them (at most four end-writes per record, however large the
 * state) or CW_CHECKPOINT_MAX_AGE_NS passed; all: whenever it moved.
 */
static bool due(const struct cw_part_state *ps, bool all, uint64_t now)
{
	uint64_t since = (uint64_t)(ps->next - (ps->saved < 0 ? 0 : ps->saved));

	if (ps->next == ps->saved)
		return false;
	return all || since * 4 >= ps->pairing.ends.len ||
	       now >= ps->saved_mono + CW_CHECKPOINT_MAX_AGE_NS;
}

int cw_correlator_checkpoint(struct cw_correlator *c, bool all)
{
	uint64_t now = cw_now_mono_ns();
	size_t i, queued = 0;
	int sp, err = 0;

	if (!c->state_log)
		return 0;
	for (i = 0; i < c->nparts; i++)
		c->parts[i].due = due(&c->parts[i], all, now);
	for (i = 0; i < c->nparts && !err; i++) {
		if (!c->parts[i].due)
			continue;
		sp = state_partition(c, c->parts[i].partition);
		err = sp < 0 || put_checkpoint(c, &c->parts[i], sp);
		queued++;
	}
	if (!err && queued)
		err = cw_kafka_log_flush(c->state_log, 60000);
	if (err) {
		c->sst.failures++;
		return cw_error("checkpoint not written: offsets stay where "
				"they were");
	}
	/* All stored: each names the offset it reflects. */
	for (i = 0; i < c->nparts; i++) {
		if (!c->parts[i].due)
			continue;
		c->sst.checkpoints++;
		c->parts[i].saved = c->parts[i].next;
		c->parts[i].saved_mono = now;
		c->parts[i].slot ^= 1; /* this one whole: the next, the other */
	}
	return 0;
}

/* ---- restoring ---------------------------------------------------------- */

/* A checkpoint seen in the state topic. */
struct candidate {
	uint64_t id;
	int64_t offset;	 /* input offset it reflects */
	int64_t at;	 /* state topic offset of its first chunk */
	uint32_t chunks; /* it has */
	uint32_t seen;	 /* distinct chunks seen */
	int slot;	 /* of its keys (-1: keys of old, one per partition) */
	uint8_t *bits;	 /* chunks seen, by index */
};

/* An open bucket's delta read from a checkpoint: its fields before the
 * histograms, which are the delta's last, and where they are kept. */
#define KEPT_HEAD offsetof(struct cw_end_delta, rtt)
_Static_assert(sizeof(struct cw_end_delta) - KEPT_HEAD <
		       3 * sizeof(struct cw_rec_hist) + 8,
	       "the histograms are the end delta's last fields");
struct kept_delta {
	uint8_t head[KEPT_HEAD];
	uint32_t hists; /* index in scan.hists, UINT32_MAX: none */
};

struct scan {
	struct cw_correlator *c;
	int32_t partition;
	char key[STATE_KEY_MAX]; /* our keys' prefix, as checkpoint() puts */
	int key_slot;		 /* the last chunk's, from its key */
	uint32_t slot_chunks[2]; /* chunks seen under each slot's keys */
	struct candidate *cand;
	size_t n, cap;
	struct candidate *best; /* pass 2: the one to apply */
	struct cw_part_state *ps;
	uint32_t applied;
	uint64_t bad;
	struct kept_delta *deltas; /* every chunk's, loaded at the end */
	size_t ndeltas, cap_deltas;
	struct cw_end_hists *hists; /* theirs, only for those with any */
	size_t nhists, cap_hists;
	uint64_t records, stale, lost; /* the checkpoint's counters */
};

/* Decode a chunk of this group, topic and partition into m; 1, 0 (not
 * ours), or -1 (malformed: counted). */
static int our_chunk(struct scan *s, const char *key, size_t key_len,
		     const uint8_t *v, size_t len, struct cw_wire_msg *m)
{
	size_t n = strlen(s->key);
	char rest[24];
	unsigned slot, chunk;
	int kind;

	/* Another group's, topic's or partition's by its key: not decoded
	 * (the value decides for a record put with no key). */
	s->key_slot = -1;
	if (key && (key_len < n || memcmp(key, s->key, n)))
		return 0;
	if (key && key_len > n) {
		if (key_len - n >= sizeof(rest))
			return 0;
		memcpy(rest, key + n, key_len - n);
		rest[key_len - n] = 0;
		if (sscanf(rest, "/%u/%u", &slot, &chunk) != 2 || slot > 1 ||
		    chunk >= STATE_CHUNKS_MAX)
			return 0;
		s->key_slot = (int)slot;
		if (chunk >= s->slot_chunks[slot])
			s->slot_chunks[slot] = chunk + 1;
	}
	if (!v)
		return 0; /* a deleted chunk */
	kind = cw_wire_decode(v, len, m, NULL, 0);

	if (kind < 0) {
		s->bad++;
		return -1;
	}
	if (kind != CW_WIRE_STATE || m->state.partition != s->partition ||
	    strcmp(m->state.group, s->c->o.group) ||
	    strcmp(m->state.topic, s->c->o.conns_topic)) {
		cw_wire_msg_release(m);
		return 0;
	}
	return 1;
}

/* Pass 1: note every checkpoint and which of its chunks are there. */
static int note_chunk(void *arg, int64_t at, const char *key, size_t key_len,
		      const uint8_t *v, size_t len)
{
	static struct cw_wire_msg m;
	struct scan *s = arg;
	struct candidate *k = NULL;
	size_t i;

	if (our_chunk(s, key, key_len, v, len, &m) <= 0)
		return 0;
	for (i = 0; i < s->n && !k; i++)
		if (s->cand[i].id == m.state.checkpoint &&
		    s->cand[i].offset == m.state.offset &&
		    s->cand[i].chunks == m.state.chunks)
			k = &s->cand[i];
	if (!k) {
		if (CW_GROW(s->cand, s->cap, s->n + 1, 16))
			goto oom;
		k = &s->cand[s->n++];
		memset(k, 0, sizeof(*k));
		k->id = m.state.checkpoint;
		k->offset = m.state.offset;
		k->at = at;
		k->chunks = m.state.chunks;
		k->slot = s->key_slot;
		k->bits = calloc(k->chunks / 8 + 1, 1);
		if (!k->bits)
			goto oom;
	}
	if (!(k->bits[m.state.chunk / 8] & (1u << (m.state.chunk % 8)))) {
		k->bits[m.state.chunk / 8] |=
			(uint8_t)(1u << (m.state.chunk % 8));
		k->seen++;
	}
	cw_wire_msg_release(&m);
	return 0;
oom:
	cw_wire_msg_release(&m);
	return cw_error("out of memory reading checkpoints");
}

/* A chunk's deltas, for after the last chunk, their histograms (774
 * bytes; most deltas have none) apart; 0 or -1. */
static int keep_deltas(struct scan *s, const struct cw_wire_state *st)
{
	const struct cw_end_delta *d;
	struct kept_delta *k;
	size_t i;

	if (CW_GROW(s->deltas, s->cap_deltas, s->ndeltas + st->ndeltas + 1,
		    256))
		return -1;
	for (i = 0; i < st->ndeltas; i++) {
		d = &st->deltas[i];
		k = &s->deltas[s->ndeltas++];
		memcpy(k->head, d, sizeof(k->head));
		k->hists = UINT32_MAX;
		if (!d->rtt.len && !d->xchg.len && !d->xchg_first.len)
			continue;
		if (s->nhists >= UINT32_MAX ||
		    CW_GROW(s->hists, s->cap_hists, s->nhists + 1, 64))
			return -1;
		k->hists = (uint32_t)s->nhists;
		s->hists[s->nhists].rtt = d->rtt;
		s->hists[s->nhists].xchg = d->xchg;
		s->hists[s->nhists++].xchg_first = d->xchg_first;
	}
	return 0;
}

/* The kept deltas into the pairing, a few whole ones at a time. */
static int load_deltas(struct cw_pairing *p, const struct scan *s)
{
	enum { BATCH = 64 };
	struct cw_end_delta *d = calloc(BATCH, sizeof(*d));
	const struct kept_delta *k;
	size_t i, n = 0;
	int err = d ? 0 : -1;

	for (i = 0; !err && i < s->ndeltas; i++) {
		k = &s->deltas[i];
		memset(&d[n], 0, sizeof(d[n]));
		memcpy(&d[n], k->head, sizeof(k->head));
		if (k->hists != UINT32_MAX) {
			d[n].rtt = s->hists[k->hists].rtt;
			d[n].xchg = s->hists[k->hists].xchg;
			d[n].xchg_first = s->hists[k->hists].xchg_first;
		}
		if (++n == BATCH || i + 1 == s->ndeltas) {
			err = cw_pairing_load_deltas(p, d, n);
			n = 0;
		}
	}
	if (!err && !s->ndeltas)
		err = cw_pairing_load_deltas(p, d, 0);
	free(d);
	return err;
}

/* Pass 2: apply the chosen checkpoint's chunks, each once. */
static int apply_chunk(void *arg, int64_t at, const char *key,
		       size_t key_len, const uint8_t *v, size_t len)
{
	static struct cw_wire_msg m;
	struct scan *s = arg;
	struct candidate *b = s->best;
	struct cw_pairing *p = &s->ps->pairing;
	int err = 0;

	(void)at;
	if (our_chunk(s, key, key_len, v, len, &m) <= 0)
		return 0;
	if (m.state.checkpoint == b->id && m.state.offset == b->offset &&
	    !(b->bits[m.state.chunk / 8] & (1u << (m.state.chunk % 8)))) {
		/* Marked on the way back: a chunk delivered twice counts once.
		 */
		b->bits[m.state.chunk / 8] |=
			(uint8_t)(1u << (m.state.chunk % 8));
		err = cw_pairing_load_chunk(p, &m.state) ||
		      keep_deltas(s, &m.state);
		s->c->sst.restored_ends += m.state.n;
		s->records = m.state.records;
		s->stale = m.state.stale;
		s->lost = m.state.lost;
		s->applied++;
	}
	cw_wire_msg_release(&m);
	if (err)
		return cw_error("out of memory restoring a checkpoint");
	/* Stop at the last chunk: the rest of the log is of no use. */
	return s->applied == b->chunks ? 1 : 0;
}

static struct candidate *best_candidate(struct scan *s)
{
	struct candidate *b = NULL;
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct candidate *k = &s->cand[i];

		if (k->seen != k->chunks)
			continue; /* cut short by a crash */
		if (!b || k->offset > b->offset ||
		    (k->offset == b->offset && k->id > b->id))
			b = k;
	}
	return b;
}

/*
 * Fill ps from its newest whole checkpoint: 1 (restored; ps->next is its
 * offset), 0 (none), or -1 after a message.
 */
static int restore(struct cw_correlator *c, struct cw_part_state *ps)
{
	struct scan s = {.c = c, .partition = ps->partition, .ps = ps};

	state_key(c, ps->partition, s.key, sizeof(s.key));
	struct candidate *b;
	size_t i;
	int sp = state_partition(c, ps->partition), ret = -1;

	if (sp < 0 || cw_kafka_log_read(c->state_log, sp, 0, note_chunk, &s))
		goto out;
	b = best_candidate(&s);
	ret = 0;
	if (!b)
		goto out;
	memset(b->bits, 0, b->chunks / 8 + 1);
	s.best = b;
	if (cw_kafka_log_read(c->state_log, sp, b->at, apply_chunk, &s) < 0 ||
	    s.applied != b->chunks) {
		cw_error("checkpoint of partition %d at offset %" PRId64
			 " could not be read back whole",
			 ps->partition, b->offset);
		ret = -1;
		goto out;
	}
	if (load_deltas(&ps->pairing, &s)) {
		ret = cw_error("out of memory restoring a checkpoint");
		goto out;
	}
	/* Adding the ends counted them: the checkpoint's counters instead. */
	ps->pairing.st.records = s.records;
	ps->pairing.st.stale = s.stale;
	ps->lost = s.lost;
	ps->next = b->offset;
	ps->saved = b->offset;
	ps->slot = b->slot == 0 ? 1 : 0; /* keep b whole: write the other */
	ret = 1;
out:
	/* What each slot holds, whatever was restored: to delete past. */
	ps->slot_chunks[0] = s.slot_chunks[0];
	ps->slot_chunks[1] = s.slot_chunks[1];
	if (s.bad)
		cw_warn("%" PRIu64 " malformed records in the state topic "
			"skipped",
			s.bad);
	for (i = 0; i < s.n; i++)
		free(s.cand[i].bits);
	free(s.cand);
	free(s.deltas);
	free(s.hists);
	return ret;
}

/*
 * Records the partition lost to retention: the state reflects everything
 * before next, but the oldest record kept is lo.  Said and counted.
 */
static void count_gap(struct cw_correlator *c, struct cw_part_state *ps,
		      int64_t lo)
{
	uint64_t n = (uint64_t)(lo - ps->next);

	cw_warn("%s [%d]: offsets %" PRId64 " to %" PRId64
		" were deleted before they were applied: %" PRIu64
		" records lost",
		c->o.conns_topic, ps->partition, ps->next, lo - 1, n);
	ps->lost += n;
	c->sst.lost += n;
	ps->next = lo;
}

int64_t cw_correlator_on_assign(void *arg, const char *topic, int32_t partition)
{
	struct cw_correlator *c = arg;
	struct cw_part_state *ps;
	uint64_t t0 = cw_now_mono_ns();
	int64_t lo, hi;
	int got;

	if (strcmp(topic, c->o.conns_topic))
		return CW_KAFKA_OFFSET_COMMITTED;
	ps = cw_correlator_part(c, partition);
	if (ps)
		part_drop(c, ps); /* assigned again: start from the truth */
	ps = part_add(c, partition);
	if (!ps) {
		cw_error("out of memory");
		return CW_KAFKA_OFFSET_COMMITTED;
	}
	got = restore(c, ps);
	if (got <= 0) {
		/* No whole checkpoint: everything the topic still has. */
		cw_pairing_release(&ps->pairing);
		cw_pairing_init(&ps->pairing);
		cw_correlator_buckets_on(c, &ps->pairing);
		ps->next = 0;
		ps->saved = -1;
		ps->lost = 0;
	}
	ps->saved_mono = cw_now_mono_ns();
	c->sst.restored += got > 0;
	c->sst.fresh += got <= 0;
	if (!cw_kafka_watermarks(c->consumer, topic, partition, &lo, &hi) &&
	    ps->next < lo)
		count_gap(c, ps, lo);
	c->sst.restore_secs += (double)(cw_now_mono_ns() - t0) / 1e9;
	cw_info("%s [%d]: %s at offset %" PRId64 " (%zu ends)", topic,
		partition, got > 0 ? "restored" : "no checkpoint: starting",
		ps->next, (size_t)ps->pairing.ends.len);
	return ps->next;
}

void cw_correlator_on_revoke(void *arg, const char *topic, int32_t partition,
			     bool lost)
{
	struct cw_correlator *c = arg;
	struct cw_part_state *ps;

	if (strcmp(topic, c->o.conns_topic))
		return;
	ps = cw_correlator_part(c, partition);
	if (!ps)
		return;
	/*
	 * Handed over: leave the next owner a fresh checkpoint.  Lost: the
	 * partition may have moved on under another member already; its
	 * checkpoints are newer than ours would be (ours would lose anyway).
	 */
	if (!lost && ps->next != ps->saved &&
	    !cw_correlator_write_edges(c, false))
		cw_correlator_checkpoint(c, true);
	cw_info("%s [%d]: %s at offset %" PRId64, topic, partition,
		lost ? "lost" : "handed over", ps->next);
	part_drop(c, ps);
	c->sst.dropped++;
}

void cw_correlator_buckets_on(struct cw_correlator *c, struct cw_pairing *p)
{
	if (!c->o.bucket_ns)
		return;
	cw_pairing_buckets(p, c->o.bucket_ns, c->o.ttl_ns, c->o.lateness_ns);
	cw_pairing_view(p, c->o.view_ns);
}

int cw_correlator_edges(struct cw_correlator *c, cw_edge_fn fn, void *arg)
{
	size_t i;
	int r;

	if (!c->o.kafka)
		return cw_pairing_edges(&c->pairing, fn, arg);
	for (i = 0; i < c->nparts; i++) {
		r = cw_pairing_edges(&c->parts[i].pairing, fn, arg);
		if (r)
			return r;
	}
	return 0;
}

/* The partitions' counters summed into c->pairing's (after pairing). */
static int merge_stats(struct cw_correlator *c)
{
	struct cw_pairing_stats *t = &c->pairing.st;
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < c->nparts; i++) {
		struct cw_pairing *p = &c->parts[i].pairing;

		if (cw_pairing_pair(p))
			return cw_error("out of memory pairing partitions");
		t->records += p->st.records;
		t->stale += p->st.stale;
		t->ends += p->st.ends;
		t->paired += p->st.paired;
		t->unpaired += p->st.unpaired;
		t->ambiguous += p->st.ambiguous;
	}
	return 0;
}

int cw_correlator_merge(struct cw_correlator *c)
{
	uint64_t records = 0, stale = 0;
	size_t i;

	if (c->o.bucket_ns)
		return merge_stats(c);

	cw_pairing_release(&c->pairing);
	cw_pairing_init(&c->pairing);
	for (i = 0; i < c->nparts; i++) {
		if (cw_pairing_add_all(&c->pairing, &c->parts[i].pairing))
			return cw_error("out of memory merging partitions");
		records += c->parts[i].pairing.st.records;
		stale += c->parts[i].pairing.st.stale;
	}
	c->pairing.st.records = records;
	c->pairing.st.stale = stale;
	return 0;
}
