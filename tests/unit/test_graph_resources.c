// SPDX-License-Identifier: MIT
/*
 * Resources per vertex: a small two-host fleet whose connection records
 * and process samples are written as JSON lines (host h1) and as a wire
 * stream (host h2), read back by the pipeline, and checked at every
 * projection against figures worked out by hand below: rates and peaks
 * from the samples, a container's cgroup counted once however many of its
 * processes are members, sums over pods, workloads and hosts, and each
 * host's newest capacity.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "common/wire.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

#include "tests/unit/check.h"

#define S  NSEC_PER_SEC
#define MS NSEC_PER_MSEC
#define C1 "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
#define C2 "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2"
#define C3 "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

/* ---- the samples alone ----------------------------------------------- */

static void test_stats_of(void)
{
	/* cpu 0, 0.5, 1.5 s at 0, 1, 2 s (a repeated reading at 2 s):
	 * 1.5 s over 2 s = 0.75 cores, the faster second 1.0; rss 100,
	 * 200, 300: mean 200, peak 300. */
	struct cw_usage_sample s[] = {{0, 0, 100},
				      {1 * S, 500 * MS, 200},
				      {2 * S, 1500 * MS, 300},
				      {2 * S, 1500 * MS, 300}};
	/* A counter that went back (the container restarted): 5 -> 6 s is
	 * 1 s, then 6 -> 0.2 s counts 0.2 s; 1.2 s over 2 s. */
	struct cw_usage_sample r[] = {
		{0, 5 * S, 10}, {1 * S, 6 * S, 10}, {2 * S, 200 * MS, 10}};
	struct cw_usage_stats st, sum = {0};

	cw_usage_stats_of(s, 4, &st);
	CHECK(st.known && st.samples == 3 && st.span_ns == 2 * S);
	CHECK(st.cpu_ns == 1500 * MS);
	CHECK(near(st.cpu_cores, 0.75) && near(st.cpu_peak_cores, 1.0));
	CHECK(st.rss_bytes == 200 && st.rss_peak_bytes == 300);
	cw_usage_stats_of(r, 3, &st);
	CHECK(st.cpu_ns == 1200 * MS && near(st.cpu_cores, 0.6));
	CHECK(near(st.cpu_peak_cores, 1.0));
	/* One sample: memory, no rate. */
	cw_usage_stats_of(s, 1, &st);
	CHECK(st.known && st.cpu_ns == 0 && st.cpu_cores == 0);
	CHECK(st.rss_bytes == 100 && st.rss_peak_bytes == 100);
	cw_usage_stats_of(s, 0, &st);
	CHECK(!st.known);
	/* Sums: rates and means add, peaks add (worst case together). */
	cw_usage_stats_of(s, 3, &st);
	cw_usage_stats_sum(&sum, &st);
	cw_usage_stats_of(r, 3, &st);
	cw_usage_stats_sum(&sum, &st);
	CHECK(sum.known && sum.cpu_ns == 2700 * MS);
	CHECK(near(sum.cpu_cores, 1.35) && near(sum.cpu_peak_cores, 2.0));
	CHECK(sum.rss_bytes == 210 && sum.rss_peak_bytes == 310);
}

/* ---- the fleet ------------------------------------------------------- */

struct proc {
	const char *host, *ip, *comm, *container;
	uint32_t pid;
	int source; /* enum cw_usage_source */
	const char *cname, *pod, *ns, *kind, *owner;
};

/* h1: web1 and web2 in container C1 (pod web-...-x2x4z), tool outside any;
 * h2: db in C2 (db-0), cache in C3 (another web pod). */
static const struct proc WEB1 = {
	"h1",	"10.0.0.1",   "web", C1, 101, 1, "web", "web-7d9f8b6c5d-x2x4z",
	"shop", "Deployment", "web"};
static const struct proc WEB2 = {
	"h1",	"10.0.0.1",   "web", C1, 102, 1, "web", "web-7d9f8b6c5d-x2x4z",
	"shop", "Deployment", "web"};
static const struct proc TOOL = {"h1", "10.0.0.1", "tool", "", 301, 0,
				 "",   "",	   "",	   "", ""};
static const struct proc DB = {"h2", "10.0.0.2", "db",	 C2,	 201,
			       1,    "db",	 "db-0", "shop", "StatefulSet",
			       "db"};
static const struct proc CACHE = {
	"h2",	"10.0.0.2",   "web", C3, 401, 1, "web", "web-7d9f8b6c5d-abcde",
	"shop", "Deployment", "web"};

static void set_proc(struct cw_process *p, const struct proc *d)
{
	memset(p, 0, sizeof(*p));
	p->tgid = d->pid;
	p->start_ns = d->pid * 1000ULL;
	snprintf(p->comm, sizeof(p->comm), "%s", d->comm);
	snprintf(p->cmdline, sizeof(p->cmdline), "%s", d->comm);
	snprintf(p->container, sizeof(p->container), "%s", d->container);
	snprintf(p->container_name, sizeof(p->container_name), "%s", d->cname);
	snprintf(p->pod_name, sizeof(p->pod_name), "%s", d->pod);
	snprintf(p->pod_ns, sizeof(p->pod_ns), "%s", d->ns);
	snprintf(p->workload_kind, sizeof(p->workload_kind), "%s", d->kind);
	snprintf(p->workload, sizeof(p->workload), "%s", d->owner);
}

/* The outputs: JSON lines for h1, a wire stream for h2. */
struct out {
	FILE *json, *wire;
	uint64_t cookie;
};

static void emit(struct out *o, const char *host, struct cw_wire_msg *m)
{
	uint8_t *buf;
	size_t len;

	if (!strcmp(host, "h1")) {
		struct cw_jsonw w;

		cw_jsonw_init(&w, o->json);
		cw_wire_msg_json(&w, m);
		cw_jsonw_end_line(&w);
		return;
	}
	CHECK(!cw_wire_encode(m, &buf, &len));
	CHECK(!cw_wire_write_frame(o->wire, buf, len));
	free(buf);
}

static void end(struct out *o, const struct proc *p, int role, uint16_t lport,
		const char *rip, uint16_t rport, uint64_t out, uint64_t in)
{
	struct cw_wire_msg m = {.kind = CW_WIRE_CONN,
				.version = CW_WIRE_VERSION};
	struct cw_conn_record *r = &m.conn;

	snprintf(r->host, sizeof(r->host), "%s", p->host);
	r->netns = 1;
	r->cookie = ++o->cookie;
	r->protocol = 6;
	r->role = (uint8_t)role;
	cw_addr_parse(&r->laddr, p->ip);
	cw_addr_parse(&r->raddr, rip);
	r->lport = lport;
	r->rport = rport;
	r->bytes_out = out;
	r->bytes_in = in;
	r->first_ns = 10 * S;
	r->last_ns = 20 * S;
	r->flags = CW_REC_CLOSED;
	set_proc(&r->proc, p);
	/* What the correlator keeps of a process has no identity: the
	 * graph must take it from the samples. */
	memset(r->proc.container_name, 0,
	       sizeof(r->proc) - offsetof(struct cw_process, container_name));
	emit(o, p->host, &m);
}

static void conn(struct out *o, const struct proc *c, const struct proc *s,
		 uint16_t cport, uint16_t sport, uint64_t c2s, uint64_t s2c)
{
	end(o, c, CW_REC_ROLE_CLIENT, cport, s->ip, sport, c2s, s2c);
	end(o, s, CW_REC_ROLE_SERVER, sport, c->ip, cport, s2c, c2s);
}

/* One sample: t and cpu in ms. */
static void sample(struct out *o, const struct proc *p, uint64_t t_ms,
		   uint64_t cpu_ms, uint64_t rss)
{
	struct cw_wire_msg m = {.kind = CW_WIRE_PROC,
				.version = CW_WIRE_VERSION};

	snprintf(m.proc.host, sizeof(m.proc.host), "%s", p->host);
	set_proc(&m.proc.proc, p);
	m.proc.time_ns = 1000 * S + t_ms * MS;
	m.proc.cpu_ns = cpu_ms * MS;
	m.proc.rss_bytes = rss;
	m.proc.source = (uint8_t)p->source;
	emit(o, p->host, &m);
}

static void host(struct out *o, const char *h, uint32_t cpus, uint64_t mem,
		 uint64_t t)
{
	struct cw_wire_msg m = {.kind = CW_WIRE_HOST,
				.version = CW_WIRE_VERSION};

	snprintf(m.host.host, sizeof(m.host.host), "%s", h);
	m.host.cpus = cpus;
	m.host.mem_bytes = mem;
	m.host.time_ns = t;
	emit(o, h, &m);
}

/*
 * Samples, and what they give (cpu ms / cores / peak cores; rss mean /
 * peak):
 *   web1 (C1)  t 0,1,2 s: cpu 0,500,1500; rss 100,200,300
 *              -> 1500 / 0.75 / 1.0; 200 / 300 (span 2 s)
 *   web2 (C1)  t 0.5,1.5 s (the same cgroup, read at other instants):
 *              cpu 200,1000; rss 150,250 -> 800 / 0.8 / 0.8; 200 / 250
 *              (span 1 s: web1 stands for C1 in groups)
 *   tool       t 0,1 s: cpu 0,100; rss 50,70 -> 100 / 0.1 / 0.1; 60 / 70
 *   db (C2)    t 0,2,4 s (samples out of order): cpu 0,1000,3000;
 *              rss 1000 each -> 3000 / 0.75 / 1.0; 1000 / 1000
 *   cache (C3) t 0,1,2 s: cpu 0,250,500; rss 400,500,600
 *              -> 500 / 0.25 / 0.25; 500 / 600
 */
static void write_fleet(struct out *o)
{
	conn(o, &WEB1, &DB, 40001, 5432, 1000, 2000);
	conn(o, &WEB2, &DB, 40002, 5432, 100, 200);
	conn(o, &TOOL, &WEB1, 40003, 8080, 10, 20);
	conn(o, &CACHE, &DB, 40004, 5432, 50, 60);
	sample(o, &WEB1, 0, 0, 100);
	sample(o, &WEB1, 1000, 500, 200);
	sample(o, &WEB1, 2000, 1500, 300);
	sample(o, &WEB2, 500, 200, 150);
	sample(o, &WEB2, 1500, 1000, 250);
	sample(o, &TOOL, 0, 0, 50);
	sample(o, &TOOL, 1000, 100, 70);
	sample(o, &DB, 4000, 3000, 1000);
	sample(o, &DB, 0, 0, 1000);
	sample(o, &DB, 2000, 1000, 1000);
	sample(o, &CACHE, 0, 0, 400);
	sample(o, &CACHE, 1000, 250, 500);
	sample(o, &CACHE, 2000, 500, 600);
	host(o, "h1", 2, 4ULL << 30, 1 * S);
	host(o, "h1", 4, 8ULL << 30, 5 * S); /* newer: this one stands */
	host(o, "h2", 8, 16ULL << 30, 3 * S);
}

/* The view as JSON, parsed back. */
static struct json_object *view_json(const struct cw_view *v)
{
	struct json_object *o;
	struct cw_jsonw w;
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	CHECK(fp != NULL);
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_view_json(v, &w, NULL, 0);
	cw_jsonw_obj_close(&w);
	fclose(fp);
	o = json_tokener_parse(text);
	free(text);
	CHECK(o != NULL);
	return o;
}

static struct json_object *node_named(struct json_object *g, const char *name)
{
	struct json_object *nodes, *n, *v;
	size_t i;

	json_object_object_get_ex(g, "nodes", &nodes);
	for (i = 0; i < json_object_array_length(nodes); i++) {
		n = json_object_array_get_idx(nodes, i);
		if (json_object_object_get_ex(n, "name", &v) &&
		    !strcmp(json_object_get_string(v), name))
			return n;
	}
	fprintf(stderr, "no vertex '%s'\n", name);
	return NULL;
}

static double num(struct json_object *n, const char *key)
{
	struct json_object *v;

	if (!n || !json_object_object_get_ex(n, key, &v))
		return -1;
	return json_object_get_double(v);
}

static const char *str(struct json_object *n, const char *key)
{
	struct json_object *v;

	if (!n || !json_object_object_get_ex(n, key, &v))
		return "";
	return json_object_get_string(v);
}

/* A vertex's figures: cpu ms, cores, peak cores, rss mean, rss peak. */
static void want(struct json_object *g, const char *name, double cpu_ms,
		 double cores, double peak, double rss, double rss_peak)
{
	struct json_object *n = node_named(g, name);
	bool ok = n && near(num(n, "cpu_ms"), cpu_ms) &&
		  near(num(n, "cpu_cores"), cores) &&
		  near(num(n, "cpu_peak_cores"), peak) &&
		  num(n, "rss_bytes") == rss &&
		  num(n, "rss_peak_bytes") == rss_peak;

	if (!ok)
		fprintf(stderr, "%s: %s\n", name,
			n ? json_object_to_json_string(n) : "missing");
	CHECK(ok);
}

static void project(struct cw_pipeline *pl, enum cw_group_by by,
		    struct json_object **g)
{
	cw_view_release(&pl->view);
	CHECK(!cw_view_build(&pl->view, &pl->graph, by, NULL));
	*g = view_json(&pl->view);
}

static void check_views(struct cw_pipeline *pl)
{
	struct json_object *g, *hosts, *h;

	project(pl, CW_BY_PROCESS, &g);
	want(g, "web[101]@h1", 1500, 0.75, 1.0, 200, 300);
	want(g, "web[102]@h1", 800, 0.8, 0.8, 200, 250);
	want(g, "tool[301]@h1", 100, 0.1, 0.1, 60, 70);
	want(g, "db[201]@h2", 3000, 0.75, 1.0, 1000, 1000);
	/* Identity taken from the samples, not from the records. */
	CHECK(!strcmp(str(node_named(g, "db[201]@h2"), "pod"), "db-0"));
	CHECK(!strcmp(str(node_named(g, "db[201]@h2"), "workload"), "db"));
	CHECK(!strcmp(str(node_named(g, "db[201]@h2"), "namespace"), "shop"));
	CHECK(!strcmp(str(node_named(g, "db[201]@h2"), "container_name"),
		      "db"));
	CHECK(!strcmp(str(node_named(g, "tool[301]@h1"), "pod"), ""));
	json_object_object_get_ex(g, "hosts", &hosts);
	CHECK(json_object_array_length(hosts) == 2);
	h = json_object_array_get_idx(hosts, 0);
	CHECK(!strcmp(str(h, "host"), "h1") && num(h, "cpus") == 4 &&
	      num(h, "mem_bytes") == (double)(8ULL << 30));
	h = json_object_array_get_idx(hosts, 1);
	CHECK(!strcmp(str(h, "host"), "h2") && num(h, "cpus") == 8);
	json_object_put(g);

	/* C1 once (web1 stands for it), tool per host. */
	project(pl, CW_BY_CONTAINER, &g);
	want(g, C1, 1500, 0.75, 1.0, 200, 300);
	want(g, "h1 (no container)", 100, 0.1, 0.1, 60, 70);
	CHECK(!strcmp(str(node_named(g, C1), "label"),
		      "web (pod web-7d9f8b6c5d-x2x4z)"));
	json_object_put(g);

	project(pl, CW_BY_POD, &g);
	want(g, "shop/web-7d9f8b6c5d-x2x4z", 1500, 0.75, 1.0, 200, 300);
	want(g, "shop/web-7d9f8b6c5d-abcde", 500, 0.25, 0.25, 500, 600);
	want(g, "shop/db-0", 3000, 0.75, 1.0, 1000, 1000);
	want(g, "h1 (no container)", 100, 0.1, 0.1, 60, 70);
	json_object_put(g);

	/* The two web pods on two hosts are one workload. */
	project(pl, CW_BY_WORKLOAD, &g);
	want(g, "shop/Deployment/web", 2000, 1.0, 1.25, 700, 900);
	want(g, "shop/StatefulSet/db", 3000, 0.75, 1.0, 1000, 1000);
	CHECK(!strcmp(str(node_named(g, "shop/Deployment/web"), "label"),
		      "web"));
	CHECK(num(node_named(g, "shop/Deployment/web"), "members") == 3);
	json_object_put(g);

	/* h1: C1 + tool; h2: C2 + C3. */
	project(pl, CW_BY_HOST, &g);
	want(g, "h1", 1600, 0.85, 1.1, 260, 370);
	want(g, "h2", 3500, 1.0, 1.25, 1500, 1600);
	json_object_put(g);
}

static void test_fleet(void)
{
	char jpath[] = "/tmp/cw-res-XXXXXX", wpath[] = "/tmp/cw-res-XXXXXX";
	char *paths[] = {jpath, wpath};
	struct out o = {0};
	struct cw_pipeline pl;
	int jfd = mkstemp(jpath), wfd = mkstemp(wpath);

	CHECK(jfd >= 0 && wfd >= 0);
	o.json = fdopen(jfd, "w");
	o.wire = fdopen(wfd, "w");
	CHECK(o.json && o.wire && !cw_wire_write_magic(o.wire));
	write_fleet(&o);
	fclose(o.json);
	fclose(o.wire);

	cw_pipeline_init(&pl, 0);
	CHECK(!cw_pipeline_read_files(&pl, paths, 2, false));
	CHECK(pl.read.records == 8);
	CHECK(pl.res.np == 5 && pl.res.nhosts == 2);
	CHECK(!cw_pipeline_finish(&pl, CW_BY_PROCESS));
	CHECK(pl.graph.nedges == 4);
	check_views(&pl);
	cw_pipeline_release(&pl);
	unlink(jpath);
	unlink(wpath);
}

/* Identity and the usage source survive the wire. */
static void test_wire_round_trip(void)
{
	struct cw_wire_msg m = {.kind = CW_WIRE_PROC,
				.version = CW_WIRE_VERSION},
			   d;
	uint8_t *buf;
	size_t len;

	snprintf(m.proc.host, sizeof(m.proc.host), "h2");
	set_proc(&m.proc.proc, &DB);
	m.proc.source = CW_USAGE_CGROUP;
	m.proc.rss_hwm_bytes = 12345;
	m.proc.rss_bytes = 999;
	CHECK(!cw_wire_encode(&m, &buf, &len));
	CHECK(cw_wire_decode(buf, len, &d, NULL, 0) == CW_WIRE_PROC);
	free(buf);
	CHECK(d.proc.source == CW_USAGE_CGROUP);
	CHECK(d.proc.rss_hwm_bytes == 12345 && d.proc.rss_bytes == 999);
	CHECK(!strcmp(d.proc.proc.pod_name, "db-0"));
	CHECK(!strcmp(d.proc.proc.pod_ns, "shop"));
	CHECK(!strcmp(d.proc.proc.workload_kind, "StatefulSet"));
	CHECK(!strcmp(d.proc.proc.workload, "db"));
	CHECK(!strcmp(d.proc.proc.container_name, "db"));
}

int main(void)
{
	test_stats_of();
	test_wire_round_trip();
	test_fleet();
	if (failures)
		fprintf(stderr, "test_graph_resources: %d failed\n", failures);
	return failures ? 1 : 0;
}
