// SPDX-License-Identifier: MIT
/* Traces out: OTLP/JSON, Jaeger UI JSON, a terminal waterfall, OTLP/HTTP. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

	return s->role == CW_TROLE_ACCEPTED &&
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

		if (t->spans[s].role == CW_TROLE_CONNECTED && p >= 0) {
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

static void json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(fp, "\\u%04x", *s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

static void span_name(const struct cw_traces *t, int32_t s, char *buf,
		      size_t len)
{
	const struct cw_tspan *x = &t->spans[s];

	if (x->role == CW_TROLE_ACCEPTED)
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

static void otlp_span(const struct cw_traces *t, FILE *fp, int32_t s,
		      int32_t root, int32_t up, bool first)
{
	const struct cw_tspan *x = &t->spans[s];
	char tid[33], sid[17], pid[17] = "", name[256];
	bool call = x->role == CW_TROLE_CONNECTED;

	cw_traces_trace_id(t, root, tid);
	span_id(t, s, sid);
	if (up >= 0)
		span_id(t, up, pid);
	span_name(t, s, name, sizeof(name));
	fprintf(fp, "%s{\"traceId\":\"%s\",\"spanId\":\"%s\",",
		first ? "" : ",", tid, sid);
	if (up >= 0)
		fprintf(fp, "\"parentSpanId\":\"%s\",", pid);
	fputs("\"name\":", fp);
	json_str(fp, name);
	fprintf(fp,
		",\"kind\":%d,\"startTimeUnixNano\":\"%llu\","
		"\"endTimeUnixNano\":\"%llu\",\"attributes\":["
		"{\"key\":\"causeway.link.method\",\"value\":{\"stringValue\":"
		"\"%s\"}},{\"key\":\"causeway.link.confidence\",\"value\":{"
		"\"doubleValue\":%.4f}},{\"key\":\"net.peer.name\",\"value\":{"
		"\"stringValue\":",
		call ? 3 : 2, (unsigned long long)x->start_ns,
		(unsigned long long)x->end_ns,
		call ? cw_link_method_name(x->method) : "connection",
		call ? x->conf : 1.0);
	json_str(fp, t->names[x->peer]);
	fprintf(fp,
		"}},{\"key\":\"causeway.conn\",\"value\":{\"intValue\":"
		"\"%u\"}}]}",
		x->conn);
}

int cw_traces_write_otlp(const struct cw_traces *t, FILE *fp)
{
	int32_t *root_of = malloc((t->n_spans + 1) * sizeof(int32_t));
	int32_t *up_of = malloc((t->n_spans + 1) * sizeof(int32_t));
	struct tree tr = {0};
	size_t v, i;
	bool fv = true, fs;
	int rc = -1;

	if (!root_of || !up_of || tree_init(&tr, t) ||
	    place_all(t, &tr, root_of, up_of))
		goto out;
	fputs("{\"resourceSpans\":[", fp);
	for (v = 0; v < t->n_names; v++) {
		for (i = 0; i < t->n_spans; i++)
			if (root_of[i] >= 0 && t->spans[i].node == v)
				break;
		if (i == t->n_spans)
			continue;
		fprintf(fp,
			"%s{\"resource\":{\"attributes\":[{\"key\":"
			"\"service.name\",\"value\":{\"stringValue\":",
			fv ? "" : ",");
		json_str(fp, t->names[v]);
		if (t->window_slot)
			fprintf(fp,
				"}},{\"key\":\"causeway.window.slot_ns\","
				"\"value\":{\"intValue\":\"%llu\"",
				(unsigned long long)t->window_slot);
		fputs("}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"causeway\"},"
		      "\"spans\":[",
		      fp);
		for (fs = true; i < t->n_spans; i++)
			if (root_of[i] >= 0 && t->spans[i].node == v) {
				otlp_span(t, fp, (int32_t)i, root_of[i],
					  up_of[i], fs);
				fs = false;
			}
		fputs("]}]}", fp);
		fv = false;
	}
	fputs("]}\n", fp);
	rc = ferror(fp) ? cw_error("cannot write OTLP: %m") : 0;
out:
	if (rc && (!root_of || !up_of))
		cw_error("out of memory for traces");
	free(root_of), free(up_of);
	tree_free(&tr);
	return rc;
}

static void jaeger_trace(const struct cw_traces *t, FILE *fp, struct tree *tr,
			 int32_t root)
{
	char tid[33], sid[17], pid[17], name[256];
	size_t k;

	cw_traces_trace_id(t, root, tid);
	fprintf(fp, "{\"traceID\":\"%s\",\"spans\":[", tid);
	for (k = 0; k < tr->n; k++) {
		const struct cw_tspan *x = &t->spans[tr->span[k]];
		bool call = x->role == CW_TROLE_CONNECTED;

		span_id(t, tr->span[k], sid);
		span_name(t, tr->span[k], name, sizeof(name));
		fprintf(fp,
			"%s{\"traceID\":\"%s\",\"spanID\":\"%s\","
			"\"operationName\":",
			k ? "," : "", tid, sid);
		json_str(fp, name);
		fputs(",\"references\":[", fp);
		if (tr->up[k] >= 0) {
			span_id(t, tr->up[k], pid);
			fprintf(fp,
				"{\"refType\":\"CHILD_OF\",\"traceID\":"
				"\"%s\",\"spanID\":\"%s\"}",
				tid, pid);
		}
		fprintf(fp,
			"],\"startTime\":%llu,\"duration\":%llu,\"tags\":["
			"{\"key\":\"causeway.link.method\",\"type\":\"string\","
			"\"value\":\"%s\"},{\"key\":\"causeway.link."
			"confidence\","
			"\"type\":\"float64\",\"value\":%.4f}],"
			"\"processID\":\"p%u\"}",
			(unsigned long long)(x->start_ns / 1000),
			(unsigned long long)((x->end_ns - x->start_ns) / 1000),
			call ? cw_link_method_name(x->method) : "connection",
			call ? x->conf : 1.0, x->node);
	}
	fputs("],\"processes\":{", fp);
	for (k = 0; k < t->n_names; k++) {
		fprintf(fp, "%s\"p%zu\":{\"serviceName\":", k ? "," : "", k);
		json_str(fp, t->names[k]);
		fputs(",\"tags\":[]}", fp);
	}
	fputs("}}", fp);
}

int cw_traces_write_jaeger(const struct cw_traces *t, FILE *fp)
{
	struct tree tr = {0};
	size_t i;
	bool first = true;

	if (tree_init(&tr, t)) {
		tree_free(&tr);
		return -1;
	}
	fputs("{\"data\":[", fp);
	for (i = 0; i < t->n_spans; i++) {
		if (!is_root(t, i))
			continue;
		tr.n = 0;
		walk(t, &tr, (int32_t)i, -1, 0);
		fputs(first ? "" : ",", fp);
		jaeger_trace(t, fp, &tr, (int32_t)i);
		first = false;
	}
	fputs("]}\n", fp);
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

/* Critical path: from the end back, the child that finished last. */
static void critical(const struct cw_traces *t, const struct tree *tr, size_t k,
		     bool *crit)
{
	uint64_t until = t->spans[tr->span[k]].end_ns;
	size_t j;

	crit[k] = true;
	for (;;) {
		size_t best = tr->n;

		for (j = k + 1; j < tr->n && tr->depth[j] > tr->depth[k]; j++)
			if (tr->up[j] == tr->span[k] && !crit[j] &&
			    t->spans[tr->span[j]].end_ns <= until &&
			    (best == tr->n ||
			     t->spans[tr->span[j]].end_ns >
				     t->spans[tr->span[best]].end_ns))
				best = j;
		if (best == tr->n)
			return;
		critical(t, tr, best, crit);
		until = t->spans[tr->span[best]].start_ns;
	}
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
	crit = calloc(tr.n + 1, sizeof(*crit));
	if (crit && tr.n)
		critical(t, &tr, 0, crit);
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
		if (x->role == CW_TROLE_CONNECTED)
			fprintf(fp, "  %s %.2f", cw_link_method_name(x->method),
				x->conf);
		fputc('\n', fp);
	}
	free(crit);
	tree_free(&tr);
}

static int parse_url(const char *url, char *host, size_t hl, char *port,
		     const char **path)
{
	const char *p, *h = url + 7, *c, *s;

	if (strncmp(url, "http://", 7))
		return cw_error("--otlp wants an http:// URL, not '%s'", url);
	s = strchr(h, '/');
	*path = s ? s : "/v1/traces";
	p = s ? s : h + strlen(h);
	c = memchr(h, ':', (size_t)(p - h));
	if ((size_t)((c ? c : p) - h) >= hl || (c && p - c - 1 >= 8) || c == h)
		return cw_error("bad URL '%s'", url);
	memcpy(host, h, (size_t)((c ? c : p) - h));
	host[(c ? c : p) - h] = 0;
	if (c) {
		memcpy(port, c + 1, (size_t)(p - c - 1));
		port[p - c - 1] = 0;
	} else {
		strcpy(port, "80");
	}
	return 0;
}

/*
 * An endpoint that takes the connection and then says nothing is given up
 * on after this (connect, each write, the answer): a correlator posting
 * its windows must not wait on it for ever.
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

int cw_traces_post(const char *url, const char *body, size_t len, char *why,
		   size_t why_len)
{
	struct timeval tmo = {.tv_sec = POST_TIMEOUT_S};
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	char host[256], port[8], head[512], ans[64] = "";
	const char *path = "/v1/traces";
	int fd = -1, rc = -1, n;
	ssize_t w;

	if (parse_url(url, host, sizeof(host), port, &path))
		return -1;
	if (getaddrinfo(host, port, &hints, &ai))
		return post_fail(why, why_len, "cannot resolve '%s'", host);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo)) ||
	    connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		post_fail(why, why_len, "cannot connect to '%s': %s", url,
			  strerror(errno));
		goto out;
	}
	n = snprintf(head, sizeof(head),
		     "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: "
		     "application/json\r\nContent-Length: %zu\r\nConnection: "
		     "close\r\n\r\n",
		     path, host, port, len);
	if (n >= (int)sizeof(head) || write(fd, head, (size_t)n) != n)
		goto fail;
	for (; len; body += w, len -= (size_t)w)
		if ((w = write(fd, body, len)) <= 0)
			goto fail;
	w = read(fd, ans, sizeof(ans) - 1);
	if (w < 0) {
		post_fail(why, why_len, "no answer from '%s': %s", url,
			  errno == EAGAIN ? "timed out" : strerror(errno));
		goto out;
	}
	if (w < 12 || strncmp(ans, "HTTP/1.", 7) || ans[9] != '2') {
		ans[strcspn(ans, "\r\n")] = 0;
		post_fail(why, why_len, "'%s' answered '%s'", url, ans);
		goto out;
	}
	rc = 0;
	goto out;
fail:
	post_fail(why, why_len, "cannot send to '%s': %s", url,
		  strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return rc;
}
