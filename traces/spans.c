// SPDX-License-Identifier: MIT
/*
 * Span traces (CSV or Jaeger JSON, read by paths/span_rows.c) -> messages
 * between services, one connection per remote call, and the truth kept
 * aside: for each connection, the connection of the request it was made
 * for, and its trace.  Inference never reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/pcap.h"
#include "common/util.h"
#include "paths/csv.h"
#include "traces/traces.h"

struct srow {
	const char *trace, *id, *parent; /* in the file's rows; parent NULL */
	uint32_t svc;
	uint64_t start, end;
	int32_t up;    /* parent row, -1 root or missing */
	int32_t entry; /* the row that entered this span's service */
	int32_t tr;    /* trace index */
};

struct sread {
	struct cw_span_rows file; /* paths/'s reader: the strings' owner */
	struct srow *rows;
	size_t n, cap;
	int32_t *by_id; /* rows sorted by span id */
};

static void sread_release(struct sread *s)
{
	cw_span_rows_release(&s->file);
	free(s->rows);
	free(s->by_id);
}

/* Pod names lose their replica suffix: "frontend-579b9bff58-t2dbm". */
static int service_of(struct cw_traces *t, const char *name)
{
	char pod[256], *a, *b;

	snprintf(pod, sizeof(pod), "%s", name);
	a = strrchr(pod, '-');
	if (a && a != pod) {
		*a = 0;
		b = strrchr(pod, '-');
		if (b && b != pod)
			*b = 0;
		else
			*a = '-';
	}
	return cw_traces_node(t, pod);
}

/* Row x of the file as a span of its service (Jaeger's serviceName, else
 * the pod's name without its replica suffix). */
static int add_row(struct cw_traces *t, struct sread *s,
		   const struct cw_span_row *x, const char *what)
{
	struct srow r = {.trace = x->trace, .id = x->id, .parent = x->parent};
	int svc;

	if (!x->start_ns || x->end_ns < x->start_ns)
		return cw_error("%s:%zu: bad start or end time", what, x->line);
	if (!*x->trace)
		return cw_error("%s:%zu: missing field", what, x->line);
	svc = x->service ? cw_traces_node(t, x->service)
			 : service_of(t, x->pod);
	if (svc < 0)
		return cw_error("out of memory for service names");
	r.svc = (uint32_t)svc;
	r.start = x->start_ns;
	r.end = x->end_ns;
	s->rows[s->n++] = r;
	return 0;
}

static const struct srow *sort_rows;

static int by_id(const void *a, const void *b)
{
	return strcmp(sort_rows[*(const int32_t *)a].id,
		      sort_rows[*(const int32_t *)b].id);
}

static int by_trace(const void *a, const void *b)
{
	return strcmp(sort_rows[*(const int32_t *)a].trace,
		      sort_rows[*(const int32_t *)b].trace);
}

static int32_t find_id(const struct sread *s, const char *id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->rows[s->by_id[mid]].id, id);

		if (!c)
			return s->by_id[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Parents, entries (iteratively, bounded against cycles) and traces. */
static int link_rows(struct cw_traces *t, struct sread *s)
{
	size_t i, d;
	int32_t *ix = malloc(s->n * sizeof(*ix)), tr = -1;

	s->by_id = malloc(s->n * sizeof(*s->by_id));
	if (!ix || !s->by_id) {
		free(ix);
		return cw_error("out of memory for %zu spans", s->n);
	}
	for (i = 0; i < s->n; i++)
		s->by_id[i] = ix[i] = (int32_t)i;
	sort_rows = s->rows;
	qsort(s->by_id, s->n, sizeof(int32_t), by_id);
	qsort(ix, s->n, sizeof(int32_t), by_trace);
	for (i = 0; i < s->n; i++) {
		if (!i ||
		    strcmp(s->rows[ix[i]].trace, s->rows[ix[i - 1]].trace))
			tr++;
		s->rows[ix[i]].tr = tr;
	}
	t->n_true_traces = (size_t)tr + 1;
	free(ix);
	for (i = 0; i < s->n; i++)
		s->rows[i].up =
			s->rows[i].parent ? find_id(s, s->rows[i].parent) : -1;
	for (i = 0; i < s->n; i++) {
		int32_t e = (int32_t)i;

		for (d = 0; d < 256; d++) {
			int32_t u = s->rows[e].up;

			if (u < 0 || s->rows[u].svc != s->rows[i].svc)
				break;
			e = u;
		}
		s->rows[i].entry = e;
	}
	return 0;
}

static int add_truth(struct cw_traces *t, uint32_t conn, uint32_t pconn,
		     int32_t trace)
{
	if (CW_GROW(t->truth_conn, t->cap_truth, conn + 1, 1024))
		return cw_error("out of memory for truth");
	t->truth_trace =
		realloc(t->truth_trace, t->cap_truth * sizeof(*t->truth_trace));
	if (!t->truth_trace)
		return cw_error("out of memory for truth");
	while (t->n_truth <= conn) {
		t->truth_conn[t->n_truth] = 0;
		t->truth_trace[t->n_truth++] = -1;
	}
	t->truth_conn[conn] = pconn;
	t->truth_trace[conn] = trace;
	return 0;
}

/* A remote call: client side at the parent's span, server at the child's. */
static int emit_call(struct cw_traces *t, const struct sread *s, size_t i,
		     uint32_t client)
{
	const struct srow *r = &s->rows[i],
			  *p = r->up >= 0 ? &s->rows[r->up] : NULL;
	uint32_t conn = (uint32_t)i + 1, pconn = 0;
	struct cw_msg m = {.conn = conn};

	if (p)
		pconn = (uint32_t)s->rows[p->entry].entry + 1;
	m.node = client, m.peer = r->svc, m.role = CW_ROLE_CONNECTED;
	m.dir = CW_MSG_OUT;
	m.start_ns = m.end_ns = p ? p->start : r->start;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.dir = CW_MSG_IN;
	m.start_ns = m.end_ns = p ? p->end : r->end;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.node = r->svc, m.peer = client, m.role = CW_ROLE_ACCEPTED;
	m.start_ns = m.end_ns = r->start;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.dir = CW_MSG_OUT;
	m.start_ns = m.end_ns = r->end;
	if (cw_traces_add_msg(t, &m))
		return -1;
	return add_truth(t, conn, p ? pconn : 0, r->tr);
}

static int emit(struct cw_traces *t, struct sread *s)
{
	int client = cw_traces_node(t, "client");
	size_t i;

	if (client < 0)
		return cw_error("out of memory for service names");
	for (i = 0; i < s->n; i++) {
		const struct srow *r = &s->rows[i];

		if (r->entry != (int32_t)i)
			continue; /* a local child: no message */
		if (emit_call(t, s, i,
			      r->up >= 0 ? s->rows[r->up].svc
					 : (uint32_t)client))
			return -1;
	}
	return 0;
}

/* The file's spans into s; -1 (said) on a malformed one. */
static int read_rows(struct cw_traces *t, struct sread *s, FILE *fp,
		     const char *what)
{
	size_t i;

	if (cw_span_rows_read(&s->file, fp, what))
		return -1;
	if (!s->file.has_trace)
		return cw_error("%s:1: header has no 'TraceID' column", what);
	s->rows = malloc(s->file.n * sizeof(*s->rows));
	if (!s->rows)
		return cw_error("out of memory for %zu spans", s->file.n);
	for (i = 0; i < s->file.n; i++)
		if (add_row(t, s, &s->file.rows[i], what))
			return -1;
	return 0;
}

int cw_traces_read_spans(struct cw_traces *t, FILE *fp, const char *what)
{
	struct sread s = {0};
	int rc = read_rows(t, &s, fp, what);

	if (!rc && !s.n)
		rc = cw_error("%s: no spans", what);
	if (!rc && s.n >= UINT32_MAX / 2)
		rc = cw_error("%s: too many spans", what);
	if (!rc)
		rc = link_rows(t, &s);
	if (!rc)
		rc = emit(t, &s);
	sread_release(&s);
	return rc;
}

int cw_traces_read_file(struct cw_traces *t, const char *path)
{
	FILE *fp = fopen(path, "r");
	char head[64] = "";
	size_t n;
	int rc;

	if (!fp)
		return cw_error("cannot open '%s': %m", path);
	n = fread(head, 1, 4, fp);
	if (cw_pcap_is_capture((const unsigned char *)head, n, NULL)) {
		fclose(fp);
		return cw_traces_read_pcap(t, path);
	}
	rewind(fp);
	cw_skip_bom(fp); /* the readers drop it themselves */
	if (fgets(head, sizeof(head), fp) &&
	    (!strncmp(head, "TraceID,", 8) || head[0] == '{')) {
		rewind(fp);
		rc = cw_traces_read_spans(t, fp, path);
	} else {
		rewind(fp);
		rc = cw_traces_read_csv(t, fp, path);
	}
	fclose(fp);
	return rc;
}
