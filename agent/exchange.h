/* SPDX-License-Identifier: MIT */
/*
 * Exchange times per connection end, from the message starts of timing
 * windows (docs/edge-health.md, "Exchange times").  An exchange is a
 * message one way and the reply the other way on one connection:
 *
 *   client (the connect() end)  request start -> reply end   (xchg)
 *                               request start -> reply start (xchg_first)
 *   server                      request arrival -> reply sent (xchg)
 *
 * each on the end's own clock (CLOCK_MONOTONIC differences).  A message's
 * start is its first call, its end its last call: the next message's start
 * event carries it (cw_msg_event.prev_end_ns), and the window's last
 * message ends at the end's call_ns read after the window's close: its
 * last record in the window if it made no call after that, else its first
 * record after the close (a call_ns past the close: that message went on
 * after it, not timed).  An end with no such record by the next window's
 * opening is timed without its last exchange.  Exchanges in progress at
 * the close are not timed and not counted.
 *
 * Several requests in flight (pipelined, multiplexed) are counted in
 * `pipelined`, never timed: an exchange whose request or reply is more
 * than one message (a gap split them, or a lost start), or where a
 * message of it, or the next request, started with the other way in
 * flight (cw_msg_event.overlap: a send with received bytes not yet read,
 * a receive with sent bytes not yet acknowledged), or where the request
 * went on after a pause longer than the RTT and 1 ms (CW_MSGF_RESUMED: a
 * second request before the reply).  An end that shows any of these in a
 * window has none of its exchanges in that window timed: the other turns
 * of a connection that multiplexes may show no sign of it.  A batch sent
 * in one message and answered in one message is one exchange.  The count
 * is of turns (a request message and its reply message), not requests.
 *
 * The histograms are cumulative since the end was first seen, like every
 * counter of its record; an end is forgotten when its closing record is
 * made.
 *
 *	struct cw_xchg x;
 *	cw_xchg_init(&x, first_known);
 *	cw_xchg_window_open(&x, end_mono);
 *	cw_xchg_note_msg(&x, ev);		// each message start
 *	cw_xchg_record(&x, conn, rec, now_mono); // each record made
 *	cw_xchg_window_close(&x);		// after the window's records
 *	cw_xchg_flush(&x, fn, ctx);		// each collection, at its end
 *	cw_xchg_release(&x);
 */
#ifndef CW_AGENT_EXCHANGE_H
#define CW_AGENT_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/conn.h"
#include "common/hist.h"
#include "common/htab.h"
#include "common/record.h"

/* One end: its cumulative exchanges, and the open window's messages. */
struct cw_xchg_end {
	struct cw_hist xchg, first; /* ns */
	uint64_t pipelined;	    /* exchanges not timed: in flight > 1 */
	struct cw_msg_event *ev;    /* a window's message starts */
	size_t n, cap;
	uint64_t wend;	       /* that window's close (mono) */
	bool over;	       /* that window was collected (maybe early) */
	uint64_t last_call_ns; /* call_ns at the end's last record; 0 none */
	/*
	 * Timed after the end's last record (an idle end, timed at the
	 * window's collection): its next collection sends that record
	 * again with them (cw_xchg_flush).
	 */
	bool dirty;
	struct cw_conn last; /* the end's aggregates at its last record */
	/*
	 * That record's last_ns (CLOCK_REALTIME): one sent again must not
	 * say less, which a reader takes for a stale record (the monotonic
	 * to real offset is taken afresh each collection, and drifts).
	 */
	uint64_t last_real;
	/*
	 * The role its records give: an end open before the agent has its
	 * role from the agent (the listeners it knows), not in its events.
	 */
	uint8_t role;
};

struct cw_xchg {
	struct cw_htab ends;	/* cookie -> struct cw_xchg_end */
	uint64_t window_end_ns; /* the open window's close (mono); 0 none */
	/*
	 * The first message an end shows in a window is a true start: the
	 * per-call programs ran before the window too (--hooks always).
	 * With --hooks sampled it may have begun before the window opened.
	 */
	bool first_known;
	uint64_t nomem; /* message starts or exchanges dropped: no memory */
};

/* One end's messages in one window, sorted by time, and how they end. */
struct cw_xchg_in {
	const struct cw_msg_event *ev;
	size_t n;
	uint64_t last_call_ns; /* the end's last call after the window; 0 */
	uint64_t window_end_ns;
	uint8_t role; /* enum cw_role where the events have none */
	bool first_known;
};

void cw_xchg_init(struct cw_xchg *x, bool first_known);
void cw_xchg_release(struct cw_xchg *x);
/* A window opens: ends still waiting from the one before are timed. */
void cw_xchg_window_open(struct cw_xchg *x, uint64_t end_mono);
/* A message start of the open window; 0 or -1 (out of memory, counted). */
int cw_xchg_note_msg(struct cw_xchg *x, const struct cw_msg_event *e);
/*
 * A record r is made from the end's aggregates c, read at or after
 * now_mono: the end's window messages are timed now if their window has
 * closed or the end has (its call_ns is then final), else call_ns is
 * kept for the close; then r's exchange fields are filled.  A closed end
 * is forgotten.
 */
void cw_xchg_record(struct cw_xchg *x, const struct cw_conn *c,
		    struct cw_conn_record *r, uint64_t now_mono);
/*
 * The window is collected: time the ends whose last record came after
 * their last call; the others wait for their next record.
 */
void cw_xchg_window_close(struct cw_xchg *x);
/*
 * Ends whose exchanges changed after their last record: fn(ctx, c) with
 * that record's aggregates, to be made again (fn calls cw_xchg_record).
 */
void cw_xchg_flush(struct cw_xchg *x, void (*fn)(void *ctx, const void *c),
		   void *ctx);
/*
 * The exchanges of one end's window, added to e's histograms and
 * pipelined count (the rule above); 0 or -1 (out of memory).
 */
int cw_xchg_times(const struct cw_xchg_in *in, struct cw_xchg_end *e);

#endif
