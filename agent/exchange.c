// SPDX-License-Identifier: MIT
/*
 * Exchange times from message starts (agent/exchange.h has the rule).
 */
#include "agent/exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* Past this many ends the table starts afresh (like the estimate's). */
#define XCHG_ENDS_MAX (1u << 20)

void cw_xchg_init(struct cw_xchg *x, bool first_known)
{
	memset(x, 0, sizeof(*x));
	cw_htab_init(&x->ends, sizeof(uint64_t), sizeof(struct cw_xchg_end));
	x->first_known = first_known;
}

static void end_release(struct cw_xchg_end *e)
{
	cw_hist_release(&e->xchg);
	cw_hist_release(&e->first);
	free(e->ev);
}

void cw_xchg_release(struct cw_xchg *x)
{
	size_t i;

	for (i = 0; i < x->ends.len; i++)
		end_release(cw_htab_val(&x->ends, i));
	cw_htab_release(&x->ends);
}

static struct cw_xchg_end *end_get(struct cw_xchg *x, uint64_t cookie)
{
	struct cw_xchg_end *e;
	bool created;

	if (x->ends.len >= XCHG_ENDS_MAX) {
		cw_xchg_release(x);
		cw_htab_init(&x->ends, sizeof(uint64_t),
			     sizeof(struct cw_xchg_end));
	}
	e = cw_htab_upsert(&x->ends, &cookie, &created);
	if (e && created) {
		e->xchg = (struct cw_hist)CW_HIST_INIT;
		e->first = (struct cw_hist)CW_HIST_INIT;
	}
	return e;
}

int cw_xchg_note_msg(struct cw_xchg *x, const struct cw_msg_event *ev)
{
	struct cw_xchg_end *e = end_get(x, ev->cookie);

	if (!e || CW_GROW(e->ev, e->cap, e->n + 1, 16)) {
		x->nomem++;
		return -1;
	}
	e->wend = x->window_end_ns;
	e->over = false;
	e->ev[e->n++] = *ev;
	return 0;
}

/* The first message at or after i that is not in direction dir. */
static size_t run_end(const struct cw_msg_event *ev, size_t n, size_t i,
		      uint32_t dir)
{
	while (i < n && ev[i].dir == dir)
		i++;
	return i;
}

/*
 * Did a message of [i, k], k the next request if any, overlap another, or
 * the request (its flags are on the start after it, j) go on after a
 * pause?
 */
static bool overlapped(const struct cw_msg_event *ev, size_t n, size_t i,
		       size_t j, size_t k)
{
	if (ev[j].flags & CW_MSGF_RESUMED)
		return true;
	for (; i <= k && i < n; i++)
		if (ev[i].overlap)
			return true;
	return false;
}

/* The direction of an end's requests, by its role; CW_DIR_NONE. */
static uint32_t request_dir(const struct cw_xchg_in *in)
{
	uint8_t role = in->n ? in->ev[in->n - 1].role : CW_ROLE_UNKNOWN;

	if (role == CW_ROLE_UNKNOWN)
		role = in->role;
	return role == CW_ROLE_CLIENT	? (uint32_t)CW_DIR_OUT
	       : role == CW_ROLE_SERVER ? (uint32_t)CW_DIR_IN
					: (uint32_t)CW_DIR_NONE;
}

/*
 * Walks the request runs: a request run [i, j) in the request direction,
 * its reply run [j, k), whose reply's end is known: the next request's
 * prev_end_ns, or for the window's last reply the end's call_ns after the
 * close (not timed if that call went on past the close, or is older than
 * the reply).  Such a turn is pipelined when a run is more than one
 * message or a start in [i, k] overlapped; with piped_all, every turn is.
 * Returns whether any turn was pipelined, or -1 (out of memory); adds
 * to e only with add.
 */
static int walk(const struct cw_xchg_in *in, struct cw_xchg_end *e, bool add,
		bool piped_all)
{
	const struct cw_msg_event *ev = in->ev;
	uint32_t req = request_dir(in);
	size_t i = in->first_known ? 0 : 1, j, k;
	uint64_t end;
	int any = 0;

	while (i < in->n && ev[i].dir != req)
		i++;
	for (; req != (uint32_t)CW_DIR_NONE && i < in->n; i = k) {
		j = run_end(ev, in->n, i, req);
		if (j == in->n)
			break; /* no reply in the window */
		k = j;
		while (k < in->n && ev[k].dir != req)
			k++;
		if (k < in->n)
			end = ev[k].prev_end_ns;
		else if (in->last_call_ns && in->last_call_ns < in->window_end_ns)
			end = in->last_call_ns;
		else
			break; /* the reply may run past the close */
		if (end < ev[k - 1].ts_ns)
			continue; /* no call of the reply's known: not timed */
		if (piped_all || j - i > 1 || k - j > 1 ||
		    overlapped(ev, in->n, i, j, k)) {
			any = 1;
			e->pipelined += add;
			continue;
		}
		if (!add)
			continue;
		if (cw_hist_add(&e->xchg, end - ev[i].ts_ns, 1))
			return -1;
		if (req == (uint32_t)CW_DIR_OUT &&
		    cw_hist_add(&e->first, ev[j].ts_ns - ev[i].ts_ns, 1))
			return -1;
	}
	return any;
}

/*
 * A connection that had several requests in flight at any turn of the
 * window may have them at turns that show no sign of it (a request sent
 * just before an earlier one's reply came): none of its turns in that
 * window is timed.
 */
int cw_xchg_times(const struct cw_xchg_in *in, struct cw_xchg_end *e)
{
	int any = walk(in, e, false, false);

	return walk(in, e, true, any == 1) < 0 ? -1 : 0;
}

static int cmp_ts(const void *x, const void *y)
{
	const struct cw_msg_event *a = x, *b = y;

	return a->ts_ns < b->ts_ns ? -1 : a->ts_ns > b->ts_ns;
}

/*
 * Time the end's window messages with the last call known; clear them.
 * Returns whether that timed or counted any.
 */
static bool end_window(struct cw_xchg *x, struct cw_xchg_end *e,
		       uint64_t last_call_ns)
{
	uint64_t before = e->xchg.count + e->pipelined;
	struct cw_xchg_in in = {
		.ev = e->ev,
		.n = e->n,
		.last_call_ns = last_call_ns,
		.window_end_ns = e->wend,
		.role = e->role,
		.first_known = x->first_known,
	};

	if (!e->n)
		return false;
	qsort(e->ev, e->n, sizeof(*e->ev), cmp_ts);
	if (cw_xchg_times(&in, e))
		x->nomem++;
	free(e->ev);
	e->ev = NULL;
	e->n = e->cap = 0;
	return e->xchg.count + e->pipelined != before;
}

/* Out of memory for a coarser copy: that record carries none. */
static void record_fill(const struct cw_xchg_end *e, struct cw_conn_record *r)
{
	r->xchg_pipelined = e->pipelined;
	if (e->xchg.count && cw_rec_hist_set(&r->xchg, &e->xchg))
		memset(&r->xchg, 0, sizeof(r->xchg));
	if (e->first.count && cw_rec_hist_set(&r->xchg_first, &e->first))
		memset(&r->xchg_first, 0, sizeof(r->xchg_first));
}

void cw_xchg_record(struct cw_xchg *x, const struct cw_conn *c,
		    struct cw_conn_record *r, uint64_t now_mono)
{
	bool closed = c->flags & CW_F_CLOSED;
	struct cw_xchg_end *e = cw_htab_get(&x->ends, &c->cookie);

	if (!e)
		return;
	e->last = *c;
	e->dirty = false;
	e->role = r->role;
	if (r->last_ns < e->last_real)
		r->last_ns = e->last_real;
	e->last_real = r->last_ns;
	if (closed || e->over || (e->wend && now_mono >= e->wend))
		end_window(x, e, c->call_ns);
	else if (e->n)
		e->last_call_ns = c->call_ns;
	record_fill(e, r);
	if (closed) {
		end_release(e);
		cw_htab_delete(&x->ends, &c->cookie);
	}
}

static uint64_t last_start(const struct cw_xchg_end *e)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < e->n; i++)
		t = e->ev[i].ts_ns > t ? e->ev[i].ts_ns : t;
	return t;
}

void cw_xchg_window_close(struct cw_xchg *x)
{
	struct cw_xchg_end *e;
	uint64_t cookie;
	size_t i = 0;

	while (i < x->ends.len) {
		e = cw_htab_val(&x->ends, i);
		cookie = *(uint64_t *)cw_htab_key(&x->ends, i);
		/*
		 * A call after that record (a start, or a closing record not
		 * read yet) makes it stale: the end's next record times it.
		 */
		if (e->last_call_ns && e->last_call_ns >= last_start(e) &&
		    end_window(x, e, e->last_call_ns))
			e->dirty = true;
		e->over = true; /* its calls are no longer timed */
		e->last_call_ns = 0;
		if (!e->n && !e->xchg.count && !e->pipelined) {
			/* Nothing to report: the last entry moves here. */
			end_release(e);
			cw_htab_delete(&x->ends, &cookie);
			continue;
		}
		i++;
	}
	x->window_end_ns = 0;
}

void cw_xchg_window_open(struct cw_xchg *x, uint64_t end_mono)
{
	struct cw_xchg_end *e;
	size_t i;

	/* call_ns is the new window's from now on: no last call known. */
	for (i = 0; i < x->ends.len; i++) {
		e = cw_htab_val(&x->ends, i);
		if (e->n && end_window(x, e, 0))
			e->dirty = true;
	}
	x->window_end_ns = end_mono;
}

void cw_xchg_flush(struct cw_xchg *x, void (*fn)(void *ctx, const void *c),
		   void *ctx)
{
	struct cw_xchg_end *e;
	struct cw_conn c;
	size_t i;

	/* fn may delete (a closed end): walk a copy of each, from the end. */
	for (i = x->ends.len; i-- > 0;) {
		e = cw_htab_val(&x->ends, i);
		if (!e->dirty || !e->last.cookie)
			continue;
		e->dirty = false;
		c = e->last;
		fn(ctx, &c);
	}
}
