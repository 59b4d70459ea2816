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

/* Characters of Kubernetes' random suffixes (no vowels, no 0, 1, 3). */
static const char k8s_rand[] = "bcdfghjklmnpqrstvwxz2456789";

static bool k8s_run(const char *s, size_t lo, size_t hi, const char *set)
{
	size_t n = strlen(s);

	return n >= lo && n <= hi && strspn(s, set) == n;
}

/*
 * --fold-replicas: a pod's replica suffix cut, only where it is one: a
 * Deployment's "-<template hash>-<5 random>" ("frontend-579b9bff58-t2dbm"
 * -> "frontend") or a StatefulSet's "-<ordinal>" ("db-0" -> "db").
 * "movie-id-service" is a name, not a pod of "movie": kept whole.
 */
static void fold_replica(char *pod)
{
	char *a = strrchr(pod, '-'), *b;

	if (!a || a == pod)
		return;
	if (k8s_run(a + 1, 1, 8, "0123456789")) {
		*a = 0;
		return;
	}
	if (!k8s_run(a + 1, 5, 5, k8s_rand))
		return;
	*a = 0;
	b = strrchr(pod, '-');
	if (b && b != pod && k8s_run(b + 1, 6, 10, k8s_rand) &&
	    strpbrk(b + 1, "0123456789"))
		*b = 0;
	else
		*a = '-'; /* a word, not a replica's suffix */
}

static int service_of(struct cw_traces *t, const char *name)
{
	char pod[256];

	if (!t->fold_replicas)
		return cw_traces_node(t, name);
	snprintf(pod, sizeof(pod), "%s", name);
	fold_replica(pod);
	return cw_traces_node(t, pod);
}

/* Row x of the file as a span of its service: Jaeger's serviceName, else
 * the pod's name as the file gives it (--fold-replicas: its replica suffix
 * cut). */
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

/* A span is its id within its trace: ids repeat across traces (a root
 * span id of 1 in every trace). */
static int id_cmp(const struct srow *x, const char *trace, const char *id)
{
	int c = strcmp(x->trace, trace);

	return c ? c : strcmp(x->id, id);
}

static int by_id(const void *a, const void *b)
{
	const struct srow *y = &sort_rows[*(const int32_t *)b];

	return id_cmp(&sort_rows[*(const int32_t *)a], y->trace, y->id);
}

static int by_trace(const void *a, const void *b)
{
	return strcmp(sort_rows[*(const int32_t *)a].trace,
		      sort_rows[*(const int32_t *)b].trace);
}

static int32_t find_id(const struct sread *s, const char *trace,
		       const char *id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = id_cmp(&s->rows[s->by_id[mid]], trace, id);

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
		s->rows[i].up = s->rows[i].parent ? find_id(s, s->rows[i].trace,
							      s->rows[i].parent)
						  : -1;
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

/* The truth arrays cover connection ids up to `conn`. */
static int grow_truth(struct cw_traces *t, uint32_t conn)
{
	size_t cap = t->cap_truth;

	if (CW_GROW(t->truth_conn, t->cap_truth, conn + 1, 1024))
		return cw_error("out of memory for truth");
	if (cap != t->cap_truth) {
		int32_t *tr = realloc(t->truth_trace,
				      t->cap_truth * sizeof(*tr));
		uint8_t *bl = tr ? realloc(t->truth_blind, t->cap_truth) : NULL;

		if (tr)
			t->truth_trace = tr;
		if (bl)
			t->truth_blind = bl;
		if (!tr || !bl)
			return cw_error("out of memory for truth");
	}
	while (t->n_truth <= conn) {
		t->truth_conn[t->n_truth] = 0;
		t->truth_blind[t->n_truth] = 0;
		t->truth_trace[t->n_truth++] = -1;
	}
	return 0;
}

static int add_truth(struct cw_traces *t, uint32_t conn, uint32_t pconn,
		     int32_t trace)
{
	if (grow_truth(t, conn))
		return -1;
	t->truth_conn[conn] = pconn;
	t->truth_trace[conn] = trace;
	return 0;
}

/* The request on connection `conn` made a call whose caller side was not
 * recorded: it is not scored (its known calls would flatter it). */
static int add_blind(struct cw_traces *t, uint32_t conn)
{
	if (grow_truth(t, conn))
		return -1;
	t->truth_blind[conn] = 1;
	return 0;
}

/*
 * A remote call: the client side at the parent's span, the server side at
 * the child's.  The parent is a client span only when it is not its own
 * service's entry (the request itself): a trace that records no client
 * spans (the callee's span hangs off the caller's server span) would give
 * every call its request's exact times.  Such a call keeps its server
 * side only; its request is left unscored (add_blind()).
 */
static int emit_call(struct cw_traces *t, const struct sread *s, size_t i,
		     uint32_t client)
{
	const struct srow *r = &s->rows[i],
			  *p = r->up >= 0 ? &s->rows[r->up] : NULL;
	uint32_t conn = (uint32_t)i + 1, pconn = 0;
	struct cw_msg m = {.conn = conn};
	bool client_side = !p || p->entry != r->up;

	if (p)
		pconn = (uint32_t)s->rows[p->entry].entry + 1;
	m.node = client, m.peer = r->svc, m.role = CW_ROLE_CONNECTED;
	m.dir = CW_MSG_OUT;
	m.start_ns = m.end_ns = p ? p->start : r->start;
	if (client_side && cw_traces_add_msg(t, &m))
		return -1;
	m.dir = CW_MSG_IN;
	m.start_ns = m.end_ns = p ? p->end : r->end;
	if (client_side && cw_traces_add_msg(t, &m))
		return -1;
	m.node = r->svc, m.peer = client, m.role = CW_ROLE_ACCEPTED;
	m.start_ns = m.end_ns = r->start;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.dir = CW_MSG_OUT;
	m.start_ns = m.end_ns = r->end;
	if (cw_traces_add_msg(t, &m))
		return -1;
	if (!client_side) {
		t->n_no_client++;
		return add_blind(t, pconn) ||
		       add_truth(t, conn, 0, r->tr);
	}
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
