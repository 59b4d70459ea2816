// SPDX-License-Identifier: MIT
/*
 * A view written out: GraphML through igraph's writer, DOT through
 * cgraph's, CSV, the host matrix; and the JSON of nodes and edges that
 * edges.json, `graph --format json` and the page's API share.
 */
#include <errno.h>
#include <graphviz/cgraph.h>
#include <igraph.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"
#include "graph/graph.h"

/* The subgraph of the listed edges, or a copy of the whole view. */
static igraph_error_t select_edges(const struct cw_view *v, igraph_t *out,
				   const size_t *edges, size_t n)
{
	igraph_vector_int_t ids;
	igraph_es_t es;
	size_t i;

	if (!edges)
		return igraph_copy(out, v->ig);
	IGRAPH_CHECK(igraph_vector_int_init(&ids, (igraph_integer_t)n));
	IGRAPH_FINALLY(igraph_vector_int_destroy, &ids);
	for (i = 0; i < n; i++)
		VECTOR(ids)[i] = (igraph_integer_t)edges[i];
	IGRAPH_CHECK(igraph_es_vector(&es, &ids));
	IGRAPH_FINALLY(igraph_es_destroy, &es);
	IGRAPH_CHECK(igraph_subgraph_edges(v->ig, out, es,
					   /*delete_vertices=*/true));
	igraph_es_destroy(&es);
	igraph_vector_int_destroy(&ids);
	IGRAPH_FINALLY_CLEAN(2);
	return IGRAPH_SUCCESS;
}

int cw_view_write_graphml(const struct cw_view *v, FILE *fp,
			  const size_t *edges, size_t n)
{
	igraph_error_t err;
	igraph_t sub;

	if (select_edges(v, &sub, edges, n))
		return cw_error("unable to select the edges to write");
	err = igraph_write_graph_graphml(&sub, fp, /*prefixattr=*/false);
	igraph_destroy(&sub);
	if (err || ferror(fp))
		return cw_error("unable to write the GraphML: %s",
				strerror(errno ? errno : EIO));
	return 0;
}

/*
 * A string for agwrite, which quotes it and escapes its quotes but not its
 * backslashes: DOT's lexer reads "\\" as a pair, so a backslash before a
 * quote or at the end would end the string early.  Doubled, every name
 * reads back (a name's backslashes doubled, as DOT writes them).  NULL
 * when out of memory.
 */
static const char *dot_string(const char *s, char **buf, size_t *cap)
{
	size_t n = 0;

	for (;; s++) {
		if (CW_GROW(*buf, *cap, n + 3, 64))
			return NULL;
		if (*s == '\\')
			(*buf)[n++] = '\\';
		if (!((*buf)[n++] = *s))
			return *buf;
	}
}

/*
 * An attribute's value as DOT text: strings with their backslashes
 * doubled (agwrite quotes them), numbers whole when they are (the byte
 * counts: no "1.56467e+06"), booleans as true/false.
 */
static const char *attr_text(const igraph_t *g, const char *name, int type,
			     bool vertex, igraph_integer_t i, char *buf,
			     size_t len, char **sbuf, size_t *scap)
{
	double x;

	if (type == IGRAPH_ATTRIBUTE_STRING)
		return dot_string(vertex ? VAS(g, name, i) : EAS(g, name, i),
				  sbuf, scap);
	if (type == IGRAPH_ATTRIBUTE_BOOLEAN)
		return (vertex ? VAB(g, name, i) : EAB(g, name, i)) ? "true"
								   : "false";
	x = vertex ? VAN(g, name, i) : EAN(g, name, i);
	if (x == (double)(int64_t)x && fabs(x) < 9007199254740992.0)
		snprintf(buf, len, "%" PRId64, (int64_t)x);
	else
		snprintf(buf, len, "%.17g", x);
	return buf;
}

/* Declare each attribute (default "": agwrite leaves out an empty one)
 * and set it on every vertex or edge. */
static int dot_attrs(const igraph_t *g, Agraph_t *dg, bool vertex,
		     const igraph_strvector_t *names,
		     const igraph_vector_int_t *types, void **objs,
		     igraph_integer_t n)
{
	igraph_integer_t a, i;
	char buf[64], *sbuf = NULL;
	const char *val;
	size_t scap = 0;
	int ret = -1;

	for (a = 0; a < igraph_strvector_size(names); a++) {
		const char *name = igraph_strvector_get(names, a);
		Agsym_t *sym = agattr(dg, vertex ? AGNODE : AGEDGE,
				      (char *)name, "");

		if (!sym)
			goto out;
		for (i = 0; i < n; i++) {
			val = attr_text(g, name, VECTOR(*types)[a], vertex, i,
					buf, sizeof(buf), &sbuf, &scap);
			if (!val || agxset(objs[i], sym, (char *)val))
				goto out;
		}
	}
	ret = 0;
out:
	free(sbuf);
	return ret;
}

/* The subgraph as a cgraph graph: vertex i is node "i", every attribute
 * kept. */
static int dot_graph(const igraph_t *g, Agraph_t *dg)
{
	igraph_strvector_t gn, vn, en;
	igraph_vector_int_t gt, vt, et;
	igraph_integer_t i, nv = igraph_vcount(g), ne = igraph_ecount(g);
	void **objs = calloc((size_t)(nv > ne ? nv : ne) + 1, sizeof(*objs));
	char id[32];
	int ret = -1;

	if (!objs)
		return -1;
	if (igraph_strvector_init(&gn, 0) || igraph_strvector_init(&vn, 0) ||
	    igraph_strvector_init(&en, 0) || igraph_vector_int_init(&gt, 0) ||
	    igraph_vector_int_init(&vt, 0) || igraph_vector_int_init(&et, 0))
		goto out;
	if (igraph_cattribute_list(g, &gn, &gt, &vn, &vt, &en, &et))
		goto out;
	for (i = 0; i < nv; i++) {
		snprintf(id, sizeof(id), "%" PRId64, (int64_t)i);
		if (!(objs[i] = agnode(dg, id, 1)))
			goto out;
	}
	if (dot_attrs(g, dg, true, &vn, &vt, objs, nv))
		goto out;
	for (i = 0; i < ne; i++) {
		Agnode_t *t;

		snprintf(id, sizeof(id), "%" PRId64, (int64_t)IGRAPH_FROM(g, i));
		t = agnode(dg, id, 0);
		snprintf(id, sizeof(id), "%" PRId64, (int64_t)IGRAPH_TO(g, i));
		if (!t || !(objs[i] = agedge(dg, t, agnode(dg, id, 0), NULL, 1)))
			goto out;
	}
	ret = dot_attrs(g, dg, false, &en, &et, objs, ne);
out:
	igraph_strvector_destroy(&gn);
	igraph_strvector_destroy(&vn);
	igraph_strvector_destroy(&en);
	igraph_vector_int_destroy(&gt);
	igraph_vector_int_destroy(&vt);
	igraph_vector_int_destroy(&et);
	free(objs);
	return ret;
}

int cw_dot_write(struct Agraph_s *dg, FILE *fp)
{
	if (agwrite(dg, fp) || ferror(fp))
		return cw_error("unable to write the DOT graph: %s",
				strerror(errno ? errno : EIO));
	return 0;
}

/*
 * DOT through cgraph's writer (cw_dot_write): it quotes what must be
 * quoted (addresses such as 10.0.0.1:80, IPv6, hostile names), so `dot`
 * reads every export.
 */
int cw_view_write_dot(const struct cw_view *v, FILE *fp, const size_t *edges,
		      size_t n)
{
	Agraph_t *dg = NULL;
	igraph_t sub;
	int ret = -1;

	if (select_edges(v, &sub, edges, n))
		return cw_error("unable to select the edges to write");
	agseterr(AGMAX);
	dg = cw_dot_open("causeway");
	if (!dg || dot_graph(&sub, dg)) {
		cw_error("unable to make the DOT graph");
		goto out;
	}
	ret = cw_dot_write(dg, fp);
out:
	if (dg)
		agclose(dg);
	igraph_destroy(&sub);
	return ret;
}

static void csv_str(FILE *fp, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

int cw_view_write_csv(const struct cw_view *v, FILE *fp, const size_t *edges,
		      size_t n)
{
	size_t k;

	fprintf(fp, "client,server,conns,bytes_c2s,bytes_s2c,msgs_c2s,"
		    "msgs_s2c,first_ns,last_ns\n");
	for (k = 0; k < (edges ? n : v->ne); k++) {
		const struct cw_view_edge *e = &v->e[edges ? edges[k] : k];

		csv_str(fp, v->v[e->from].name);
		fputc(',', fp);
		csv_str(fp, v->v[e->to].name);
		fprintf(fp, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
			(unsigned long long)e->conns,
			(unsigned long long)e->bytes_c2s,
			(unsigned long long)e->bytes_s2c,
			(unsigned long long)e->msgs_c2s,
			(unsigned long long)e->msgs_s2c,
			(unsigned long long)e->first_ns,
			(unsigned long long)e->last_ns);
	}
	return ferror(fp) ? cw_error("unable to write the CSV: %s",
				     strerror(errno ? errno : EIO))
			  : 0;
}

#define CW_MATRIX_MAX 10000

int cw_view_write_matrix(const struct cw_view *v, FILE *fp)
{
	uint64_t *m;
	size_t i, j, nv = v->nv;

	if (nv > CW_MATRIX_MAX)
		return cw_error("a %zu by %zu matrix is too large (at most %d "
				"groups; try --by host)",
				nv, nv, CW_MATRIX_MAX);
	m = calloc(nv * nv + 1, sizeof(*m));
	if (!m)
		return cw_error("out of memory");
	for (i = 0; i < v->ne; i++) {
		const struct cw_view_edge *e = &v->e[i];

		m[e->from * nv + e->to] += e->bytes_c2s;
		m[e->to * nv + e->from] += e->bytes_s2c;
	}
	fputs("from\\to", fp);
	for (j = 0; j < nv; j++) {
		fputc(',', fp);
		csv_str(fp, v->v[j].name);
	}
	fputc('\n', fp);
	for (i = 0; i < nv; i++) {
		csv_str(fp, v->v[i].name);
		for (j = 0; j < nv; j++)
			fprintf(fp, ",%llu", (unsigned long long)m[i * nv + j]);
		fputc('\n', fp);
	}
	free(m);
	return ferror(fp) ? cw_error("unable to write the matrix: %s",
				     strerror(errno ? errno : EIO))
			  : 0;
}

void cw_usage_json(struct cw_jsonw *w, const struct cw_usage_stats *u)
{
	cw_jsonw_double(w, "cpu_ms", (double)u->cpu_ns / 1e6);
	cw_jsonw_double(w, "cpu_cores", u->cpu_cores);
	cw_jsonw_double(w, "cpu_peak_cores", u->cpu_peak_cores);
	cw_jsonw_u64(w, "rss_bytes", u->rss_bytes);
	cw_jsonw_u64(w, "rss_peak_bytes", u->rss_peak_bytes);
	cw_jsonw_u64(w, "usage_span_ns", u->span_ns);
}

/*
 * Who a group is, where the projection keeps it: the container (process
 * and container views), the pod, the workload.  "pod" is the pod's name
 * when the agent found it (its uid then in "pod_uid"), else the uid of the
 * cgroup path, as before names were known.
 */
void cw_identity_json(struct cw_jsonw *w, enum cw_group_by by,
		      const struct cw_process *p, bool container_id)
{
	bool container = by == CW_BY_PROCESS || by == CW_BY_CONTAINER;
	bool pod = container || by == CW_BY_POD;

	if (!pod && by != CW_BY_WORKLOAD)
		return;
	if (container) {
		if (container_id)
			cw_jsonw_str(w, "container", p->container);
		if (p->container_name[0])
			cw_jsonw_str(w, "container_name", p->container_name);
	}
	if (pod && p->pod_name[0]) {
		cw_jsonw_str(w, "pod", p->pod_name);
		if (p->pod[0])
			cw_jsonw_str(w, "pod_uid", p->pod);
	} else if (container) {
		cw_jsonw_str(w, "pod", p->pod);
	}
	if (p->pod_ns[0])
		cw_jsonw_str(w, "namespace", p->pod_ns);
	if (p->workload[0]) {
		cw_jsonw_str(w, "workload", p->workload);
		cw_jsonw_str(w, "workload_kind", p->workload_kind);
	}
}

void cw_node_json(struct cw_jsonw *w, const struct cw_node_json *n)
{
	if (n->name)
		cw_jsonw_str(w, "name", n->name);
	cw_jsonw_str(w, "label", n->label);
	if (n->kind)
		cw_jsonw_str(w, "kind", n->kind);
	if (n->has_external)
		cw_jsonw_bool(w, "external", n->external);
	if (n->addr)
		cw_jsonw_str(w, "addr", n->addr);
	if (n->dns_name && n->dns_name[0])
		cw_jsonw_str(w, "dns_name", n->dns_name);
	if (n->has_port)
		cw_jsonw_u64(w, "port", n->port);
	if (n->host)
		cw_jsonw_str(w, "host", n->host);
	if (n->has_netns)
		cw_jsonw_u64(w, "netns", n->netns);
	if (n->has_pid)
		cw_jsonw_u64(w, "pid", n->pid);
	if (n->has_start)
		cw_jsonw_u64(w, "start_ns", n->start_ns);
	if (n->comm)
		cw_jsonw_str(w, "comm", n->comm);
	if (n->cmdline)
		cw_jsonw_str(w, "cmdline", n->cmdline);
	if (n->container)
		cw_jsonw_str(w, "container", n->container);
	if (n->pod)
		cw_jsonw_str(w, "pod", n->pod);
	if (n->identity)
		cw_identity_json(w, (enum cw_group_by)n->by, n->identity,
				 n->container_id);
	if (n->has_traffic) {
		cw_jsonw_u64(w, "members", n->members);
		cw_jsonw_u64(w, "bytes_out", n->bytes_out);
		cw_jsonw_u64(w, "bytes_in", n->bytes_in);
	}
	if (n->usage && n->usage->known)
		cw_usage_json(w, n->usage);
}

/* A view's vertex: a group, named, with its members' traffic. */
static void vertex_json(const struct cw_view *v, size_t i, struct cw_jsonw *w)
{
	const struct cw_view_vertex *x = &v->v[i];
	const struct cw_node *n = x->node;
	bool proc = n->kind == CW_NODE_PROCESS;
	bool by_proc = proc && v->by == CW_BY_PROCESS;
	char buf[64];
	struct cw_node_json j = {
		.name = x->name,
		.label = x->label,
		.kind = cw_node_kind_name(n->kind),
		.host = n->kind != CW_NODE_EXTERNAL && x->same_host ? n->host
								    : NULL,
		.has_pid = by_proc,
		.pid = n->proc.tgid,
		.comm = by_proc ? n->proc.comm : NULL,
		.cmdline = by_proc ? n->proc.cmdline : NULL,
		.identity = proc ? &n->proc : NULL,
		.by = v->by,
		.container_id = true,
		.has_traffic = true,
		.members = x->members,
		.bytes_out = x->bytes_out,
		.bytes_in = x->bytes_in,
		.usage = &x->usage,
	};

	if (n->kind == CW_NODE_EXTERNAL) {
		j.addr = cw_addr_str(&n->addr, buf, sizeof(buf));
		j.dns_name = n->name;
	}
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "id", i);
	cw_node_json(w, &j);
	cw_jsonw_obj_close(w);
}

/* A node of the process graph (edges.json): every fact of it, no group. */
static void node_json(const struct cw_node *n, size_t id, struct cw_jsonw *w)
{
	char label[128], addr[64];
	bool ext = n->kind == CW_NODE_EXTERNAL;
	bool proc = n->kind == CW_NODE_PROCESS;
	struct cw_node_json j = {
		.label = cw_node_label(n, label, sizeof(label)),
		.kind = cw_node_kind_name(n->kind),
		.addr = ext ? cw_addr_str(&n->addr, addr, sizeof(addr)) : NULL,
		.dns_name = ext ? n->name : NULL,
		.has_port = ext,
		.port = n->port,
		.host = ext ? NULL : n->host,
		.has_netns = !ext,
		.netns = n->netns,
		.has_pid = proc,
		.pid = n->proc.tgid,
		.has_start = proc,
		.start_ns = n->proc.start_ns,
		.comm = proc ? n->proc.comm : NULL,
		.cmdline = proc ? n->proc.cmdline : NULL,
		.container = proc ? n->proc.container : NULL,
		.pod = proc ? n->proc.pod : NULL,
	};

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "id", id);
	cw_node_json(w, &j);
	cw_jsonw_obj_close(w);
}

/* What the messages rest on, as edges.json says it: only where an agent
 * said how it counted, so older outputs stay unchanged. */
static void sampled_json(struct cw_jsonw *w, bool has, bool est,
			 uint64_t sampled, uint64_t bytes)
{
	if (!has)
		return;
	cw_jsonw_bool(w, "msgs_estimated", est);
	cw_jsonw_double(w, "sampled_fraction",
			bytes ? (double)sampled / (double)bytes : 1.0);
}

void cw_edge_json(struct cw_jsonw *w, const struct cw_edge_json *e,
		  enum cw_json_ends ends)
{
	if (ends == CW_JSON_ENDS_NAME) {
		cw_jsonw_str(w, "client", e->client_name);
		cw_jsonw_str(w, "server", e->server_name);
	} else {
		cw_jsonw_u64(w, "client", e->client);
		cw_jsonw_u64(w, "server", e->server);
		if (e->client_name && e->server_name) {
			cw_jsonw_str(w, "client_name", e->client_name);
			cw_jsonw_str(w, "server_name", e->server_name);
		}
	}
	if (e->protocol >= 0)
		cw_jsonw_str(w, "proto", cw_proto_name((uint8_t)e->protocol));
	cw_jsonw_u64(w, "conns", e->conns);
	cw_jsonw_u64(w, "paired", e->paired);
	cw_jsonw_u64(w, "bytes_c2s", e->bytes_c2s);
	cw_jsonw_u64(w, "bytes_s2c", e->bytes_s2c);
	cw_jsonw_u64(w, "msgs_c2s", e->msgs_c2s);
	cw_jsonw_u64(w, "msgs_s2c", e->msgs_s2c);
	sampled_json(w, e->has_sampled, e->msgs_est, e->sampled_bytes,
		     e->bytes_c2s + e->bytes_s2c);
	if (e->has_unreceived) {
		cw_jsonw_i64(w, "unreceived_c2s", e->diff_c2s);
		cw_jsonw_i64(w, "unreceived_s2c", e->diff_s2c);
		cw_jsonw_u64(w, "retrans", e->retrans);
	}
	if (e->has_times) {
		cw_jsonw_u64(w, "first_ns", e->first_ns);
		cw_jsonw_u64(w, "last_ns", e->last_ns);
	}
	if (e->health && cw_edge_health_any(e->health)) {
		cw_jsonw_bool(w, "failed",
			      e->conns && cw_count_add(e->health->conns_refused,
						       e->health->conns_timeout) >=
						  e->conns);
		cw_edge_health_json(w, e->health);
	}
}

static void edge_json(const struct cw_view *v, size_t i, struct cw_jsonw *w)
{
	const struct cw_view_edge *e = &v->e[i];
	struct cw_edge_json j = {
		.client = e->from,
		.server = e->to,
		.client_name = v->v[e->from].name,
		.server_name = v->v[e->to].name,
		.protocol = -1,
		CW_EDGE_JSON_TRAFFIC(e),
		.msgs_est = e->est_conns > 0,
		.has_times = true,
		.first_ns = e->first_ns,
		.last_ns = e->last_ns,
		.health = e->h,
	};

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_u64(w, "id", i);
	cw_edge_json(w, &j, CW_JSON_ENDS_INDEX);
	cw_jsonw_obj_close(w);
}

/* An edge of the process graph (edges.json): per protocol, with the
 * bytes unreceived and the retransmits. */
static void graph_edge_json(const struct cw_edge *e, struct cw_jsonw *w)
{
	struct cw_edge_json j = {
		.client = e->client,
		.server = e->server,
		.protocol = e->protocol,
		CW_EDGE_JSON_TRAFFIC(e),
		.msgs_est = e->est_conns > 0,
		.has_unreceived = true,
		.diff_c2s = e->diff_c2s,
		.diff_s2c = e->diff_s2c,
		.retrans = e->retrans,
		.has_times = true,
		.first_ns = e->first_ns,
		.last_ns = e->last_ns,
		.health = e->h,
	};

	cw_jsonw_obj_open(w, NULL);
	cw_edge_json(w, &j, CW_JSON_ENDS_INDEX);
	cw_jsonw_obj_close(w);
}

void cw_graph_json(const struct cw_graph *g, struct cw_jsonw *w)
{
	size_t i;

	cw_jsonw_arr_open(w, "nodes");
	for (i = 0; i < g->nnodes; i++)
		node_json(&g->nodes[i], i, w);
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "edges");
	for (i = 0; i < g->nedges; i++)
		graph_edge_json(&g->edges[i], w);
	cw_jsonw_arr_close(w);
}

/* Each host's capacity as its agent last told it (HostMeta). */
static void hosts_json(const struct cw_resources *r, struct cw_jsonw *w)
{
	size_t i;

	cw_jsonw_arr_open(w, "hosts");
	for (i = 0; r && i < r->nhosts; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "host", r->hosts[i].host);
		cw_jsonw_u64(w, "cpus", r->hosts[i].cpus);
		cw_jsonw_u64(w, "mem_bytes", r->hosts[i].mem_bytes);
		cw_jsonw_str(w, "hostname", r->hosts[i].hostname);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

void cw_view_json(const struct cw_view *v, struct cw_jsonw *w,
		  const size_t *edges, size_t n)
{
	/* The listed edges and their vertices; everything if no memory. */
	bool *vkeep = NULL, *ekeep = NULL;
	size_t i, k, ne = edges ? n : v->ne;

	if (edges) {
		vkeep = calloc(v->nv + v->ne + 1, sizeof(*vkeep));
		ekeep = vkeep ? vkeep + v->nv : NULL;
		for (k = 0; vkeep && k < n; k++) {
			ekeep[edges[k]] = true;
			vkeep[v->e[edges[k]].from] = true;
			vkeep[v->e[edges[k]].to] = true;
		}
	}
	cw_jsonw_str(w, "by", cw_group_by_name(v->by));
	cw_jsonw_arr_open(w, "nodes");
	for (i = 0; i < v->nv; i++)
		if (!vkeep || vkeep[i])
			vertex_json(v, i, w);
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "edges");
	for (k = 0; k < ne; k++)
		edge_json(v, edges ? edges[k] : k, w);
	cw_jsonw_arr_close(w);
	cw_jsonw_u64(w, "window_ns", v->window_ns);
	cw_jsonw_arr_open(w, "windows");
	for (i = 0; i < v->nwin; i++) {
		const struct cw_view_window *c = &v->win[i];

		if (ekeep && !ekeep[c->edge])
			continue;
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_u64(w, "start_ns", c->start_ns);
		cw_jsonw_u64(w, "edge", c->edge);
		cw_jsonw_u64(w, "bytes_c2s", c->bytes_c2s);
		cw_jsonw_u64(w, "bytes_s2c", c->bytes_s2c);
		cw_jsonw_u64(w, "msgs_c2s", c->msgs_c2s);
		cw_jsonw_u64(w, "msgs_s2c", c->msgs_s2c);
		sampled_json(w, c->has_sampled, c->msgs_est, c->sampled_bytes,
			     c->bytes_c2s + c->bytes_s2c);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_u64(w, "unattributed_bytes", v->unattributed);
	hosts_json(v->res, w);
	free(vkeep);
}
