// SPDX-License-Identifier: MIT
/* Traces out: OTLP/JSON, Jaeger UI JSON, a terminal waterfall, OTLP/HTTP. */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "traces/traces.h"

const char *cw_link_method_name(int method)
{
	static const char *const n[] = {"none", "thread", "contained",
					"timing"};

	return method >= 0 && method <= CW_LINK_TIMING ? n[method] : "?";
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return (x ^ (x >> 31)) | 1; /* never the all-zero invalid id */
}

void cw_traces_trace_id(const struct cw_traces *t, int32_t root, char hex[33])
{
	uint64_t salt = t->id_salt ? mix(t->id_salt) : 0;

	snprintf(hex, 33, "%016llx%016llx",
		 (unsigned long long)mix(((uint64_t)root ^ 0x5eedULL << 40) ^
					 salt),
		 (unsigned long long)mix((uint64_t)root ^ salt));
}

static void span_id(const struct cw_traces *t, int32_t s, char hex[17])
{
	uint64_t salt = t->id_salt ? mix(t->id_salt) : 0;

	snprintf(hex, 17, "%016llx",
		 (unsigned long long)mix(((uint64_t)s + 1) ^ salt));
}

static bool is_root(const struct cw_traces *t, size_t i)
{
	const struct cw_tspan *s = &t->spans[i];

	return s->role == CW_ROLE_ACCEPTED &&
	       (s->peer_span < 0 || t->spans[s->peer_span].parent < 0);
}

int cw_traces_roots(const struct cw_traces *t, int32_t **roots, size_t *n)
{
	size_t i;

	*n = 0;
	*roots = malloc((t->n_spans + 1) * sizeof(**roots));
	if (!*roots)
		return cw_error("out of memory for roots");
	for (i = 0; i < t->n_spans; i++)
		if (is_root(t, i))
			(*roots)[(*n)++] = (int32_t)i;
	return 0;
}

/* One trace's spans in depth-first order, each with its parent span. */
struct tree {
	int32_t *first, *next; /* children lists of requests (calls) */
	int32_t *span, *up, *depth;
	size_t n;
};

static int by_start(const void *a, const void *b, void *arg)
{
	const struct cw_tspan *s = arg;
	uint64_t x = s[*(const int32_t *)a].start_ns,
		 y = s[*(const int32_t *)b].start_ns;

	return x < y ? -1 : x > y;
}

static int tree_init(struct tree *tr, const struct cw_traces *t)
{
	size_t i, k, n = t->n_spans + 1;

	tr->first = malloc(n * sizeof(int32_t));
	tr->next = malloc(n * sizeof(int32_t));
	tr->span = malloc(n * sizeof(int32_t));
	tr->up = malloc(n * sizeof(int32_t));
	tr->depth = malloc(n * sizeof(int32_t));
	if (!tr->first || !tr->next || !tr->span || !tr->up || !tr->depth)
		return cw_error("out of memory for trace trees");
	for (i = 0; i < n; i++)
		tr->first[i] = tr->next[i] = -1, tr->span[i] = (int32_t)i;
	/* Children in start order: prepend them latest first. */
	qsort_r(tr->span, t->n_spans, sizeof(int32_t), by_start, t->spans);
	for (k = t->n_spans; k-- > 0;) {
		int32_t s = tr->span[k], p = t->spans[s].parent;

		if (t->spans[s].role == CW_ROLE_CONNECTED && p >= 0) {
			tr->next[s] = tr->first[p];
			tr->first[p] = s;
		}
	}
	return 0;
}

static void tree_free(struct tree *tr)
{
	free(tr->first), free(tr->next), free(tr->span), free(tr->up);
	free(tr->depth);
}

/* Request -> its calls -> each call's request at the callee, bounded. */
static void walk(const struct cw_traces *t, struct tree *tr, int32_t s,
		 int32_t up, int32_t depth)
{
	int32_t c;

	if (tr->n > t->n_spans || depth > 64)
		return;
	tr->span[tr->n] = s, tr->up[tr->n] = up, tr->depth[tr->n++] = depth;
	for (c = tr->first[s]; c >= 0; c = tr->next[c]) {
		if (tr->n > t->n_spans)
			return;
		tr->span[tr->n] = c, tr->up[tr->n] = s;
		tr->depth[tr->n++] = depth + 1;
		if (t->spans[c].peer_span >= 0)
			walk(t, tr, t->spans[c].peer_span, c, depth + 2);
	}
}

static void span_name(const struct cw_traces *t, int32_t s, char *buf,
		      size_t len)
{
	const struct cw_tspan *x = &t->spans[s];

	if (x->role == CW_ROLE_ACCEPTED)
		snprintf(buf, len, "%s from %s", t->names[x->node],
			 t->names[x->peer]);
	else
		snprintf(buf, len, "%s -> %s", t->names[x->node],
			 t->names[x->peer]);
}

/* Every span's trace root and parent span over all trees; -1 outside. */
static int place_all(const struct cw_traces *t, struct tree *tr,
		     int32_t *root_of, int32_t *up_of)
{
	size_t i, k;

	for (i = 0; i < t->n_spans; i++)
		root_of[i] = up_of[i] = -1;
	for (i = 0; i < t->n_spans; i++) {
		if (!is_root(t, i))
			continue;
		tr->n = 0;
		walk(t, tr, (int32_t)i, -1, 0);
		for (k = 0; k < tr->n; k++) {
			root_of[tr->span[k]] = (int32_t)i;
			up_of[tr->span[k]] = tr->up[k];
		}
	}
	return 0;
}

/* One OTLP attribute: {"key":K,"value":{TYPE:V}}; TYPE intValue is a
 * decimal string, as OTLP/JSON writes 64-bit integers. */
static void attr_str(struct cw_jsonw *w, const char *key, const char *type,
		     const char *val)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "key", key);
	cw_jsonw_obj_open(w, "value");
	cw_jsonw_str(w, type, val);
	cw_jsonw_obj_close(w);
	cw_jsonw_obj_close(w);
}

static void attr_u64(struct cw_jsonw *w, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	attr_str(w, key, "intValue", num);
}

/* A link's confidence, to the 4 decimals it is known to. */
static double conf4(double c)
{
	return round(c * 1e4) / 1e4;
}

static void otlp_span(const struct cw_traces *t, struct cw_jsonw *w, int32_t s,
		      int32_t root, int32_t up)
{
	const struct cw_tspan *x = &t->spans[s];
	char id[33], name[256];
	bool call = x->role == CW_ROLE_CONNECTED;

	cw_jsonw_obj_open(w, NULL);
	cw_traces_trace_id(t, root, id);
	cw_jsonw_str(w, "traceId", id);
	span_id(t, s, id);
	cw_jsonw_str(w, "spanId", id);
	if (up >= 0) {
		span_id(t, up, id);
		cw_jsonw_str(w, "parentSpanId", id);
	}
	span_name(t, s, name, sizeof(name));
	cw_jsonw_str(w, "name", name);
	cw_jsonw_u64(w, "kind", call ? 3 : 2);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)x->start_ns);
	cw_jsonw_str(w, "startTimeUnixNano", id);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)x->end_ns);
	cw_jsonw_str(w, "endTimeUnixNano", id);
	cw_jsonw_arr_open(w, "attributes");
	attr_str(w, "causeway.link.method", "stringValue",
		 call ? cw_link_method_name(x->method) : "connection");
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "key", "causeway.link.confidence");
	cw_jsonw_obj_open(w, "value");
	cw_jsonw_double(w, "doubleValue", call ? conf4(x->conf) : 1.0);
	cw_jsonw_obj_close(w);
	cw_jsonw_obj_close(w);
	attr_str(w, "net.peer.name", "stringValue", t->names[x->peer]);
	attr_u64(w, "causeway.conn", x->conn);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

/* One service's resource and its spans by[0..n). */
static void otlp_resource(const struct cw_traces *t, struct cw_jsonw *w,
			  uint32_t v, const int32_t *by, size_t n,
			  const int32_t *root_of, const int32_t *up_of)
{
	size_t k;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_obj_open(w, "resource");
	cw_jsonw_arr_open(w, "attributes");
	attr_str(w, "service.name", "stringValue", t->names[v]);
	if (t->window_slot)
		attr_u64(w, "causeway.window.slot_ns", t->window_slot);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_open(w, "scopeSpans");
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_obj_open(w, "scope");
	cw_jsonw_str(w, "name", "causeway");
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_open(w, "spans");
	for (k = 0; k < n; k++)
		otlp_span(t, w, by[k], root_of[by[k]], up_of[by[k]]);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

/*
 * The spans in some trace grouped by node, in span order within a node
 * (by[first[v] .. first[v + 1])): one pass, so writing is linear in the
 * nodes and spans.
 */
static int group_placed(const struct cw_traces *t, const int32_t *root_of,
			int32_t *by, size_t *first)
{
	size_t i, nn = t->n_names;

	memset(first, 0, (nn + 2) * sizeof(*first));
	for (i = 0; i < t->n_spans; i++)
		if (root_of[i] >= 0)
			first[t->spans[i].node + 2]++;
	for (i = 0; i < nn; i++)
		first[i + 2] += first[i + 1];
	for (i = 0; i < t->n_spans; i++)
		if (root_of[i] >= 0)
			by[first[t->spans[i].node + 1]++] = (int32_t)i;
	return 0;
}

int cw_traces_write_otlp(const struct cw_traces *t, FILE *fp)
{
	int32_t *root_of = malloc((t->n_spans + 1) * sizeof(int32_t));
	int32_t *up_of = malloc((t->n_spans + 1) * sizeof(int32_t));
	int32_t *by = malloc((t->n_spans + 1) * sizeof(int32_t));
	size_t *first = malloc((t->n_names + 2) * sizeof(size_t));
	struct tree tr = {0};
	struct cw_jsonw w;
	size_t v;
	int rc = -1;

	if (!root_of || !up_of || !by || !first) {
		cw_error("out of memory for traces");
		goto out;
	}
	if (tree_init(&tr, t) || place_all(t, &tr, root_of, up_of))
		goto out;
	group_placed(t, root_of, by, first);
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_arr_open(&w, "resourceSpans");
	for (v = 0; v < t->n_names; v++)
		if (first[v + 1] > first[v])
			otlp_resource(t, &w, (uint32_t)v, by + first[v],
				      first[v + 1] - first[v], root_of, up_of);
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	rc = ferror(fp) ? cw_error("cannot write OTLP: %m") : 0;
out:
	free(root_of), free(up_of), free(by), free(first);
	tree_free(&tr);
	return rc;
}

static void jaeger_tag(struct cw_jsonw *w, const char *key, const char *type)
{
	cw_jsonw_str(w, "key", key);
	cw_jsonw_str(w, "type", type);
}

static void jaeger_span(const struct cw_traces *t, struct cw_jsonw *w,
			const struct tree *tr, size_t k, const char *tid)
{
	const struct cw_tspan *x = &t->spans[tr->span[k]];
	bool call = x->role == CW_ROLE_CONNECTED;
	char id[24], name[256];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "traceID", tid);
	span_id(t, tr->span[k], id);
	cw_jsonw_str(w, "spanID", id);
	span_name(t, tr->span[k], name, sizeof(name));
	cw_jsonw_str(w, "operationName", name);
	cw_jsonw_arr_open(w, "references");
	if (tr->up[k] >= 0) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "refType", "CHILD_OF");
		cw_jsonw_str(w, "traceID", tid);
		span_id(t, tr->up[k], id);
		cw_jsonw_str(w, "spanID", id);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_u64(w, "startTime", x->start_ns / 1000);
	cw_jsonw_u64(w, "duration", (x->end_ns - x->start_ns) / 1000);
	cw_jsonw_arr_open(w, "tags");
	cw_jsonw_obj_open(w, NULL);
	jaeger_tag(w, "causeway.link.method", "string");
	cw_jsonw_str(w, "value",
		     call ? cw_link_method_name(x->method) : "connection");
	cw_jsonw_obj_close(w);
	cw_jsonw_obj_open(w, NULL);
	jaeger_tag(w, "causeway.link.confidence", "float64");
	cw_jsonw_double(w, "value", call ? conf4(x->conf) : 1.0);
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_close(w);
	snprintf(id, sizeof(id), "p%u", x->node);
	cw_jsonw_str(w, "processID", id);
	cw_jsonw_obj_close(w);
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* One trace and the processes (nodes) its spans name: nodes[] is
 * scratch for tr->n of them, so a trace costs its spans, not every node. */
static void jaeger_trace(const struct cw_traces *t, struct cw_jsonw *w,
			 const struct tree *tr, int32_t root, uint32_t *nodes)
{
	char tid[33], pid[16];
	size_t k, n = 0;

	cw_traces_trace_id(t, root, tid);
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "traceID", tid);
	cw_jsonw_arr_open(w, "spans");
	for (k = 0; k < tr->n; k++) {
		jaeger_span(t, w, tr, k, tid);
		nodes[k] = t->spans[tr->span[k]].node;
	}
	cw_jsonw_arr_close(w);
	qsort(nodes, tr->n, sizeof(*nodes), by_u32);
	cw_jsonw_obj_open(w, "processes");
	for (k = 0; k < tr->n; k++) {
		if (k && nodes[k] == nodes[n - 1])
			continue;
		nodes[n++] = nodes[k];
		snprintf(pid, sizeof(pid), "p%u", nodes[k]);
		cw_jsonw_obj_open(w, pid);
		cw_jsonw_str(w, "serviceName", t->names[nodes[k]]);
		cw_jsonw_arr_open(w, "tags");
		cw_jsonw_arr_close(w);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_obj_close(w);
	cw_jsonw_obj_close(w);
}

int cw_traces_write_jaeger(const struct cw_traces *t, FILE *fp)
{
	uint32_t *nodes = malloc((t->n_spans + 1) * sizeof(*nodes));
	struct tree tr = {0};
	struct cw_jsonw w;
	size_t i;

	if (!nodes || tree_init(&tr, t)) {
		free(nodes);
		tree_free(&tr);
		return nodes ? -1 : cw_error("out of memory for traces");
	}
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_arr_open(&w, "data");
	for (i = 0; i < t->n_spans; i++) {
		if (!is_root(t, i))
			continue;
		tr.n = 0;
		walk(t, &tr, (int32_t)i, -1, 0);
		jaeger_trace(t, &w, &tr, (int32_t)i, nodes);
	}
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	free(nodes);
	tree_free(&tr);
	return ferror(fp) ? cw_error("cannot write Jaeger JSON: %m") : 0;
}

int32_t cw_traces_find(const struct cw_traces *t, const char *hex)
{
	int32_t best = -1;
	char tid[33];
	size_t i;

	for (i = 0; i < t->n_spans; i++) {
		const struct cw_tspan *s = &t->spans[i];

		if (!is_root(t, i))
			continue;
		cw_traces_trace_id(t, (int32_t)i, tid);
		if (hex && !strcasecmp(hex, tid))
			return (int32_t)i;
		if (!hex &&
		    (best < 0 ||
		     s->end_ns - s->start_ns >
			     t->spans[best].end_ns - t->spans[best].start_ns))
			best = (int32_t)i;
	}
	return best;
}

/* The walked tree's critical path (cw_traces_critical_path): a span's
 * parent is the latest span one level up before it (depth-first order). */
static bool *critical(const struct cw_traces *t, const struct tree *tr)
{
	struct cw_crit_span *c = malloc((tr->n + 1) * sizeof(*c));
	bool *crit = calloc(tr->n + 1, sizeof(*crit));
	int32_t at[72]; /* walk() goes 66 levels deep at most */
	size_t k;

	for (k = 0; c && crit && k < tr->n; k++) {
		const struct cw_tspan *x = &t->spans[tr->span[k]];
		int32_t d = tr->depth[k];

		c[k] = (struct cw_crit_span){x->start_ns, x->end_ns,
					     d ? at[d - 1] : -1, false};
		at[d] = (int32_t)k;
	}
	if (c && crit && !cw_traces_critical_path(c, tr->n))
		for (k = 0; k < tr->n; k++)
			crit[k] = c[k].critical;
	else
		free(crit), crit = NULL;
	free(c);
	return crit;
}

void cw_traces_print_waterfall(const struct cw_traces *t, int32_t root,
			       FILE *fp)
{
	struct tree tr = {0};
	bool *crit;
	uint64_t t0, len;
	char tid[33], name[256], bar[41];
	size_t k, a, b, j;

	if (tree_init(&tr, t))
		return tree_free(&tr);
	walk(t, &tr, root, -1, 0);
	crit = critical(t, &tr);
	t0 = t->spans[root].start_ns;
	len = t->spans[root].end_ns - t0 + 1;
	cw_traces_trace_id(t, root, tid);
	fprintf(fp, "trace %s  %.3f ms  (* critical path)\n", tid,
		(double)len / 1e6);
	for (k = 0; crit && k < tr.n; k++) {
		const struct cw_tspan *x = &t->spans[tr.span[k]];

		a = (size_t)((x->start_ns - t0) * 40 / len);
		b = (size_t)((x->end_ns - t0) * 40 / len);
		for (j = 0; j < 40; j++)
			bar[j] = j >= a && j <= b ? '=' : ' ';
		bar[40] = 0;
		span_name(t, tr.span[k], name, sizeof(name));
		fprintf(fp, "%c %*s%-*s |%s| %9.3f ms", crit[k] ? '*' : ' ',
			2 * tr.depth[k], "",
			64 - 2 * (tr.depth[k] < 24 ? tr.depth[k] : 24), name,
			bar, (double)(x->end_ns - x->start_ns) / 1e6);
		if (x->role == CW_ROLE_CONNECTED)
			fprintf(fp, "  %s %.2f", cw_link_method_name(x->method),
				x->conf);
		fputc('\n', fp);
	}
	free(crit);
	tree_free(&tr);
}

/*
 * An endpoint that takes the connection and then says nothing is given up
 * on after this (connect, send, the answer): a correlator posting its
 * windows must not wait on it for ever.
 */
#define POST_TIMEOUT_S 10

/* Why a POST failed: into why[] when the caller wants it, else said. */
static int post_fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int post_fail(char *why, size_t n, const char *fmt, ...)
{
	char buf[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why ? why : buf, why ? n : sizeof(buf), fmt, ap);
	va_end(ap);
	return why ? -1 : cw_error("%s", buf);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_start(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The answer's status line ("HTTP/1.1 200 OK"), for the error message. */
static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	char *status = arg;
	size_t len = size * n;

	if (len > 5 && !strncmp(line, "HTTP/", 5)) {
		len = len < 63 ? len : 63;
		memcpy(status, line, len);
		status[len] = 0;
		status[strcspn(status, "\r\n")] = 0;
	}
	return size * n;
}

/* The answer's body is not wanted. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	return size * n;
}

/* The URL to post to: url, with /v1/traces when it names no path. */
static int post_url(const char *url, char *out, size_t len)
{
	if (strncmp(url, "http://", 7))
		return cw_error("--otlp wants an http:// URL, not '%s'", url);
	if ((size_t)snprintf(out, len, "%s%s", url,
			     strchr(url + 7, '/') ? "" : "/v1/traces") >= len)
		return cw_error("--otlp URL too long: '%s'", url);
	return 0;
}

int cw_traces_post(const char *url, const char *body, size_t len, char *why,
		   size_t why_len)
{
	struct curl_slist *hdr = NULL;
	char to[2048], status[64] = "", err[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode cc;
	CURL *c;
	int rc = -1;

	if (post_url(url, to, sizeof(to)))
		return -1;
	pthread_once(&curl_once, curl_start);
	c = curl_init_rc == CURLE_OK ? curl_easy_init() : NULL;
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	/* No "Expect: 100-continue" wait on a large body. */
	hdr = hdr ? curl_slist_append(hdr, "Expect:") : NULL;
	if (!c || !hdr) {
		post_fail(why, why_len, "cannot start an HTTP client");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, to);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)POST_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, status);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		post_fail(why, why_len, "%s '%s': %s",
			  cc == CURLE_COULDNT_RESOLVE_HOST ? "cannot resolve"
			  : cc == CURLE_COULDNT_CONNECT	   ? "cannot connect to"
			  : cc == CURLE_OPERATION_TIMEDOUT ? "no answer from"
							   : "cannot send to",
			  url, err[0] ? err : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		post_fail(why, why_len, "'%s' answered '%s'", url,
			  status[0] ? status : "no status line");
		goto out;
	}
	rc = 0;
out:
	curl_slist_free_all(hdr);
	if (c)
		curl_easy_cleanup(c);
	return rc;
}
