// SPDX-License-Identifier: MIT
/*
 * Truth from the services' own records (--truth-links).  Each line names a
 * request by its connection's ends and the time the service read it, and a
 * call made for it by its connection and the time the service wrote it;
 * both are found among the spans built from the capture, and only scoring
 * sees the result.  The times are on the capture's clock, so no offset is
 * guessed: a request is read after its first byte crossed the wire and
 * before its reply, a call written before its first byte crossed.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/csv.h"
#include "traces/traces.h"

/* Tolerance between a service's clock and the capture's stamps (both
 * CLOCK_REALTIME on one machine; a few microseconds apart). */
#define TL_SLACK_NS 50000

struct tl_conn {
	uint32_t client, server;
	uint16_t client_port, server_port;
	uint32_t conn;
};

struct tl_index {
	struct tl_conn *conns; /* sorted by ends */
	size_t n_conns;
	int32_t *spans; /* by (conn, node, start) */
	uint8_t *seen;	/* per span: a request named by the truth */
	char **label;	/* per node: its service's name, or NULL */
	uint64_t first_ns, last_ns;
};

static int by_ends(const void *a, const void *b)
{
	const struct tl_conn *x = a, *y = b;

	if (x->client != y->client)
		return x->client < y->client ? -1 : 1;
	if (x->server != y->server)
		return x->server < y->server ? -1 : 1;
	if (x->client_port != y->client_port)
		return x->client_port < y->client_port ? -1 : 1;
	if (x->server_port != y->server_port)
		return x->server_port < y->server_port ? -1 : 1;
	return 0;
}

/* Spans compared by (conn, node, start): `key` for bsearch-like walks. */
static int span_cmp(const struct cw_tspan *x, uint32_t conn, uint32_t node,
		    uint64_t start)
{
	if (x->conn != conn)
		return x->conn < conn ? -1 : 1;
	if (x->node != node)
		return x->node < node ? -1 : 1;
	if (x->start_ns != start)
		return x->start_ns < start ? -1 : 1;
	return 0;
}

static int by_conn_node(const void *a, const void *b, void *arg)
{
	const struct cw_tspan *s = arg, *y = &s[*(const int32_t *)b];

	return span_cmp(&s[*(const int32_t *)a], y->conn, y->node, y->start_ns);
}

static void index_release(struct tl_index *ix, size_t n_names)
{
	size_t i;

	for (i = 0; ix->label && i < n_names; i++)
		free(ix->label[i]);
	free(ix->label);
	free(ix->conns);
	free(ix->spans);
	free(ix->seen);
}

static int index_build(const struct cw_traces *t, struct tl_index *ix)
{
	size_t i;

	memset(ix, 0, sizeof(*ix));
	ix->conns = malloc((t->n_ends + 1) * sizeof(*ix->conns));
	ix->spans = malloc((t->n_spans + 1) * sizeof(*ix->spans));
	ix->seen = calloc(t->n_spans + 1, 1);
	ix->label = calloc(t->n_names + 1, sizeof(*ix->label));
	if (!ix->conns || !ix->spans || !ix->seen || !ix->label)
		return cw_error("out of memory for the truth index");
	for (i = 0; i < t->n_ends; i++) {
		const struct cw_tends *e = &t->ends[i];

		if (e->client == UINT32_MAX)
			continue;
		ix->conns[ix->n_conns++] =
			(struct tl_conn){e->client, e->server, e->client_port,
					 e->server_port, (uint32_t)i};
	}
	qsort(ix->conns, ix->n_conns, sizeof(*ix->conns), by_ends);
	ix->first_ns = UINT64_MAX;
	for (i = 0; i < t->n_spans; i++) {
		ix->spans[i] = (int32_t)i;
		if (t->spans[i].start_ns < ix->first_ns)
			ix->first_ns = t->spans[i].start_ns;
		if (t->spans[i].end_ns > ix->last_ns)
			ix->last_ns = t->spans[i].end_ns;
	}
	qsort_r(ix->spans, t->n_spans, sizeof(*ix->spans), by_conn_node,
		t->spans);
	return 0;
}

/* The node named by address `addr`, without making one; -1 none. */
static int node_of(const struct cw_traces *t, const char *addr)
{
	return cw_names_find(&t->nodes, addr);
}

/* "ADDR:PORT" or "[ADDR6]:PORT" -> the address as the capture names it
 * (IPv4-mapped IPv6 as IPv4, as sockets of dual-stack servers print it). */
static int parse_end(const char *s, char addr[INET6_ADDRSTRLEN], uint16_t *port)
{
	char buf[INET6_ADDRSTRLEN + 16], *p, *a = buf;
	unsigned char bin[16];
	size_t n = strlen(s);
	uint64_t v;
	int fam = AF_INET;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	p = strrchr(buf, ':');
	if (!p || cw_parse_u64(p + 1, 1, 65535, &v))
		return -1;
	*p = 0;
	if (buf[0] == '[') {
		n = strlen(buf);
		if (n < 3 || buf[n - 1] != ']')
			return -1;
		buf[n - 1] = 0, a = buf + 1, fam = AF_INET6;
		if (!strncmp(a, "::ffff:", 7) && strchr(a, '.'))
			a += 7, fam = AF_INET;
	}
	if (inet_pton(fam, a, bin) != 1 ||
	    !inet_ntop(fam, bin, addr, INET6_ADDRSTRLEN))
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/*
 * The connections with these ends: their first index in ix->conns, *n of
 * them (several when a tuple was reused, or when the input cuts its
 * connections by window, as the agents' records do); -1 none.
 */
static int64_t conn_of(const struct cw_traces *t, const struct tl_index *ix,
		       const char *cli, const char *srv, int *bad, size_t *n)
{
	char ca[INET6_ADDRSTRLEN], sa[INET6_ADDRSTRLEN];
	struct tl_conn k = {0};
	size_t lo = 0, hi = ix->n_conns;
	int c, s;

	*n = 0;
	if (parse_end(cli, ca, &k.client_port) ||
	    parse_end(srv, sa, &k.server_port)) {
		*bad = 1;
		return -1;
	}
	c = node_of(t, ca), s = node_of(t, sa);
	if (c < 0 || s < 0)
		return -1;
	k.client = (uint32_t)c, k.server = (uint32_t)s;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (by_ends(&ix->conns[mid], &k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + *n < ix->n_conns && !by_ends(&ix->conns[lo + *n], &k))
		(*n)++;
	return *n ? (int64_t)lo : -1;
}

/* First position in ix->spans not below (conn, node, start). */
static size_t lower(const struct cw_traces *t, const struct tl_index *ix,
		    uint32_t conn, uint32_t node, uint64_t start)
{
	size_t lo = 0, hi = t->n_spans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (span_cmp(&t->spans[ix->spans[mid]], conn, node, start) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The request open at the server end when it was read at `at`; -1. */
static int32_t find_request(const struct cw_traces *t,
			    const struct tl_index *ix, uint32_t conn,
			    uint64_t at)
{
	uint32_t node = t->ends[conn].server;
	size_t i = lower(t, ix, conn, node, at + TL_SLACK_NS + 1);
	const struct cw_tspan *s;

	if (!i)
		return -1;
	s = &t->spans[ix->spans[i - 1]];
	if (s->conn != conn || s->node != node ||
	    s->role != CW_ROLE_ACCEPTED || at > s->end_ns + TL_SLACK_NS)
		return -1;
	return ix->spans[i - 1];
}

/*
 * The first call on the client end that started after `at` (less the
 * slack) and was not answered before it; -1.  On a pooled connection the
 * call before may fall within the slack: a Redis GET answered in 20 us,
 * and the next thread stamps its call as it takes the connection freed.
 */
static int32_t find_call(const struct cw_traces *t, const struct tl_index *ix,
			 uint32_t conn, uint64_t at)
{
	uint32_t node = t->ends[conn].client;
	size_t i = lower(t, ix, conn, node,
			 at > TL_SLACK_NS ? at - TL_SLACK_NS : 0);
	const struct cw_tspan *s;

	for (; i < t->n_spans; i++) {
		s = &t->spans[ix->spans[i]];
		if (s->conn != conn || s->node != node ||
		    s->role != CW_ROLE_CONNECTED)
			return -1;
		if (s->end_ns >= at)
			return ix->spans[i];
	}
	return -1;
}

/* Of the n connections from ix->conns[at]: the request open when read
 * (the first that has one) ... */
static int32_t find_request_of(const struct cw_traces *t,
			       const struct tl_index *ix, int64_t at, size_t n,
			       uint64_t ns)
{
	int32_t r;
	size_t i;

	for (i = 0; i < n; i++)
		if ((r = find_request(t, ix, ix->conns[at + i].conn, ns)) >= 0)
			return r;
	return -1;
}

/* ... and the earliest call started after it was written. */
static int32_t find_call_of(const struct cw_traces *t,
			    const struct tl_index *ix, int64_t at, size_t n,
			    uint64_t ns)
{
	int32_t best = -1, c;
	size_t i;

	for (i = 0; i < n; i++) {
		c = find_call(t, ix, ix->conns[at + i].conn, ns);
		if (c >= 0 && (best < 0 ||
			       t->spans[c].start_ns < t->spans[best].start_ns))
			best = c;
	}
	return best;
}

enum {
	F_SVC,
	F_IN_CLI,
	F_IN_SRV,
	F_IN_NS,
	F_OUT_CLI,
	F_OUT_SRV,
	F_OUT_NS,
	N_F
};
static const char *const tl_cols[N_F] = {
	"service",    "in_client",  "in_server",   "in_start_ns",
	"out_client", "out_server", "out_start_ns"};

/* A call found for a request: its truth, unless another line took it. */
static void tl_call(struct cw_traces *t, int32_t req, int32_t call)
{
	struct cw_tspan *c = &t->spans[call];

	if (c->node != t->spans[req].node)
		t->links.unmatched++; /* not made by the serving node */
	else if (c->truth >= 0 && c->truth != req)
		t->links.conflicts++;
	else if (c->truth < 0)
		c->truth = req, t->links.calls++;
}

static int tl_record(struct cw_traces *t, struct tl_index *ix, char **f,
		     const char *what, size_t line)
{
	bool has_out = *f[F_OUT_CLI] || *f[F_OUT_SRV] || *f[F_OUT_NS];
	uint64_t in_ns, out_ns = 0;
	int64_t in_c, out_c = -1;
	size_t in_n, out_n = 0;
	int32_t req, call = -1;
	int bad = 0;

	if (!*f[F_SVC] || strlen(f[F_SVC]) > 64)
		return cw_error("%s:%zu: bad service '%s'", what, line,
				f[F_SVC]);
	if (cw_parse_u64(f[F_IN_NS], 1, UINT64_MAX, &in_ns) ||
	    (has_out && cw_parse_u64(f[F_OUT_NS], 1, UINT64_MAX, &out_ns)))
		return cw_error("%s:%zu: bad start time", what, line);
	in_c = conn_of(t, ix, f[F_IN_CLI], f[F_IN_SRV], &bad, &in_n);
	if (has_out)
		out_c = conn_of(t, ix, f[F_OUT_CLI], f[F_OUT_SRV], &bad,
				&out_n);
	if (bad)
		return cw_error("%s:%zu: bad connection end (want "
				"ADDR:PORT or [ADDR]:PORT)",
				what, line);
	t->links.records++;
	if (in_ns < ix->first_ns || in_ns > ix->last_ns) {
		t->links.outside++;
		return 0;
	}
	if (in_c < 0 || (has_out && out_c < 0)) {
		t->links.no_conn++;
		return 0;
	}
	req = find_request_of(t, ix, in_c, in_n, in_ns);
	if (has_out)
		call = find_call_of(t, ix, out_c, out_n, out_ns);
	if (req < 0 || (has_out && call < 0)) {
		t->links.unmatched++;
		return 0;
	}
	if (!ix->seen[req]) {
		uint32_t v = t->spans[req].node;

		ix->seen[req] = 1, t->links.requests++;
		if (!ix->label[v] && !(ix->label[v] = strdup(f[F_SVC])))
			return cw_error("out of memory for service names");
	}
	if (has_out)
		tl_call(t, req, call);
	return 0;
}

/* Each named request's true trace: the request at the top of the chain
 * of true links through the connections' other ends. */
static int tl_traces(struct cw_traces *t, const struct tl_index *ix)
{
	int32_t *root_trace = malloc((t->n_spans + 1) * sizeof(*root_trace));
	size_t i, k;

	if (!root_trace)
		return cw_error("out of memory for true traces");
	for (i = 0; i < t->n_spans; i++)
		root_trace[i] = -1;
	t->n_true_traces = 0;
	for (i = 0; i < t->n_spans; i++) {
		int32_t r = (int32_t)i, c;

		if (!ix->seen[i])
			continue;
		for (k = 0; k < 64; k++) { /* bounded: a cycle is no trace */
			c = t->spans[r].peer_span;
			if (c < 0 || t->spans[c].truth < 0)
				break;
			r = t->spans[c].truth;
		}
		if (root_trace[r] < 0)
			root_trace[r] = (int32_t)t->n_true_traces++;
		t->spans[i].trace = root_trace[r];
	}
	free(root_trace);
	return 0;
}

/*
 * Nodes named by address take their service's name where it is unique:
 * no other node's label and no other node's name.  Labels are counted in
 * a name index of their own, so this is linear in the nodes.
 */
static void tl_relabel(struct cw_traces *t, struct tl_index *ix)
{
	struct cw_names seen = {0};
	uint32_t *count = calloc(t->n_names + 1, sizeof(*count));
	size_t i;
	int id;

	for (i = 0; count && i < t->n_names; i++) {
		id = ix->label[i] ? cw_names_id(&seen, ix->label[i]) : -1;
		if (id >= 0)
			count[id]++;
	}
	for (i = 0; count && i < t->n_names; i++) {
		if (!ix->label[i])
			continue;
		id = cw_names_find(&seen, ix->label[i]);
		if (id < 0 || count[id] != 1)
			continue;
		id = cw_names_find(&t->nodes, ix->label[i]);
		if (id >= 0 && (size_t)id != i)
			continue;
		free(t->names[i]);
		t->names[i] = ix->label[i];
		ix->label[i] = NULL;
	}
	free(count);
	cw_names_release(&seen);
	cw_names_reindex(&t->nodes);
}

static int tl_header(char *buf, int *at, const char *what)
{
	char *h[16];
	int nf = cw_csv_split(buf, h, 16, false), c;

	if (cw_csv_columns(h, nf > 16 ? 0 : nf, tl_cols, N_F, at, what))
		return -1;
	for (c = 0; c < N_F; c++)
		if (at[c] < 0)
			return cw_error("%s:1: header has no '%s' column", what,
					tl_cols[c]);
	return 0;
}

/* The file's lines after the header, each a record; -1 (said). */
static int tl_rows(struct cw_traces *t, struct tl_index *ix, struct cw_csv *r,
		   const int *at, const char *what)
{
	char *g[16], *f[N_F];
	int nf, c, rc;

	while ((rc = cw_csv_next(r)) > 0) {
		if (!r->buf[0] || r->buf[0] == '#')
			continue;
		nf = cw_csv_split(r->buf, g, 16, false);
		for (c = 0; c < N_F; c++) {
			if (nf > 16 || at[c] >= nf)
				return cw_error("%s:%zu: want %d fields", what,
						r->line, N_F);
			f[c] = g[at[c]];
		}
		if (tl_record(t, ix, f, what, r->line))
			return -1;
	}
	if (!rc && ferror(r->fp))
		return cw_error("%s: read error", what);
	return rc;
}

static int tl_lines(struct cw_traces *t, struct tl_index *ix, FILE *fp,
		    const char *what)
{
	struct cw_csv r;
	int at[N_F], rc;

	cw_csv_open(&r, fp, what);
	rc = cw_csv_next(&r);
	if (!rc)
		rc = cw_error("%s: empty truth-links file", what);
	else if (rc > 0)
		rc = tl_header(r.buf, at, what);
	if (!rc)
		rc = tl_rows(t, ix, &r, at, what);
	cw_csv_close(&r);
	return rc;
}

int cw_traces_read_truth_links(struct cw_traces *t, FILE *fp, const char *what)
{
	struct tl_index ix;
	int rc;

	memset(&t->links, 0, sizeof(t->links));
	if (!t->n_ends || !t->n_spans)
		return cw_error("%s: the input names no connection ends to "
				"match (a pcap does, and a messages CSV with "
				"node_port and peer_port)",
				what);
	rc = index_build(t, &ix);
	if (!rc)
		rc = tl_lines(t, &ix, fp, what);
	if (!rc && !t->links.requests)
		rc = cw_error("%s: none of its %zu lines is in the input", what,
			      t->links.records);
	if (!rc)
		rc = tl_traces(t, &ix);
	if (!rc) {
		tl_relabel(t, &ix);
		t->truth_by_links = true;
	}
	index_release(&ix, t->n_names);
	return rc;
}
