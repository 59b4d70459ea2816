// SPDX-License-Identifier: MIT
/*
 * The trace view's data: the OTLP/JSON that `causeway traces -o` writes
 * (--traces FILE), read with json-c into traces whose spans are in tree
 * order, each with its depth and whether it is on the critical path, so a
 * request only filters and writes.  The file is looked at on each request
 * (as plan.c reads its plan) and read again when it changed; a file that
 * goes bad keeps the last good traces, and the failure is counted.
 *
 * The critical path is traces/'s (cw_traces_critical_path), the rule of
 * `causeway traces --waterfall`; children are in start order, as there.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "serve/serve_int.h"
#include "traces/traces.h"

static const char *const link_names[SERVE_LINK_N] = {
	NULL, "connection", "thread", "contained", "timing", "none"};

const char *serve_link_name(int method)
{
	return method > 0 && method < SERVE_LINK_N ? link_names[method] : NULL;
}

/* Where the reader is in the document, for the one line an error gets. */
struct tparse {
	struct serve_tset *set;
	char *err;
	size_t errlen;
	int level; /* 0 top, 1 a resourceSpans, 2 a scopeSpans, 3 a span */
	size_t r, s, k;
};

static int fail(struct tparse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct tparse *p, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (p->level == 0)
		snprintf(p->err, p->errlen, "%s", why);
	else if (p->level == 1)
		snprintf(p->err, p->errlen, "resourceSpans[%zu]: %s", p->r,
			 why);
	else if (p->level == 2)
		snprintf(p->err, p->errlen,
			 "resourceSpans[%zu].scopeSpans[%zu]: %s", p->r, p->s,
			 why);
	else
		snprintf(p->err, p->errlen,
			 "resourceSpans[%zu].scopeSpans[%zu].spans[%zu]: %s",
			 p->r, p->s, p->k, why);
	return -1;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A hex id of n digits (not all zero) into out, lowercase; 0 or -1. */
static int hex_id(struct json_object *v, size_t n, char *out)
{
	const char *s = json_object_get_string(v);
	bool zero = true;
	size_t i;

	if (!json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) != n)
		return -1;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		zero = zero && c == '0';
		out[i] = c;
	}
	out[n] = '\0';
	return zero ? -1 : 0;
}

/* A time: decimal string (as OTLP/JSON writes 64-bit numbers) or number. */
static int unix_nano(struct json_object *v, uint64_t *out)
{
	const char *s;
	char *end;

	if (json_object_is_type(v, json_type_int)) {
		if (json_object_get_int64(v) < 0)
			return -1;
		*out = json_object_get_uint64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	if (!(*s >= '0' && *s <= '9') || strlen(s) > 20)
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return *end || errno ? -1 : 0;
}

/* causeway.link.method and .confidence among the span's attributes. */
static int span_attrs(struct tparse *p, struct json_object *attrs,
		      struct serve_tspan *sp)
{
	struct json_object *a, *val, *x;
	const char *key;
	size_t i, m;

	if (!attrs)
		return 0;
	if (!json_object_is_type(attrs, json_type_array))
		return fail(p, "'attributes' is not an array");
	for (i = 0; i < json_object_array_length(attrs); i++) {
		a = json_object_array_get_idx(attrs, i);
		key = json_object_get_string(member(a, "key"));
		val = member(a, "value");
		if (!json_object_is_type(a, json_type_object) || !key ||
		    !json_object_is_type(val, json_type_object))
			return fail(p,
				    "attributes[%zu]: want a key and a value",
				    i);
		if (!strcmp(key, "causeway.link.method")) {
			x = member(val, "stringValue");
			for (m = 1;
			     x && m < SERVE_LINK_N &&
			     strcmp(json_object_get_string(x), link_names[m]);
			     m++)
				;
			if (!json_object_is_type(x, json_type_string) ||
			    m == SERVE_LINK_N)
				return fail(p, "'causeway.link.method' is not "
					       "one of connection, thread, "
					       "contained, timing or none");
			sp->method = (uint8_t)m;
		} else if (!strcmp(key, "causeway.link.confidence")) {
			x = member(val, "doubleValue");
			if (!json_object_is_type(x, json_type_double) &&
			    !json_object_is_type(x, json_type_int))
				return fail(p, "'causeway.link.confidence' is "
					       "not a doubleValue");
			sp->conf = json_object_get_double(x);
			if (!(sp->conf >= 0 && sp->conf <= 1))
				return fail(p, "'causeway.link.confidence' is "
					       "not from 0 to 1");
		}
	}
	return 0;
}

/* One span into the set, in file order. */
static int read_span(struct tparse *p, struct json_object *o, uint32_t service)
{
	struct serve_tset *set = p->set;
	struct serve_tspan sp = {.service = service, .conf = -1, .parent = -1};
	struct json_object *v;

	if (!json_object_is_type(o, json_type_object))
		return fail(p, "not an object");
	if (hex_id(member(o, "traceId"), 32, sp.trace_id))
		return fail(p, "'traceId' is not 32 hex digits (not all zero)");
	if (hex_id(member(o, "spanId"), 16, sp.span_id))
		return fail(p, "'spanId' is not 16 hex digits (not all zero)");
	v = member(o, "parentSpanId");
	if (v &&
	    !(json_object_is_type(v, json_type_string) &&
	      !json_object_get_string_len(v)) &&
	    hex_id(v, 16, sp.parent_id))
		return fail(p, "'parentSpanId' is not 16 hex digits");
	if (unix_nano(member(o, "startTimeUnixNano"), &sp.start_ns) ||
	    unix_nano(member(o, "endTimeUnixNano"), &sp.end_ns))
		return fail(p, "want 'startTimeUnixNano' and 'endTimeUnixNano' "
			       "in nanoseconds");
	if (sp.end_ns < sp.start_ns)
		return fail(p, "it ends before it starts");
	v = member(o, "kind");
	if (v && (!json_object_is_type(v, json_type_int) ||
		  json_object_get_int64(v) < 0 || json_object_get_int64(v) > 5))
		return fail(p, "'kind' is not a SpanKind (0 to 5)");
	sp.kind = v ? (uint8_t)json_object_get_int64(v) : 0;
	v = member(o, "name");
	if (v && !json_object_is_type(v, json_type_string))
		return fail(p, "'name' is not a string");
	if (span_attrs(p, member(o, "attributes"), &sp))
		return -1;
	if (CW_GROW(set->spans, set->cap_spans, set->nspans + 1, 256))
		return fail(p, "out of memory");
	sp.name = strdup(v ? json_object_get_string(v) : "");
	if (!sp.name)
		return fail(p, "out of memory");
	set->spans[set->nspans++] = sp;
	return 0;
}

/* service.name of a resource ("unknown_service" as OTLP says when none). */
static int read_service(struct tparse *p, struct json_object *rs)
{
	struct json_object *attrs =
		member(member(rs, "resource"), "attributes");
	struct serve_tset *set = p->set;
	const char *name = "unknown_service";
	struct json_object *a, *v;
	size_t i;

	for (i = 0; json_object_is_type(attrs, json_type_array) &&
		    i < json_object_array_length(attrs);
	     i++) {
		a = json_object_array_get_idx(attrs, i);
		v = member(member(a, "value"), "stringValue");
		if (json_object_is_type(v, json_type_string) &&
		    !strcmp(json_object_get_string(member(a, "key")) ?: "",
			    "service.name"))
			name = json_object_get_string(v);
	}
	if (CW_GROW(set->services, set->cap_services, set->nservices + 1, 16) ||
	    !(set->services[set->nservices] = strdup(name)))
		return fail(p, "out of memory");
	set->nservices++;
	return 0;
}

static int read_resource(struct tparse *p, struct json_object *rs)
{
	struct json_object *scopes = member(rs, "scopeSpans"), *spans;

	if (!json_object_is_type(rs, json_type_object))
		return fail(p, "not an object");
	if (!json_object_is_type(scopes, json_type_array))
		return fail(p, "no 'scopeSpans' array");
	if (read_service(p, rs))
		return -1;
	for (p->s = 0; p->s < json_object_array_length(scopes); p->s++) {
		p->level = 2;
		spans = member(json_object_array_get_idx(scopes, p->s),
			       "spans");
		if (!spans)
			continue; /* a scope with no spans */
		if (!json_object_is_type(spans, json_type_array))
			return fail(p, "'spans' is not an array");
		p->level = 3;
		for (p->k = 0; p->k < json_object_array_length(spans); p->k++)
			if (read_span(p, json_object_array_get_idx(spans, p->k),
				      (uint32_t)(p->set->nservices - 1)))
				return -1;
	}
	return 0;
}

/* ---- spans -> traces in tree order ------------------------------------ */

/* Scratch for one trace of n spans (g: their indices in file order). */
struct tbuild {
	const struct serve_tspan *in;
	const size_t *g;
	size_t n, base; /* spans; where the trace starts in the output */
	size_t *by_start, *by_id, *stack;
	ssize_t *parent, *first, *next, *it, *out_of;
	bool *seen;
};

/* Start order; file order on a tie, as `causeway traces` orders children. */
static int cmp_start(const void *a, const void *b, void *arg)
{
	const struct tbuild *tb = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t sx = tb->in[tb->g[x]].start_ns, sy = tb->in[tb->g[y]].start_ns;

	return sx != sy ? (sx < sy ? -1 : 1) : (x > y) - (x < y);
}

static int cmp_id(const void *a, const void *b, void *arg)
{
	const struct tbuild *tb = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(tb->in[tb->g[x]].span_id, tb->in[tb->g[y]].span_id);

	return c ? c : (x > y) - (x < y);
}

/* Each span's parent in the trace (the first span of that id), or -1. */
static void find_parents(struct tbuild *b)
{
	size_t i, lo, hi, mid;

	for (i = 0; i < b->n; i++) {
		const char *want = b->in[b->g[i]].parent_id;

		b->parent[i] = -1;
		if (!want[0])
			continue;
		for (lo = 0, hi = b->n; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			if (strcmp(b->in[b->g[b->by_id[mid]]].span_id, want) <
			    0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < b->n &&
		    !strcmp(b->in[b->g[b->by_id[lo]]].span_id, want) &&
		    b->by_id[lo] != i)
			b->parent[i] = (ssize_t)b->by_id[lo];
	}
}

/* Append span i of the trace and its subtree, depth first, children in
 * start order; no recursion, so a deep chain cannot overflow the stack. */
static void emit_tree(struct tbuild *b, size_t i, struct serve_tspan *out,
		      size_t *nout)
{
	ssize_t sp = 0, c;

	b->seen[i] = true;
	b->out_of[i] = (ssize_t)(*nout - b->base);
	out[*nout] = b->in[b->g[i]];
	out[*nout].parent = -1;
	out[(*nout)++].depth = 0;
	b->stack[0] = i;
	b->it[0] = b->first[i];
	while (sp >= 0) {
		c = b->it[sp];
		if (c < 0) {
			sp--;
			continue;
		}
		b->it[sp] = b->next[c];
		if (b->seen[c])
			continue;
		b->seen[c] = true;
		b->out_of[c] = (ssize_t)(*nout - b->base);
		out[*nout] = b->in[b->g[c]];
		out[*nout].parent = (int32_t)b->out_of[b->stack[sp]];
		out[(*nout)++].depth = (uint32_t)sp + 1;
		b->stack[++sp] = (size_t)c;
		b->it[sp] = b->first[c];
	}
}

/*
 * The trace's spans into out in tree order: roots (no parent in the
 * trace) in start order, each followed by its subtree.  Spans on a cycle
 * of parent ids, which no root reaches, start trees of their own.
 */
static void order_tree(struct tbuild *b, struct serve_tspan *out, size_t *nout)
{
	ssize_t roots = -1;
	size_t k, i;

	for (i = 0; i < b->n; i++)
		b->by_start[i] = b->by_id[i] = i, b->first[i] = -1,
		b->seen[i] = false;
	qsort_r(b->by_start, b->n, sizeof(size_t), cmp_start, b);
	qsort_r(b->by_id, b->n, sizeof(size_t), cmp_id, b);
	find_parents(b);
	for (k = b->n; k-- > 0;) {
		i = b->by_start[k];
		if (b->parent[i] >= 0) {
			b->next[i] = b->first[b->parent[i]];
			b->first[b->parent[i]] = (ssize_t)i;
		} else {
			b->next[i] = roots;
			roots = (ssize_t)i;
		}
	}
	for (; roots >= 0; roots = b->next[roots])
		emit_tree(b, (size_t)roots, out, nout);
	for (k = 0; k < b->n; k++)
		if (!b->seen[b->by_start[k]])
			emit_tree(b, b->by_start[k], out, nout);
}

/* The trace's critical path (spans in tree order), by traces/'s rule.
 * 0 or -1 (out of memory). */
static int mark_critical(struct serve_tspan *sp, size_t n)
{
	struct cw_crit_span *c = malloc((n + 1) * sizeof(*c));
	size_t i;

	if (!c)
		return -1;
	for (i = 0; i < n; i++)
		c[i] = (struct cw_crit_span){sp[i].start_ns, sp[i].end_ns,
					     sp[i].parent, false};
	if (cw_traces_critical_path(c, n)) {
		free(c);
		return -1;
	}
	for (i = 0; i < n; i++)
		sp[i].critical = c[i].critical;
	free(c);
	return 0;
}

/* Start, end, links and lowest confidence of the trace at spans[first]. */
static void summarise(struct serve_tset *set, struct serve_trace *tr)
{
	const struct serve_tspan *sp = &set->spans[tr->first];
	size_t i;

	tr->id = sp->trace_id;
	tr->start_ns = UINT64_MAX;
	tr->min_conf = -1;
	for (i = 0; i < tr->n; i++, sp++) {
		if (sp->start_ns < tr->start_ns)
			tr->start_ns = sp->start_ns;
		if (sp->end_ns > tr->end_ns)
			tr->end_ns = sp->end_ns;
		tr->links[sp->method]++;
		/* A call's link is inferred; a request's is the connection. */
		if (sp->method >= SERVE_LINK_THREAD && sp->conf >= 0 &&
		    (tr->min_conf < 0 || sp->conf < tr->min_conf))
			tr->min_conf = sp->conf;
	}
}

static int cmp_trace_id(const void *a, const void *b, void *arg)
{
	const struct serve_tspan *sp = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sp[x].trace_id, sp[y].trace_id);

	return c ? c : (x > y) - (x < y);
}

/* Slowest first; then the earlier; then by id, so the order is fixed. */
static int cmp_slowest(const void *a, const void *b)
{
	const struct serve_trace *x = a, *y = b;
	uint64_t dx = x->end_ns - x->start_ns, dy = y->end_ns - y->start_ns;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int tbuild_init(struct tbuild *b, size_t n)
{
	b->by_start = malloc((n + 1) * sizeof(size_t));
	b->by_id = malloc((n + 1) * sizeof(size_t));
	b->stack = malloc((n + 1) * sizeof(size_t));
	b->parent = malloc((n + 1) * sizeof(ssize_t));
	b->first = malloc((n + 1) * sizeof(ssize_t));
	b->next = malloc((n + 1) * sizeof(ssize_t));
	b->it = malloc((n + 1) * sizeof(ssize_t));
	b->out_of = malloc((n + 1) * sizeof(ssize_t));
	b->seen = malloc((n + 1) * sizeof(bool));
	return b->by_start && b->by_id && b->stack && b->parent && b->first &&
			       b->next && b->it && b->out_of && b->seen
		       ? 0
		       : -1;
}

static void tbuild_free(struct tbuild *b)
{
	free(b->by_start), free(b->by_id), free(b->stack), free(b->parent);
	free(b->first), free(b->next), free(b->it), free(b->out_of);
	free(b->seen);
}

/*
 * The spans (file order) grouped by trace id, each trace in tree order
 * with its critical path, and the traces sorted slowest first.  The scratch
 * is sized for the whole file once.  0 or -1 (out of memory).
 */
static int build_traces(struct serve_tset *set)
{
	size_t n = set->nspans, *idx = malloc((n + 1) * sizeof(size_t));
	struct serve_tspan *out = malloc((n + 1) * sizeof(*out));
	struct serve_trace *tr = calloc(n + 1, sizeof(*tr));
	struct tbuild b = {.in = set->spans};
	size_t i, a, nout = 0;
	int ret = -1;

	if (!idx || !out || !tr || tbuild_init(&b, n))
		goto out;
	for (i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(size_t), cmp_trace_id, set->spans);
	for (a = 0; a < n; a = i) {
		for (i = a + 1; i < n && !strcmp(set->spans[idx[i]].trace_id,
						 set->spans[idx[a]].trace_id);
		     i++)
			;
		b.g = idx + a;
		b.n = i - a;
		b.base = nout;
		tr[set->ntraces].first = nout;
		tr[set->ntraces].n = b.n;
		order_tree(&b, out, &nout);
		if (mark_critical(out + tr[set->ntraces].first, b.n))
			goto out;
		set->ntraces++;
	}
	free(set->spans);
	set->spans = out, set->cap_spans = n + 1, out = NULL;
	for (i = 0; i < set->ntraces; i++)
		summarise(set, &tr[i]);
	qsort(tr, set->ntraces, sizeof(*tr), cmp_slowest);
	set->traces = tr, tr = NULL;
	ret = 0;
out:
	tbuild_free(&b);
	free(idx), free(out), free(tr);
	return ret;
}

void serve_tset_release(struct serve_tset *set)
{
	size_t i;

	for (i = 0; i < set->nspans; i++)
		free(set->spans[i].name);
	for (i = 0; i < set->nservices; i++)
		free(set->services[i]);
	free(set->spans), free(set->traces), free(set->services);
	memset(set, 0, sizeof(*set));
}

/* The line of byte `at`, for a JSON syntax error. */
static size_t line_of(const char *buf, size_t at)
{
	size_t line = 1, i;

	for (i = 0; i < at; i++)
		line += buf[i] == '\n';
	return line;
}

/* buf as one JSON value and nothing after it; NULL with err said. */
static struct json_object *parse_json(const char *buf, size_t len, char *err,
				      size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL;
	size_t end;

	if (!tok || len > INT32_MAX) {
		snprintf(err, errlen, tok ? "too large" : "out of memory");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!o) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		snprintf(err, errlen, "line %zu: not JSON (%s)",
			 line_of(buf, end),
			 je == json_tokener_continue
				 ? "it ends too soon"
				 : json_tokener_error_desc(je));
		goto out;
	}
	for (; end < len && strchr(" \t\r\n", buf[end]) && buf[end]; end++)
		;
	if (end < len) {
		snprintf(err, errlen, "line %zu: data after the JSON value",
			 line_of(buf, end));
		json_object_put(o);
		o = NULL;
	}
out:
	json_tokener_free(tok);
	return o;
}

int serve_tset_parse(struct serve_tset *set, const char *buf, size_t len,
		     char *err, size_t errlen)
{
	struct tparse p = {.set = set, .err = err, .errlen = errlen};
	struct json_object *root, *rss;
	int ret = -1;

	memset(set, 0, sizeof(*set));
	root = parse_json(buf, len, err, errlen);
	if (!root)
		return -1;
	rss = member(root, "resourceSpans");
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_is_type(rss, json_type_array)) {
		fail(&p, "not OTLP/JSON: no 'resourceSpans' array");
		goto out;
	}
	for (p.r = 0; p.r < json_object_array_length(rss); p.r++) {
		p.level = 1;
		if (read_resource(&p, json_object_array_get_idx(rss, p.r)))
			goto out;
	}
	p.level = 0;
	if (build_traces(set)) {
		fail(&p, "out of memory");
		goto out;
	}
	ret = 0;
out:
	if (ret)
		serve_tset_release(set);
	json_object_put(root);
	return ret;
}

ssize_t serve_tset_find(const struct serve_tset *set, const char *id)
{
	size_t i;

	for (i = 0; i < set->ntraces; i++)
		if (!strcmp(set->traces[i].id, id))
			return (ssize_t)i;
	return -1;
}

/* ---- the file --------------------------------------------------------- */

struct serve_traces {
	char *path;
	struct stat sig; /* of the version last looked at */
	bool present;
	struct serve_tset set; /* the last good one */
	uint64_t loads, errors;
	char last_error[256];
};

/* The whole file into *buf; 0, or -1 with the reason in err. */
static int slurp(const char *path, char **buf, size_t *len, struct stat *st,
		 char *err, size_t errlen)
{
	FILE *fp = fopen(path, "rb");

	*buf = NULL;
	if (!fp || fstat(fileno(fp), st)) {
		snprintf(err, errlen, "unable to read '%s': %s", path,
			 strerror(errno));
		goto fail;
	}
	if (st->st_size > (off_t)SERVE_TRACES_FILE_MAX) {
		snprintf(err, errlen, "'%s': larger than %u MiB", path,
			 SERVE_TRACES_FILE_MAX >> 20);
		goto fail;
	}
	*buf = malloc((size_t)st->st_size + 1);
	if (!*buf) {
		snprintf(err, errlen, "'%s': out of memory", path);
		goto fail;
	}
	*len = fread(*buf, 1, (size_t)st->st_size, fp);
	if (*len != (size_t)st->st_size || ferror(fp)) {
		snprintf(err, errlen, "unable to read '%s': short read", path);
		goto fail;
	}
	fclose(fp);
	return 0;
fail:
	if (fp)
		fclose(fp);
	free(*buf);
	*buf = NULL;
	return -1;
}

/* Read the file into a fresh set; 0 or -1 with the reason in err. */
static int load(struct serve_traces *t, struct stat *st, char *err,
		size_t errlen)
{
	struct serve_tset set;
	char why[200];
	size_t len;
	char *buf;

	if (slurp(t->path, &buf, &len, st, err, errlen))
		return -1;
	if (serve_tset_parse(&set, buf, len, why, sizeof(why))) {
		snprintf(err, errlen, "'%s': %s", t->path, why);
		free(buf);
		return -1;
	}
	free(buf);
	serve_tset_release(&t->set);
	t->set = set;
	t->loads++;
	return 0;
}

struct serve_traces *serve_traces_new(const char *path)
{
	struct serve_traces *t = calloc(1, sizeof(*t));
	char err[sizeof(t->last_error)];

	if (!t || !(t->path = strdup(path))) {
		free(t);
		cw_error("out of memory");
		return NULL;
	}
	if (load(t, &t->sig, err, sizeof(err))) {
		cw_error("%s", err);
		serve_traces_free(t);
		return NULL;
	}
	t->present = true;
	cw_info("%zu traces, %zu spans from '%s'", t->set.ntraces,
		t->set.nspans, path);
	return t;
}

void serve_traces_free(struct serve_traces *t)
{
	if (!t)
		return;
	serve_tset_release(&t->set);
	free(t->path);
	free(t);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

void serve_traces_refresh(struct serve_traces *t)
{
	struct stat st;
	char err[sizeof(t->last_error)];
	bool present = !stat(t->path, &st);
	int gone = errno;

	if (!present && !t->present)
		return;
	if (present && t->present && same_file(&st, &t->sig))
		return;
	/* Once per version: a bad one is not read (nor counted) again. */
	t->present = present;
	if (present)
		t->sig = st;
	if (present && !load(t, &t->sig, err, sizeof(err))) {
		cw_info("%zu traces, %zu spans from '%s'", t->set.ntraces,
			t->set.nspans, t->path);
		return;
	}
	if (!present)
		snprintf(err, sizeof(err), "unable to read '%s': %s", t->path,
			 strerror(gone));
	t->errors++;
	snprintf(t->last_error, sizeof(t->last_error), "%s", err);
	cw_error("%s; the last good traces are kept", err);
}

const struct serve_tset *serve_traces_set(const struct serve_traces *t)
{
	return &t->set;
}

const char *serve_traces_path(const struct serve_traces *t)
{
	return t->path;
}

void serve_traces_counts(const struct serve_traces *t, uint64_t *loads,
			 uint64_t *errors, const char **last_error)
{
	*loads = t->loads;
	*errors = t->errors;
	*last_error = t->last_error;
}
