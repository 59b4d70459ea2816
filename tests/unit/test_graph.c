// SPDX-License-Identifier: MIT
/*
 * The igraph views of the traffic graph: projections of a small hand-made
 * fleet with known totals (host matrix, command lines, containers), traffic
 * per window from cumulative records, queries, and a GraphML export that
 * igraph reads back with the same vertices, edges and weights.
 */
#include <graphviz/cgraph.h>
#include <igraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"
#include "viz/viz.h"

#include "tests/unit/check.h"

#define T0 (1767225600ULL * NSEC_PER_SEC) /* a minute boundary */

struct proc_desc {
	const char *host, *comm, *cmdline, *container, *ip;
	uint32_t pid;
};

/* host-a: nginx (container ca), app (none); host-b: redis (cb), app (cb2) */
static const struct proc_desc NGINX = {"host-a", "nginx",    "nginx: worker",
				       "ca",	 "10.0.0.1", 100};
static const struct proc_desc APP_A = {"host-a", "python3",  "python3 app.py",
				       "",	 "10.0.0.1", 200};
static const struct proc_desc REDIS = {
	"host-b", "redis-server", "redis-server *:6379", "cb", "10.0.0.2", 300};
static const struct proc_desc APP_B = {"host-b", "python3",  "python3 app.py",
				       "cb2",	 "10.0.0.2", 400};

static uint64_t cookie;

static void end(struct cw_conn_record *r, const struct proc_desc *p, int role,
		uint16_t lport, const char *rip, uint16_t rport)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, p->host);
	r->netns = 1;
	r->cookie = ++cookie;
	r->protocol = 6;
	r->role = (uint8_t)role;
	cw_addr_parse(&r->laddr, p->ip);
	cw_addr_parse(&r->raddr, rip);
	r->lport = lport;
	r->rport = rport;
	r->first_ns = T0 + 10 * NSEC_PER_SEC;
	r->last_ns = T0 + 20 * NSEC_PER_SEC;
	r->proc.tgid = p->pid;
	r->proc.start_ns = p->pid * 1000ULL;
	strcpy(r->proc.comm, p->comm);
	strcpy(r->proc.cmdline, p->cmdline);
	strcpy(r->proc.container, p->container);
	r->flags = CW_REC_CLOSED;
}

static void add(struct cw_pairing *p, struct cw_windows *w,
		struct cw_conn_record *r)
{
	CHECK(!cw_pairing_add(p, r));
	CHECK(!cw_windows_add(w, r));
}

/* A connection seen from both ends: client sent c2s, server sent s2c. */
static void conn(struct cw_pairing *p, struct cw_windows *w,
		 const struct proc_desc *c, const struct proc_desc *s,
		 uint16_t cport, uint16_t sport, uint64_t c2s, uint64_t s2c)
{
	struct cw_conn_record rc, rs;

	end(&rc, c, CW_REC_ROLE_CLIENT, cport, s->ip, sport);
	end(&rs, s, CW_REC_ROLE_SERVER, sport, c->ip, cport);
	rc.bytes_out = rs.bytes_in = c2s;
	rs.bytes_out = rc.bytes_in = s2c;
	rc.msgs_out = rs.msgs_in = 1;
	rs.msgs_out = rc.msgs_in = 1;
	add(p, w, &rc);
	add(p, w, &rs);
}

static void fleet(struct cw_graph *g, struct cw_windows *w)
{
	struct cw_pairing p;
	struct cw_conn_record r;

	cw_pairing_init(&p);
	cw_windows_init(w, 60 * NSEC_PER_SEC);
	/* Inside host-a, 100 / 1000; a -> b 10 / 20; inside b 5 / 7. */
	conn(&p, w, &NGINX, &APP_A, 40000, 8080, 100, 1000);
	conn(&p, w, &APP_A, &REDIS, 40001, 6379, 10, 20);
	conn(&p, w, &APP_B, &REDIS, 40002, 6379, 5, 7);
	/* nginx -> 8.8.8.8:53, only our end: 3 / 4. */
	end(&r, &NGINX, CW_REC_ROLE_CLIENT, 40003, "8.8.8.8", 53);
	r.bytes_out = 3;
	r.bytes_in = 4;
	add(&p, w, &r);
	/* A long connection app-b -> app-a reported twice: 40 bytes by
	 * 20 s, 100 by 70 s (cumulative); the server end once, at close. */
	end(&r, &APP_B, CW_REC_ROLE_CLIENT, 40004, APP_A.ip, 8080);
	r.bytes_out = 40;
	r.flags = 0;
	add(&p, w, &r);
	r.bytes_out = 100;
	r.last_ns = T0 + 70 * NSEC_PER_SEC;
	r.flags = CW_REC_CLOSED;
	add(&p, w, &r);
	end(&r, &APP_A, CW_REC_ROLE_SERVER, 8080, APP_B.ip, 40004);
	r.bytes_in = 100;
	r.bytes_out = 50;
	r.last_ns = T0 + 70 * NSEC_PER_SEC;
	add(&p, w, &r);
	cw_graph_init(g);
	CHECK(!cw_pairing_graph(&p, g));
	CHECK(!cw_windows_place(w, g, &p));
	CHECK(p.st.paired == 4 && p.st.unpaired == 1);
	cw_pairing_release(&p);
}

static long find(const struct cw_view *v, const char *name)
{
	long i = cw_view_find(v, name);

	if (i < 0)
		fprintf(stderr, "no vertex '%s' in the %s view\n", name,
			cw_group_by_name(v->by));
	CHECK(i >= 0);
	return i;
}

static void test_by_host(const struct cw_graph *g, const struct cw_windows *w)
{
	struct cw_view v;
	long a, b, x;

	CHECK(!cw_windows_view(w, &v, g, CW_BY_HOST));
	CHECK(v.nv == 3); /* two hosts and 8.8.8.8 */
	a = find(&v, "host-a");
	b = find(&v, "host-b");
	x = find(&v, "8.8.8.8");
	if (a >= 0 && b >= 0 && x >= 0) {
		/* The diagonal is intra-host traffic, both directions. */
		CHECK(cw_view_sent(&v, a, a) == 1100);
		CHECK(cw_view_sent(&v, b, b) == 12);
		CHECK(cw_view_sent(&v, a, b) == 10 + 50);
		CHECK(cw_view_sent(&v, b, a) == 20 + 100);
		CHECK(cw_view_sent(&v, a, x) == 3);
		CHECK(cw_view_sent(&v, x, a) == 4);
		CHECK(v.v[a].members == 2 && v.v[b].members == 2);
	}
	cw_view_release(&v);
}

static void test_by_cmdline(const struct cw_graph *g,
			    const struct cw_windows *w)
{
	struct cw_view v;
	long app, redis, nginx;
	size_t i;

	CHECK(!cw_windows_view(w, &v, g, CW_BY_CMDLINE));
	app = find(&v, "python3 app.py");
	redis = find(&v, "redis-server *:6379");
	nginx = find(&v, "nginx: worker");
	CHECK(v.nv == 4);
	if (app >= 0 && redis >= 0 && nginx >= 0) {
		CHECK(v.v[app].members == 2);
		/* Both apps call redis: 10 + 5 out, 20 + 7 back. */
		for (i = 0; i < v.ne; i++) {
			if (v.e[i].from == (size_t)app &&
			    v.e[i].to == (size_t)redis) {
				CHECK(v.e[i].bytes_c2s == 15);
				CHECK(v.e[i].bytes_s2c == 27);
				CHECK(v.e[i].conns == 2);
			}
		}
		/* app-b -> app-a is a loop of the app group. */
		CHECK(cw_view_sent(&v, app, app) == 150);
		CHECK(cw_view_sent(&v, nginx, app) == 100);
		CHECK(v.v[nginx].bytes_out == 103 &&
		      v.v[nginx].bytes_in == 1004);
	}
	cw_view_release(&v);
}

static void test_by_container(const struct cw_graph *g,
			      const struct cw_windows *w)
{
	struct cw_view v;
	long ca, cb, cb2, none;

	CHECK(!cw_windows_view(w, &v, g, CW_BY_CONTAINER));
	ca = find(&v, "ca");
	cb = find(&v, "cb");
	cb2 = find(&v, "cb2");
	none = find(&v, "host-a (no container)");
	CHECK(v.nv == 5);
	if (ca >= 0 && cb >= 0 && cb2 >= 0 && none >= 0) {
		CHECK(cw_view_sent(&v, ca, none) == 100);
		CHECK(cw_view_sent(&v, none, ca) == 1000);
		CHECK(cw_view_sent(&v, cb2, cb) == 5);
		CHECK(cw_view_sent(&v, none, cb) == 10);
		CHECK(cw_view_sent(&v, cb2, none) == 100);
	}
	cw_view_release(&v);
}

static void test_windows(const struct cw_graph *g, const struct cw_windows *w)
{
	uint64_t first = 0, second = 0, back = 0;
	struct cw_view v;
	long app_b, app_a;
	size_t i;

	CHECK(!cw_windows_view(w, &v, g, CW_BY_PROCESS));
	CHECK(v.window_ns == 60 * NSEC_PER_SEC);
	CHECK(v.unattributed == 0);
	app_b = find(&v, "python3[400]");
	app_a = find(&v, "python3[200]");
	for (i = 0; i < v.nwin && app_a >= 0 && app_b >= 0; i++) {
		const struct cw_view_window *c = &v.win[i];

		if (v.e[c->edge].from != (size_t)app_b ||
		    v.e[c->edge].to != (size_t)app_a)
			continue;
		if (c->start_ns == T0)
			first += c->bytes_c2s;
		else if (c->start_ns == T0 + 60 * NSEC_PER_SEC)
			second += c->bytes_c2s;
		else
			CHECK(!"a window outside the first two");
		back += c->bytes_s2c;
	}
	/* 40 by 20 s, then 60 more over 20..70 s: 48 of it before 60 s. */
	CHECK(first + second == 100);
	CHECK(first >= 40 + 47 && first <= 40 + 49);
	CHECK(back == 50);
	/* Every window sums to the edges' totals. */
	for (i = 0, first = 0; i < v.nwin; i++)
		first += v.win[i].bytes_c2s + v.win[i].bytes_s2c;
	for (i = 0, second = 0; i < v.ne; i++)
		second += cw_view_edge_bytes(&v, i);
	CHECK(first == second);
	cw_view_release(&v);
}

static void test_queries(const struct cw_graph *g)
{
	struct cw_view v;
	size_t *edges, n;
	long app;

	CHECK(!cw_view_build(&v, g, CW_BY_PROCESS, NULL));
	CHECK(!cw_view_edges(&v, -1, 2, &edges, &n));
	CHECK(n == 2);
	if (n == 2) {
		CHECK(cw_view_edge_bytes(&v, edges[0]) == 1100);
		CHECK(cw_view_edge_bytes(&v, edges[1]) == 150);
	}
	free(edges);
	app = find(&v, "python3[200]@host-a");
	CHECK(!cw_view_edges(&v, app, 0, &edges, &n));
	CHECK(n == 3); /* from nginx, to redis, from app-b */
	free(edges);
	CHECK(cw_view_find(&v, "python3") == -1);
	CHECK(cw_view_find(&v, "nope") == -1);
	cw_view_release(&v);
}

static double sum_attr(const igraph_t *ig, const char *name)
{
	igraph_vector_t vals;
	double s;

	igraph_vector_init(&vals, 0);
	igraph_cattribute_EANV(ig, name, igraph_ess_all(IGRAPH_EDGEORDER_ID),
			       &vals);
	s = igraph_vector_sum(&vals);
	igraph_vector_destroy(&vals);
	return s;
}

static void test_graphml(const struct cw_graph *g)
{
	struct cw_view v;
	igraph_t back;
	FILE *fp;
	size_t i;
	double total = 0;

	CHECK(!cw_view_build(&v, g, CW_BY_PROCESS, NULL));
	fp = tmpfile();
	CHECK(fp);
	if (!fp)
		return;
	CHECK(!cw_view_write_graphml(&v, fp, NULL, 0));
	rewind(fp);
	CHECK(igraph_read_graph_graphml(&back, fp, 0) == IGRAPH_SUCCESS);
	fclose(fp);
	CHECK(igraph_vcount(&back) == (igraph_integer_t)v.nv);
	CHECK(igraph_ecount(&back) == (igraph_integer_t)v.ne);
	for (i = 0; i < v.ne; i++)
		total += (double)cw_view_edge_bytes(&v, i);
	CHECK(sum_attr(&back, "weight") == total);
	CHECK(sum_attr(&back, "bytes_c2s") == 100 + 10 + 5 + 3 + 100);
	CHECK(igraph_cattribute_has_attr(&back, IGRAPH_ATTRIBUTE_VERTEX,
					 "cmdline"));
	for (i = 0; i < v.nv; i++)
		CHECK(!strcmp(VAS(&back, "name", (igraph_integer_t)i),
			      v.v[i].name));
	igraph_destroy(&back);
	cw_view_release(&v);
}

/*
 * Freed small blocks, which malloc hands out again last freed first, at
 * falling addresses: cgraph's own ids (a name's address) would then order
 * the clusters backwards.
 */
static void heap_backwards(void)
{
	void *p[8];
	size_t size, i;

	for (size = 24; size <= 120; size += 8) {
		for (i = 0; i < 8; i++)
			p[i] = malloc(size);
		for (i = 0; i < 8; i++)
			free(p[i]);
	}
}

/* graph.dot: every process in its host's cluster, the clusters in the
 * order of their first process whatever the heap, the unwatched peer
 * dashed, one DOT edge per graph edge (Graphviz reads it back). */
static void test_dot(const struct cw_graph *g)
{
	struct cw_viz_opts o = {.sz = sizeof(o)};
	char *buf = NULL, *p, *a, *b;
	size_t len = 0, arrows = 0;
	FILE *fp = open_memstream(&buf, &len);
	Agraph_t *back;

	heap_backwards();
	CHECK(fp && !cw_viz_write_dot(g, fp, &o));
	fclose(fp);
	CHECK(buf && strstr(buf, "digraph causeway"));
	a = strstr(buf, "host-a netns 1");
	b = strstr(buf, "host-b netns 1");
	CHECK(a && b && a < b);
	CHECK(strstr(buf, "dashed") && strstr(buf, "8.8.8.8:53"));
	for (p = buf; (p = strstr(p, "->")); p += 2)
		arrows++;
	CHECK(arrows == g->nedges);
	back = agmemread(buf);
	CHECK(back && (size_t)agnedges(back) == g->nedges &&
	      (size_t)agnnodes(back) == g->nnodes);
	if (back)
		agclose(back);
	free(buf);
	/* Edges under the share are left out. */
	o.min_share = 0.5;
	buf = NULL;
	fp = open_memstream(&buf, &len);
	CHECK(fp && !cw_viz_write_dot(g, fp, &o));
	fclose(fp);
	for (p = buf, arrows = 0; (p = strstr(p, "->")); p += 2)
		arrows++;
	CHECK(arrows == 1); /* nginx -> app, 1100 of 1299 bytes */
	free(buf);
}

/*
 * graph --window on records spanning 99,999 one-minute windows each: the
 * entries stop at the bound, the rest go whole into their last window,
 * and no byte is lost.
 */
static void test_window_cap(void)
{
	struct cw_conn_record r;
	struct cw_windows w;
	uint64_t sum = 0, i;

	cw_windows_init(&w, 60 * NSEC_PER_SEC);
	CHECK(w.max_deltas == CW_WINDOWS_MAX_DELTAS);
	w.max_deltas = 250000;
	for (i = 0; i < 20; i++) {
		end(&r, &NGINX, CW_REC_ROLE_CLIENT, (uint16_t)(41000 + i),
		    "8.8.8.8", 53);
		r.first_ns = T0;
		r.last_ns = T0 + 99999ULL * 60 * NSEC_PER_SEC;
		r.bytes_out = 1000000 + i;
		CHECK(!cw_windows_add(&w, &r));
	}
	/* Two records spread (100,000 entries each), the rest lumped. */
	CHECK(w.ndeltas == 2 * 100000 + 18);
	CHECK(w.lumped == 18);
	for (i = 0; i < w.ndeltas; i++)
		sum += w.deltas[i].bytes_out;
	CHECK(sum == 20 * 1000000 + 190);
	/* Past the span bound: lumped whatever the room. */
	end(&r, &NGINX, CW_REC_ROLE_CLIENT, 42000, "8.8.8.8", 53);
	r.first_ns = T0;
	r.last_ns = T0 + 200000ULL * 60 * NSEC_PER_SEC;
	r.bytes_out = 5;
	w.max_deltas = CW_WINDOWS_MAX_DELTAS;
	CHECK(!cw_windows_add(&w, &r));
	CHECK(w.lumped == 19 && w.deltas[w.ndeltas - 1].bytes_out == 5);
	cw_windows_release(&w);
}

int main(void)
{
	struct cw_windows w;
	struct cw_graph g;

	fleet(&g, &w);
	test_by_host(&g, &w);
	test_by_cmdline(&g, &w);
	test_by_container(&g, &w);
	test_windows(&g, &w);
	test_queries(&g);
	test_graphml(&g);
	test_dot(&g);
	test_window_cap();
	cw_graph_release(&g);
	cw_windows_release(&w);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_graph: all checks passed\n");
	return 0;
}
