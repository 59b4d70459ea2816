// SPDX-License-Identifier: MIT
/*
 * Span traces as their files give them, for paths/ and traces/: the span
 * CSV (TraceID,SpanID,ParentID,PodName,...,StartTimeUnixNano,
 * EndTimeUnixNano) or Jaeger JSON ({"data":[{"spans":[...],
 * "processes":{...}}]}), told apart by the first byte.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/csv.h"
#include "paths/paths.h"

void cw_span_rows_release(struct cw_span_rows *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->rows[i].trace), free(r->rows[i].id);
		free(r->rows[i].parent), free(r->rows[i].pod);
		free(r->rows[i].service);
	}
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Append a row (strings copied); -1 (said) when out of memory. */
static int add(struct cw_span_rows *r, const struct cw_span_row *x)
{
	struct cw_span_row *y;
	const char *p = x->parent;

	if (CW_GROW(r->rows, r->cap, r->n + 1, 1024))
		return cw_error("out of memory for %zu spans", r->n + 1);
	y = &r->rows[r->n];
	*y = *x;
	y->trace = strdup(x->trace ? x->trace : "");
	y->id = strdup(x->id);
	y->pod = strdup(x->pod);
	y->service = dup_or_null(x->service);
	y->parent = p && *p && strcmp(p, "root") ? strdup(p) : NULL;
	if (!y->trace || !y->id || !y->pod || (x->service && !y->service) ||
	    (p && *p && strcmp(p, "root") && !y->parent)) {
		free(y->trace), free(y->id), free(y->pod), free(y->service);
		free(y->parent);
		return cw_error("out of memory for %zu spans", r->n + 1);
	}
	r->n++;
	return 0;
}

/* ---- CSV ---------------------------------------------------------------- */

enum { S_TRACE, S_SPAN, S_PARENT, S_POD, S_START, S_END, S_NCOL };
static const char *const span_cols[S_NCOL] = {
	"TraceID", "SpanID", "ParentID", "PodName", "StartTimeUnixNano",
	"EndTimeUnixNano"};

/* The header's columns; all but TraceID are needed. */
static int csv_header(char *line, int *col, int *nf, const char *what)
{
	char *f[32];
	int n = cw_csv_split(line, f, 32, false), c;

	if (cw_csv_columns(f, n > 32 ? 32 : n, span_cols, S_NCOL, col, what))
		return -1;
	for (c = S_SPAN; c < S_NCOL; c++)
		if (col[c] < 0)
			return cw_error("'%s' line 1: no '%s' column in the "
					"span header",
					what, span_cols[c]);
	*nf = n;
	return 0;
}

static int csv_row(struct cw_span_rows *r, char *line, const int *col, int nf,
		   const char *what, size_t ln)
{
	struct cw_span_row x = {.line = ln};
	char *f[32];
	int n = cw_csv_split(line, f, 32, false);

	if (n != nf)
		return cw_error("'%s' line %zu: %d fields, header has %d", what,
				ln, n > 32 ? 32 : n, nf);
	if (cw_parse_u64(f[col[S_START]], 0, UINT64_MAX, &x.start_ns) ||
	    cw_parse_u64(f[col[S_END]], 0, UINT64_MAX, &x.end_ns))
		return cw_error("'%s' line %zu: bad start or end time", what,
				ln);
	if (!*f[col[S_SPAN]] || !*f[col[S_POD]])
		return cw_error("'%s' line %zu: empty SpanID or PodName", what,
				ln);
	x.trace = col[S_TRACE] >= 0 ? f[col[S_TRACE]] : NULL;
	x.id = f[col[S_SPAN]];
	x.parent = f[col[S_PARENT]];
	x.pod = f[col[S_POD]];
	return add(r, &x);
}

static int read_csv(struct cw_span_rows *r, FILE *fp, const char *what)
{
	struct cw_csv c;
	int col[S_NCOL], nf = 0, err = 0, rc;

	cw_csv_open(&c, fp, what);
	while (!err && (rc = cw_csv_next(&c)) != 0) {
		if (rc < 0)
			err = -1;
		else if (c.line == 1)
			err = csv_header(c.buf, col, &nf, what);
		else if (c.buf[strspn(c.buf, " \t")])
			err = csv_row(r, c.buf, col, nf, what, c.line);
	}
	if (!err)
		r->has_trace = col[S_TRACE] >= 0;
	cw_csv_close(&c);
	return err;
}

/* ---- Jaeger JSON -------------------------------------------------------- */

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static const char *jaeger_parent(json_object *span)
{
	json_object *refs, *r;
	size_t i;

	if (!json_object_object_get_ex(span, "references", &refs) ||
	    !json_object_is_type(refs, json_type_array))
		return NULL;
	for (i = 0; i < json_object_array_length(refs); i++) {
		r = json_object_array_get_idx(refs, i);
		if (r && jstr(r, "refType") &&
		    !strcmp(jstr(r, "refType"), "CHILD_OF"))
			return jstr(r, "spanID");
	}
	return NULL;
}

/* One span; the process is the pod, its serviceName the service. */
static int jaeger_span(struct cw_span_rows *r, json_object *span,
		       json_object *procs, const char *trace, const char *what)
{
	struct cw_span_row x = {.trace = (char *)trace};
	json_object *st, *du, *proc;
	const char *pid = jstr(span, "processID");
	int64_t s, d;

	x.id = (char *)jstr(span, "spanID");
	if (pid && procs && json_object_object_get_ex(procs, pid, &proc))
		x.service = (char *)jstr(proc, "serviceName");
	if (!x.id || !x.service ||
	    !json_object_object_get_ex(span, "startTime", &st) ||
	    !json_object_object_get_ex(span, "duration", &du))
		return cw_error("'%s': a span lacks spanID, startTime, "
				"duration or its process's serviceName",
				what);
	s = json_object_get_int64(st);
	d = json_object_get_int64(du);
	if (s < 0 || d < 0 || s > INT64_MAX / 1000 - d)
		return cw_error("'%s': span '%s' has a bad time", what, x.id);
	/* Jaeger times are microseconds. */
	x.start_ns = (uint64_t)s * 1000;
	x.end_ns = (uint64_t)(s + d) * 1000;
	x.parent = (char *)jaeger_parent(span);
	x.pod = (char *)pid;
	return add(r, &x);
}

static int jaeger_trace(struct cw_span_rows *r, json_object *tr,
			const char *what)
{
	json_object *spans, *procs = NULL;
	const char *id = jstr(tr, "traceID");
	size_t i;
	int err = 0;

	json_object_object_get_ex(tr, "processes", &procs);
	if (!json_object_object_get_ex(tr, "spans", &spans) ||
	    !json_object_is_type(spans, json_type_array))
		return cw_error("'%s': a trace has no \"spans\" array", what);
	for (i = 0; !err && i < json_object_array_length(spans); i++)
		err = jaeger_span(r, json_object_array_get_idx(spans, i), procs,
				  id, what);
	return err;
}

static int read_json(struct cw_span_rows *r, FILE *fp, const char *what)
{
	char *buf = NULL;
	size_t cap = 0, n = 0, i;
	json_object *root, *data;
	int err = 0;

	for (;;) {
		if (CW_GROW(buf, cap, n + 2, 65536)) {
			free(buf);
			return cw_error("out of memory for the trace file");
		}
		i = fread(buf + n, 1, cap - n - 1, fp);
		if (!i)
			break;
		n += i;
	}
	if (!buf) /* never: the loop grows it first; for the compiler */
		return cw_error("out of memory for the trace file");
	buf[n] = '\0';
	root = strlen(buf) == n ? json_tokener_parse(buf) : NULL;
	free(buf);
	if (!root)
		return cw_error("'%s': not valid JSON", what);
	if (!json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array))
		err = cw_error("'%s': no \"data\" array of Jaeger traces",
			       what);
	for (i = 0; !err && i < json_object_array_length(data); i++)
		err = jaeger_trace(r, json_object_array_get_idx(data, i), what);
	r->has_trace = true;
	json_object_put(root);
	return err;
}

int cw_span_rows_read(struct cw_span_rows *r, FILE *fp, const char *what)
{
	int c;

	cw_skip_bom(fp);
	do
		c = fgetc(fp);
	while (c == ' ' || c == '\n' || c == '\t' || c == '\r');
	if (c == EOF)
		return cw_error("'%s': empty span trace", what);
	ungetc(c, fp);
	if (c == '{' ? read_json(r, fp, what) : read_csv(r, fp, what))
		return -1;
	if (!r->n)
		return cw_error("'%s': no spans in the input", what);
	return 0;
}
