// SPDX-License-Identifier: MIT
/* Traces input: the messages and their CSV (read with paths/csv.h; node
 * names in paths/'s index). */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/csv.h"
#include "traces/traces.h"

void cw_traces_init(struct cw_traces *t)
{
	memset(t, 0, sizeof(*t));
}

void cw_traces_release(struct cw_traces *t)
{
	cw_names_release(&t->nodes);
	free(t->msgs);
	free(t->spans);
	free(t->truth_conn);
	free(t->truth_trace);
	free(t->truth_blind);
	free(t->ends);
	cw_traces_init(t);
}

int cw_traces_node(struct cw_traces *t, const char *name)
{
	return cw_names_id(&t->nodes, name);
}

int cw_traces_set_ends(struct cw_traces *t, uint32_t conn, uint32_t client,
		       uint16_t client_port, uint32_t server,
		       uint16_t server_port)
{
	if (CW_GROW(t->ends, t->cap_ends, (size_t)conn + 1, 1024))
		return cw_error("out of memory for connection ends");
	while (t->n_ends <= conn) {
		t->ends[t->n_ends].client = t->ends[t->n_ends].server =
			UINT32_MAX;
		t->ends[t->n_ends++].client_port = 0;
	}
	t->ends[conn] =
		(struct cw_tends){client, server, client_port, server_port};
	return 0;
}

int cw_traces_add_msg(struct cw_traces *t, const struct cw_msg *m)
{
	if (CW_GROW(t->msgs, t->cap_msgs, t->n_msgs + 1, 1024))
		return cw_error("out of memory for %zu messages", t->n_msgs);
	t->msgs[t->n_msgs++] = *m;
	return 0;
}

/* A count, a time or an id, by common/util.h's grammar. */
static int parse_u64(const char *s, uint64_t *v)
{
	return cw_parse_u64(s, 0, UINT64_MAX, v);
}

enum {
	C_START,
	C_END,
	C_NODE,
	C_PEER,
	C_CONN,
	C_DIR,
	C_ROLE,
	C_BYTES,
	C_THREAD,
	C_NODE_PORT,
	C_PEER_PORT,
	C_SEQ, /* the kernel's context: all four, or ignored */
	C_CTX_CONN,
	C_CTX_SEQ,
	C_CTX_OPEN,
	C_CTX_LOOP, /* optional, with the four */
	N_COLS
};
static const char *const msg_cols[N_COLS] = {
	"start_ns", "end_ns",  "node",	   "peer",	"conn",	     "dir",
	"role",	    "bytes",   "thread",   "node_port", "peer_port", "seq",
	"ctx_conn", "ctx_seq", "ctx_open", "ctx_loop"};

/*
 * node_port and peer_port (optional, both or neither; `causeway run
 * --traces` writes them) name each connection's ends as a capture does,
 * so --truth-links can match the services' records to the messages.
 */
/* Ends are kept in an array by conn id: ids above this are refused. */
#define MAX_ENDS_CONN (1u << 22)

static int msg_ends(struct cw_traces *t, const struct cw_msg *m, char **f,
		    const int *at)
{
	uint64_t np, pp;

	if (m->conn > MAX_ENDS_CONN)
		return 1;
	if (cw_parse_u64(f[at[C_NODE_PORT]], 1, 65535, &np) ||
	    cw_parse_u64(f[at[C_PEER_PORT]], 1, 65535, &pp))
		return 1;
	if (m->role == CW_ROLE_CONNECTED)
		return cw_traces_set_ends(t, m->conn, m->node, (uint16_t)np,
					  m->peer, (uint16_t)pp);
	return cw_traces_set_ends(t, m->conn, m->peer, (uint16_t)pp, m->node,
				  (uint16_t)np);
}

static int msg_field(struct cw_traces *t, struct cw_msg *m, int c,
		     const char *s)
{
	uint64_t v = 0;
	int id;

	switch (c) {
	case C_NODE:
	case C_PEER:
		if (!*s)
			return -1;
		id = cw_traces_node(t, s);
		if (id < 0)
			return -1;
		*(c == C_NODE ? &m->node : &m->peer) = (uint32_t)id;
		return 0;
	case C_DIR:
		if (strcmp(s, "in") && strcmp(s, "out"))
			return -1;
		m->dir = !strcmp(s, "out") ? CW_MSG_OUT : CW_MSG_IN;
		return 0;
	case C_ROLE:
		if (strcmp(s, "accepted") && strcmp(s, "connected"))
			return -1;
		m->role = !strcmp(s, "connected") ? CW_ROLE_CONNECTED
						  : CW_ROLE_ACCEPTED;
		return 0;
	}
	if (parse_u64(s, &v))
		return -1;
	if (c == C_START)
		m->start_ns = v;
	else if (c == C_END)
		m->end_ns = v;
	else if (c == C_BYTES)
		m->bytes = v;
	else if (v > UINT32_MAX)
		return -1;
	else if (c == C_CONN)
		m->conn = (uint32_t)v;
	else if (c == C_THREAD)
		m->thread = (uint32_t)v;
	else if (c == C_SEQ)
		m->seq = (uint32_t)v;
	else if (c == C_CTX_CONN)
		m->ctx_conn = (uint32_t)v;
	else if (c == C_CTX_SEQ)
		m->ctx_seq = (uint32_t)v;
	else if (c == C_CTX_OPEN)
		m->ctx_open = (uint32_t)v;
	else if (v > 1)
		return -1;
	else
		m->ctx_loop = (uint8_t)v;
	return 0;
}

static int msg_row(struct cw_traces *t, char **f, int nf, const int *at,
		   const char *what, size_t line)
{
	struct cw_msg m = {0};
	int c;

	for (c = 0; c < N_COLS; c++) {
		if (at[c] < 0)
			continue;
		if (at[c] >= nf)
			return cw_error("%s:%zu: missing column '%s'", what,
					line, msg_cols[c]);
		if ((c < C_NODE_PORT || c >= C_SEQ) &&
		    msg_field(t, &m, c, f[at[c]]))
			return cw_error("%s:%zu: bad %s '%s'", what, line,
					msg_cols[c], f[at[c]]);
	}
	if (at[C_END] < 0)
		m.end_ns = m.start_ns;
	if (m.end_ns < m.start_ns)
		return cw_error("%s:%zu: end_ns before start_ns", what, line);
	if (m.node == m.peer)
		return cw_error("%s:%zu: node '%s' talks to itself", what, line,
				t->names[m.node]);
	if (!m.conn)
		return cw_error("%s:%zu: conn must be a non-zero id", what,
				line);
	if (at[C_NODE_PORT] >= 0 && at[C_PEER_PORT] >= 0 &&
	    (c = msg_ends(t, &m, f, at)))
		return c < 0 ? -1
			     : cw_error("%s:%zu: bad node_port or peer_port, "
					"or conn above %u with them",
					what, line, MAX_ENDS_CONN);
	return cw_traces_add_msg(t, &m);
}

/* The header's columns into at[]; which are there says what is read. */
static int msg_header(struct cw_traces *t, char *line, int *at,
		      const char *what)
{
	char *f[32];
	int nf = cw_csv_split(line, f, 32, false), c;

	if (cw_csv_columns(f, nf > 32 ? 0 : nf, msg_cols, N_COLS, at, what))
		return -1;
	for (c = 0; c < N_COLS; c++)
		if (at[c] < 0 && c != C_END && c != C_BYTES && c != C_THREAD &&
		    c < C_NODE_PORT)
			return cw_error("%s:1: header has no '%s' column", what,
					msg_cols[c]);
	/* The context alone is no use (a file of `run --traces` from
	 * before it wrote seq): all four columns, or none read. */
	t->has_ctx = at[C_SEQ] >= 0 && at[C_CTX_CONN] >= 0 &&
		     at[C_CTX_SEQ] >= 0 && at[C_CTX_OPEN] >= 0;
	for (c = C_SEQ; !t->has_ctx && c < N_COLS; c++)
		at[c] = -1;
	return 0;
}

int cw_traces_read_csv(struct cw_traces *t, FILE *fp, const char *what)
{
	char *f[32];
	int at[N_COLS], nf, rc = 0, r;
	struct cw_csv c;

	if (cw_csv_open_header(&c, fp, what))
		return -1;
	rc = msg_header(t, c.buf, at, what);
	while (!rc && (r = cw_csv_next(&c)) != 0) {
		if (r < 0)
			rc = -1;
		else if (!c.buf[0])
			continue;
		else if ((nf = cw_csv_split(c.buf, f, 32, false)) > 32)
			rc = cw_error("%s:%zu: too many fields", what, c.line);
		else
			rc = msg_row(t, f, nf, at, what, c.line);
	}
	cw_csv_close(&c);
	if (!rc && !t->n_msgs)
		return cw_error("%s: no messages", what);
	return rc;
}
