// SPDX-License-Identifier: MIT
/* Message traces: the node-name index and the observation CSV reader. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/paths.h"

void cw_msgtrace_init(struct cw_msgtrace *t)
{
	memset(t, 0, sizeof(*t));
}

void cw_msgtrace_release(struct cw_msgtrace *t)
{
	size_t i;

	for (i = 0; i < t->n_names; i++)
		free(t->names[i]);
	free(t->names);
	free(t->msgs);
	free(t->slots);
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

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static size_t *slot_of(const struct cw_msgtrace *t, const char *name,
		       size_t *slot)
{
	size_t mask = t->n_slots - 1;
	size_t i = name_hash(name) & mask;

	while (t->slots[i] && strcmp(t->names[t->slots[i] - 1], name))
		i = (i + 1) & mask;
	*slot = i;
	return slot;
}

int cw_msgtrace_find(const struct cw_msgtrace *t, const char *name)
{
	size_t s;

	if (!t->n_slots)
		return -1;
	slot_of(t, name, &s);
	return t->slots[s] ? (int)t->slots[s] - 1 : -1;
}

/* Keep the index at most half full so probes stay short. */
static int grow_index(struct cw_msgtrace *t)
{
	size_t n = t->n_slots ? t->n_slots * 2 : 64, i, s;
	uint32_t *old = t->slots;
	size_t old_n = t->n_slots;

	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -1;
	}
	t->n_slots = n;
	for (i = 0; i < old_n; i++) {
		if (!old[i])
			continue;
		slot_of(t, t->names[old[i] - 1], &s);
		t->slots[s] = old[i];
	}
	free(old);
	return 0;
}

int cw_msgtrace_node(struct cw_msgtrace *t, const char *name)
{
	size_t s;
	int id = cw_msgtrace_find(t, name);

	if (id >= 0)
		return id;
	if ((t->n_names + 1) * 2 > t->n_slots && grow_index(t))
		return -1;
	if (CW_GROW(t->names, t->cap_names, t->n_names + 1, 16))
		return -1;
	t->names[t->n_names] = strdup(name);
	if (!t->names[t->n_names])
		return -1;
	slot_of(t, name, &s);
	t->slots[s] = (uint32_t)++t->n_names;
	return (int)t->n_names - 1;
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

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' ||
			 e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* Split in place on commas; returns the number of fields (at most max). */
static int split_csv(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *c = strchr(p, ',');

		if (n == max)
			return max + 1;
		if (c)
			*c = '\0';
		f[n++] = trim(p);
		if (!c)
			return n;
		p = c + 1;
	}
}

static int parse_header(struct csv_state *st, char *line)
{
	char *f[16];
	int n = split_csv(line, f, 16), i, c;

	if (n > 16)
		return cw_error("'%s' line 1: too many columns", st->what);
	for (c = 0; c < N_COLS; c++)
		st->col[c] = -1;
	for (i = 0; i < n; i++)
		for (c = 0; c < N_COLS; c++)
			if (!strcmp(f[i], col_names[c]))
				st->col[c] = i;
	for (c = 0; c < COL_BYTES; c++)
		if (st->col[c] < 0)
			return cw_error(
				"'%s' line 1: header has no '%s' column "
				"(want ts_ns,node,peer,dir[,bytes])",
				st->what, col_names[c]);
	st->n_fields = n;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
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
	int n = split_csv(line, f, 16), node, peer;
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
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int err = 0;

	while (!err && (len = getline(&line, &cap, fp)) >= 0) {
		st.line++;
		if ((size_t)len != strlen(line)) {
			err = cw_error("'%s' line %zu: NUL byte in text", what,
				       st.line);
			break;
		}
		if (st.line == 1) {
			err = parse_header(&st, line);
			continue;
		}
		if (!*trim(line) || line[0] == '#')
			continue;
		err = parse_row(t, &st, line);
	}
	if (!err && st.line == 0)
		err = cw_error("'%s': empty input (no header)", what);
	free(line);
	free(st.last_ts);
	return err;
}
