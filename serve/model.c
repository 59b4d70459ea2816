// SPDX-License-Identifier: MIT
/*
 * The one file of serve/ that calls the correlator and graph APIs: records
 * go into a pairing and per-window totals; a graph and its views are built
 * when asked for after a change, and every answer is copied out as a
 * serve_graph so that nothing outside this file holds their pointers.
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/htab.h"
#include "common/log.h"
#include "common/record_read.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"
#include "serve/serve_int.h"

#define NVIEWS CW_SERVE_BY_N

/* What records make: kept whole, swapped in at once on a reload. */
struct state {
	struct cw_pairing pairing;
	struct cw_windows windows;
	struct cw_resources res; /* the agents' host and process metadata */
	struct cw_peer_names names; /* their DnsName records (--dns) */
	struct cw_htab agents;	 /* host name -> nothing */
	uint64_t files, records, bad;
};

struct serve_model {
	pthread_mutex_t lock;
	uint64_t window_ns;
	struct state s;
	bool built; /* g, cells and the views below reflect s */
	struct cw_graph g;
	struct cw_edge_windows cells; /* s's windows on g's edges */
	struct cw_view views[NVIEWS];
	bool have_view[NVIEWS];
	struct serve_stats st;
};

static const enum cw_group_by group_of_by[NVIEWS] = {
	[CW_SERVE_BY_PROCESS] = CW_BY_PROCESS,
	[CW_SERVE_BY_CMDLINE] = CW_BY_CMDLINE,
	[CW_SERVE_BY_CONTAINER] = CW_BY_CONTAINER,
	[CW_SERVE_BY_HOST] = CW_BY_HOST,
	[CW_SERVE_BY_POD] = CW_BY_POD,
	[CW_SERVE_BY_WORKLOAD] = CW_BY_WORKLOAD,
};

enum cw_group_by serve_group_by(enum cw_serve_by by)
{
	return group_of_by[by];
}

static void state_init(struct state *s, uint64_t window_ns)
{
	memset(s, 0, sizeof(*s));
	cw_pairing_init(&s->pairing);
	cw_windows_init(&s->windows, window_ns);
	cw_resources_init(&s->res);
	cw_peer_names_init(&s->names, 0);
	cw_htab_init(&s->agents, CW_HOST_LEN, 1);
}

static void state_release(struct state *s)
{
	cw_pairing_release(&s->pairing);
	cw_windows_release(&s->windows);
	cw_resources_release(&s->res);
	cw_peer_names_release(&s->names);
	cw_htab_release(&s->agents);
}

static int state_add(struct state *s, const struct cw_conn_record *r, size_t n)
{
	char key[CW_HOST_LEN];
	bool created;
	size_t i;

	if (cw_pairing_add_many(&s->pairing, r, n))
		return -1;
	for (i = 0; i < n; i++) {
		if (cw_windows_add(&s->windows, &r[i]))
			return -1;
		if (i && !strcmp(r[i].host, r[i - 1].host))
			continue;
		memset(key, 0, sizeof(key));
		snprintf(key, sizeof(key), "%s", r[i].host);
		if (!cw_htab_upsert(&s->agents, key, &created))
			return -1;
	}
	s->records += n;
	return 0;
}

/* The graph and views no longer match the records. */
static void invalidate(struct serve_model *m)
{
	size_t i;

	for (i = 0; i < NVIEWS; i++)
		if (m->have_view[i])
			cw_view_release(&m->views[i]);
	memset(m->views, 0, sizeof(m->views));
	memset(m->have_view, 0, sizeof(m->have_view));
	if (m->built) {
		cw_graph_release(&m->g);
		cw_edge_windows_release(&m->cells);
	}
	m->built = false;
}

struct serve_model *serve_model_new(uint64_t window_ns)
{
	struct serve_model *m = calloc(1, sizeof(*m));

	if (!m) {
		cw_error("out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->window_ns = window_ns;
	state_init(&m->s, window_ns);
	return m;
}

void serve_model_free(struct serve_model *m)
{
	if (!m)
		return;
	invalidate(m);
	state_release(&m->s);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int on_records(const struct cw_conn_record *r, size_t n, void *arg)
{
	return state_add(arg, r, n) ? cw_error("out of memory") : 0;
}

static int on_meta(const struct cw_wire_msg *msg, void *arg)
{
	struct state *s = arg;

	if (msg->kind == CW_WIRE_DNS && cw_peer_names_add(&s->names, &msg->dns))
		return cw_error("out of memory for names");
	if (cw_resources_add(&s->res, msg))
		return cw_error("out of memory for process metadata");
	return 0;
}

int serve_model_load_files(struct serve_model *m, char *const *paths, size_t n,
			   bool skip_bad)
{
	struct cw_record_read_stats rs;
	struct state s;

	state_init(&s, m->window_ns);
	if (cw_record_read_files_meta(paths, n, skip_bad, on_records, on_meta,
				      &s, &rs)) {
		state_release(&s);
		return -1;
	}
	s.files = rs.files;
	s.bad = rs.bad;
	pthread_mutex_lock(&m->lock);
	invalidate(m);
	state_release(&m->s);
	m->s = s;
	m->st.loads++;
	m->st.loaded_ns = cw_now_real_ns();
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int serve_model_add(struct serve_model *m, const struct cw_conn_record *r,
		    size_t n)
{
	int err;

	pthread_mutex_lock(&m->lock);
	invalidate(m);
	err = state_add(&m->s, r, n);
	m->st.loaded_ns = cw_now_real_ns();
	pthread_mutex_unlock(&m->lock);
	return err ? cw_error("out of memory") : 0;
}

int serve_model_add_meta(struct serve_model *m, const struct cw_wire_msg *msg)
{
	int err;

	pthread_mutex_lock(&m->lock);
	invalidate(m);
	err = on_meta(msg, &m->s);
	m->st.loaded_ns = cw_now_real_ns();
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* Under the lock: the view for `by`, built if the records changed. */
static struct cw_view *view_for(struct serve_model *m, enum cw_serve_by by)
{
	if (!m->built) {
		cw_graph_init(&m->g);
		/* the windows' deltas go on the edges pairing chose */
		if (cw_pairing_graph(&m->s.pairing, &m->g) ||
		    cw_windows_place(&m->s.windows, &m->g, &m->s.pairing) ||
		    cw_windows_by_edge(&m->s.windows, &m->cells)) {
			cw_graph_release(&m->g);
			cw_error("out of memory pairing connection ends");
			return NULL;
		}
		/* Resources and identities, as `causeway graph` gives them. */
		cw_graph_set_resources(&m->g, &m->s.res);
		cw_peer_names_apply(&m->s.names, &m->g); /* labels: DNS names */
		m->built = true;
	}
	if (!m->have_view[by]) {
		if (cw_view_build(&m->views[by], &m->g, group_of_by[by],
				  &m->cells))
			return NULL;
		m->have_view[by] = true;
	}
	return &m->views[by];
}

/*
 * The health of a view edge as the graph summed it, or NULL (none known,
 * or out of memory: the edge is then shown without).
 */
static struct cw_edge_health *view_health(const struct cw_view_edge *e)
{
	return cw_edge_health_dup(e->h);
}

static uint64_t edge_bytes(const struct serve_edge *e)
{
	return cw_count_add(e->bytes_c2s, e->bytes_s2c);
}

/* Every view edge's traffic, all of it or only inside [since, until). */
static struct serve_edge *edge_totals(const struct cw_view *v,
				      const struct cw_serve_query *q)
{
	struct serve_edge *t = calloc(v->ne + 1, sizeof(*t));
	size_t i;

	if (!t)
		return NULL;
	for (i = 0; i < v->ne; i++) {
		const struct cw_view_edge *e = &v->e[i];

		t[i] = (struct serve_edge){
			.from = e->from,
			.to = e->to,
			.conns = e->conns,
			.paired = e->paired,
			.first_ns = e->first_ns,
			.last_ns = e->last_ns,
			.health = view_health(e),
		};
		if (q->has_since)
			continue;
		t[i].bytes_c2s = e->bytes_c2s, t[i].bytes_s2c = e->bytes_s2c;
		t[i].msgs_c2s = e->msgs_c2s, t[i].msgs_s2c = e->msgs_s2c;
		t[i].sampled_bytes = e->sampled_bytes;
		t[i].msgs_est = e->est_conns > 0;
		t[i].has_sampled = e->has_sampled;
	}
	for (i = 0; q->has_since && i < v->nwin; i++) {
		const struct cw_view_window *w = &v->win[i];

		if (w->start_ns >= q->until_ns ||
		    w->start_ns + v->window_ns <= q->since_ns)
			continue;
		t[w->edge].bytes_c2s =
			cw_count_add(t[w->edge].bytes_c2s, w->bytes_c2s);
		t[w->edge].bytes_s2c =
			cw_count_add(t[w->edge].bytes_s2c, w->bytes_s2c);
		t[w->edge].msgs_c2s =
			cw_count_add(t[w->edge].msgs_c2s, w->msgs_c2s);
		t[w->edge].msgs_s2c =
			cw_count_add(t[w->edge].msgs_s2c, w->msgs_s2c);
		t[w->edge].sampled_bytes = cw_count_add(
			t[w->edge].sampled_bytes, w->sampled_bytes);
		t[w->edge].msgs_est |= w->msgs_est;
		t[w->edge].has_sampled |= w->has_sampled;
	}
	/* An edge silent in the range is not in its graph. */
	for (i = 0; q->has_since && i < v->ne; i++)
		if (!edge_bytes(&t[i]))
			t[i].conns = t[i].paired = 0;
	return t;
}

/* A node's traffic, in and out, saturating as every sum of counters. */
static void node_add(struct serve_node *n, uint64_t in, uint64_t out)
{
	n->bytes_in = cw_count_add(n->bytes_in, in);
	n->bytes_out = cw_count_add(n->bytes_out, out);
}

static int copy_vertex(const struct cw_view *v, size_t i,
		       struct serve_node *out)
{
	const struct cw_view_vertex *x = &v->v[i];
	const struct cw_node *n = x->node;
	bool ext = n->kind == CW_NODE_EXTERNAL;
	bool by_host = v->by == CW_BY_HOST;
	char addr[64];

	memset(out, 0, sizeof(*out));
	out->external = ext;
	out->kind = cw_node_kind_name(n->kind);
	out->members = x->members;
	out->usage = x->usage;
	if (n->kind == CW_NODE_PROCESS) {
		out->proc = malloc(sizeof(*out->proc));
		if (!out->proc)
			return -1;
		*out->proc = n->proc;
	}
	out->name = strdup(x->name);
	out->label = strdup(x->label);
	/* A group spread over hosts has none.  An external peer's address
	 * from the node: its label may be its DNS name. */
	out->host = ext ? strdup(cw_addr_str(&n->addr, addr, sizeof(addr)))
		    : x->same_host ? strdup(n->host)
				   : strdup("");
	out->dns_name = strdup(ext ? n->name : "");
	out->comm = strdup(ext || by_host || n->kind != CW_NODE_PROCESS
				   ? ""
				   : n->proc.comm);
	out->container = strdup(ext || by_host || n->kind != CW_NODE_PROCESS
					? ""
					: n->proc.container);
	if (!out->name || !out->label || !out->host || !out->comm ||
	    !out->container || !out->dns_name)
		return -1;
	return 0;
}

static int edge_cmp(const void *a, const void *b)
{
	uint64_t x = edge_bytes(a), y = edge_bytes(b);

	return x > y ? -1 : x < y;
}

/* The edges that q keeps, and their vertices, into out. */
static int select_into(const struct cw_view *v, struct serve_edge *t, long vid,
		       double min_share, struct serve_graph *out)
{
	long *idx = malloc((v->nv + 1) * sizeof(*idx));
	struct serve_edge e;
	size_t i;
	int err = -1;

	if (!idx)
		return -1;
	for (i = 0; i < v->nv; i++)
		idx[i] = -1;
	for (i = 0; i < v->ne; i++)
		out->total_bytes =
			cw_count_add(out->total_bytes, edge_bytes(&t[i]));
	for (i = 0; i < v->ne; i++) {
		e = t[i];
		if (!edge_bytes(&e) && !e.conns)
			continue;
		if (vid >= 0 && e.from != (size_t)vid && e.to != (size_t)vid)
			continue;
		if (out->total_bytes &&
		    (double)edge_bytes(&e) < min_share * out->total_bytes) {
			out->hidden++;
			continue;
		}
		if (idx[e.from] < 0 || idx[e.to] < 0) {
			if (CW_GROW(out->nodes, out->cap_nodes, out->nn + 2,
				    16))
				goto out;
		}
		if (idx[e.from] < 0) {
			idx[e.from] = (long)out->nn++;
			if (copy_vertex(v, e.from, &out->nodes[idx[e.from]]))
				goto out;
		}
		if (idx[e.to] < 0) {
			idx[e.to] = (long)out->nn++;
			if (copy_vertex(v, e.to, &out->nodes[idx[e.to]]))
				goto out;
		}
		e.from = (size_t)idx[e.from], e.to = (size_t)idx[e.to];
		if (CW_GROW(out->edges, out->cap_edges, out->ne + 1, 16))
			goto out;
		out->edges[out->ne++] = e;
		t[i].health = NULL; /* the graph's now */
		node_add(&out->nodes[e.from], e.bytes_s2c, e.bytes_c2s);
		node_add(&out->nodes[e.to], e.bytes_c2s, e.bytes_s2c);
	}
	qsort(out->edges, out->ne, sizeof(*out->edges), edge_cmp);
	err = 0;
out:
	free(idx);
	return err;
}

static void span_of(const struct cw_view *v, struct serve_graph *out)
{
	size_t i;

	out->first_ns = UINT64_MAX;
	for (i = 0; i < v->ne; i++) {
		if (v->e[i].first_ns && v->e[i].first_ns < out->first_ns)
			out->first_ns = v->e[i].first_ns;
		if (v->e[i].last_ns > out->last_ns)
			out->last_ns = v->e[i].last_ns;
	}
	if (out->first_ns == UINT64_MAX)
		out->first_ns = 0;
}

static int graph_locked(struct serve_model *m, const struct cw_serve_query *q,
			struct serve_graph *out, char *err, size_t errlen)
{
	struct serve_edge *t = NULL;
	struct cw_view *v;
	long vid = -1;
	int ret = -1;
	size_t i;

	v = view_for(m, q->by);
	if (!v) {
		snprintf(err, errlen, "unable to build the %s view",
			 cw_serve_by_name(q->by));
		return -1;
	}
	out->window_ns = v->window_ns;
	span_of(v, out);
	if (q->node[0]) {
		vid = cw_view_find(v, q->node);
		if (vid < 0) {
			snprintf(err, errlen, "'node': %s in the %s graph",
				 vid == -2 ? "several nodes match; give the "
					     "full name"
					   : "no such node",
				 cw_serve_by_name(q->by));
			return vid == -2 ? 2 : 1;
		}
	}
	t = edge_totals(v, q);
	if (!t || select_into(v, t, vid, q->min_share, out))
		snprintf(err, errlen, "out of memory");
	else
		ret = 0;
	for (i = 0; t && i < v->ne; i++)
		free(t[i].health);
	free(t);
	return ret;
}

int serve_model_graph(struct serve_model *m, const struct cw_serve_query *q,
		      struct serve_graph *out, char *err, size_t errlen)
{
	int ret;

	memset(out, 0, sizeof(*out));
	out->by = q->by;
	pthread_mutex_lock(&m->lock);
	ret = graph_locked(m, q, out, err, errlen);
	if (m->built) {
		m->st.stale = m->s.pairing.st.stale;
		m->st.ends = m->s.pairing.st.ends;
		m->st.paired = m->s.pairing.st.paired;
		m->st.unpaired = m->s.pairing.st.unpaired;
		m->st.ambiguous = m->s.pairing.st.ambiguous;
		if (m->have_view[q->by])
			m->st.unattributed = m->views[q->by].unattributed;
	}
	pthread_mutex_unlock(&m->lock);
	if (ret)
		serve_graph_release(out);
	return ret;
}

void serve_graph_release(struct serve_graph *g)
{
	size_t i;

	for (i = 0; i < g->nn; i++) {
		free(g->nodes[i].name);
		free(g->nodes[i].label);
		free(g->nodes[i].host);
		free(g->nodes[i].comm);
		free(g->nodes[i].container);
		free(g->nodes[i].dns_name);
		free(g->nodes[i].proc);
	}
	for (i = 0; i < g->ne; i++)
		free(g->edges[i].health);
	free(g->nodes);
	free(g->edges);
	memset(g, 0, sizeof(*g));
}

/* Add the samples of r to h; out of memory: the summary counts fewer. */
static void hist_add(struct cw_hist *h, const struct cw_rec_hist *r)
{
	struct cw_hist x = CW_HIST_INIT;

	if (!cw_rec_hist_get(r, &x))
		(void)cw_hist_merge(h, &x);
	cw_hist_release(&x);
}

void serve_red_of(const struct serve_graph *g, size_t node,
		  struct serve_red *out)
{
	struct cw_hist timed = CW_HIST_INIT;
	double span =
		(double)(g->last_ns > g->first_ns ? g->last_ns - g->first_ns
						  : 0) /
		1e9;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < g->ne; i++) {
		const struct cw_edge_health *h = g->edges[i].health;

		if (g->edges[i].to != node || !h)
			continue;
		out->known = true;
		out->errors = cw_count_add(
			out->errors,
			cw_count_add(cw_count_add(h->conns_refused,
						  h->conns_timeout),
				     cw_count_add(h->resets_by_client,
						  h->resets_by_server)));
		hist_add(&timed, h->server.len ? &h->server : &h->client);
	}
	span = span < 1 ? 1 : span;
	out->exchanges = timed.count;
	out->rate = (double)timed.count / span;
	out->error_rate = (double)out->errors / span;
	out->p50_ns = cw_hist_quantile(&timed, 0.5);
	out->p99_ns = cw_hist_quantile(&timed, 0.99);
	cw_hist_release(&timed);
}

void serve_model_stats(struct serve_model *m, struct serve_stats *st)
{
	struct cw_view *v;
	size_t i;

	pthread_mutex_lock(&m->lock);
	/* Pairing counts are made by the build: do it if nobody asked yet. */
	v = view_for(m, CW_SERVE_BY_PROCESS);
	m->st.files = m->s.files;
	m->st.records = m->s.records;
	m->st.bad = m->s.bad;
	m->st.agents = m->s.agents.len;
	m->st.stale = m->s.pairing.st.stale;
	m->st.ends = m->s.pairing.st.ends;
	m->st.paired = m->s.pairing.st.paired;
	m->st.unpaired = m->s.pairing.st.unpaired;
	m->st.ambiguous = m->s.pairing.st.ambiguous;
	if (v)
		m->st.unattributed = v->unattributed;
	m->st.processes_sampled = m->s.res.np;
	m->st.process_samples = 0;
	for (i = 0; i < m->s.res.np; i++)
		m->st.process_samples += m->s.res.p[i].n;
	*st = m->st;
	pthread_mutex_unlock(&m->lock);
}

void serve_model_note(struct serve_model *m, uint64_t kafka_messages,
		      uint64_t kafka_bad, uint64_t kafka_other,
		      const char *error)
{
	pthread_mutex_lock(&m->lock);
	m->st.kafka_messages += kafka_messages;
	m->st.kafka_bad += kafka_bad;
	m->st.kafka_other += kafka_other;
	if (error) {
		m->st.load_errors++;
		snprintf(m->st.last_error, sizeof(m->st.last_error), "%s",
			 error);
	}
	pthread_mutex_unlock(&m->lock);
}
