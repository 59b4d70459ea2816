// SPDX-License-Identifier: MIT
/*
 * The correlator's timing windows and commit rule, with no Kafka: records
 * of one slot gather in one window; a window is complete a grace period
 * after a newer slot shows up, when too many are pending, or at the end;
 * a record of an inferred slot is late; a slot far from the clock is
 * refused; and a partition's commit point never passes a record whose
 * window is pending.  MsgWindow records (agent --traces) join their
 * slot's window under the same rules.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "tests/unit/check.h"

#define SEC NSEC_PER_SEC

/* Offsets stored, as the Kafka consumer would keep them. */
struct store {
	int64_t next[4];
	int calls;
	bool fail;
};

static int store_fn(void *arg, int32_t partition, int64_t next)
{
	struct store *s = arg;

	if (s->fail)
		return -1;
	s->next[partition] = next;
	s->calls++;
	return 0;
}

/* A record of slot s from host h, with one message (owned by the window). */
static int add(struct cw_timing *tw, uint64_t slot, const char *h, int32_t part,
	       int64_t off, uint64_t now)
{
	struct cw_timing_record t;

	memset(&t, 0, sizeof(t));
	snprintf(t.host, sizeof(t.host), "%s", h);
	t.slot_ns = slot;
	t.window_start_ns = slot + 100;
	t.window_ns = 5 * SEC;
	t.n = 1;
	t.msgs = calloc(1, sizeof(*t.msgs));
	CHECK(cw_timing_seen(tw, part, off) == 0);
	/* The correlator's wall clock at the slot: plausible. */
	return cw_timing_add(tw, &t, part, off, now, slot);
}

/* Slots far from the wall clock are refused, counted, and do not hold
 * the commit point back; the real windows go on. */
static void test_far_slots(void)
{
	const uint64_t real = 1767225600ULL * SEC, slot = real - 60 * SEC;
	struct cw_timing_record t;
	struct cw_timing tw;
	uint64_t far[] = {real + CW_TIMING_MAX_AHEAD_NS + 1,
			  real - CW_TIMING_MAX_BEHIND_NS - 1, UINT64_MAX, 1};
	size_t i;

	cw_timing_init(&tw, SEC);
	for (i = 0; i < CW_ARRAY_SIZE(far); i++) {
		memset(&t, 0, sizeof(t));
		t.slot_ns = far[i];
		t.n = 1;
		t.msgs = calloc(1, sizeof(*t.msgs));
		CHECK(!cw_timing_seen(&tw, 0, (int64_t)i));
		CHECK(!cw_timing_add(&tw, &t, 0, (int64_t)i, SEC, real));
		CHECK(!t.msgs);
	}
	CHECK(tw.refused == CW_ARRAY_SIZE(far) && tw.nwins == 0);
	CHECK(cw_timing_safe_offset(&tw, 0) == (int64_t)CW_ARRAY_SIZE(far));
	/* Within the limits either way: kept. */
	memset(&t, 0, sizeof(t));
	t.slot_ns = real + CW_TIMING_MAX_AHEAD_NS;
	CHECK(!cw_timing_add(&tw, &t, 0, 10, SEC, real));
	t.slot_ns = slot;
	CHECK(!cw_timing_add(&tw, &t, 0, 11, 2 * SEC, real));
	CHECK(tw.nwins == 2 && tw.wins[0].slot == slot);
	/* The real window completes; the far-future one never would have
	 * had a newer one, so it was worth refusing. */
	CHECK(cw_timing_ready(&tw, 3 * SEC, false) == &tw.wins[0]);
	CHECK(tw.refused == CW_ARRAY_SIZE(far));
	cw_timing_release(&tw);
}

static void test_grace(void)
{
	struct cw_timing tw;
	struct cw_timing_window *w;
	uint64_t s1 = 60 * SEC, s2 = 120 * SEC;

	cw_timing_init(&tw, 2 * SEC);
	CHECK(!add(&tw, s1, "a", 0, 0, 10 * SEC));
	CHECK(!add(&tw, s1, "b", 1, 0, 10 * SEC));
	CHECK(tw.nwins == 1 && tw.wins[0].n == 2);
	CHECK(tw.wins[0].start_ns == s1 + 100);
	CHECK(tw.wins[0].end_ns == s1 + 100 + 5 * SEC);
	/* Alone, a window waits for a newer slot, up to its maximum age. */
	CHECK(tw.max_age_ns == CW_TIMING_MAX_AGE_NS);
	CHECK(!cw_timing_ready(&tw, 10 * SEC + CW_TIMING_MAX_AGE_NS - 1,
			       false));
	CHECK(cw_timing_ready(&tw, 10 * SEC + CW_TIMING_MAX_AGE_NS, false) ==
	      &tw.wins[0]);
	/* A newer slot at 11 s: the old one is complete at 13 s. */
	CHECK(!add(&tw, s2, "a", 0, 1, 11 * SEC));
	CHECK(tw.nwins == 2 && tw.wins[0].slot == s1);
	CHECK(!cw_timing_ready(&tw, 13 * SEC - 1, false));
	w = cw_timing_ready(&tw, 13 * SEC, false);
	CHECK(w == &tw.wins[0] && w->slot == s1);
	cw_timing_pop(&tw);
	CHECK(tw.nwins == 1 && tw.done_slot == s1);
	/* A straggler of the inferred slot is late, counted, not kept. */
	CHECK(!add(&tw, s1, "c", 1, 1, 14 * SEC));
	CHECK(tw.late == 1 && tw.nwins == 1 && tw.records == 3);
	/* The newest one at the end, or when it is too old (made at 11 s). */
	CHECK(!cw_timing_ready(&tw, 600 * SEC, false));
	tw.max_age_ns = 100 * SEC;
	CHECK(!cw_timing_ready(&tw, 111 * SEC - 1, false));
	CHECK(cw_timing_ready(&tw, 111 * SEC, false) == &tw.wins[0]);
	CHECK(cw_timing_ready(&tw, 0, true) == &tw.wins[0]);
	cw_timing_release(&tw);
}

/* A record of an older slot arriving after a newer one: complete soon. */
static void test_out_of_order(void)
{
	struct cw_timing tw;

	cw_timing_init(&tw, 1 * SEC);
	CHECK(!add(&tw, 200, "a", 0, 0, 5 * SEC));
	CHECK(!add(&tw, 100, "a", 0, 1, 7 * SEC));
	CHECK(tw.nwins == 2 && tw.wins[0].slot == 100);
	CHECK(tw.wins[0].newer_mono == 7 * SEC);
	CHECK(cw_timing_ready(&tw, 8 * SEC, false) == &tw.wins[0]);
	cw_timing_release(&tw);
}

/*
 * Catching up: partition 0 runs slots ahead while partition 1, behind
 * (records in the log not read yet), has given only the first slot.  No
 * window is complete by the grace alone until partition 1 passes its
 * slot or is read to its end; once half the pending windows are full,
 * partition 0 is the one to pause, never partition 1.
 */
static void test_behind(void)
{
	struct cw_timing tw;
	uint64_t s, now = 10 * SEC;
	int64_t off = 0;

	cw_timing_init(&tw, 1 * SEC);
	CHECK(!add(&tw, 1 * SEC, "b", 1, 0, now));
	CHECK(!cw_timing_behind(&tw, 1, true));
	for (s = 1; s <= CW_TIMING_MAX_PENDING / 2; s++)
		CHECK(!add(&tw, s * SEC, "a", 0, off++, now));
	CHECK(tw.nwins == CW_TIMING_MAX_PENDING / 2);
	/* Partition 1 came first. */
	CHECK(tw.parts[0].partition == 1 && tw.parts[0].newest_slot == 1 * SEC);
	CHECK(tw.parts[1].newest_slot == CW_TIMING_MAX_PENDING / 2 * SEC);
	/* Grace long past: slot 1 waits for partition 1. */
	CHECK(!cw_timing_ready(&tw, 100 * SEC, false));
	CHECK(cw_timing_ahead(&tw, 0) && !cw_timing_ahead(&tw, 1));
	/* Partition 1 gives slot 2: slot 1 is complete, slot 2 waits. */
	CHECK(!add(&tw, 2 * SEC, "b", 1, 1, now));
	CHECK(cw_timing_ready(&tw, 100 * SEC, false) == &tw.wins[0] &&
	      tw.wins[0].slot == 1 * SEC);
	/* Partition 0 stays paused: past slot 2, held, though slot 1 only
	 * waits for its grace (else the set fills meanwhile and the bound
	 * must force slot 2 out before partition 1 has given all of it). */
	CHECK(cw_timing_ahead(&tw, 0) && !cw_timing_ahead(&tw, 1));
	CHECK(cw_timing_held_slot(&tw) == 2 * SEC); /* not the oldest */
	cw_timing_pop(&tw);
	CHECK(!cw_timing_ready(&tw, 100 * SEC, false));
	/* Fewer than half pending: no pause. */
	CHECK(!cw_timing_ahead(&tw, 0));
	/* Read to its end: nothing waits for partition 1 any more. */
	CHECK(!cw_timing_behind(&tw, 1, false));
	CHECK(cw_timing_ready(&tw, 100 * SEC, false) == &tw.wins[0] &&
	      tw.wins[0].slot == 2 * SEC);
	cw_timing_pop(&tw);
	/* A partition behind that has given nothing holds every window. */
	CHECK(!cw_timing_behind(&tw, 2, true));
	CHECK(!cw_timing_ready(&tw, 100 * SEC, false));
	/* ... but not past a window's maximum age, nor at the end. */
	CHECK(cw_timing_ready(&tw, now + CW_TIMING_MAX_AGE_NS, false));
	CHECK(cw_timing_ready(&tw, 0, true));
	CHECK(tw.late == 0);
	cw_timing_release(&tw);
}

static void test_too_many(void)
{
	struct cw_timing tw;
	uint64_t i;

	cw_timing_init(&tw, 3600 * SEC);
	for (i = 1; i <= CW_TIMING_MAX_PENDING + 1; i++)
		CHECK(!add(&tw, i, "a", 0, (int64_t)i, 1));
	/* One over the limit: the oldest is inferred as it is. */
	CHECK(tw.nwins == CW_TIMING_MAX_PENDING + 1);
	CHECK(cw_timing_ready(&tw, 1, false) == &tw.wins[0]);
	/* Without it being taken, one more slot is refused. */
	CHECK(add(&tw, 100, "a", 0, 100, 1) == -1);
	CHECK(tw.nwins == CW_TIMING_MAX_PENDING + 1);
	cw_timing_pop(&tw);
	CHECK(!cw_timing_ready(&tw, 2, false));
	cw_timing_release(&tw);
}

static void test_commit(void)
{
	struct store st = {.next = {-1, -1, -1, -1}};
	struct cw_timing tw;

	cw_timing_init(&tw, SEC);
	CHECK(cw_timing_safe_offset(&tw, 0) == -1);
	/* Partition 0: offsets 5 and 6 in slot 100, 7 in slot 200;
	 * partition 1: offset 3 in slot 200, and a bad record at 4. */
	CHECK(!add(&tw, 100, "a", 0, 5, 1));
	CHECK(!add(&tw, 100, "b", 0, 6, 1));
	CHECK(!add(&tw, 200, "a", 0, 7, 2));
	CHECK(!add(&tw, 200, "b", 1, 3, 2));
	CHECK(!cw_timing_seen(&tw, 1, 4));
	/* Nothing past a pending window's oldest record. */
	CHECK(cw_timing_safe_offset(&tw, 0) == 5);
	CHECK(cw_timing_safe_offset(&tw, 1) == 3);
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 2);
	CHECK(st.next[0] == 5 && st.next[1] == 3);
	/* Nothing moved: nothing stored again. */
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 0);
	/* Slot 100 written: partition 0 up to slot 200's record. */
	cw_timing_pop(&tw);
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 1);
	CHECK(st.next[0] == 7 && st.next[1] == 3);
	/* A store that fails is tried again at the next commit. */
	cw_timing_pop(&tw);
	st.fail = true;
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 0);
	st.fail = false;
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 2);
	/* Past everything read, the bad record included. */
	CHECK(st.next[0] == 8 && st.next[1] == 5);
	cw_timing_release(&tw);
}

/* A MsgWindow record of slot from host h, read at (part, off). */
static int add_msgs(struct cw_timing *tw, uint64_t slot, const char *h,
		    int32_t part, int64_t off, uint64_t now,
		    struct cw_wire_msgs *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", h);
	r->slot_ns = slot;
	r->start_ns = slot + 50;
	r->end_ns = slot + 7 * SEC;
	r->n = r->nsocks = 1;
	r->msgs = calloc(1, sizeof(*r->msgs));
	r->socks = calloc(1, sizeof(*r->socks));
	CHECK(cw_timing_seen(tw, part, off) == 0);
	return cw_timing_add_msgs(tw, r, part, off, now, slot);
}

/* Messages for traces share their slot's window with the timing records:
 * the window takes them, widens to them, holds their offsets back from
 * the commit point, and after it is inferred they are late like any. */
static void test_msgs(void)
{
	uint64_t s1 = 60 * SEC, s2 = 120 * SEC;
	struct cw_wire_msgs r;
	struct cw_timing tw;
	struct store st = {0};

	cw_timing_init(&tw, SEC);
	CHECK(!add(&tw, s1, "a", 0, 0, 10 * SEC));
	CHECK(!add_msgs(&tw, s1, "a", 1, 0, 10 * SEC, &r));
	CHECK(!r.msgs && !r.socks); /* taken */
	CHECK(tw.nwins == 1 && tw.wins[0].n == 1 && tw.wins[0].nm == 1);
	CHECK(tw.wins[0].mrecs[0].n == 1 && tw.wins[0].mrecs[0].msgs);
	CHECK(tw.wins[0].start_ns == s1 + 50);
	CHECK(tw.wins[0].end_ns == s1 + 7 * SEC);
	/* A window of messages alone is a window too. */
	CHECK(!add_msgs(&tw, s2, "b", 1, 1, 11 * SEC, &r));
	CHECK(tw.nwins == 2 && tw.wins[1].n == 0 && tw.wins[1].nm == 1);
	CHECK(cw_timing_safe_offset(&tw, 1) == 0);
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 0);
	CHECK(cw_timing_ready(&tw, 12 * SEC, false) == &tw.wins[0]);
	cw_timing_pop(&tw);
	/* The second window still holds partition 1's offset 1. */
	CHECK(cw_timing_commit(&tw, store_fn, &st) == 2);
	CHECK(st.next[0] == 1 && st.next[1] == 1);
	/* Late: freed, counted, not kept. */
	CHECK(!add_msgs(&tw, s1, "c", 1, 2, 13 * SEC, &r));
	CHECK(!r.msgs && !r.socks && tw.late == 1 && tw.nwins == 1);
	/* Far from the clock: refused, freed. */
	memset(&r, 0, sizeof(r));
	r.slot_ns = UINT64_MAX;
	r.msgs = calloc(1, sizeof(*r.msgs));
	CHECK(!cw_timing_add_msgs(&tw, &r, 1, 3, 13 * SEC, s2));
	CHECK(!r.msgs && tw.refused == 1);
	cw_timing_release(&tw);
}

int main(void)
{
	test_grace();
	test_out_of_order();
	test_behind();
	test_too_many();
	test_commit();
	test_far_slots();
	test_msgs();
	if (!failures)
		printf("test_correlator_timing: all checks passed\n");
	return failures ? 1 : 0;
}
