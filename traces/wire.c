// SPDX-License-Identifier: MIT
/*
 * Traces input from the fleet: MsgWindow records (`causeway agent
 * --traces`, common/wire.h) from many hosts, from Kafka or a wire stream
 * file.  Nodes are named by address, as a capture names them, so the two
 * ends of a connection seen by agents on two hosts meet: a connection is
 * its 4-tuple, within one window (ranks of spans restart per window, so a
 * request one end's window cut and the other's did not misaligns only
 * that window).  Loopback and link-local connections are left out: their
 * addresses name no host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "traces/traces.h"

/* A connection by its ends, lower end first, in one window. */
struct wconn_key {
	uint64_t slot;
	struct cw_addr addr[2];
	uint16_t port[2];
};

struct wconn {
	uint32_t id;
	uint32_t host[2];   /* each end's host (index + 1; 0 unseen) */
	uint64_t cookie[2]; /* the socket seen at each end */
};

struct cw_traces_wire {
	struct cw_htab conns; /* wconn_key -> struct wconn */
	char (*hosts)[CW_HOST_LEN];
	size_t n_hosts, cap_hosts;
	uint32_t next_id;
};

static struct cw_traces_wire *wire_state(struct cw_traces *t)
{
	struct cw_traces_wire *w = t->wire;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	cw_htab_init(&w->conns, sizeof(struct wconn_key), sizeof(struct wconn));
	t->wire = w;
	return w;
}

void cw_traces_wire_done(struct cw_traces *t)
{
	struct cw_traces_wire *w = t->wire;

	if (!w)
		return;
	cw_htab_release(&w->conns);
	free(w->hosts);
	free(w);
	t->wire = NULL;
}

/* Few hosts per input: a linear search.  Index + 1, or 0 (no memory). */
static uint32_t host_id(struct cw_traces_wire *w, const char *host)
{
	size_t i;

	for (i = 0; i < w->n_hosts; i++)
		if (!strcmp(w->hosts[i], host))
			return (uint32_t)i + 1;
	if (CW_GROW(w->hosts, w->cap_hosts, w->n_hosts + 1, 16))
		return 0;
	snprintf(w->hosts[w->n_hosts], CW_HOST_LEN, "%s", host);
	return (uint32_t)++w->n_hosts;
}

/* The id both ends of s's connection share in this window; 0 on no
 * memory.  Another socket at an end that had one: a reused tuple. */
static uint32_t wconn_id(struct cw_traces *t, struct cw_traces_wire *w,
			 uint32_t host, uint64_t slot,
			 const struct cw_wire_msock *s, bool *created)
{
	int lo = cw_addr_cmp(&s->laddr, &s->raddr) < 0 ||
		 (!cw_addr_cmp(&s->laddr, &s->raddr) && s->lport <= s->rport);
	int end = !lo; /* s's own end: 0 when it is the lower */
	struct wconn_key k;
	struct wconn *c;

	memset(&k, 0, sizeof(k));
	k.slot = slot;
	k.addr[end] = s->laddr, k.port[end] = s->lport;
	k.addr[!end] = s->raddr, k.port[!end] = s->rport;
	c = cw_htab_upsert(&w->conns, &k, created);
	if (!c)
		return 0;
	if (*created || (c->host[end] && (c->host[end] != host ||
					  c->cookie[end] != s->cookie))) {
		memset(c, 0, sizeof(*c));
		c->id = ++w->next_id;
		*created = true;
	}
	c->host[end] = host;
	c->cookie[end] = s->cookie;
	(void)t;
	return c->id;
}

/*
 * The connection id of socket s (recorded at host), and its node and
 * peer; 1 when it is left out (loopback, link-local or unnamed), 0, or -1
 * on no memory.
 */
static int wire_sock(struct cw_traces *t, struct cw_traces_wire *w,
		     uint32_t host, uint64_t slot, const struct cw_wire_msock *s,
		     struct cw_msg *m)
{
	char a[INET6_ADDRSTRLEN + 8], b[INET6_ADDRSTRLEN + 8];
	bool client = s->role == CW_REC_ROLE_CLIENT, created = false;
	int node, peer;

	if (cw_addr_is_local(&s->laddr) || cw_addr_is_local(&s->raddr) ||
	    !cw_addr_cmp(&s->laddr, &s->raddr) || !s->laddr.family)
		return 1;
	node = cw_traces_node(t, cw_addr_str(&s->laddr, a, sizeof(a)));
	peer = cw_traces_node(t, cw_addr_str(&s->raddr, b, sizeof(b)));
	if (node < 0 || peer < 0)
		return cw_error("out of memory for node names");
	m->conn = wconn_id(t, w, host, slot, s, &created);
	if (!m->conn)
		return cw_error("out of memory for connections");
	if (created &&
	    (client ? cw_traces_set_ends(t, m->conn, (uint32_t)node, s->lport,
					 (uint32_t)peer, s->rport)
		    : cw_traces_set_ends(t, m->conn, (uint32_t)peer, s->rport,
					 (uint32_t)node, s->lport)))
		return -1;
	m->node = (uint32_t)node;
	m->peer = (uint32_t)peer;
	m->role = client ? CW_ROLE_CONNECTED : CW_ROLE_ACCEPTED;
	return 0;
}

/* One message; 1 when it is left out, 0 added, -1 on no memory. */
static int wire_msg(struct cw_traces *t, struct cw_traces_wire *w,
		    uint32_t host, const struct cw_wire_msgs *r,
		    const struct cw_wire_mmsg *wm)
{
	struct cw_msg m = {0}, ctx = {0};
	int rc = wire_sock(t, w, host, r->slot_ns, &r->socks[wm->sock], &m);

	if (rc)
		return rc;
	/* The request the calling thread served: its connection's id (a
	 * request over loopback has none here). */
	if (wm->ctx && wm->ctx <= r->nsocks &&
	    (rc = wire_sock(t, w, host, r->slot_ns, &r->socks[wm->ctx - 1],
			    &ctx)) < 0)
		return -1;
	if (wm->ctx && !rc && ctx.conn && ctx.node == m.node) {
		m.ctx_conn = ctx.conn;
		m.ctx_seq = wm->ctx_seq;
		m.ctx_loop = wm->ctx_loop;
	}
	m.ctx_open = wm->ctx_open;
	m.seq = wm->seq;
	m.start_ns = wm->start_ns;
	m.end_ns = wm->end_ns;
	m.bytes = wm->bytes;
	m.thread = wm->tid;
	m.dir = wm->out ? CW_MSG_OUT : CW_MSG_IN;
	return cw_traces_add_msg(t, &m);
}

int cw_traces_add_wire(struct cw_traces *t, const struct cw_wire_msgs *r)
{
	struct cw_traces_wire *w = wire_state(t);
	uint32_t host;
	size_t i;
	int rc;

	if (!w || !(host = host_id(w, r->host)))
		return cw_error("out of memory for the fleet's messages");
	t->wire_records++;
	t->wire_lost += r->lost;
	t->has_ctx = true;
	for (i = 0; i < r->n; i++) {
		if (r->msgs[i].sock >= r->nsocks)
			continue; /* the decoder refuses these */
		rc = wire_msg(t, w, host, r, &r->msgs[i]);
		if (rc < 0)
			return -1;
		t->wire_left_out += rc;
	}
	t->wire_hosts = w->n_hosts;
	return 0;
}

/* Every MsgWindow record of a wire stream file; other kinds skipped. */
int cw_traces_read_wire(struct cw_traces *t, FILE *fp, const char *what)
{
	static struct cw_wire_msg m; /* large: off the stack */
	struct cw_wire_reader rd;
	const uint8_t *p;
	char err[160];
	size_t len;
	int r, rc = 0, kind;

	if (cw_wire_reader_init(&rd, fp, err, sizeof(err)))
		return cw_error("%s: %s", what, err);
	while (!rc && (r = cw_wire_reader_next(&rd, &p, &len)) != 0) {
		if (r == CW_WIRE_RCRC) {
			cw_warn("%s: a damaged frame skipped", what);
			continue;
		}
		if (r < 0) {
			rc = cw_error("%s: unreadable past offset %llu", what,
				      (unsigned long long)rd.offset);
			break;
		}
		kind = cw_wire_decode(p, len, &m, err, sizeof(err));
		if (kind == CW_WIRE_MSGS)
			rc = cw_traces_add_wire(t, &m.msgs);
		cw_wire_msg_release(&m);
	}
	cw_wire_reader_release(&rd);
	if (!rc && !t->n_msgs)
		return cw_error("%s: no messages (no MsgWindow records from "
				"'causeway agent --traces')",
				what);
	return rc;
}
