// SPDX-License-Identifier: MIT
/* Message traces: the observations and their CSV reader. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/csv.h"
#include "paths/paths.h"

void cw_msgtrace_init(struct cw_msgtrace *t)
{
	memset(t, 0, sizeof(*t));
}

void cw_msgtrace_release(struct cw_msgtrace *t)
{
	cw_names_release(&t->nodes);
	free(t->msgs);
	free(t->calls);
	cw_msgtrace_init(t);
}

int cw_msgtrace_add_call(struct cw_msgtrace *t, uint32_t client,
			 uint32_t server)
{
	if (CW_GROW(t->calls, t->cap_calls, t->n_calls + 1, 16))
		return cw_error("out of memory for %zu calls", t->n_calls + 1);
	t->calls[t->n_calls++] = (uint64_t)client << 32 | server;
	return 0;
}

int cw_msgtrace_find(const struct cw_msgtrace *t, const char *name)
{
	return cw_names_find(&t->nodes, name);
}

int cw_msgtrace_node(struct cw_msgtrace *t, const char *name)
{
	return cw_names_id(&t->nodes, name);
}

int cw_msgtrace_add(struct cw_msgtrace *t, uint64_t ts_ns, uint32_t node,
		    uint32_t peer, enum cw_msg_dir dir, uint64_t bytes)
{
	if (CW_GROW(t->msgs, t->cap_msgs, t->n_msgs + 1, 1024))
		return cw_error("out of memory for %zu messages",
				t->n_msgs + 1);
	t->msgs[t->n_msgs++] = (struct cw_msg){.ts_ns = ts_ns,
					       .bytes = bytes,
					       .node = node,
					       .peer = peer,
					       .dir = (uint8_t)dir};
	return 0;
}

static int msg_cmp(const void *a, const void *b)
{
	const struct cw_msg *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	return (int)x->dir - (int)y->dir;
}

int cw_msgtrace_finish(struct cw_msgtrace *t, const char *what)
{
	if (!t->n_msgs)
		return cw_error("'%s': no messages in the input", what);
	qsort(t->msgs, t->n_msgs, sizeof(*t->msgs), msg_cmp);
	return 0;
}

/* ---- CSV ---------------------------------------------------------------- */

enum { COL_TS, COL_NODE, COL_PEER, COL_DIR, COL_BYTES, COL_CONN, N_COLS };
static const char *const col_names[N_COLS] = {"ts_ns", "node",	"peer",
					      "dir",   "bytes", "conn"};

struct csv_state {
	const char *what;
	size_t line;
	int col[N_COLS]; /* column index of each field, -1 absent */
	int n_fields;
	uint64_t *last_ts; /* per node, to refuse reordered logs */
	size_t n_last;
};

static int parse_header(struct csv_state *st, char *line)
{
	char *f[16];
	int n = cw_csv_split(line, f, 16, true), c;

	if (n > 16)
		return cw_error("'%s' line 1: too many columns", st->what);
	if (cw_csv_columns(f, n, col_names, N_COLS, st->col, st->what))
		return -1;
	for (c = 0; c < COL_BYTES; c++)
		if (st->col[c] < 0)
			return cw_error(
				"'%s' line 1: header has no '%s' column "
				"(want ts_ns,node,peer,dir[,bytes])",
				st->what, col_names[c]);
	st->n_fields = n;
	return 0;
}

/* A count or a time, by common/util.h's grammar. */
static int parse_u64(const char *s, uint64_t *v)
{
	return cw_parse_u64(s, 0, UINT64_MAX, v);
}

static int check_order(struct csv_state *st, uint32_t node, uint64_t ts)
{
	if (node >= st->n_last) {
		size_t n = node + 64, i;
		uint64_t *p = realloc(st->last_ts, n * sizeof(*p));

		if (!p)
			return cw_error("out of memory");
		for (i = st->n_last; i < n; i++)
			p[i] = 0;
		st->last_ts = p;
		st->n_last = n;
	}
	if (ts < st->last_ts[node])
		return -1;
	st->last_ts[node] = ts;
	return 0;
}

static int parse_row(struct cw_msgtrace *t, struct csv_state *st, char *line)
{
	char *f[16];
	int n = cw_csv_split(line, f, 16, true), node, peer;
	uint64_t ts, bytes = 0, conn = 0;
	enum cw_msg_dir dir;

	if (n != st->n_fields)
		return cw_error("'%s' line %zu: %d fields, header has %d",
				st->what, st->line, n > 16 ? 16 : n,
				st->n_fields);
	if (parse_u64(f[st->col[COL_TS]], &ts))
		return cw_error("'%s' line %zu: bad ts_ns '%s'", st->what,
				st->line, f[st->col[COL_TS]]);
	if (!strcmp(f[st->col[COL_DIR]], "in"))
		dir = CW_MSG_IN;
	else if (!strcmp(f[st->col[COL_DIR]], "out"))
		dir = CW_MSG_OUT;
	else
		return cw_error("'%s' line %zu: dir must be 'in' or 'out', not "
				"'%s'",
				st->what, st->line, f[st->col[COL_DIR]]);
	if (st->col[COL_BYTES] >= 0 && *f[st->col[COL_BYTES]] &&
	    parse_u64(f[st->col[COL_BYTES]], &bytes))
		return cw_error("'%s' line %zu: bad bytes '%s'", st->what,
				st->line, f[st->col[COL_BYTES]]);
	if (st->col[COL_CONN] >= 0 && *f[st->col[COL_CONN]] &&
	    (parse_u64(f[st->col[COL_CONN]], &conn) || conn > UINT32_MAX))
		return cw_error("'%s' line %zu: bad conn '%s' (want 0 to "
				"4294967295)",
				st->what, st->line, f[st->col[COL_CONN]]);
	if (!*f[st->col[COL_NODE]] || !*f[st->col[COL_PEER]])
		return cw_error("'%s' line %zu: empty node or peer", st->what,
				st->line);
	if (!strcmp(f[st->col[COL_NODE]], f[st->col[COL_PEER]]))
		return cw_error("'%s' line %zu: node '%s' talks to itself",
				st->what, st->line, f[st->col[COL_NODE]]);
	node = cw_msgtrace_node(t, f[st->col[COL_NODE]]);
	peer = cw_msgtrace_node(t, f[st->col[COL_PEER]]);
	if (node < 0 || peer < 0)
		return cw_error("out of memory");
	if (check_order(st, (uint32_t)node, ts))
		return cw_error("'%s' line %zu: timestamp %llu goes back in "
				"time for node '%s' (rows must be in each "
				"node's clock order; not sorted for you)",
				st->what, st->line, (unsigned long long)ts,
				t->names[node]);
	return cw_msgtrace_add_conn(t, ts, (uint32_t)node, (uint32_t)peer, dir,
				    bytes, (uint32_t)conn);
}

int cw_msgtrace_read_csv(struct cw_msgtrace *t, FILE *fp, const char *what)
{
	struct csv_state st = {.what = what};
	struct cw_csv c;
	int err = 0, rc;

	cw_csv_open(&c, fp, what);
	while (!err && (rc = cw_csv_next(&c)) != 0) {
		st.line = c.line;
		if (rc < 0)
			err = -1;
		else if (st.line == 1)
			err = parse_header(&st, c.buf);
		else if (c.buf[strspn(c.buf, " \t")] && c.buf[0] != '#')
			err = parse_row(t, &st, c.buf);
	}
	if (!err && st.line == 0)
		err = cw_error("'%s': empty input (no header)", what);
	cw_csv_close(&c);
	free(st.last_ts);
	return err;
}
