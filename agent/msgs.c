// SPDX-License-Identifier: MIT
/*
 * Loader for bpf/msgs.bpf.c: per-message observations with their thread
 * and the request that thread serves, attached only while a window is
 * open (agent.h, "per-message observations").  Socket identities arrive
 * on the ring before the socket's messages; they are kept by cookie for
 * the attachment, so each message is handed out with its socket and, for
 * a call, the socket of the request its thread was serving.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bpf/msgs.h"
#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "msgs.skel.h"

_Static_assert((int)CW_MSGS_DIR_IN == (int)CW_MSGS_IN &&
		       (int)CW_MSGS_DIR_OUT == (int)CW_MSGS_OUT,
	       "directions differ between agent.h and bpf/msgs.h");
_Static_assert((int)CW_MSGS_ROLE_ACCEPTED == (int)CW_MSGS_ACCEPTED &&
		       (int)CW_MSGS_ROLE_CONNECTED == (int)CW_MSGS_CONNECTED,
	       "roles differ between agent.h and bpf/msgs.h");

struct cw_msgs {
	struct msgs_bpf *skel;
	struct bpf_link *send, *recv, *state, *wake, *flush;
	struct ring_buffer *rb;
	int64_t mono_to_real;
	/* Per attachment: cookie -> struct cw_msgs_sock, and a socket's
	 * ends (struct end_key) -> its cookie. */
	struct cw_htab socks, ends;
	struct cw_msgs_stats st;
	cw_msgs_fn fn; /* while handing out */
	void *ctx;
	int stop;
};

/* A socket by its own end and its peer's, in its namespace. */
struct end_key {
	uint32_t netns;
	uint16_t lport, rport;
	struct cw_addr laddr, raddr;
	uint8_t pad[2];
};

static void end_key(struct end_key *k, const struct cw_msgs_sock *s,
		    bool reverse)
{
	memset(k, 0, sizeof(*k));
	k->netns = s->netns;
	k->lport = reverse ? s->rport : s->lport;
	k->rport = reverse ? s->lport : s->rport;
	k->laddr = reverse ? s->raddr : s->laddr;
	k->raddr = reverse ? s->laddr : s->raddr;
}

static void socks_reset(struct cw_msgs *m)
{
	cw_htab_release(&m->socks);
	cw_htab_release(&m->ends);
	cw_htab_init(&m->socks, sizeof(__u64), sizeof(struct cw_msgs_sock));
	cw_htab_init(&m->ends, sizeof(struct end_key), sizeof(uint64_t));
}

const struct cw_msgs_sock *cw_msgs_peer(const struct cw_msgs *m,
					const struct cw_msgs_sock *s)
{
	struct end_key k;
	uint64_t *cookie;

	end_key(&k, s, true);
	cookie = cw_htab_get(&m->ends, &k);
	return cookie ? cw_htab_get(&m->socks, cookie) : NULL;
}

static uint64_t to_real(const struct cw_msgs *m, uint64_t mono)
{
	return (uint64_t)((int64_t)mono + m->mono_to_real);
}

static void on_sock(struct cw_msgs *m, const struct cw_msgs_sock_ev *e)
{
	int af = e->family == AF_INET6 ? AF_INET6 : AF_INET;
	struct cw_msgs_sock *s;
	struct end_key k;
	uint64_t *end;
	bool created;

	s = cw_htab_upsert(&m->socks, &e->cookie, &created);
	if (!s) {
		m->st.unknown_sock++; /* out of memory: its messages too */
		return;
	}
	s->cookie = e->cookie;
	s->netns = e->netns;
	s->tgid = e->tgid;
	cw_addr_from_raw(&s->laddr, af, e->laddr);
	cw_addr_from_raw(&s->raddr, af, e->raddr);
	s->lport = e->lport;
	s->rport = e->rport;
	s->role = e->role;
	s->role_seen = e->role_seen;
	m->st.sockets++;
	end_key(&k, s, false);
	end = cw_htab_upsert(&m->ends, &k, &created);
	if (end)
		*end = e->cookie;
}

static void on_msg(struct cw_msgs *m, const struct cw_msgs_msg_ev *e)
{
	struct cw_msgs_obs o = {0};

	o.sock = cw_htab_get(&m->socks, &e->cookie);
	if (!o.sock) {
		m->st.unknown_sock++;
		return;
	}
	if (e->ctx_cookie)
		o.ctx = cw_htab_get(&m->socks, &e->ctx_cookie);
	o.ctx_seq = o.ctx ? e->ctx_seq : 0;
	o.ctx_open = e->ctx_open;
	o.ctx_loop = o.ctx && e->ctx_loop;
	o.start_ns = to_real(m, e->start_ns);
	o.end_ns = to_real(m, e->end_ns);
	o.bytes = e->bytes;
	o.tid = e->tid;
	o.seq = e->seq;
	o.dir = e->dir;
	m->st.messages++;
	if (m->fn && !m->stop)
		m->stop = m->fn(&o, m->ctx);
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct cw_msgs *m = ctx;
	const __u32 *kind = data;

	if (len >= sizeof(struct cw_msgs_sock_ev) && *kind == CW_MSGS_SOCK)
		on_sock(m, data);
	else if (len >= sizeof(struct cw_msgs_msg_ev) && *kind == CW_MSGS_MSG)
		on_msg(m, data);
	return 0;
}

static int attach_flush(struct cw_msgs *m)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info info = {};

	info.map.map_fd = bpf_map__fd(m->skel->maps.socks);
	opts.link_info = &info;
	opts.link_info_len = sizeof(info);
	m->flush =
		bpf_program__attach_iter(m->skel->progs.cw_msgs_flush, &opts);
	if (!m->flush)
		return cw_error("unable to attach the message flush iterator: "
				"%s",
				strerror(errno));
	return 0;
}

int cw_msgs_open(struct cw_msgs **out, const struct cw_msgs_opts *o)
{
	struct cw_msgs *m = calloc(1, sizeof(*m));
	int err;

	*out = NULL;
	if (!m)
		return cw_error("out of memory");
	socks_reset(m);
	m->skel = msgs_bpf__open();
	if (!m->skel) {
		err = cw_error("unable to open the message programs: %s",
			       strerror(errno));
		goto fail;
	}
	m->skel->rodata->target_netns = o->netns;
	m->skel->rodata->self_tgid = (__u32)getpid();
	err = msgs_bpf__load(m->skel);
	if (err) {
		err = cw_error("unable to load the message programs: %s",
			       strerror(-err));
		goto fail;
	}
	m->rb = ring_buffer__new(bpf_map__fd(m->skel->maps.events), on_event, m,
				 NULL);
	if (!m->rb) {
		err = cw_error("unable to open the message ring: %s",
			       strerror(errno));
		goto fail;
	}
	err = attach_flush(m);
	if (err)
		goto fail;
	m->mono_to_real = cw_mono_to_real_offset();
	*out = m;
	return 0;
fail:
	cw_msgs_close(m);
	return err;
}

static int attach_one(struct bpf_program *p, struct bpf_link **link)
{
	*link = bpf_program__attach(p);
	if (!*link)
		return cw_error("unable to attach '%s': %s",
				bpf_program__name(p), strerror(errno));
	return 0;
}

static void detach_calls(struct cw_msgs *m)
{
	bpf_link__destroy(m->send);
	bpf_link__destroy(m->recv);
	bpf_link__destroy(m->state);
	bpf_link__destroy(m->wake);
	m->send = m->recv = m->state = m->wake = NULL;
}

int cw_msgs_attach(struct cw_msgs *m)
{
	if (m->send)
		return 0;
	/* A new attachment: the kernel's state of the last one is stale. */
	m->skel->bss->gen++;
	socks_reset(m);
	m->mono_to_real = cw_mono_to_real_offset();
	if (attach_one(m->skel->progs.cw_msgs_state, &m->state) ||
	    attach_one(m->skel->progs.cw_msgs_send, &m->send) ||
	    attach_one(m->skel->progs.cw_msgs_recv, &m->recv) ||
	    attach_one(m->skel->progs.cw_msgs_wake, &m->wake)) {
		detach_calls(m);
		return -1;
	}
	m->st.attaches++;
	return 0;
}

bool cw_msgs_attached(const struct cw_msgs *m)
{
	return m && m->send;
}

int cw_msgs_poll(struct cw_msgs *m, cw_msgs_fn fn, void *ctx)
{
	m->fn = fn, m->ctx = ctx, m->stop = 0;
	if (ring_buffer__consume(m->rb) < 0 && errno != EINTR)
		return cw_error("unable to read the message ring: %s",
				strerror(errno));
	m->fn = NULL;
	return m->stop ? -1 : 0;
}

/* Every socket's message in progress, from the flush iterator. */
static int run_flush(struct cw_msgs *m)
{
	struct cw_msgs_msg_ev ev[64];
	ssize_t n, i;
	int fd = bpf_iter_create(bpf_link__fd(m->flush));

	if (fd < 0)
		return cw_error("unable to start the message flush: %s",
				strerror(errno));
	/* The iterator writes whole records; a read returns whole ones. */
	while ((n = read(fd, ev, sizeof(ev))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return cw_error("message flush failed: %s",
					strerror(e));
		}
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
			on_msg(m, &ev[i]);
	}
	close(fd);
	return 0;
}

static void read_stats(struct cw_msgs *m)
{
	int ncpu = libbpf_num_possible_cpus(), fd, i;
	__u64 *v, sum[CW_MSGS_STAT_MAX] = {0};
	__u32 k;

	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	fd = bpf_map__fd(m->skel->maps.stats);
	for (k = 0; k < CW_MSGS_STAT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, v))
			continue;
		for (i = 0; i < ncpu; i++)
			sum[k] += v[i];
	}
	free(v);
	m->st.lost = sum[CW_MSGS_STAT_LOST];
	m->st.storage_fail = sum[CW_MSGS_STAT_STORAGE_FAIL];
	m->st.thread_full = sum[CW_MSGS_STAT_THREAD_FULL];
}

int cw_msgs_detach(struct cw_msgs *m, cw_msgs_fn fn, void *ctx)
{
	int err;

	if (!m->send)
		return 0;
	detach_calls(m);
	err = cw_msgs_poll(m, fn, ctx);
	m->fn = fn, m->ctx = ctx;
	if (!err)
		err = run_flush(m);
	m->fn = NULL;
	read_stats(m);
	return err || m->stop ? -1 : 0;
}

void cw_msgs_stats(const struct cw_msgs *m, struct cw_msgs_stats *st)
{
	*st = m->st;
}

void cw_msgs_close(struct cw_msgs *m)
{
	if (!m)
		return;
	detach_calls(m);
	bpf_link__destroy(m->flush);
	ring_buffer__free(m->rb);
	msgs_bpf__destroy(m->skel);
	cw_htab_release(&m->socks);
	cw_htab_release(&m->ends);
	free(m);
}

/* ---- causeway run --traces: the messages CSV of causeway-traces(1) ---- */

/* A connection by its ends, lower end first; namespaced when local. */
struct trace_conn_key {
	uint32_t netns; /* 0 unless an address is loopback or link-local */
	uint16_t port[2];
	struct cw_addr addr[2];
	uint8_t pad[2];
};

struct trace_conn {
	uint32_t id;
	uint32_t tgid[2];   /* each end's process */
	uint64_t cookie[2]; /* the socket seen at each end */
};

#define TRACE_NAME_LEN (INET6_ADDRSTRLEN + 16)

/* A socket's connection id and its node names, formatted once. */
struct trace_sock {
	uint32_t conn;
	bool named; /* the names are final */
	char node[TRACE_NAME_LEN], peer[TRACE_NAME_LEN];
};

struct cw_msgs_trace {
	struct cw_msgs *m;
	struct cw_outfile of;
	struct cw_htab conns; /* trace_conn_key -> struct trace_conn */
	struct cw_htab socks; /* cookie -> struct trace_sock */
	uint32_t next_id;
	uint64_t rows;
	uint64_t left_out; /* rows: both ends one node, or a peer unnamed */
	uint64_t window_ns, every_ns;
	pthread_t thread;
	bool running;
	volatile int stop;
	int err;
};

static const char trace_header[] =
	"start_ns,end_ns,node,peer,conn,dir,role,bytes,thread,node_port,"
	"peer_port,ctx_conn,ctx_seq,ctx_open,pid,seq,ctx_loop\n";

/*
 * The id both ends of s's connection share.  A tuple seen again with a
 * new socket at an end that had another is a new connection on a reused
 * tuple; it gets an id of its own.  0 when out of memory.
 */
/* The connection's key, and which end of it s is (0 the lower). */
static int trace_conn_key(const struct cw_msgs_sock *s,
			  struct trace_conn_key *k)
{
	int lo = cw_addr_cmp(&s->laddr, &s->raddr) < 0 ||
		 (!cw_addr_cmp(&s->laddr, &s->raddr) && s->lport <= s->rport);

	memset(k, 0, sizeof(*k));
	k->addr[!lo] = s->laddr, k->port[!lo] = s->lport;
	k->addr[lo] = s->raddr, k->port[lo] = s->rport;
	if (cw_addr_is_local(&s->laddr) || cw_addr_is_local(&s->raddr))
		k->netns = s->netns;
	return !lo;
}

/* s's entry, made with its connection's id on first sight; NULL when
 * out of memory.  Valid until the next call. */
static struct trace_sock *trace_sock_of(struct cw_msgs_trace *tr,
					const struct cw_msgs_sock *s)
{
	struct trace_conn_key k;
	struct trace_sock *ts;
	struct trace_conn *c;
	bool created;
	int lo;

	ts = cw_htab_get(&tr->socks, &s->cookie);
	if (ts)
		return ts;
	lo = !trace_conn_key(s, &k);
	c = cw_htab_upsert(&tr->conns, &k, &created);
	if (!c)
		return NULL;
	if (created || (c->cookie[!lo] && c->cookie[!lo] != s->cookie)) {
		memset(c, 0, sizeof(*c));
		c->id = ++tr->next_id;
	}
	c->cookie[!lo] = s->cookie;
	c->tgid[!lo] = s->tgid;
	ts = cw_htab_upsert(&tr->socks, &s->cookie, &created);
	if (ts)
		ts->conn = c->id;
	return ts;
}

/*
 * Nodes by address, as a capture names them.  A connection from an
 * address to itself (loopback) names each end ADDR[PID] by its process,
 * so a service's requests and calls over loopback stay one node; while
 * the peer has not been seen, the socket stays unnamed (and its rows are
 * left out).
 */
static void trace_names(struct cw_msgs_trace *tr, const struct cw_msgs_sock *s,
			struct trace_sock *ts)
{
	char a[INET6_ADDRSTRLEN];
	const struct cw_msgs_sock *p;
	struct trace_conn_key k;
	struct trace_conn *c;
	uint32_t tgid;
	int end;

	cw_addr_str(&s->laddr, ts->node, sizeof(ts->node));
	cw_addr_str(&s->raddr, ts->peer, sizeof(ts->peer));
	ts->named = true;
	if (cw_addr_cmp(&s->laddr, &s->raddr))
		return;
	cw_addr_str(&s->laddr, a, sizeof(a));
	end = trace_conn_key(s, &k);
	c = cw_htab_get(&tr->conns, &k);
	snprintf(ts->node, sizeof(ts->node), "%s[%u]", a, s->tgid);
	p = cw_msgs_peer(tr->m, s);
	tgid = c && c->tgid[!end] ? c->tgid[!end] : p ? p->tgid : 0;
	ts->named = tgid;
	snprintf(ts->peer, sizeof(ts->peer), "%s[%u]", a, tgid);
}

static int trace_row(const struct cw_msgs_obs *o, void *arg)
{
	struct cw_msgs_trace *tr = arg;
	struct trace_sock *ts;
	uint32_t ctx = 0;

	if (o->ctx) {
		ts = trace_sock_of(tr, o->ctx);
		if (!ts)
			return cw_error("out of memory for connection ids");
		ctx = ts->conn;
	}
	ts = trace_sock_of(tr, o->sock);
	if (!ts)
		return cw_error("out of memory for connection ids");
	if (!ts->named)
		trace_names(tr, o->sock, ts);
	/* A process calling itself is no hop; a loopback peer not seen yet
	 * has no name, and a name that changed later would split the
	 * connection's rows between two peers. */
	if (!ts->named || !strcmp(ts->node, ts->peer)) {
		tr->left_out++;
		return 0;
	}
	if (fprintf(tr->of.fp,
		    "%llu,%llu,%s,%s,%u,%s,%s,%llu,%u,%u,%u,%u,%u,%u,%u,%u,%d\n",
		    (unsigned long long)o->start_ns,
		    (unsigned long long)o->end_ns, ts->node, ts->peer, ts->conn,
		    o->dir == CW_MSGS_DIR_OUT ? "out" : "in",
		    o->sock->role == CW_MSGS_ROLE_CONNECTED ? "connected"
							    : "accepted",
		    (unsigned long long)o->bytes, o->tid, o->sock->lport,
		    o->sock->rport, ctx, o->ctx_seq, o->ctx_open,
		    o->sock->tgid, o->seq, o->ctx_loop) < 0)
		return cw_error("unable to write '%s': %s", tr->of.path,
				strerror(errno));
	tr->rows++;
	return 0;
}

/* One turn of the recorder: a window opened or closed, messages out. */
static int trace_turn(struct cw_msgs_trace *tr, struct cw_timing_sched *ts,
		      uint64_t *win_end)
{
	uint64_t now = cw_now_real_ns();

	if (tr->window_ns && cw_msgs_attached(tr->m) && now >= *win_end) {
		if (cw_msgs_detach(tr->m, trace_row, tr))
			return -1;
		cw_timing_sched_closed(ts);
	}
	if (tr->window_ns && !cw_msgs_attached(tr->m) &&
	    cw_timing_sched_due(ts, now)) {
		*win_end = ts->slot + tr->window_ns;
		if (cw_msgs_attach(tr->m))
			return -1;
	}
	return cw_msgs_poll(tr->m, trace_row, tr);
}

static void *trace_main(void *arg)
{
	struct cw_msgs_trace *tr = arg;
	struct cw_timing_sched ts;
	struct timespec nap = {0, 20 * 1000 * 1000};
	uint64_t win_end = 0;

	cw_timing_sched_init(&ts, tr->window_ns, tr->every_ns, cw_now_real_ns(),
			     true);
	while (!tr->stop && !tr->err) {
		tr->err = trace_turn(tr, &ts, &win_end);
		nanosleep(&nap, NULL);
	}
	if (!tr->err)
		tr->err = cw_msgs_detach(tr->m, trace_row, tr);
	return NULL;
}

void cw_msgs_trace_abort(struct cw_msgs_trace *tr)
{
	if (!tr)
		return;
	if (tr->running) {
		tr->stop = 1;
		pthread_join(tr->thread, NULL);
	}
	cw_msgs_close(tr->m);
	if (tr->of.fp)
		cw_outfile_abort(&tr->of);
	cw_htab_release(&tr->conns);
	cw_htab_release(&tr->socks);
	free(tr);
}

int cw_msgs_trace_start(struct cw_msgs_trace **out, const char *path,
			const struct cw_msgs_opts *o, uint64_t window_ns,
			uint64_t every_ns)
{
	struct cw_msgs_trace *tr = calloc(1, sizeof(*tr));
	int err;

	*out = NULL;
	if (!tr)
		return cw_error("out of memory");
	cw_htab_init(&tr->conns, sizeof(struct trace_conn_key),
		     sizeof(struct trace_conn));
	cw_htab_init(&tr->socks, sizeof(uint64_t), sizeof(struct trace_sock));
	tr->window_ns = window_ns;
	tr->every_ns = every_ns;
	if (cw_outfile_open(&tr->of, path) || cw_msgs_open(&tr->m, o) ||
	    fputs(trace_header, tr->of.fp) < 0)
		goto fail;
	/* No windows: attached from now, so the run sees every message. */
	if (!window_ns && cw_msgs_attach(tr->m))
		goto fail;
	err = pthread_create(&tr->thread, NULL, trace_main, tr);
	if (err) {
		cw_error("unable to start the message recorder: %s",
			 strerror(err));
		goto fail;
	}
	tr->running = true;
	*out = tr;
	return 0;
fail:
	cw_msgs_trace_abort(tr);
	return -1;
}

int cw_msgs_trace_finish(struct cw_msgs_trace *tr)
{
	struct cw_msgs_stats st;
	int err;

	tr->stop = 1;
	pthread_join(tr->thread, NULL);
	tr->running = false;
	err = tr->err;
	cw_msgs_stats(tr->m, &st);
	if (!err && !tr->rows)
		cw_warn("no message was seen: '%s' has its header only",
			tr->of.path);
	cw_info("traces: %llu messages on %llu sockets in %llu windows "
		"(%llu left out: within one process, or a loopback peer not "
		"seen); lost: %llu events (ring "
		"full), %llu unknown sockets, %llu "
		"storage failures, %llu thread contexts",
		(unsigned long long)tr->rows, (unsigned long long)st.sockets,
		(unsigned long long)st.attaches,
		(unsigned long long)tr->left_out, (unsigned long long)st.lost,
		(unsigned long long)st.unknown_sock,
		(unsigned long long)st.storage_fail,
		(unsigned long long)st.thread_full);
	if (!err)
		err = cw_outfile_commit(&tr->of);
	cw_msgs_trace_abort(tr);
	return err ? -1 : 0;
}
