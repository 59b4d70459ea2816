// SPDX-License-Identifier: MIT
/* The JSON API: what the page draws, and what curl and scripts read. */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"

#define MATRIX_MAX 400 /* vertices a matrix may have */

/* Which parameters each endpoint takes. */
enum {
	P_BY = 1,
	P_RANGE = 2,
	P_SHARE = 4,
	P_NODE = 8,
	P_RUN = 16,
	P_TRACE = 32,
	P_LIMIT = 64,
};

static int check_params(const struct cw_serve_query *q, unsigned allowed,
			struct serve_reply *r)
{
	const char *bad = NULL;

	if (q->has_by && !(allowed & P_BY))
		bad = "by";
	else if (q->has_since && !(allowed & P_RANGE))
		bad = "since";
	else if (q->min_share > 0 && !(allowed & P_SHARE))
		bad = "min_share";
	else if (q->node[0] && !(allowed & P_NODE))
		bad = "node";
	else if (q->run[0] && !(allowed & P_RUN))
		bad = "run";
	else if (q->trace[0] && !(allowed & P_TRACE))
		bad = "trace";
	else if (q->has_limit && !(allowed & P_LIMIT))
		bad = "limit";
	if (!bad)
		return 0;
	serve_reply_error(r, 400, "'%s' does not apply here", bad);
	return -1;
}

static void json_query(struct cw_jsonw *w, const struct cw_serve_query *q,
		       const struct serve_graph *g)
{
	cw_jsonw_str(w, "by", cw_serve_by_name(q->by));
	if (q->has_since) {
		cw_jsonw_u64(w, "since", q->since_ns / NSEC_PER_SEC);
		cw_jsonw_u64(w, "until", q->until_ns / NSEC_PER_SEC);
	} else {
		cw_jsonw_null(w, "since");
		cw_jsonw_null(w, "until");
	}
	cw_jsonw_double(w, "min_share", q->min_share);
	if (q->node[0])
		cw_jsonw_str(w, "node", q->node);
	cw_jsonw_double(w, "window_s", g->window_ns / 1e9);
	cw_jsonw_u64(w, "first_seen", g->first_ns / NSEC_PER_SEC);
	cw_jsonw_u64(w, "last_seen",
		     (g->last_ns + NSEC_PER_SEC - 1) / NSEC_PER_SEC);
	cw_jsonw_u64(w, "total_bytes", g->total_bytes);
	cw_jsonw_u64(w, "hidden_edges", g->hidden);
}

/* What /api/graph.svg draws of this graph: the page says so. */
static void json_drawn(struct cw_jsonw *w, const struct serve_graph *g)
{
	struct serve_layout_stats st;

	serve_layout_stats(&st);
	cw_jsonw_u64(w, "layout_max_edges", st.max_edges);
	cw_jsonw_u64(w, "drawn_edges",
		     g->ne < st.max_edges ? g->ne : st.max_edges);
}

/* A node's RED summary (serve_red_of), where its edges have health. */
static void json_red(struct cw_jsonw *w, const struct serve_graph *g, size_t i)
{
	struct serve_red red;

	serve_red_of(g, i, &red);
	if (!red.known)
		return;
	cw_jsonw_obj_open(w, "red");
	cw_jsonw_u64(w, "exchanges", red.exchanges);
	cw_jsonw_double(w, "rate", red.rate);
	cw_jsonw_u64(w, "errors", red.errors);
	cw_jsonw_double(w, "error_rate", red.error_rate);
	cw_jsonw_u64(w, "p50_ns", red.p50_ns);
	cw_jsonw_u64(w, "p99_ns", red.p99_ns);
	cw_jsonw_obj_close(w);
}

static void json_graph(struct cw_jsonw *w, const struct serve_graph *g)
{
	char id[32];
	size_t i;

	cw_jsonw_arr_open(w, "nodes");
	for (i = 0; i < g->nn; i++) {
		const struct serve_node *n = &g->nodes[i];
		/* graph/'s node schema; the page's id ("n<i>") first */
		struct cw_node_json j = {
			.name = n->name,
			.label = n->label,
			.kind = n->kind,
			.has_external = true,
			.external = n->external,
			.dns_name = n->dns_name,
			.host = n->host,
			.comm = n->comm,
			.container = n->container,
			.identity = n->proc,
			.by = serve_group_by(g->by),
			.has_traffic = true,
			.members = n->members,
			.bytes_out = n->bytes_out,
			.bytes_in = n->bytes_in,
			.usage = &n->usage,
		};

		cw_jsonw_obj_open(w, NULL);
		snprintf(id, sizeof(id), "n%zu", i);
		cw_jsonw_str(w, "id", id);
		cw_node_json(w, &j);
		json_red(w, g, i);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "edges");
	for (i = 0; i < g->ne; i++) {
		const struct serve_edge *e = &g->edges[i];

		struct cw_edge_json j = {
			.client_name = g->nodes[e->from].name,
			.server_name = g->nodes[e->to].name,
			.protocol = -1,
			CW_EDGE_JSON_TRAFFIC(e),
			.msgs_est = e->msgs_est,
			.health = e->health,
		};

		cw_jsonw_obj_open(w, NULL);
		snprintf(id, sizeof(id), "e%zu", i);
		cw_jsonw_str(w, "id", id);
		snprintf(id, sizeof(id), "n%zu", e->from);
		cw_jsonw_str(w, "from", id);
		snprintf(id, sizeof(id), "n%zu", e->to);
		cw_jsonw_str(w, "to", id);
		/* graph/'s edge schema, the ends by name ("from" and "to"
		 * are the page's node ids) */
		cw_edge_json(w, &j, CW_JSON_ENDS_NAME);
		cw_jsonw_double(w, "share",
				g->total_bytes
					? (double)cw_count_add(e->bytes_c2s,
							       e->bytes_s2c) /
						  (double)g->total_bytes
					: 0);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

/* /api/graph's JSON: the query and the graph, one line. */
static void write_graph(FILE *fp, const struct cw_serve_query *q,
			const struct serve_graph *g)
{
	struct cw_jsonw w;

	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	json_query(&w, q, g);
	json_drawn(&w, g);
	json_graph(&w, g);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* The graph for q into g, or an error reply; 0 or -1. */
static int get_graph(const struct serve_ctx *c, const struct cw_serve_query *q,
		     struct serve_graph *g, struct serve_reply *r)
{
	char err[300];
	int ret = serve_model_graph(c->model, q, g, err, sizeof(err));

	if (ret == 0)
		return 0;
	serve_reply_error(r, ret == 1 ? 404 : ret == 2 ? 400 : 500, "%s", err);
	return -1;
}

/*
 * /api/graph.svg: the view's largest max_edges edges laid out by
 * the layout thread (serve/layout.c).  200 with the SVG; 202 with
 * {"pending": true, ...} while the layout runs (ask again); 503 when it
 * failed or was stopped at its bound.
 */
static void graph_svg(const struct serve_graph *g, struct serve_reply *r)
{
	char err[300], *dot = NULL, *svg = NULL;
	struct serve_layout_stats ls;
	size_t dot_len, len;
	struct cw_jsonw w;
	int st;

	serve_layout_stats(&ls);
	if (serve_render_dot(g, ls.max_edges, &dot, &dot_len))
		return serve_reply_error(r, 500,
					 "graphviz failed to draw the graph "
					 "(see the log)");
	st = serve_layout_svg(dot, dot_len, &svg, &len, err, sizeof(err));
	if (st == SERVE_LAYOUT_READY) {
		if (!serve_reply_open(r, 200, "image/svg+xml"))
			fwrite(svg, 1, len, r->fp);
	} else if (st == SERVE_LAYOUT_FAILED) {
		serve_reply_error(r, 503,
				  "the layout of %zu edges: %s (choose fewer: "
				  "by=host, a higher min_share or a node)",
				  g->ne < ls.max_edges ? g->ne : ls.max_edges,
				  err);
	} else if (!serve_reply_open(r, 202, "application/json")) {
		cw_jsonw_init(&w, r->fp);
		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_bool(&w, "pending", true);
		cw_jsonw_str(&w, "message", err);
		cw_jsonw_u64(&w, "status", 202);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	}
	free(svg);
}

static void api_graph(const struct serve_ctx *c, const struct cw_serve_query *q,
		      bool svg, struct serve_reply *r)
{
	struct serve_graph g;

	if (check_params(q, P_BY | P_RANGE | P_SHARE | P_NODE, r) ||
	    get_graph(c, q, &g, r))
		return;
	if (svg)
		graph_svg(&g, r);
	else if (!serve_reply_open(r, 200, "application/json"))
		write_graph(r->fp, q, &g);
	serve_graph_release(&g);
}

int cw_serve_graph_json(const struct cw_conn_record *r, size_t n,
			uint64_t window_ns, const struct cw_serve_query *q,
			FILE *fp)
{
	struct serve_model *m = serve_model_new(window_ns);
	struct serve_graph g;
	char err[300];
	int ret = -1;

	if (!m || serve_model_add(m, r, n))
		goto out;
	if (serve_model_graph(m, q, &g, err, sizeof(err))) {
		cw_error("%s", err);
		goto out;
	}
	write_graph(fp, q, &g);
	serve_graph_release(&g);
	ret = 0;
out:
	if (m)
		serve_model_free(m);
	return ret;
}

/* Bytes vertex i sent to vertex j: cell i * n + j. */
static uint64_t *matrix_of(const struct serve_graph *g)
{
	uint64_t *m = calloc(g->nn * g->nn + 1, sizeof(*m));
	size_t i;

	for (i = 0; m && i < g->ne; i++) {
		const struct serve_edge *e = &g->edges[i];

		m[e->from * g->nn + e->to] += e->bytes_c2s;
		m[e->to * g->nn + e->from] += e->bytes_s2c;
	}
	return m;
}

static void api_matrix(const struct serve_ctx *c, struct cw_serve_query *q,
		       struct serve_reply *r)
{
	struct serve_graph g;
	struct cw_jsonw w;
	uint64_t *m;
	size_t i, j;

	if (check_params(q, P_BY | P_RANGE, r))
		return;
	if (!q->has_by)
		q->by = CW_SERVE_BY_HOST;
	if (get_graph(c, q, &g, r))
		return;
	if (g.nn > MATRIX_MAX) {
		serve_reply_error(r, 400,
				  "%zu vertices: a matrix takes at most %d "
				  "(use by=host or a shorter range)",
				  g.nn, MATRIX_MAX);
		goto out;
	}
	m = matrix_of(&g);
	if (!m || serve_reply_open(r, 200, "application/json")) {
		free(m);
		goto out;
	}
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	json_query(&w, q, &g);
	cw_jsonw_arr_open(&w, "names");
	for (i = 0; i < g.nn; i++)
		cw_jsonw_str(&w, NULL, g.nodes[i].name);
	cw_jsonw_arr_close(&w);
	cw_jsonw_arr_open(&w, "labels");
	for (i = 0; i < g.nn; i++)
		cw_jsonw_str(&w, NULL, g.nodes[i].label);
	cw_jsonw_arr_close(&w);
	cw_jsonw_arr_open(&w, "external");
	for (i = 0; i < g.nn; i++)
		cw_jsonw_bool(&w, NULL, g.nodes[i].external);
	cw_jsonw_arr_close(&w);
	cw_jsonw_arr_open(&w, "bytes");
	for (i = 0; i < g.nn; i++) {
		cw_jsonw_arr_open(&w, NULL);
		for (j = 0; j < g.nn; j++)
			cw_jsonw_u64(&w, NULL, m[i * g.nn + j]);
		cw_jsonw_arr_close(&w);
	}
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	free(m);
out:
	serve_graph_release(&g);
}

/*
 * Causal paths: the file holds one pathset per line (`causeway paths
 * --json`, paths.json of `causeway run -o --paths`), one per timing window;
 * with --kafka the feed holds the newest windows' lines (correlate's
 * paths.jsonl lines).  Each is parsed and written again, so nothing
 * unchecked reaches the page.
 */
static int add_window(struct json_object *wins, const char *line, size_t lineno,
		      const char *what, struct serve_reply *r)
{
	struct json_object *o;

	if (strspn(line, " \t\r\n") == strlen(line))
		return 0;
	o = json_tokener_parse(line);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		serve_reply_error(r, 500, "'%s' line %zu: not a JSON object",
				  what, lineno);
		return -1;
	}
	json_object_object_add(o, "window",
			       json_object_new_int64((int64_t)lineno));
	json_object_array_add(wins, o);
	return 0;
}

/* The windows of the paths file, or of the feed; 0 or -1 (replied). */
static int read_windows(const struct serve_ctx *c, struct json_object *wins,
			struct serve_reply *r)
{
	FILE *fp = c->paths ? fopen(c->paths, "r") : NULL;
	size_t cap = 0, lineno = 0, i;
	char *line = NULL;
	int err = 0;

	if (c->feed->kafka) {
		serve_feed_lock(c->feed);
		for (i = 0; !err && i < c->feed->nwindows; i++)
			err = add_window(wins, c->feed->windows[i], i + 1,
					 "kafka", r);
		serve_feed_unlock(c->feed);
	}
	while (!err && fp && getline(&line, &cap, fp) > 0)
		err = add_window(wins, line, ++lineno, c->paths, r);
	if (!err && fp && ferror(fp))
		err = -1,
		serve_reply_error(r, 500, "unable to read '%s'", c->paths);
	if (fp)
		fclose(fp);
	free(line);
	return err;
}

static void api_paths(const struct serve_ctx *c, struct serve_reply *r)
{
	struct json_object *out = json_object_new_object();
	struct json_object *wins = json_object_new_array();
	const char *src = c->feed->kafka ? "kafka" : c->paths;

	if (!out || !wins) {
		json_object_put(wins);
		serve_reply_error(r, 500, "out of memory");
		goto out;
	}
	json_object_object_add(out, "source",
			       src ? json_object_new_string(src) : NULL);
	json_object_object_add(out, "windows", wins);
	if (read_windows(c, wins, r) ||
	    serve_reply_open(r, 200, "application/json"))
		goto out;
	fputs(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
	      r->fp);
	fputc('\n', r->fp);
out:
	json_object_put(out);
}

/*
 * Per-request traces (--traces): the slowest, or one as a waterfall.  The
 * file is looked at first and read again if it changed.
 */
#define TRACES_LIMIT 100 /* traces listed when no limit is given */

static void json_services(struct cw_jsonw *w, const struct serve_tset *set,
			  const struct serve_trace *tr)
{
	const struct serve_tspan *sp = &set->spans[tr->first];
	size_t i, j;

	cw_jsonw_arr_open(w, "services");
	for (i = 0; i < tr->n; i++) {
		for (j = 0; j < i && strcmp(set->services[sp[j].service],
					    set->services[sp[i].service]);
		     j++)
			;
		if (j == i)
			cw_jsonw_str(w, NULL, set->services[sp[i].service]);
	}
	cw_jsonw_arr_close(w);
}

/* A trace's summary: what the list shows of it. */
static void json_trace_head(struct cw_jsonw *w, const struct serve_tset *set,
			    const struct serve_trace *tr)
{
	const struct serve_tspan *root = &set->spans[tr->first];

	cw_jsonw_str(w, "trace_id", tr->id);
	cw_jsonw_str(w, "service", set->services[root->service]);
	cw_jsonw_str(w, "operation", root->name);
	cw_jsonw_u64(w, "start_ns", tr->start_ns);
	cw_jsonw_u64(w, "duration_ns", tr->end_ns - tr->start_ns);
	cw_jsonw_u64(w, "spans", tr->n);
	json_services(w, set, tr);
	if (tr->min_conf >= 0)
		cw_jsonw_double(w, "min_confidence", tr->min_conf);
	else
		cw_jsonw_null(w, "min_confidence");
	cw_jsonw_obj_open(w, "links");
	cw_jsonw_u64(w, "thread", tr->links[SERVE_LINK_THREAD]);
	cw_jsonw_u64(w, "timing", tr->links[SERVE_LINK_TIMING]);
	cw_jsonw_u64(w, "contained", tr->links[SERVE_LINK_CONTAINED]);
	cw_jsonw_u64(w, "none", tr->links[SERVE_LINK_NONE]);
	cw_jsonw_obj_close(w);
}

static void json_waterfall(struct cw_jsonw *w, const struct serve_tset *set,
			   const struct serve_trace *tr)
{
	static const char *const kinds[] = {"unspecified", "internal",
					    "server",	   "client",
					    "producer",	   "consumer"};
	const struct serve_tspan *sp = &set->spans[tr->first];
	size_t i;

	cw_jsonw_arr_open(w, "waterfall");
	for (i = 0; i < tr->n; i++, sp++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "span_id", sp->span_id);
		if (sp->parent >= 0)
			cw_jsonw_u64(w, "parent", (uint64_t)sp->parent);
		else
			cw_jsonw_null(w, "parent");
		cw_jsonw_str(w, "name", sp->name);
		cw_jsonw_str(w, "service", set->services[sp->service]);
		cw_jsonw_str(w, "kind", kinds[sp->kind]);
		cw_jsonw_u64(w, "depth", sp->depth);
		cw_jsonw_u64(w, "offset_ns", sp->start_ns - tr->start_ns);
		cw_jsonw_u64(w, "duration_ns", sp->end_ns - sp->start_ns);
		if (serve_link_name(sp->method))
			cw_jsonw_str(w, "method", serve_link_name(sp->method));
		else
			cw_jsonw_null(w, "method");
		if (sp->conf >= 0)
			cw_jsonw_double(w, "confidence", sp->conf);
		else
			cw_jsonw_null(w, "confidence");
		cw_jsonw_bool(w, "critical", sp->critical);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
}

static void json_trace_list(struct cw_jsonw *w, const struct serve_tset *set,
			    const struct cw_serve_query *q)
{
	unsigned limit = q->has_limit ? q->limit : TRACES_LIMIT;
	size_t i, total = 0;

	cw_jsonw_arr_open(w, "traces");
	for (i = 0; i < set->ntraces; i++) {
		const struct serve_trace *tr = &set->traces[i];

		if (q->has_since &&
		    (tr->start_ns < q->since_ns || tr->start_ns >= q->until_ns))
			continue;
		if (total++ >= limit)
			continue;
		cw_jsonw_obj_open(w, NULL);
		json_trace_head(w, set, tr);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_u64(w, "total", total);
}

static void api_traces(const struct serve_ctx *c,
		       const struct cw_serve_query *q, struct serve_reply *r)
{
	const struct serve_tset *set = NULL;
	ssize_t k = -1;
	struct cw_jsonw w;

	if (q->trace[0] && (q->has_since || q->has_limit))
		return serve_reply_error(r, 400,
					 "'%s' does not apply with "
					 "'trace'",
					 q->has_since ? "since" : "limit");
	if (c->traces) {
		serve_traces_refresh(c->traces);
		set = serve_traces_set(c->traces);
	}
	if (q->trace[0] && !set)
		return serve_reply_error(r, 404,
					 "no traces (serve --traces "
					 "FILE)");
	if (q->trace[0] && (k = serve_tset_find(set, q->trace)) < 0)
		return serve_reply_error(r, 404, "no trace '%s'", q->trace);
	if (serve_reply_open(r, 200, "application/json"))
		return;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	if (set)
		cw_jsonw_str(&w, "source", serve_traces_path(c->traces));
	else
		cw_jsonw_null(&w, "source");
	if (k >= 0) {
		json_trace_head(&w, set, &set->traces[k]);
		json_waterfall(&w, set, &set->traces[k]);
	} else if (set) {
		json_trace_list(&w, set, q);
	} else {
		cw_jsonw_arr_open(&w, "traces");
		cw_jsonw_arr_close(&w);
		cw_jsonw_u64(&w, "total", 0);
	}
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

/* The trace file's health in /api/stats (nothing without --traces). */
static void json_traces_stats(struct cw_jsonw *w, struct serve_traces *t)
{
	const char *last;
	uint64_t loads, errors;

	if (!t)
		return;
	serve_traces_counts(t, &loads, &errors, &last);
	cw_jsonw_str(w, "traces_file", serve_traces_path(t));
	cw_jsonw_u64(w, "traces", serve_traces_set(t)->ntraces);
	cw_jsonw_u64(w, "trace_spans", serve_traces_set(t)->nspans);
	cw_jsonw_u64(w, "trace_loads", loads);
	cw_jsonw_u64(w, "trace_load_errors", errors);
	if (last[0])
		cw_jsonw_str(w, "trace_last_error", last);
}

/* The layout thread's counts (serve/layout.c). */
static void json_layout_stats(struct cw_jsonw *w)
{
	struct serve_layout_stats st;

	serve_layout_stats(&st);
	cw_jsonw_obj_open(w, "layouts");
	cw_jsonw_u64(w, "started", st.started);
	cw_jsonw_u64(w, "done", st.done);
	cw_jsonw_u64(w, "failed", st.failed);
	cw_jsonw_u64(w, "timeouts", st.timeouts);
	cw_jsonw_u64(w, "cancelled", st.cancelled);
	cw_jsonw_u64(w, "cache_hits", st.hits);
	cw_jsonw_u64(w, "cache_misses", st.misses);
	cw_jsonw_bool(w, "running", st.running);
	cw_jsonw_u64(w, "last_ms", st.last_ms);
	cw_jsonw_u64(w, "max_edges", st.max_edges);
	cw_jsonw_u64(w, "timeout_ms", st.timeout_ms);
	cw_jsonw_obj_close(w);
}

static void api_stats(const struct serve_ctx *c, struct serve_reply *r)
{
	struct serve_stats st;
	struct cw_jsonw w;
	size_t i;

	serve_model_stats(c->model, &st);
	if (c->traces)
		serve_traces_refresh(c->traces);
	if (serve_reply_open(r, 200, "application/json"))
		return;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_arr_open(&w, "inputs");
	for (i = 0; i < c->ninputs; i++)
		cw_jsonw_str(&w, NULL, c->inputs[i]);
	cw_jsonw_arr_close(&w);
	cw_jsonw_u64(&w, "files", st.files);
	cw_jsonw_u64(&w, "records", st.records);
	cw_jsonw_u64(&w, "bad_records", st.bad);
	cw_jsonw_u64(&w, "loads", st.loads);
	cw_jsonw_u64(&w, "load_errors", st.load_errors);
	if (st.last_error[0])
		cw_jsonw_str(&w, "last_error", st.last_error);
	cw_jsonw_u64(&w, "agents", st.agents);
	cw_jsonw_u64(&w, "stale", st.stale);
	cw_jsonw_u64(&w, "ends", st.ends);
	cw_jsonw_u64(&w, "paired", st.paired);
	cw_jsonw_u64(&w, "unpaired", st.unpaired);
	cw_jsonw_u64(&w, "ambiguous", st.ambiguous);
	cw_jsonw_u64(&w, "unattributed_bytes", st.unattributed);
	cw_jsonw_u64(&w, "processes_sampled", st.processes_sampled);
	cw_jsonw_u64(&w, "process_samples", st.process_samples);
	cw_jsonw_u64(&w, "kafka_messages", st.kafka_messages);
	cw_jsonw_u64(&w, "kafka_bad", st.kafka_bad);
	cw_jsonw_u64(&w, "kafka_other", st.kafka_other);
	serve_feed_lock(c->feed);
	cw_jsonw_u64(&w, "agents_seen", c->feed->nhosts);
	cw_jsonw_u64(&w, "meta_records", c->feed->meta_records);
	cw_jsonw_u64(&w, "timing_records", c->feed->timing_records);
	cw_jsonw_u64(&w, "windows_inferred", c->feed->windows_inferred);
	cw_jsonw_u64(&w, "windows_failed", c->feed->windows_failed);
	cw_jsonw_u64(&w, "windows_too_old", c->feed->windows_old);
	cw_jsonw_u64(&w, "sample_runs", c->feed->sample_runs);
	serve_feed_unlock(c->feed);
	json_traces_stats(&w, c->traces);
	json_layout_stats(&w);
	cw_jsonw_u64(&w, "updated", st.loaded_ns / NSEC_PER_SEC);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

void serve_api(const struct serve_ctx *c, const char *path, const char *qs,
	       struct serve_reply *r)
{
	struct cw_serve_query q;
	char err[300];

	if (cw_serve_query_parse(qs, cw_now_real_ns(), &q, err, sizeof(err)))
		return serve_reply_error(r, 400, "bad query: %s", err);
	if (!strcmp(path, "/api/graph"))
		return api_graph(c, &q, false, r);
	if (!strcmp(path, "/api/graph.svg"))
		return api_graph(c, &q, true, r);
	if (!strcmp(path, "/api/matrix"))
		return api_matrix(c, &q, r);
	if (!strcmp(path, "/api/paths")) {
		if (!check_params(&q, 0, r))
			api_paths(c, r);
		return;
	}
	if (!strcmp(path, "/api/plan")) {
		if (!check_params(&q, 0, r))
			serve_plan(c, r);
		return;
	}
	if (!strcmp(path, "/api/stats")) {
		if (!check_params(&q, 0, r))
			api_stats(c, r);
		return;
	}
	if (!strcmp(path, "/api/traces")) {
		if (!check_params(&q, P_RANGE | P_TRACE | P_LIMIT, r))
			api_traces(c, &q, r);
		return;
	}
	if (!strcmp(path, "/api/samples") ||
	    !strcmp(path, "/api/samples.svg")) {
		if (!check_params(&q, P_RUN, r))
			serve_samples(c, &q, path[12] == '.', r);
		return;
	}
	serve_reply_error(r, 404,
			  "no such endpoint (graph, graph.svg, matrix, paths, "
			  "plan, samples, samples.svg, stats, traces)");
}
