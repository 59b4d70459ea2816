// SPDX-License-Identifier: MIT
/*
 * Estimated messages in the windowed views: a connection whose messages
 * were counted in full during one 60 s window and estimated in the next
 * (half of its new bytes counted), and one with no estimate block at all.
 * The view's windows (causeway graph --window) and serve's graph for a
 * time range must say, per window, what the edges say over all time:
 * msgs_estimated and sampled_fraction, only where an agent said how it
 * counted.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/util.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"
#include "serve/serve.h"

#include "tests/unit/check.h"

#define T0 (1767225600ULL * NSEC_PER_SEC) /* a minute boundary */
#define S  NSEC_PER_SEC

static uint64_t cookie;

/* An end of a connection between 10.0.0.1 (pid 100) and 10.0.0.2:port
 * (pid 200), cumulative counters set by the caller. */
static void end(struct cw_conn_record *r, bool client, uint16_t cport,
		uint16_t sport)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "h");
	r->netns = 1;
	r->cookie = ++cookie;
	r->protocol = 6;
	r->role = client ? CW_REC_ROLE_CLIENT : CW_REC_ROLE_SERVER;
	cw_addr_parse(&r->laddr, client ? "10.0.0.1" : "10.0.0.2");
	cw_addr_parse(&r->raddr, client ? "10.0.0.2" : "10.0.0.1");
	r->lport = client ? cport : sport;
	r->rport = client ? sport : cport;
	r->first_ns = T0 + 10 * S;
	r->proc.tgid = client ? 100 : 200 + sport;
	r->proc.start_ns = r->proc.tgid * 1000ULL;
	strcpy(r->proc.comm, client ? "client" : "server");
}

/* Both ends' records at `at`: c2s/s2c bytes and messages so far. */
static void both(struct cw_conn_record rec[2], uint64_t at, uint64_t c2s,
		 uint64_t s2c, uint32_t ppm, bool est)
{
	int i;

	for (i = 0; i < 2; i++) {
		rec[i].last_ns = at;
		rec[i].bytes_out = i ? s2c : c2s;
		rec[i].bytes_in = i ? c2s : s2c;
		rec[i].msgs_out = rec[i].msgs_in = c2s / 100;
		rec[i].sampled_ppm = ppm;
		rec[i].flags = est ? CW_REC_MSGS_EST : 0;
	}
}

static int nrecs;
static struct cw_conn_record recs[16];

static void push(const struct cw_conn_record rec[2])
{
	recs[nrecs++] = rec[0];
	recs[nrecs++] = rec[1];
}

/* Port 80: counted in full in window 0 (records at its last ns), estimated in
 * window 1 (records at 110 s: half of all bytes counted, so 500 of the
 * new 2000 c2s and 250 of the new 1000 s2c).  Port 81: no estimate block
 * (an older agent), in window 1 only. */
static void make_records(void)
{
	struct cw_conn_record a[2], b[2];

	end(&a[0], true, 40000, 80);
	end(&a[1], false, 40000, 80);
	both(a, T0 + 60 * S - 1, 1000, 500, CW_PPM, false);
	push(a);
	both(a, T0 + 110 * S, 3000, 1500, CW_PPM / 2, true);
	push(a);
	end(&b[0], true, 40001, 81);
	end(&b[1], false, 40001, 81);
	b[0].first_ns = b[1].first_ns = T0 + 70 * S;
	both(b, T0 + 100 * S, 700, 300, 0, false);
	push(b);
}

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, k, &v);
	return v;
}

/* Check one window cell or edge: est -1 means "no fields at all". */
static void check_est(struct json_object *o, int est, double frac)
{
	struct json_object *e = get(o, "msgs_estimated"),
			   *f = get(o, "sampled_fraction");

	if (est < 0) {
		CHECK(!e && !f);
		return;
	}
	CHECK(e && f);
	if (!e || !f)
		return;
	CHECK(json_object_get_boolean(e) == est);
	CHECK(json_object_get_double(f) > frac - 1e-6 &&
	      json_object_get_double(f) < frac + 1e-6);
}

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

/* The server port of view edge i (its server vertex is "server[PID]",
 * PID = 200 + port). */
static int port_of_edge(struct json_object *view, size_t i)
{
	struct json_object *e =
		json_object_array_get_idx(get(view, "edges"), i);
	const char *name = json_object_get_string(get(e, "server_name"));
	const char *b = name ? strchr(name, '[') : NULL;

	return b ? atoi(b + 1) - 200 : -1;
}

static void test_view_windows(void)
{
	struct cw_pairing p;
	struct cw_windows w;
	struct cw_graph g;
	struct cw_view v;
	struct json_object *o, *wins, *c;
	size_t i, seen = 0;
	int port, k;

	cw_pairing_init(&p);
	cw_windows_init(&w, 60 * S);
	for (k = 0; k < nrecs; k++) {
		CHECK(!cw_pairing_add(&p, &recs[k]));
		CHECK(!cw_windows_add(&w, &recs[k]));
	}
	cw_graph_init(&g);
	CHECK(!cw_pairing_graph(&p, &g));
	CHECK(!cw_windows_place(&w, &g, &p));
	cw_pairing_release(&p);
	CHECK(!cw_windows_view(&w, &v, &g, CW_BY_PROCESS));
	o = view_json(&v);
	wins = get(o, "windows");
	CHECK(wins && json_object_array_length(wins) == 3);
	for (i = 0; wins && i < json_object_array_length(wins); i++) {
		c = json_object_array_get_idx(wins, i);
		port = port_of_edge(o, json_object_get_uint64(get(c, "edge")));
		if (port == 81) {
			check_est(c, -1, 0);
		} else if (json_object_get_uint64(get(c, "start_ns")) == T0) {
			CHECK(json_object_get_uint64(get(c, "bytes_c2s")) ==
			      1000);
			check_est(c, 0, 1.0);
			seen++;
		} else {
			CHECK(json_object_get_uint64(get(c, "bytes_c2s")) ==
			      2000);
			check_est(c, 1, 750.0 / 3000.0);
			seen++;
		}
	}
	CHECK(seen == 2);
	/* The edges over all time, as before: 2250 of 4500 bytes. */
	for (i = 0; i < json_object_array_length(get(o, "edges")); i++)
		check_est(json_object_array_get_idx(get(o, "edges"), i),
			  port_of_edge(o, i) == 81 ? -1 : 1, 0.5);
	json_object_put(o);
	cw_view_release(&v);
	cw_graph_release(&g);
	cw_windows_release(&w);
}

/* serve's /api/graph for a range sums the windows in it, flags included. */
static void serve_check(bool range, uint64_t since, int est80, double frac80)
{
	struct cw_serve_query q;
	struct json_object *o, *nodes, *edges, *e, *to;
	char *text = NULL;
	size_t len = 0, i, k, n80 = 0;
	FILE *fp = open_memstream(&text, &len);
	const char *comm;

	CHECK(fp != NULL);
	if (!fp)
		return;
	memset(&q, 0, sizeof(q));
	q.by = CW_SERVE_BY_PROCESS;
	q.has_since = range;
	q.since_ns = since;
	q.until_ns = since + 60 * S;
	CHECK(cw_serve_graph_json(recs, (size_t)nrecs, 60 * S, &q, fp) == 0);
	fclose(fp);
	o = json_tokener_parse(text);
	free(text);
	CHECK(o != NULL);
	nodes = get(o, "nodes");
	edges = get(o, "edges");
	for (i = 0; i < json_object_array_length(edges); i++) {
		e = json_object_array_get_idx(edges, i);
		/* its server: node "nN" is nodes[N] */
		k = (size_t)atoi(json_object_get_string(get(e, "to")) + 1);
		to = json_object_array_get_idx(nodes, k);
		comm = json_object_get_string(get(to, "comm"));
		if (!comm || strcmp(comm, "server") ||
		    json_object_get_int64(get(e, "bytes_c2s")) == 700) {
			check_est(e, -1, 0);
			continue;
		}
		n80++;
		check_est(e, est80, frac80);
	}
	CHECK(n80 == 1);
	json_object_put(o);
}

static void test_serve_range(void)
{
	serve_check(false, 0, 1, 0.5);
	serve_check(true, T0, 0, 1.0);
	serve_check(true, T0 + 60 * S, 1, 0.25);
}

int main(void)
{
	make_records();
	test_view_windows();
	test_serve_range();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_windows_estimate: all checks passed\n");
	return 0;
}
