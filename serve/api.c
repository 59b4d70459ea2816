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
enum { P_BY = 1, P_RANGE = 2, P_SHARE = 4, P_NODE = 8, P_RUN = 16 };

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

static void json_graph(struct cw_jsonw *w, const struct serve_graph *g)
{
	char id[32];
	size_t i;

	cw_jsonw_arr_open(w, "nodes");
	for (i = 0; i < g->nn; i++) {
		const struct serve_node *n = &g->nodes[i];

		cw_jsonw_obj_open(w, NULL);
		snprintf(id, sizeof(id), "n%zu", i);
		cw_jsonw_str(w, "id", id);
		cw_jsonw_str(w, "name", n->name);
		cw_jsonw_str(w, "label", n->label);
		cw_jsonw_str(w, "host", n->host);
		cw_jsonw_str(w, "comm", n->comm);
		cw_jsonw_str(w, "container", n->container);
		cw_jsonw_bool(w, "external", n->external);
		cw_jsonw_u64(w, "members", n->members);
		cw_jsonw_u64(w, "bytes_out", n->bytes_out);
		cw_jsonw_u64(w, "bytes_in", n->bytes_in);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "edges");
	for (i = 0; i < g->ne; i++) {
		const struct serve_edge *e = &g->edges[i];

		cw_jsonw_obj_open(w, NULL);
		snprintf(id, sizeof(id), "e%zu", i);
		cw_jsonw_str(w, "id", id);
		snprintf(id, sizeof(id), "n%zu", e->from);
		cw_jsonw_str(w, "from", id);
		snprintf(id, sizeof(id), "n%zu", e->to);
		cw_jsonw_str(w, "to", id);
		cw_jsonw_str(w, "client", g->nodes[e->from].name);
		cw_jsonw_str(w, "server", g->nodes[e->to].name);
		cw_jsonw_u64(w, "conns", e->conns);
		cw_jsonw_u64(w, "paired", e->paired);
		cw_jsonw_u64(w, "bytes_c2s", e->bytes_c2s);
		cw_jsonw_u64(w, "bytes_s2c", e->bytes_s2c);
		cw_jsonw_u64(w, "msgs_c2s", e->msgs_c2s);
		cw_jsonw_u64(w, "msgs_s2c", e->msgs_s2c);
		cw_jsonw_double(
			w, "share",
			g->total_bytes ? (double)(e->bytes_c2s + e->bytes_s2c) /
						 g->total_bytes
				       : 0);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
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

static void api_graph(const struct serve_ctx *c, const struct cw_serve_query *q,
		      bool svg, struct serve_reply *r)
{
	struct serve_graph g;
	struct cw_jsonw w;
	char *text = NULL;
	size_t len = 0;

	if (check_params(q, P_BY | P_RANGE | P_SHARE | P_NODE, r) ||
	    get_graph(c, q, &g, r))
		return;
	if (svg) {
		if (serve_render_svg(&g, &text, &len))
			serve_reply_error(r, 500,
					  "graphviz failed to draw the "
					  "graph (see the log)");
		else if (!serve_reply_open(r, 200, "image/svg+xml"))
			fwrite(text, 1, len, r->fp);
		free(text);
		serve_graph_release(&g);
		return;
	}
	if (serve_reply_open(r, 200, "application/json"))
		goto out;
	cw_jsonw_init(&w, r->fp);
	cw_jsonw_obj_open(&w, NULL);
	json_query(&w, q, &g);
	json_graph(&w, &g);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
out:
	serve_graph_release(&g);
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
 * --json`, paths.json of `causeway run -o --paths`), one per timing window.
 * Each is parsed and written again, so nothing unchecked reaches the page.
 */
static void api_paths(const struct serve_ctx *c, struct serve_reply *r)
{
	struct json_object *out = json_object_new_object();
	struct json_object *wins = json_object_new_array(), *o;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	FILE *fp = c->paths ? fopen(c->paths, "r") : NULL;

	if (!out || !wins)
		goto oom;
	json_object_object_add(out, "source",
			       c->paths ? json_object_new_string(c->paths)
					: NULL);
	json_object_object_add(out, "windows", wins);
	while (fp && getline(&line, &cap, fp) > 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		o = json_tokener_parse(line);
		if (!o || !json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			serve_reply_error(r, 500,
					  "'%s' line %zu: not a JSON "
					  "object",
					  c->paths, lineno);
			goto out;
		}
		json_object_object_add(o, "window",
				       json_object_new_int64((int64_t)lineno));
		json_object_array_add(wins, o);
	}
	if (fp && ferror(fp)) {
		serve_reply_error(r, 500, "unable to read '%s'", c->paths);
		goto out;
	}
	if (serve_reply_open(r, 200, "application/json"))
		goto out;
	fputs(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
	      r->fp);
	fputc('\n', r->fp);
	goto out;
oom:
	serve_reply_error(r, 500, "out of memory");
out:
	if (fp)
		fclose(fp);
	free(line);
	json_object_put(out);
}

static void api_stats(const struct serve_ctx *c, struct serve_reply *r)
{
	struct serve_stats st;
	struct cw_jsonw w;
	size_t i;

	serve_model_stats(c->model, &st);
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
	cw_jsonw_u64(&w, "kafka_messages", st.kafka_messages);
	cw_jsonw_u64(&w, "kafka_bad", st.kafka_bad);
	cw_jsonw_u64(&w, "kafka_other", st.kafka_other);
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
	if (!strcmp(path, "/api/stats")) {
		if (!check_params(&q, 0, r))
			api_stats(c, r);
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
			  "samples, samples.svg, stats)");
}
