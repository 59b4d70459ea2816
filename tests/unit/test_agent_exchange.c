// SPDX-License-Identifier: MIT
/*
 * Exchange times from made-up message starts (agent/exchange.c): a
 * client's and a server's exchanges, the window's first message (maybe
 * begun before it), the last reply (ended by the call_ns after the
 * close, or past it), and what counts as pipelined: overlap at a start,
 * at the next request, or a request split in two.  Then the state across
 * records and windows: an end timed at its record after the close, at
 * the window's collection from its last record, and when it never had
 * one before the next window.
 */
#include <stdio.h>
#include <string.h>

#include "agent/exchange.h"
#include "check.h"

#define US 1000ull

static struct cw_msg_event ev[16];
static size_t nev;

static void msg(uint8_t role, uint8_t dir, uint64_t ts, uint64_t prev_end,
		uint32_t overlap)
{
	struct cw_msg_event *e = &ev[nev++];

	memset(e, 0, sizeof(*e));
	e->cookie = 7;
	e->role = role;
	e->dir = dir;
	e->ts_ns = ts;
	e->prev_end_ns = prev_end;
	e->overlap = overlap;
}

static void end_init(struct cw_xchg_end *e)
{
	memset(e, 0, sizeof(*e));
	e->xchg = (struct cw_hist)CW_HIST_INIT;
	e->first = (struct cw_hist)CW_HIST_INIT;
}

static void end_free(struct cw_xchg_end *e)
{
	cw_hist_release(&e->xchg);
	cw_hist_release(&e->first);
}

/* A client: OUT at 100+1000k, reply IN 50 us later, read until +200. */
static void client_rounds(int rounds, uint32_t overlap_at)
{
	int k;

	nev = 0;
	/* The window opened inside a reply: the first start is not one. */
	msg(CW_ROLE_CLIENT, CW_DIR_IN, 10 * US, 0, 0);
	for (k = 0; k < rounds; k++) {
		msg(CW_ROLE_CLIENT, CW_DIR_OUT, (100 + 1000 * k) * US,
		    k ? (300 + 1000 * (k - 1)) * US : 20 * US,
		    overlap_at == (uint32_t)(2 * k + 1) ? 5 : 0);
		msg(CW_ROLE_CLIENT, CW_DIR_IN, (150 + 1000 * k) * US,
		    (100 + 1000 * k) * US,
		    overlap_at == (uint32_t)(2 * k + 2) ? 5 : 0);
	}
}

static void test_client(void)
{
	struct cw_xchg_end e;
	struct cw_xchg_in in = {.ev = ev, .window_end_ns = 10000 * US};

	/* Three rounds, the last reply ended by call_ns after the close. */
	client_rounds(3, 0);
	in.n = nev;
	in.last_call_ns = 2300 * US;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 3 && e.first.count == 3 && !e.pipelined);
	CHECK(e.xchg.min == 200 * US && e.xchg.max == 200 * US);
	CHECK(e.first.min == 50 * US && e.first.max == 50 * US);
	end_free(&e);

	/* The last reply went on past the close: two timed, none counted. */
	in.last_call_ns = 10001 * US;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 2 && !e.pipelined);
	end_free(&e);

	/* No call known after the close (0): the same. */
	in.last_call_ns = 0;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 2);
	end_free(&e);

	/* --hooks always: the first start is a true one, an IN: skipped. */
	in.first_known = true;
	in.last_call_ns = 2300 * US;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 3);
	end_free(&e);
	in.first_known = false;

	/* A reply start with our bytes unacknowledged: pipelined, and so
	 * is every other turn of that window. */
	client_rounds(3, 4);
	in.n = nev;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 0 && e.pipelined == 3);
	end_free(&e);

	/* The next request sent with that reply unread: the same. */
	client_rounds(3, 3);
	in.n = nev;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 0 && e.pipelined == 3);
	end_free(&e);

	/* A request that went on after a pause: flagged on the reply. */
	client_rounds(3, 0);
	ev[4].flags = CW_MSGF_RESUMED;
	in.n = nev;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 0 && e.pipelined == 3);
	end_free(&e);
}

static void test_server_and_splits(void)
{
	struct cw_xchg_end e;
	struct cw_xchg_in in = {.ev = ev, .window_end_ns = 10000 * US};

	/* A server: IN at 0 (maybe begun before), IN 1000, OUT 1030 ->
	 * 1080, IN 2000, OUT 2010 -> 2500 (the last call after close). */
	nev = 0;
	msg(CW_ROLE_SERVER, CW_DIR_IN, 0, 0, 0);
	msg(CW_ROLE_SERVER, CW_DIR_OUT, 30 * US, 0, 0);
	msg(CW_ROLE_SERVER, CW_DIR_IN, 1000 * US, 60 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_OUT, 1030 * US, 1000 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_IN, 2000 * US, 1080 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_OUT, 2010 * US, 2000 * US, 0);
	in.n = nev;
	in.last_call_ns = 2500 * US;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(e.xchg.count == 2 && !e.first.count && !e.pipelined);
	CHECK(e.xchg.min == 80 * US && e.xchg.max == 500 * US);
	end_free(&e);

	/* A request in two messages (--msg-gap): pipelined, not timed. */
	in.last_call_ns = 1700 * US;
	nev = 0;
	msg(CW_ROLE_SERVER, CW_DIR_OUT, 0, 0, 0);
	msg(CW_ROLE_SERVER, CW_DIR_IN, 1000 * US, 10 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_IN, 1500 * US, 1000 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_OUT, 1600 * US, 1500 * US, 0);
	msg(CW_ROLE_SERVER, CW_DIR_IN, 3000 * US, 1700 * US, 0);
	in.n = nev;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(!e.xchg.count && e.pipelined == 1);
	end_free(&e);

	/* No role: nothing. */
	nev = 0;
	msg(CW_ROLE_UNKNOWN, CW_DIR_OUT, 0, 0, 0);
	msg(CW_ROLE_UNKNOWN, CW_DIR_IN, 10, 0, 0);
	msg(CW_ROLE_UNKNOWN, CW_DIR_OUT, 20, 15, 0);
	in.n = nev;
	end_init(&e);
	CHECK(!cw_xchg_times(&in, &e));
	CHECK(!e.xchg.count && !e.pipelined);
	end_free(&e);
}

/* The state: records before, at and after a window's close. */
static void test_state(void)
{
	struct cw_xchg x;
	struct cw_conn c;
	struct cw_conn_record r;
	struct cw_xchg_end *e;
	uint64_t cookie = 7;
	size_t i;

	cw_xchg_init(&x, false);
	cw_xchg_window_open(&x, 10000 * US);
	client_rounds(3, 0);
	for (i = 0; i < nev; i++)
		CHECK(!cw_xchg_note_msg(&x, &ev[i]));
	memset(&c, 0, sizeof(c));
	c.cookie = 7;
	c.role = CW_ROLE_CLIENT;
	/* A record inside the window: nothing timed yet. */
	c.call_ns = 2300 * US;
	memset(&r, 0, sizeof(r));
	cw_xchg_record(&x, &c, &r, 5000 * US);
	e = cw_htab_get(&x.ends, &cookie);
	CHECK(e && !e->xchg.count && e->n == nev);
	/* The window is collected: timed from that record's call_ns. */
	cw_xchg_window_close(&x);
	e = cw_htab_get(&x.ends, &cookie);
	CHECK(e && e->xchg.count == 3 && e->dirty && !e->n);
	/* The next collection sends it again, its last_ns never less than
	 * the record before (the clock offset drifts), then the closing. */
	r.last_ns = 999;
	cw_xchg_record(&x, &c, &r, 20000 * US);
	memset(&r, 0, sizeof(r));
	r.last_ns = 990;
	cw_xchg_record(&x, &c, &r, 20000 * US);
	CHECK(r.last_ns == 999);
	c.flags = CW_F_CLOSED;
	cw_xchg_record(&x, &c, &r, 20000 * US);
	CHECK(!cw_htab_get(&x.ends, &cookie));
	CHECK(r.xchg.len > 0 && r.xchg_first.len > 0 && !r.xchg_pipelined);

	/* No record in the window: timed at its first record after. */
	cw_xchg_window_open(&x, 30000 * US);
	for (i = 0; i < nev; i++)
		CHECK(!cw_xchg_note_msg(&x, &ev[i]));
	cw_xchg_window_close(&x);
	e = cw_htab_get(&x.ends, &cookie);
	CHECK(e && e->n == nev && !e->xchg.count);
	c.flags = 0;
	cw_xchg_record(&x, &c, &r, 40000 * US);
	e = cw_htab_get(&x.ends, &cookie);
	CHECK(e && e->xchg.count == 3 && !e->n);

	/* None at all before the next window: timed without the last. */
	for (i = 0; i < nev; i++)
		CHECK(!cw_xchg_note_msg(&x, &ev[i]));
	cw_xchg_window_close(&x);
	cw_xchg_window_open(&x, 90000 * US);
	e = cw_htab_get(&x.ends, &cookie);
	CHECK(e && e->xchg.count == 5 && !e->n);
	cw_xchg_release(&x);
}

int main(void)
{
	test_client();
	test_server_and_splits();
	test_state();
	if (!failures)
		printf("exchange: ok\n");
	return failures ? 1 : 0;
}
