// SPDX-License-Identifier: MIT
/*
 * Timing windows as the correlator collects them: every end's records of
 * one slot, complete a grace period after a newer slot shows up and once
 * no partition still behind may hold more of it (or when too many are
 * pending), and the commit rule that keeps a window's records
 * from being committed before its paths are written.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/correlator.h"

void cw_timing_init(struct cw_timing *tw, uint64_t grace_ns)
{
	memset(tw, 0, sizeof(*tw));
	tw->grace_ns = grace_ns;
	tw->max_age_ns = CW_TIMING_MAX_AGE_NS;
}

static void window_release(struct cw_timing_window *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		free(w->recs[i].msgs);
	free(w->recs);
	for (i = 0; i < w->nm; i++) {
		free(w->mrecs[i].socks);
		free(w->mrecs[i].msgs);
	}
	free(w->mrecs);
	free(w->offs);
	memset(w, 0, sizeof(*w));
}

void cw_timing_release(struct cw_timing *tw)
{
	while (tw->nwins)
		window_release(&tw->wins[--tw->nwins]);
	free(tw->parts);
	tw->parts = NULL;
	tw->nparts = tw->cap_parts = 0;
}

static struct cw_timing_part *part_get(struct cw_timing *tw, int32_t partition)
{
	size_t i;

	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].partition == partition)
			return &tw->parts[i];
	if (CW_GROW(tw->parts, tw->cap_parts, tw->nparts + 1, 8))
		return NULL;
	tw->parts[tw->nparts] = (struct cw_timing_part){
		.partition = partition, .max_seen = -1, .stored = -1};
	return &tw->parts[tw->nparts++];
}

int cw_timing_seen(struct cw_timing *tw, int32_t partition, int64_t offset)
{
	struct cw_timing_part *p = part_get(tw, partition);

	if (!p)
		return cw_error("out of memory");
	if (offset > p->max_seen)
		p->max_seen = offset;
	return 0;
}

/* Is partition behind (cw_timing_behind())? */
static bool part_behind(const struct cw_timing *tw, int32_t partition)
{
	size_t i;

	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].partition == partition)
			return tw->parts[i].behind;
	return false;
}

/*
 * When a newer slot first showed up, for a window made at wins[i] after
 * it: now, or, for a record read from a backlog (its partition behind),
 * when the first of the newer ones came.  Live, an older slot coming late
 * has a grace of its own for the rest of it; from a backlog its rest is
 * in the log, and what holds it is its partition (held()), not the clock:
 * a window read late because its partition was paused (cw_timing_ahead())
 * would otherwise wait a grace more for nothing.
 */
static uint64_t newer_since(const struct cw_timing *tw, size_t i, uint64_t now,
			    bool behind)
{
	uint64_t t = now;

	for (i++; behind && i < tw->nwins; i++)
		if (tw->wins[i].first_mono < t)
			t = tw->wins[i].first_mono;
	return t;
}

/* The pending window of slot, made (at *at, in slot order) if new; NULL
 * when its slot was inferred already (*late) or on error. */
static struct cw_timing_window *window_for(struct cw_timing *tw, uint64_t slot,
					   uint64_t start_ns, uint64_t now,
					   bool behind, bool *late)
{
	struct cw_timing_window *w;
	size_t i;

	*late = false;
	for (i = 0; i < tw->nwins; i++) {
		if (tw->wins[i].slot == slot)
			return &tw->wins[i];
		if (tw->wins[i].slot > slot)
			break;
	}
	if (tw->done_slot && slot <= tw->done_slot) {
		*late = true;
		return NULL;
	}
	/* A full set: a slot older than every pending one would be the
	 * oldest, inferred the moment room was made (cw_timing_needs_room()
	 * makes none for it), so it is late; any other new slot found room
	 * made, unless inferring failed. */
	if (tw->nwins > CW_TIMING_MAX_PENDING && i == 0) {
		*late = true;
		return NULL;
	}
	if (tw->nwins > CW_TIMING_MAX_PENDING) {
		cw_error("more than %d timing windows pending",
			 CW_TIMING_MAX_PENDING + 1);
		return NULL;
	}
	memmove(&tw->wins[i + 1], &tw->wins[i],
		(tw->nwins - i) * sizeof(tw->wins[0]));
	tw->nwins++;
	w = &tw->wins[i];
	memset(w, 0, sizeof(*w));
	w->slot = slot;
	w->start_ns = start_ns;
	w->first_mono = now;
	/* A newer window exists already: this one is complete soon. */
	if (i + 1 < tw->nwins)
		w->newer_mono = newer_since(tw, i, now, behind);
	/* Older windows now have a newer one. */
	while (i--)
		if (!tw->wins[i].newer_mono)
			tw->wins[i].newer_mono = now;
	return w;
}

/* Is slot within the limits of the wall clock now_real? */
static bool slot_plausible(uint64_t slot, uint64_t now_real)
{
	if (slot > now_real)
		return slot - now_real <= CW_TIMING_MAX_AHEAD_NS;
	return now_real - slot <= CW_TIMING_MAX_BEHIND_NS;
}

/*
 * The window of a record of slot from host, read from partition; NULL
 * when the record is not kept: *err then says whether that is an error
 * (-1, printed) or counted (late, or too far from the clock).
 */
static struct cw_timing_window *
window_of_record(struct cw_timing *tw, uint64_t slot, uint64_t start_ns,
		 const char *host, int32_t partition, uint64_t now,
		 uint64_t now_real, int *err)
{
	struct cw_timing_window *w;
	bool late;

	*err = 0;
	if (!slot_plausible(slot, now_real)) {
		if (!tw->refused++)
			cw_warn("refusing timing records of slot %llu from %s: "
				"%s the clock by more than allowed (further "
				"ones are counted)",
				(unsigned long long)slot, host,
				slot > now_real ? "ahead of" : "behind");
		return NULL;
	}
	w = window_for(tw, slot, start_ns, now, part_behind(tw, partition),
		       &late);
	if (!w) {
		if (late)
			tw->late++;
		else
			*err = -1;
		return NULL;
	}
	if (CW_GROW(w->offs, w->cap_offs, w->noffs + 1, 64)) {
		*err = cw_error("out of memory");
		return NULL;
	}
	return w;
}

/* The window's span grows to the record's; (partition, offset) is held,
 * and the partition has come as far as the window's slot. */
static void window_took(struct cw_timing *tw, struct cw_timing_window *w,
			int32_t partition, int64_t offset, uint64_t start_ns,
			uint64_t end_ns)
{
	size_t i;

	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].partition == partition &&
		    tw->parts[i].newest_slot < w->slot)
			tw->parts[i].newest_slot = w->slot;
	w->offs[w->noffs++] = (struct cw_timing_source){partition, offset};
	if (start_ns < w->start_ns)
		w->start_ns = start_ns;
	if (end_ns > w->end_ns)
		w->end_ns = end_ns;
	tw->records++;
}

int cw_timing_add(struct cw_timing *tw, struct cw_timing_record *t,
		  int32_t partition, int64_t offset, uint64_t now,
		  uint64_t now_real)
{
	struct cw_timing_window *w;
	int err;

	w = window_of_record(tw, t->slot_ns, t->window_start_ns, t->host,
			     partition, now, now_real, &err);
	if (w && CW_GROW(w->recs, w->cap, w->n + 1, 64)) {
		w = NULL;
		err = cw_error("out of memory");
	}
	if (!w) {
		free(t->msgs);
		t->msgs = NULL;
		return err;
	}
	if (!w->n && !w->nm)
		cw_debug("timing window %llu: first record, from %s",
			 (unsigned long long)w->slot, t->host);
	w->recs[w->n++] = *t;
	t->msgs = NULL;
	window_took(tw, w, partition, offset, t->window_start_ns,
		    t->window_start_ns + t->window_ns);
	return 0;
}

int cw_timing_add_msgs(struct cw_timing *tw, struct cw_wire_msgs *r,
		       int32_t partition, int64_t offset, uint64_t now,
		       uint64_t now_real)
{
	struct cw_timing_window *w;
	int err;

	w = window_of_record(tw, r->slot_ns, r->start_ns, r->host, partition,
			     now, now_real, &err);
	if (w && CW_GROW(w->mrecs, w->cap_m, w->nm + 1, 16)) {
		w = NULL;
		err = cw_error("out of memory");
	}
	if (!w) {
		free(r->socks);
		free(r->msgs);
		r->socks = NULL;
		r->msgs = NULL;
		return err;
	}
	w->mrecs[w->nm++] = *r;
	r->socks = NULL;
	r->msgs = NULL;
	window_took(tw, w, partition, offset, r->start_ns, r->end_ns);
	return 0;
}

int cw_timing_behind(struct cw_timing *tw, int32_t partition, bool behind)
{
	struct cw_timing_part *p = part_get(tw, partition);

	if (!p)
		return cw_error("out of memory");
	p->behind = behind;
	return 0;
}

/* Is a partition behind that has not passed slot (it may hold more)? */
static bool held(const struct cw_timing *tw, uint64_t slot)
{
	size_t i;

	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].behind && tw->parts[i].newest_slot <= slot)
			return true;
	return false;
}

/*
 * Past the oldest window a partition behind holds, whether or not older
 * ones wait out their grace meanwhile: those are complete as the log goes
 * (the bound may infer them early, losing nothing), but a set filled by
 * partitions running free during their grace would leave the bound only
 * the held window to infer, before its partition's records are read.
 * Nothing held, no pause: pausing for a grace alone would stall a member
 * whose grace spans several windows (the bound would never be reached).
 * The partition that holds is never past what it holds: it reads on.
 */
uint64_t cw_timing_held_slot(const struct cw_timing *tw)
{
	size_t k;

	for (k = 0; k < tw->nwins && !held(tw, tw->wins[k].slot); k++)
		;
	return k < tw->nwins ? tw->wins[k].slot : 0;
}

bool cw_timing_ahead(const struct cw_timing *tw, int32_t partition)
{
	uint64_t slot;
	size_t i;

	if (tw->nwins < CW_TIMING_MAX_PENDING / 2)
		return false;
	slot = cw_timing_held_slot(tw);
	if (!slot)
		return false;
	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].partition == partition)
			return tw->parts[i].newest_slot > slot;
	return false;
}

bool cw_timing_needs_room(const struct cw_timing *tw, uint64_t slot,
			  uint64_t now_real)
{
	size_t i;

	if (tw->nwins <= CW_TIMING_MAX_PENDING || slot < tw->wins[0].slot ||
	    (tw->done_slot && slot <= tw->done_slot) ||
	    !slot_plausible(slot, now_real))
		return false;
	for (i = 0; i < tw->nwins; i++)
		if (tw->wins[i].slot == slot)
			return false;
	return true;
}

struct cw_timing_window *cw_timing_ready(struct cw_timing *tw, uint64_t now,
					 bool all)
{
	struct cw_timing_window *w = &tw->wins[0];

	if (!tw->nwins)
		return NULL;
	if (all || tw->nwins > CW_TIMING_MAX_PENDING ||
	    now >= w->first_mono + tw->max_age_ns)
		return w;
	if (w->newer_mono && now >= w->newer_mono + tw->grace_ns &&
	    !held(tw, w->slot))
		return w;
	return NULL;
}

void cw_timing_pop(struct cw_timing *tw)
{
	if (!tw->nwins)
		return;
	if (tw->wins[0].slot > tw->done_slot)
		tw->done_slot = tw->wins[0].slot;
	window_release(&tw->wins[0]);
	memmove(&tw->wins[0], &tw->wins[1], --tw->nwins * sizeof(tw->wins[0]));
}

int64_t cw_timing_safe_offset(const struct cw_timing *tw, int32_t partition)
{
	const struct cw_timing_window *w;
	int64_t safe = -1;
	size_t i, k;

	for (i = 0; i < tw->nparts; i++)
		if (tw->parts[i].partition == partition)
			safe = tw->parts[i].max_seen + 1;
	for (i = 0; i < tw->nwins; i++) {
		w = &tw->wins[i];
		for (k = 0; k < w->noffs; k++)
			if (w->offs[k].partition == partition &&
			    w->offs[k].offset < safe)
				safe = w->offs[k].offset;
	}
	return safe;
}

size_t cw_timing_commit(struct cw_timing *tw, cw_timing_store_fn store,
			void *arg)
{
	struct cw_timing_part *p;
	size_t i, stored = 0;
	int64_t safe;

	for (i = 0; i < tw->nparts; i++) {
		p = &tw->parts[i];
		safe = cw_timing_safe_offset(tw, p->partition);
		if (safe > p->stored && safe > 0 &&
		    !store(arg, p->partition, safe)) {
			p->stored = safe;
			stored++;
		}
	}
	return stored;
}
