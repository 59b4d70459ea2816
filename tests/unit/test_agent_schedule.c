// SPDX-License-Identifier: MIT
/*
 * The agent daemon's decisions with made-up times, no kernel and no Kafka:
 * when timing windows open (scheduled and on demand), how long the loop
 * may sleep, how a window is joined to its connection and cut into
 * records, the sample-run rotation, and which processes get metadata.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/util.h"
#include "check.h"

#define S  NSEC_PER_SEC
#define MS NSEC_PER_MSEC

static void test_scheduled_windows(void)
{
	struct cw_timing_sched ts;

	/* 200 ms windows every second: at the next whole second. */
	cw_timing_sched_init(&ts, 200 * MS, S, 10 * S + 300 * MS, false);
	CHECK(ts.next_real == 11 * S);
	CHECK(!cw_timing_sched_due(&ts, 10 * S + 999 * MS));
	CHECK(cw_timing_sched_due(&ts, 11 * S + 5 * MS));
	CHECK(ts.slot == 11 * S);
	CHECK(ts.next_real == 12 * S);
	/* One at a time: none opens while one is open. */
	CHECK(!cw_timing_sched_due(&ts, 12 * S + 1));
	cw_timing_sched_closed(&ts);
	CHECK(ts.slot == 0);
	/* Late by more than a period: the missed multiple is not replayed
	 * twice; the slot is the multiple that was due. */
	CHECK(cw_timing_sched_due(&ts, 13 * S + 500 * MS));
	CHECK(ts.slot == 12 * S);
	CHECK(ts.next_real == 14 * S);
	cw_timing_sched_closed(&ts);
	CHECK(!cw_timing_sched_due(&ts, 13 * S + 900 * MS));

	/* Off: never due, and the loop sleeps its usual 50 ms. */
	cw_timing_sched_init(&ts, 0, 0, 5 * S, false);
	CHECK(!cw_timing_sched_due(&ts, 100 * S));
	CHECK(cw_timing_sched_poll_ms(&ts, 5 * S) == 50);

	/* `causeway run`: the first window at once. */
	cw_timing_sched_init(&ts, S, 10 * S, 7 * S + 123, true);
	CHECK(cw_timing_sched_due(&ts, 7 * S + 123));
	CHECK(ts.slot == 7 * S + 123);
	CHECK(ts.next_real == 10 * S);
}

static void test_demand(void)
{
	struct cw_timing_sched ts;

	/* On demand only: the next multiple of the window length. */
	cw_timing_sched_init(&ts, 200 * MS, 0, 5 * S, false);
	CHECK(!cw_timing_sched_due(&ts, 6 * S));
	CHECK(cw_timing_sched_demand(&ts, 5 * S + 50 * MS) == 5 * S + 200 * MS);
	/* A later demand does not push the first one back. */
	CHECK(cw_timing_sched_demand(&ts, 5 * S + 210 * MS) ==
	      5 * S + 200 * MS);
	CHECK(!cw_timing_sched_due(&ts, 5 * S + 199 * MS));
	CHECK(cw_timing_sched_due(&ts, 5 * S + 200 * MS));
	CHECK(ts.slot == 5 * S + 200 * MS);
	CHECK(ts.demand_real == 0);
	cw_timing_sched_closed(&ts);
	CHECK(!cw_timing_sched_due(&ts, 9 * S));

	/* A demand due when a scheduled window opens is served by it. */
	cw_timing_sched_init(&ts, 200 * MS, S, 10 * S + 100 * MS, false);
	CHECK(cw_timing_sched_demand(&ts, 10 * S + 850 * MS) == 11 * S);
	CHECK(cw_timing_sched_due(&ts, 11 * S));
	CHECK(ts.slot == 11 * S && ts.demand_real == 0);
	cw_timing_sched_closed(&ts);
	CHECK(!cw_timing_sched_due(&ts, 11 * S + 300 * MS));

	/* A demand that falls inside an open window waits for it to close. */
	cw_timing_sched_init(&ts, 200 * MS, S, 10 * S + 100 * MS, false);
	CHECK(cw_timing_sched_due(&ts, 11 * S));
	cw_timing_sched_demand(&ts, 11 * S + 50 * MS);
	CHECK(!cw_timing_sched_due(&ts, 11 * S + 250 * MS));
	cw_timing_sched_closed(&ts);
	CHECK(cw_timing_sched_due(&ts, 11 * S + 250 * MS));
	CHECK(ts.slot == 11 * S + 200 * MS);
}

static void test_poll(void)
{
	struct cw_timing_sched ts;

	cw_timing_sched_init(&ts, 200 * MS, S, 10 * S + 100 * MS, false);
	CHECK(cw_timing_sched_poll_ms(&ts, 10 * S + 100 * MS) == 50);
	CHECK(cw_timing_sched_poll_ms(&ts, 10 * S + 970 * MS) == 30);
	CHECK(cw_timing_sched_poll_ms(&ts, 11 * S + 1) == 0);
	cw_timing_sched_demand(&ts, 10 * S + 590 * MS);
	CHECK(cw_timing_sched_poll_ms(&ts, 10 * S + 590 * MS) == 10);
	CHECK(cw_timing_sched_due(&ts, 10 * S + 600 * MS));
	/* While a window is open the agent polls its ring at 50 ms. */
	CHECK(cw_timing_sched_poll_ms(&ts, 10 * S + 990 * MS) == 50);
}

struct seen {
	struct cw_timing_record rec[8];
	struct cw_msg_obs first[8];
	size_t n;
	size_t stop_after; /* 0: never */
};

static int keep(const struct cw_timing_record *t, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		s->rec[s->n] = *t;
		s->first[s->n] = t->msgs[0];
		s->n++;
	}
	return s->stop_after && s->n == s->stop_after ? 7 : 0;
}

static struct cw_conn_record conn(uint64_t cookie, uint32_t flags)
{
	struct cw_conn_record r;

	memset(&r, 0, sizeof(r));
	r.cookie = cookie;
	r.flags = flags;
	r.netns = 4026531840u;
	r.protocol = 6;
	r.lport = 8080;
	r.rport = 41000 + (uint16_t)cookie;
	r.proc.tgid = 100 + (uint32_t)cookie;
	snprintf(r.proc.comm, sizeof(r.proc.comm), "srv%llu",
		 (unsigned long long)cookie);
	return r;
}

static void test_join(void)
{
	struct cw_msg_obs msgs[5];
	struct cw_timing_record t;
	struct cw_conn_record r;
	struct cw_timing_join j;
	struct seen s = {0};
	size_t i;

	for (i = 0; i < 5; i++)
		msgs[i] = (struct cw_msg_obs){
			.ts_ns = 20 * S + i * MS, .bytes = 100, .dir = 1};
	/* The first message a hair before the window's start. */
	msgs[0].ts_ns = 20 * S - 10;
	cw_timing_join_init(&j);
	r = conn(7, 0);
	CHECK(!cw_timing_join_note(&j, &r));
	r.lport = 9090; /* the newest record of an end wins */
	CHECK(!cw_timing_join_note(&j, &r));
	r = conn(8, CW_REC_CLOSED);
	CHECK(!cw_timing_join_note(&j, &r));
	j.slot = 20 * S;

	memset(&t, 0, sizeof(t));
	t.cookie = 7;
	t.window_start_ns = 20 * S + 2 * MS;
	t.window_ns = 200 * MS;
	t.msgs = msgs;
	t.n = 5;
	CHECK(!cw_timing_join_window(&j, &t, 2, keep, &s));
	CHECK(s.n == 3);
	CHECK(s.rec[0].n == 2 && s.rec[1].n == 2 && s.rec[2].n == 1);
	CHECK(s.rec[0].seq == 1 && s.rec[1].seq == 2 && s.rec[2].seq == 3);
	CHECK(s.first[1].ts_ns == msgs[2].ts_ns);
	CHECK(s.first[2].ts_ns == msgs[4].ts_ns);
	for (i = 0; i < 3; i++) {
		CHECK(s.rec[i].slot_ns == 20 * S);
		CHECK(s.rec[i].has_conn && s.rec[i].lport == 9090);
		CHECK(s.rec[i].proc.tgid == 107);
		/* Stretched back to cover the early message. */
		CHECK(s.rec[i].window_start_ns == 20 * S - 10);
		CHECK(s.rec[i].window_ns == 202 * MS + 10);
	}
	CHECK(j.records == 3 && j.messages == 5 && j.no_conn == 0);

	/* An end with no record: published bare, counted.  Cut short. */
	s.n = 0;
	t.cookie = 9;
	t.window_start_ns = 20 * S;
	t.msgs = msgs + 1;
	t.n = 1;
	j.stopped_real = 20 * S + 50 * MS;
	CHECK(!cw_timing_join_window(&j, &t, 2, keep, &s));
	CHECK(s.n == 1 && !s.rec[0].has_conn && s.rec[0].seq == 4);
	CHECK(s.rec[0].window_ns == 50 * MS);
	CHECK(j.no_conn == 1);

	/* The callback's error stops the chunks and is passed up. */
	s.n = 0;
	s.stop_after = 1;
	t.cookie = 7;
	t.msgs = msgs;
	t.n = 5;
	CHECK(cw_timing_join_window(&j, &t, 2, keep, &s) == 7);
	CHECK(s.n == 1);

	/* Closed ends are forgotten after their last window, open ones kept. */
	cw_timing_join_forget_closed(&j);
	CHECK(j.ends.len == 1);
	CHECK(cw_htab_get(&j.ends, &(uint64_t){7}) != NULL);
	CHECK(cw_htab_get(&j.ends, &(uint64_t){8}) == NULL);
	cw_timing_join_release(&j);
}

static void test_samples(void)
{
	struct cw_sample_sched ss;

	cw_sample_sched_init(&ss, 60 * S, 100 * S);
	CHECK(ss.next_real == 120 * S);
	CHECK(cw_sample_sched_due(&ss, 119 * S) == 0);
	CHECK(cw_sample_sched_due(&ss, 120 * S) == 10 * MS);
	CHECK(cw_sample_sched_due(&ss, 130 * S) == 0);
	/* Late: the next run is at the multiple after now, not in between. */
	CHECK(cw_sample_sched_due(&ss, 185 * S) == 1 * MS);
	CHECK(ss.next_real == 240 * S);
	CHECK(cw_sample_sched_due(&ss, 240 * S) == 100 * NSEC_PER_USEC);
	CHECK(cw_sample_sched_due(&ss, 300 * S) == 10 * MS);

	cw_sample_sched_init(&ss, 0, 100 * S);
	CHECK(cw_sample_sched_due(&ss, 1000 * S) == 0);
}

static void test_meta_seen(void)
{
	struct cw_process a = {.tgid = 10, .start_ns = 5}, b = a, c = a;
	struct cw_meta_seen s;

	b.start_ns = 6; /* the same pid, another process */
	c.tgid = 11;
	cw_meta_seen_init(&s, 2);
	CHECK(cw_meta_seen_add(&s, &a) == 1);
	CHECK(cw_meta_seen_add(&s, &a) == 0);
	CHECK(cw_meta_seen_add(&s, &b) == 1);
	CHECK(cw_meta_seen_add(&s, &b) == 0);
	/* Past the bound all are forgotten, so a is new again. */
	CHECK(cw_meta_seen_add(&s, &c) == 1);
	CHECK(cw_meta_seen_add(&s, &a) == 1);
	cw_meta_seen_release(&s);
}

/* This test process's own start, as the kernel gives it to the agent. */
static uint64_t self_start_ns(void)
{
	unsigned long long start = 0;
	char buf[1024], *p;
	int i;

	if (cw_read_file("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	for (i = 0; i < 20 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start * (NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK));
}

static void test_meta_read(void)
{
	struct cw_process p = {.tgid = (uint32_t)getpid()};
	struct cw_host_meta hm;
	struct cw_proc_meta pm;
	struct utsname u;
	volatile uint64_t spin = 0;
	uint64_t i;

	CHECK(!cw_host_meta_read(&hm, "h1"));
	CHECK(!strcmp(hm.host, "h1"));
	CHECK(hm.cpus == (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK(hm.mem_bytes == (uint64_t)sysconf(_SC_PHYS_PAGES) *
				      (uint64_t)sysconf(_SC_PAGESIZE));
	CHECK(!uname(&u) && !strcmp(hm.kernel, u.release));
	CHECK(hm.time_ns > 0);

	for (i = 0; i < 50000000; i++)
		spin += i;
	p.start_ns = self_start_ns();
	CHECK(p.start_ns > 0);
	CHECK(!cw_proc_meta_read(&pm, "h1", &p));
	CHECK(pm.proc.tgid == p.tgid && !strcmp(pm.host, "h1"));
	CHECK(pm.rss_bytes > 0);
	CHECK(pm.cpu_ns > 0); /* the loop above took some */
	/* The same pid with another start time is not this process. */
	p.start_ns += 10 * S;
	CHECK(cw_proc_meta_read(&pm, "h1", &p) == -1);
}

int main(void)
{
	test_scheduled_windows();
	test_demand();
	test_poll();
	test_join();
	test_samples();
	test_meta_seen();
	test_meta_read();
	return failures ? 1 : 0;
}
