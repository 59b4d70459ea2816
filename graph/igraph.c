// SPDX-License-Identifier: MIT
#include <igraph.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"
#include "graph/graph.h"

static const char *const group_names[] = {"process", "cmdline", "container",
					  "host",    "pod",	"workload"};

int cw_group_by_parse(const char *s, enum cw_group_by *out)
{
	size_t i;

	for (i = 0; i < sizeof(group_names) / sizeof(group_names[0]); i++) {
		if (!strcmp(s, group_names[i])) {
			*out = (enum cw_group_by)i;
			return 0;
		}
	}
	return -1;
}

const char *cw_group_by_name(enum cw_group_by by)
{
	return group_names[by];
}

/* igraph's default handler aborts; ours lets IGRAPH_CHECK unwind. */
static void on_igraph_error(const char *reason, const char *file, int line,
			    igraph_error_t err)
{
	IGRAPH_FINALLY_FREE();
	cw_error("igraph: %s (%s:%d)", reason, file, line);
}

static void igraph_setup(void)
{
	static int done;

	if (done)
		return;
	igraph_set_attribute_table(&igraph_cattribute_table);
	igraph_set_error_handler(on_igraph_error);
	igraph_set_warning_handler(igraph_warning_handler_ignore);
	done = 1;
}

/* ---- grouping --------------------------------------------------------- */

struct group_key {
	uint64_t h1, h2;
};

/*
 * The pod or workload a process belongs to, by what is known of it: the
 * owner (workload view), the pod's name, the pod's uid from the cgroup
 * path, the container; processes outside containers per host.
 */
static void unit_label(const struct cw_node *n, enum cw_group_by by, char *name,
		       size_t len)
{
	const struct cw_process *p = &n->proc;

	if (n->kind != CW_NODE_PROCESS)
		snprintf(name, len, "%s (no container)", n->host);
	else if (by == CW_BY_WORKLOAD && p->workload[0] && p->workload_kind[0])
		snprintf(name, len, "%s/%s/%s", p->pod_ns, p->workload_kind,
			 p->workload);
	else if (by == CW_BY_WORKLOAD && p->workload[0])
		snprintf(name, len, "%s/%s", p->pod_ns, p->workload);
	else if (p->pod_name[0])
		snprintf(name, len, "%s/%s", p->pod_ns, p->pod_name);
	else if (p->pod[0])
		snprintf(name, len, "pod %s", p->pod);
	else if (p->container[0])
		snprintf(name, len, "%s", p->container);
	else
		snprintf(name, len, "%s (no container)", n->host);
}

static void group_label(const struct cw_node *n, enum cw_group_by by,
			char *name, size_t len)
{
	char a[64];

	if (n->kind == CW_NODE_EXTERNAL) {
		if (by == CW_BY_HOST)
			snprintf(name, len, "%s",
				 cw_addr_str(&n->addr, a, sizeof(a)));
		else
			cw_node_label(n, name, len);
		return;
	}
	switch (by) {
	case CW_BY_PROCESS:
		cw_node_label(n, a, sizeof(a));
		snprintf(name, len, "%s@%s", a, n->host);
		break;
	case CW_BY_CMDLINE:
		if (n->kind == CW_NODE_UNKNOWN)
			snprintf(name, len, "(unknown owner)");
		else
			snprintf(name, len, "%s",
				 n->proc.cmdline[0] ? n->proc.cmdline
						    : n->proc.comm);
		break;
	case CW_BY_CONTAINER:
		if (n->kind == CW_NODE_PROCESS && n->proc.container[0])
			snprintf(name, len, "%s", n->proc.container);
		else
			snprintf(name, len, "%s (no container)", n->host);
		break;
	case CW_BY_HOST:
		snprintf(name, len, "%s", n->host);
		break;
	case CW_BY_POD:
	case CW_BY_WORKLOAD:
		unit_label(n, by, name, len);
		break;
	}
}

static struct group_key key_of(const char *name)
{
	size_t len = strlen(name);
	struct group_key k = {cw_hash_bytes(name, len), 0};
	char salted[CW_CMDLINE_MAX + 80];

	/* Two independent 64-bit hashes: a collision is not a concern. */
	snprintf(salted, sizeof(salted), "#%s", name);
	k.h2 = cw_hash_bytes(salted, strlen(salted));
	return k;
}

static const char *short_label(const struct cw_node *n, enum cw_group_by by,
			       const char *name, char *buf, size_t len)
{
	const struct cw_process *p = &n->proc;
	bool proc = n->kind == CW_NODE_PROCESS;

	if (n->kind == CW_NODE_EXTERNAL && n->name[0] && n->port &&
	    by != CW_BY_HOST) { /* a peer by its DNS name, as users know it */
		snprintf(buf, len, "%s:%u", n->name, n->port);
	} else if (n->kind == CW_NODE_EXTERNAL && n->name[0]) {
		snprintf(buf, len, "%s", n->name);
	} else if (proc && by == CW_BY_WORKLOAD && p->workload[0]) {
		snprintf(buf, len, "%s", p->workload);
	} else if (proc && (by == CW_BY_POD || by == CW_BY_WORKLOAD) &&
		   p->pod_name[0]) {
		snprintf(buf, len, "%s", p->pod_name);
	} else if (proc && by >= CW_BY_CONTAINER && by != CW_BY_HOST &&
		   p->container[0] && p->container_name[0]) {
		if (p->pod_name[0])
			snprintf(buf, len, "%s (pod %s)", p->container_name,
				 p->pod_name);
		else
			snprintf(buf, len, "%s", p->container_name);
	} else if ((by == CW_BY_CONTAINER || by == CW_BY_POD ||
		    by == CW_BY_WORKLOAD) &&
		   proc && p->container[0] && !p->pod[0]) {
		snprintf(buf, len, "%.12s", p->container);
	} else if (by == CW_BY_CONTAINER && n->kind == CW_NODE_PROCESS &&
		   n->proc.container[0]) {
		if (n->proc.pod[0])
			snprintf(buf, len, "%.12s (pod %.8s)",
				 n->proc.container, n->proc.pod);
		else
			snprintf(buf, len, "%.12s", n->proc.container);
	} else if (by == CW_BY_CMDLINE && strlen(name) > 60) {
		/* Cut between characters: a name is UTF-8. */
		snprintf(buf, len, "%.*s...", (int)cw_utf8_cut(name, 57), name);
	} else {
		snprintf(buf, len, "%s", name);
	}
	return buf;
}

static int add_vertex(struct cw_view *v, const struct cw_node *n,
		      const char *name, size_t *cap)
{
	struct cw_view_vertex *x;
	char buf[CW_CMDLINE_MAX + 80];

	if (CW_GROW(v->v, *cap, v->nv + 1, 64))
		return -1;
	x = &v->v[v->nv];
	memset(x, 0, sizeof(*x));
	x->node = n;
	x->same_host = n->kind != CW_NODE_EXTERNAL;
	x->name = strdup(name);
	x->label = strdup(short_label(n, v->by, name, buf, sizeof(buf)));
	v->nv++;
	if (!x->name || !x->label)
		return -1;
	return 0;
}

/* Vertices: one per group, in order of first member. */
static int make_groups(struct cw_view *v, const struct cw_graph *g)
{
	char name[CW_CMDLINE_MAX + 80];
	struct cw_htab groups;
	struct group_key k;
	size_t i, cap = 0, *gi;
	bool created;
	int err = -1;

	cw_htab_init(&groups, sizeof(k), sizeof(size_t));
	v->group_of = calloc(g->nnodes + 1, sizeof(*v->group_of));
	if (!v->group_of)
		goto out;
	for (i = 0; i < g->nnodes; i++) {
		const struct cw_node *n = &g->nodes[i];

		group_label(n, v->by, name, sizeof(name));
		if (v->by == CW_BY_PROCESS) {
			/* A pid may be reused: keep names unique. */
			k = key_of(name);
			gi = cw_htab_upsert(&groups, &k, &created);
			if (!gi)
				goto out;
			if (!created) {
				size_t len = strlen(name);

				snprintf(name + len, sizeof(name) - len, "#%zu",
					 i);
			}
			v->group_of[i] = v->nv;
			if (add_vertex(v, n, name, &cap))
				goto out;
		} else {
			k = key_of(name);
			gi = cw_htab_upsert(&groups, &k, &created);
			if (!gi)
				goto out;
			if (created) {
				*gi = v->nv;
				if (add_vertex(v, n, name, &cap))
					goto out;
			}
			v->group_of[i] = *gi;
		}
		v->v[v->group_of[i]].members++;
		if (v->v[v->group_of[i]].same_host &&
		    strcmp(v->v[v->group_of[i]].node->host, n->host))
			v->v[v->group_of[i]].same_host = 0;
	}
	err = 0;
out:
	cw_htab_release(&groups);
	return err;
}

/* What counts once in a group: a process, or a container's cgroup. */
struct unit_key {
	uint64_t group;
	char host[CW_HOST_LEN];
	char container[CW_CONTAINER_MAX];
	uint32_t tgid;
	uint32_t pad;
	uint64_t start_ns;
};

/*
 * A cgroup's figures come from each of its processes, read at other
 * instants: the one whose samples span longest (then the most samples)
 * stands for the container.
 */
static bool better(const struct cw_proc_usage *a, const struct cw_proc_usage *b)
{
	if (a->st.span_ns != b->st.span_ns)
		return a->st.span_ns > b->st.span_ns;
	return a->st.samples > b->st.samples;
}

/* The unit node i counts as in its group; NULL when it has no samples. */
static const struct cw_proc_usage *unit_of(const struct cw_view *v,
					   const struct cw_graph *g, size_t i,
					   struct unit_key *k)
{
	const struct cw_node *n = &g->nodes[i];
	const struct cw_proc_usage *u;

	if (n->kind != CW_NODE_PROCESS)
		return NULL;
	u = cw_resources_find(g->res, n->host, n->proc.tgid, n->proc.start_ns);
	if (!u || !u->st.known)
		return NULL;
	memset(k, 0, sizeof(*k));
	k->group = v->group_of[i];
	snprintf(k->host, sizeof(k->host), "%s", n->host);
	if (u->source == CW_USAGE_CGROUP && u->proc.container[0]) {
		snprintf(k->container, sizeof(k->container), "%s",
			 u->proc.container);
	} else {
		k->tgid = n->proc.tgid;
		k->start_ns = n->proc.start_ns;
	}
	return u;
}

/* Each vertex's resources: the sum over its members' distinct units. */
static int make_usage(struct cw_view *v, const struct cw_graph *g)
{
	const struct cw_proc_usage *u, **at;
	struct cw_htab units;
	struct unit_key k;
	bool created;
	size_t i;

	v->res = g->res;
	if (!g->res)
		return 0;
	cw_htab_init(&units, sizeof(k), sizeof(u));
	for (i = 0; i < g->nnodes; i++) {
		u = unit_of(v, g, i, &k);
		if (!u)
			continue;
		at = cw_htab_upsert(&units, &k, &created);
		if (!at) {
			cw_htab_release(&units);
			return -1;
		}
		if (created || better(u, *at))
			*at = u;
	}
	for (i = 0; i < units.len; i++) {
		const struct unit_key *uk = cw_htab_key(&units, i);

		at = cw_htab_val(&units, i);
		cw_usage_stats_sum(&v->v[uk->group].usage, &(*at)->st);
	}
	cw_htab_release(&units);
	for (i = 0; i < v->nv; i++)
		if (v->v[i].usage.known)
			v->has_usage = true;
	return 0;
}

/* Add base edge b to view edge e and to its two groups' byte totals. */
static void view_edge_add(struct cw_view *v, struct cw_view_edge *e,
			  const struct cw_edge *b)
{
	size_t from = e->from, to = e->to;

	e->conns = cw_count_add(e->conns, b->conns);
	e->paired = cw_count_add(e->paired, b->paired);
	e->bytes_c2s = cw_count_add(e->bytes_c2s, b->bytes_c2s);
	e->bytes_s2c = cw_count_add(e->bytes_s2c, b->bytes_s2c);
	e->msgs_c2s = cw_count_add(e->msgs_c2s, b->msgs_c2s);
	e->msgs_s2c = cw_count_add(e->msgs_s2c, b->msgs_s2c);
	e->est_conns = cw_count_add(e->est_conns, b->est_conns);
	e->sampled_bytes = cw_count_add(e->sampled_bytes, b->sampled_bytes);
	e->has_sampled |= b->has_sampled;
	(void)cw_edge_health_more(&e->h, b->h);
	if (b->first_ns && (!e->first_ns || b->first_ns < e->first_ns))
		e->first_ns = b->first_ns;
	if (b->last_ns > e->last_ns)
		e->last_ns = b->last_ns;
	v->v[from].bytes_out = cw_count_add(v->v[from].bytes_out, b->bytes_c2s);
	v->v[from].bytes_in = cw_count_add(v->v[from].bytes_in, b->bytes_s2c);
	v->v[to].bytes_out = cw_count_add(v->v[to].bytes_out, b->bytes_s2c);
	v->v[to].bytes_in = cw_count_add(v->v[to].bytes_in, b->bytes_c2s);
}

/*
 * View edges: one per (client group, server group), in order of the first
 * base edge between them; the groups are found by sorting, not hashing.
 */
static size_t *make_edges(struct cw_view *v, const struct cw_graph *g)
{
	size_t i, j, n = g->nedges, *edge_of, runs = 0;
	uint32_t *order = NULL, *lead = NULL;
	unsigned int bits = 0;
	uint64_t *key = NULL;
	struct cw_view_edge *e;

	while (bits < 32 && (uint64_t)v->nv >> bits)
		bits++;
	edge_of = calloc(n + 1, sizeof(*edge_of));
	key = malloc((n + 1) * sizeof(*key));
	order = malloc((n + 1) * sizeof(*order));
	lead = malloc((n + 1) * sizeof(*lead));
	if (!edge_of || !key || !order || !lead || n >= UINT32_MAX)
		goto fail;
	for (i = 0; i < n; i++)
		key[i] = (uint64_t)v->group_of[g->edges[i].client] << bits |
			 v->group_of[g->edges[i].server];
	if (cw_sort_by_key(key, n, order))
		goto fail;
	for (i = 0; i < n; i = j, runs++)
		for (j = i; j < n && key[order[j]] == key[order[i]]; j++)
			lead[order[j]] = order[i];
	free(key);
	key = NULL;
	free(order);
	order = NULL;
	v->e = calloc(runs + 1, sizeof(*v->e));
	if (!v->e)
		goto fail;
	for (i = 0; i < n; i++) {
		const struct cw_edge *b = &g->edges[i];
		size_t from = v->group_of[b->client],
		       to = v->group_of[b->server];

		if (lead[i] == i) {
			edge_of[i] = v->ne++;
			e = &v->e[edge_of[i]];
			e->from = from;
			e->to = to;
			e->first_ns = b->first_ns;
		} else {
			edge_of[i] = edge_of[lead[i]];
		}
		view_edge_add(v, &v->e[edge_of[i]], b);
	}
	free(key);
	free(order);
	free(lead);
	return edge_of;
fail:
	free(key);
	free(order);
	free(lead);
	free(edge_of);
	return NULL;
}

static int window_cmp(const void *a, const void *b)
{
	const struct cw_view_window *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->edge < y->edge ? -1 : x->edge > y->edge;
}

/* Base-edge cells summed per (view edge, window). */
static int make_windows(struct cw_view *v, const struct cw_graph *g,
			const struct cw_edge_windows *w, const size_t *edge_of)
{
	struct cw_view_window *cells, *c;
	size_t n = w->n, i, j;

	v->window_ns = w->width_ns;
	if (!w->width_ns)
		return 0;
	v->unattributed += w->unattributed;
	cells = malloc((n + 1) * sizeof(*cells));
	if (!cells)
		return -1;
	if (n)
		memcpy(cells, w->cells, n * sizeof(*cells));
	for (i = 0; i < n; i++)
		cells[i].edge = edge_of[cells[i].edge];
	qsort(cells, n, sizeof(*cells), window_cmp);
	for (i = 0, j = 0; i < n; i++) {
		c = &cells[j];
		if (j && c[-1].start_ns == cells[i].start_ns &&
		    c[-1].edge == cells[i].edge) {
			c[-1].bytes_c2s = cw_count_add(c[-1].bytes_c2s,
						       cells[i].bytes_c2s);
			c[-1].bytes_s2c = cw_count_add(c[-1].bytes_s2c,
						       cells[i].bytes_s2c);
			c[-1].msgs_c2s =
				cw_count_add(c[-1].msgs_c2s, cells[i].msgs_c2s);
			c[-1].msgs_s2c =
				cw_count_add(c[-1].msgs_s2c, cells[i].msgs_s2c);
			c[-1].sampled_bytes = cw_count_add(
				c[-1].sampled_bytes, cells[i].sampled_bytes);
			c[-1].msgs_est |= cells[i].msgs_est;
			c[-1].has_sampled |= cells[i].has_sampled;
			continue;
		}
		*c = cells[i];
		j++;
	}
	v->win = cells;
	v->nwin = j;
	return 0;
}

void cw_edge_windows_release(struct cw_edge_windows *ew)
{
	free(ew->cells);
	memset(ew, 0, sizeof(*ew));
}

/* ---- the igraph -------------------------------------------------------- */

/*
 * A string attribute of vertex id: unset strings read as "", so only the
 * first vertex (which makes the attribute) needs an empty one.
 */
static igraph_error_t set_vas(igraph_t *ig, const char *name,
			      igraph_integer_t id, const char *value)
{
	if (!*value && id)
		return IGRAPH_SUCCESS;
	return SETVAS(ig, name, id, value);
}

#define VERTEX_NUM(field, expr)                                                \
	do {                                                                   \
		for (i = 0; i < v->nv; i++) {                                  \
			const struct cw_usage_stats *u = &v->v[i].usage;       \
			VECTOR(*num)[i] = (double)(expr);                      \
		}                                                              \
		IGRAPH_CHECK(SETVANV(ig, field, num));                         \
	} while (0)

/* Only in views with resources: exports of the others stay as they were. */
static igraph_error_t set_usage_attrs(igraph_t *ig, const struct cw_view *v,
				      igraph_vector_t *num)
{
	size_t i;

	VERTEX_NUM("cpu_ms", u->cpu_ns / 1e6);
	VERTEX_NUM("cpu_cores", u->cpu_cores);
	VERTEX_NUM("cpu_peak_cores", u->cpu_peak_cores);
	VERTEX_NUM("rss_bytes", u->rss_bytes);
	VERTEX_NUM("rss_peak_bytes", u->rss_peak_bytes);
	return IGRAPH_SUCCESS;
}

static igraph_error_t set_vertex_attrs(igraph_t *ig, const struct cw_view *v)
{
	igraph_vector_t num;
	size_t i;
	bool proc = v->by == CW_BY_PROCESS;

	for (i = 0; i < v->nv; i++) {
		const struct cw_view_vertex *x = &v->v[i];
		const struct cw_node *n = x->node;
		bool p = n->kind == CW_NODE_PROCESS;
		igraph_integer_t id = (igraph_integer_t)i;

		IGRAPH_CHECK(set_vas(ig, "name", id, x->name));
		IGRAPH_CHECK(set_vas(ig, "label", id, x->label));
		IGRAPH_CHECK(
			set_vas(ig, "kind", id, cw_node_kind_name(n->kind)));
		IGRAPH_CHECK(
			set_vas(ig, "host", id, x->same_host ? n->host : ""));
		IGRAPH_CHECK(set_vas(ig, "comm", id,
				     p && v->by <= CW_BY_CMDLINE ? n->proc.comm
								 : ""));
		IGRAPH_CHECK(set_vas(
			ig, "cmdline", id,
			p && v->by <= CW_BY_CMDLINE ? n->proc.cmdline : ""));
		IGRAPH_CHECK(set_vas(ig, "container", id,
				     p && (proc || v->by == CW_BY_CONTAINER)
					     ? n->proc.container
					     : ""));
		IGRAPH_CHECK(set_vas(ig, "pod", id,
				     p && (proc || v->by == CW_BY_CONTAINER)
					     ? n->proc.pod
					     : ""));
		/* Only where a peer has one: other exports stay as they were.
		 */
		if (n->kind == CW_NODE_EXTERNAL && n->name[0])
			IGRAPH_CHECK(SETVAS(ig, "dns_name", id, n->name));
	}
	IGRAPH_VECTOR_INIT_FINALLY(&num, (igraph_integer_t)v->nv);
	for (i = 0; i < v->nv; i++)
		VECTOR(num)
	[i] = proc && v->v[i].node->kind == CW_NODE_PROCESS
		      ? v->v[i].node->proc.tgid
		      : 0;
	IGRAPH_CHECK(SETVANV(ig, "pid", &num));
	for (i = 0; i < v->nv; i++)
		VECTOR(num)[i] = (double)v->v[i].members;
	IGRAPH_CHECK(SETVANV(ig, "members", &num));
	for (i = 0; i < v->nv; i++)
		VECTOR(num)[i] = (double)v->v[i].bytes_out;
	IGRAPH_CHECK(SETVANV(ig, "bytes_out", &num));
	for (i = 0; i < v->nv; i++)
		VECTOR(num)[i] = (double)v->v[i].bytes_in;
	IGRAPH_CHECK(SETVANV(ig, "bytes_in", &num));
	if (v->has_usage)
		IGRAPH_CHECK(set_usage_attrs(ig, v, &num));
	igraph_vector_destroy(&num);
	IGRAPH_FINALLY_CLEAN(1);
	return IGRAPH_SUCCESS;
}

#define EDGE_NUM(field, expr)                                                  \
	do {                                                                   \
		for (i = 0; i < v->ne; i++) {                                  \
			const struct cw_view_edge *e = &v->e[i];               \
			VECTOR(num)[i] = (double)(expr);                       \
		}                                                              \
		IGRAPH_CHECK(SETEANV(ig, field, &num));                        \
	} while (0)

/* The health attributes, when an edge has health (older views keep
 * their attributes): counters, then each histogram's figures. */
static igraph_error_t set_health_attrs(igraph_t *ig, const struct cw_view *v,
				       igraph_vector_t *num)
{
	static const char *const sfx[] = {"count", "p50_ns", "p90_ns",
					  "p99_ns"};
	static const struct cw_edge_health no_health;
	struct cw_health_q(*q)[CW_HEALTH_NQ];
	char name[64];
	size_t i, k, f;
	bool any = false;

	for (i = 0; i < v->ne && !any; i++)
		any = cw_edge_health_any(v->e[i].h);
	if (!any)
		return IGRAPH_SUCCESS;
	q = calloc(v->ne + 1, sizeof(*q));
	IGRAPH_CHECK_OOM(q, "health figures");
	IGRAPH_FINALLY(free, q);
	for (i = 0; i < v->ne; i++)
		cw_edge_health_q(v->e[i].h, q[i]);
#define HEALTH_NUM(field, expr)                                                \
	do {                                                                   \
		for (i = 0; i < v->ne; i++) {                                  \
			const struct cw_view_edge *e = &v->e[i];               \
			const struct cw_edge_health *h =                       \
				e->h ? e->h : &no_health;                      \
			VECTOR(*num)[i] = (double)(expr);                      \
		}                                                              \
		IGRAPH_CHECK(SETEANV(ig, field, num));                         \
	} while (0)
	HEALTH_NUM("failed",
		   e->conns && h->conns_refused + h->conns_timeout >= e->conns);
	HEALTH_NUM("conns_refused", h->conns_refused);
	HEALTH_NUM("conns_timeout", h->conns_timeout);
	HEALTH_NUM("resets_by_client", h->resets_by_client);
	HEALTH_NUM("resets_by_server", h->resets_by_server);
	HEALTH_NUM("xchg_pipelined", h->xchg_pipelined);
	for (k = 0; k < CW_HEALTH_NQ; k++)
		for (f = 0; f < 4; f++) {
			snprintf(name, sizeof(name), "%s_%s",
				 cw_health_q_names[k], sfx[f]);
			for (i = 0; i < v->ne; i++)
				VECTOR(*num)
				[i] = (double)(f == 0	? q[i][k].count
					       : f == 1 ? q[i][k].p50
					       : f == 2 ? q[i][k].p90
							: q[i][k].p99);
			IGRAPH_CHECK(SETEANV(ig, name, num));
		}
#undef HEALTH_NUM
	free(q);
	IGRAPH_FINALLY_CLEAN(1);
	return IGRAPH_SUCCESS;
}

static igraph_error_t set_edge_attrs(igraph_t *ig, const struct cw_view *v)
{
	igraph_vector_t num;
	size_t i;

	IGRAPH_VECTOR_INIT_FINALLY(&num, (igraph_integer_t)v->ne);
	EDGE_NUM("weight", e->bytes_c2s + e->bytes_s2c);
	EDGE_NUM("bytes_c2s", e->bytes_c2s);
	EDGE_NUM("bytes_s2c", e->bytes_s2c);
	EDGE_NUM("msgs_c2s", e->msgs_c2s);
	EDGE_NUM("msgs_s2c", e->msgs_s2c);
	EDGE_NUM("conns", e->conns);
	EDGE_NUM("first_seen", e->first_ns / 1e9);
	EDGE_NUM("last_seen", e->last_ns / 1e9);
	IGRAPH_CHECK(set_health_attrs(ig, v, &num));
	igraph_vector_destroy(&num);
	IGRAPH_FINALLY_CLEAN(1);
	return IGRAPH_SUCCESS;
}

static igraph_error_t make_igraph(igraph_t *ig, const struct cw_view *v)
{
	igraph_vector_int_t ends;
	size_t i;

	IGRAPH_CHECK(
		igraph_vector_int_init(&ends, 2 * (igraph_integer_t)v->ne));
	IGRAPH_FINALLY(igraph_vector_int_destroy, &ends);
	for (i = 0; i < v->ne; i++) {
		VECTOR(ends)[2 * i] = (igraph_integer_t)v->e[i].from;
		VECTOR(ends)[2 * i + 1] = (igraph_integer_t)v->e[i].to;
	}
	IGRAPH_CHECK(igraph_create(ig, &ends, (igraph_integer_t)v->nv,
				   IGRAPH_DIRECTED));
	IGRAPH_FINALLY(igraph_destroy, ig);
	IGRAPH_CHECK(set_vertex_attrs(ig, v));
	IGRAPH_CHECK(set_edge_attrs(ig, v));
	igraph_vector_int_destroy(&ends);
	IGRAPH_FINALLY_CLEAN(2); /* the graph is the caller's now */
	return IGRAPH_SUCCESS;
}

int cw_view_build(struct cw_view *v, const struct cw_graph *g,
		  enum cw_group_by by, const struct cw_edge_windows *windows)
{
	size_t *edge_of = NULL;
	igraph_t *ig;

	igraph_setup();
	memset(v, 0, sizeof(*v));
	v->by = by;
	if (make_groups(v, g) || make_usage(v, g))
		goto nomem;
	edge_of = make_edges(v, g);
	if (!edge_of)
		goto nomem;
	if (windows && make_windows(v, g, windows, edge_of))
		goto nomem;
	free(edge_of);
	edge_of = NULL;
	ig = calloc(1, sizeof(*ig));
	if (!ig)
		goto nomem;
	if (make_igraph(ig, v) != IGRAPH_SUCCESS) {
		free(ig);
		cw_view_release(v);
		return cw_error("unable to build the %s graph",
				cw_group_by_name(by));
	}
	v->ig = ig;
	return 0;
nomem:
	free(edge_of);
	cw_view_release(v);
	return cw_error("out of memory building the %s graph",
			cw_group_by_name(by));
}

void cw_view_release(struct cw_view *v)
{
	size_t i;

	for (i = 0; i < v->nv; i++) {
		free(v->v[i].name);
		free(v->v[i].label);
	}
	if (v->ig) {
		igraph_destroy(v->ig);
		free(v->ig);
	}
	for (i = 0; i < v->ne; i++)
		cw_edge_health_free(&v->e[i].h);
	free(v->v);
	free(v->e);
	free(v->group_of);
	free(v->win);
	memset(v, 0, sizeof(*v));
}

/* ---- queries ----------------------------------------------------------- */

uint64_t cw_view_edge_bytes(const struct cw_view *v, size_t i)
{
	return v->e[i].bytes_c2s + v->e[i].bytes_s2c;
}

static const struct cw_view *sort_view;

static int by_bytes(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t bx = cw_view_edge_bytes(sort_view, x);
	uint64_t by = cw_view_edge_bytes(sort_view, y);

	if (bx != by)
		return bx > by ? -1 : 1;
	return x < y ? -1 : x > y;
}

int cw_view_edges(const struct cw_view *v, long vid, size_t max, size_t **out,
		  size_t *n)
{
	igraph_vector_int_t eids;
	size_t i, *res;

	*out = NULL;
	*n = 0;
	if (vid < 0) {
		res = malloc((v->ne + 1) * sizeof(*res));
		if (!res)
			return cw_error("out of memory");
		for (i = 0; i < v->ne; i++)
			res[i] = i;
		*n = v->ne;
	} else {
		if (igraph_vector_int_init(&eids, 0))
			return cw_error("out of memory");
		if (igraph_incident(v->ig, &eids, (igraph_integer_t)vid,
				    IGRAPH_ALL)) {
			igraph_vector_int_destroy(&eids);
			return -1;
		}
		res = malloc(((size_t)igraph_vector_int_size(&eids) + 1) *
			     sizeof(*res));
		for (i = 0; res && i < (size_t)igraph_vector_int_size(&eids);
		     i++) {
			/* A loop is listed twice: once is enough. */
			if (i && VECTOR(eids)[i] == VECTOR(eids)[i - 1])
				continue;
			res[(*n)++] = (size_t)VECTOR(eids)[i];
		}
		igraph_vector_int_destroy(&eids);
		if (!res)
			return cw_error("out of memory");
	}
	sort_view = v;
	qsort(res, *n, sizeof(*res), by_bytes);
	if (max && *n > max)
		*n = max;
	*out = res;
	return 0;
}

long cw_view_find(const struct cw_view *v, const char *what)
{
	long found = -1;
	size_t i;

	for (i = 0; i < v->nv; i++)
		if (!strcmp(v->v[i].name, what))
			return (long)i;
	for (i = 0; i < v->nv; i++) {
		if (!strcmp(v->v[i].label, what) ||
		    (v->v[i].node->kind == CW_NODE_PROCESS &&
		     v->by == CW_BY_PROCESS &&
		     !strncmp(v->v[i].name, what, strlen(what)) &&
		     v->v[i].name[strlen(what)] == '@')) {
			if (found >= 0)
				return -2;
			found = (long)i;
		}
	}
	return found;
}

uint64_t cw_view_sent(const struct cw_view *v, size_t from, size_t to)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < v->ne; i++) {
		if (v->e[i].from == from && v->e[i].to == to)
			sum = cw_count_add(sum, v->e[i].bytes_c2s);
		if (v->e[i].to == from && v->e[i].from == to)
			sum = cw_count_add(sum, v->e[i].bytes_s2c);
	}
	if (from == to) /* a loop's two directions both stay inside */
		sum = 0;
	for (i = 0; from == to && i < v->ne; i++)
		if (v->e[i].from == from && v->e[i].to == from)
			sum = cw_count_add(sum,
					   cw_count_add(v->e[i].bytes_c2s,
							v->e[i].bytes_s2c));
	return sum;
}
