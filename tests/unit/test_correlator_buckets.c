// SPDX-License-Identifier: MIT
/*
 * Time buckets: a stream of connections that open, talk over several
 * records and close (some with an end nobody watched, some idle long
 * enough to go dormant and then talk again) is fed once to a pairing with
 * buckets and once to one without.  The bucketed one frees the ends as
 * their buckets are sealed (live ends and bytes drop back), and its graph
 * has the same edges with the same totals as the graph of every end kept.
 * A state copied through its checkpoint records and fed the rest ends the
 * same as one fed everything.  The records carry edge health (connect
 * times, failed connects, resets, histograms that grow record by record),
 * and every comparison holds it too: two partitions' buckets summed, a
 * checkpoint restored and the unbucketed pairing give the same counts and
 * the same histograms, bin for bin.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

#include "tests/unit/check.h"

#define NS   1000000000ULL
#define T0   (1700000000ULL * NS)
#define NCON 3000

static struct cw_conn_record *recs;
static size_t nrecs, cap;

static void end_rec(struct cw_conn_record *r, bool client, size_t i,
		    uint64_t first, uint64_t at, uint64_t sent, uint64_t got,
		    bool closed)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", client ? "web" : "db");
	snprintf(r->boot_id, sizeof(r->boot_id), "boot-1");
	r->netns = 4026531840u;
	r->cookie = 1000 + i;
	r->protocol = 6;
	r->role = client ? CW_REC_ROLE_CLIENT : CW_REC_ROLE_SERVER;
	cw_addr_parse(&r->laddr, client ? "10.0.0.1" : "10.0.0.2");
	cw_addr_parse(&r->raddr, client ? "10.0.0.2" : "10.0.0.1");
	r->lport = client ? (uint16_t)(20000 + i % 40000) : 5432;
	r->rport = client ? 5432 : (uint16_t)(20000 + i % 40000);
	r->bytes_out = sent;
	r->bytes_in = got;
	r->msgs_out = sent / 100;
	r->msgs_in = got / 100;
	r->first_ns = first;
	r->last_ns = at;
	r->retrans = (uint32_t)(sent / 5000);
	r->flags = closed ? CW_REC_CLOSED : 0;
	r->proc.tgid = client ? (uint32_t)(100 + i % 7) : 900;
	r->proc.start_ns = client ? 11 : 22;
	snprintf(r->proc.comm, sizeof(r->proc.comm), "%s",
		 client ? "app" : "postgres");
	r->seq = i;
}

/* Record k (1..3) of connection i's end: cumulative health, as agents
 * send it.  Every 30th lone connection failed to connect (refused or
 * timed out), every 50th was reset by its server in its last record. */
static void health(struct cw_conn_record *r, bool client, size_t i, size_t k)
{
	struct cw_hist h = CW_HIST_INIT, x = CW_HIST_INIT;
	size_t j;

	if (client && i % 30 == 3) {
		/* A connect that failed: no bytes, another port. */
		r->fail = i % 60 == 3 ? CW_REC_FAIL_REFUSED
				      : CW_REC_FAIL_TIMEOUT;
		r->rport = 5433;
		r->bytes_out = r->bytes_in = r->msgs_out = r->msgs_in = 0;
		r->retrans = 0;
		return;
	}
	if (client)
		r->connect_us = (uint32_t)(150 + i % 50);
	if (k == 3 && i % 50 == 9) {
		if (client)
			r->resets_in = 1;
		else
			r->resets_out = 1;
	}
	r->xchg_pipelined = client ? 0 : k * (i % 3);
	for (j = 1; j <= k; j++) {
		/* Both ends read the srtt; each exchange's server time is
		 * 40 us less than the client's (the network's share). */
		cw_hist_add(&h, 200000 + (i % 13) * 1000 + j * 10, 1);
		cw_hist_add(&x, 900000 + (i % 17) * 20000 + j * 5000 -
					(client ? 0 : 40000),
			    1);
	}
	cw_rec_hist_set(&r->rtt, &h);
	cw_rec_hist_set(&r->xchg, &x);
	if (client) {
		cw_hist_reset(&x);
		for (j = 1; j <= k; j++)
			cw_hist_add(&x, 300000 + (i % 17) * 20000, 1);
		cw_rec_hist_set(&r->xchg_first, &x);
	}
	cw_hist_release(&h);
	cw_hist_release(&x);
}

static void push(const struct cw_conn_record *r)
{
	if (CW_GROW(recs, cap, nrecs + 1, 1024))
		abort();
	recs[nrecs++] = *r;
}

static int by_time(const void *a, const void *b)
{
	const struct cw_conn_record *x = a, *y = b;

	if (x->last_ns != y->last_ns)
		return x->last_ns < y->last_ns ? -1 : 1;
	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

/*
 * Connection i opens at T0 + i * 20 ms and sends three records per end
 * over 3 s, closing in the last; every 10th has no server end (an
 * external peer); every 100th falls silent for 40 s (past the TTL) and
 * then talks again before it closes.
 */
static void make_stream(void)
{
	size_t i, k;

	for (i = 0; i < NCON; i++) {
		uint64_t first = T0 + i * 20 * 1000000ULL;
		bool lone = i % 10 == 3, idle = i % 100 == 7;

		for (k = 1; k <= 3; k++) {
			uint64_t at =
				first + k * NS + (idle && k == 3 ? 40 * NS : 0);
			struct cw_conn_record r;
			uint64_t req = 300 * k + i, resp = 2000 * k + i;

			end_rec(&r, true, i, first, at, req, resp, k == 3);
			health(&r, true, i, k);
			push(&r);
			if (lone)
				continue;
			/* The server saw a little less of the last request. */
			end_rec(&r, false, i, first + 1000, at + 500, resp,
				k == 3 ? req : req - 1, k == 3);
			health(&r, false, i, k);
			push(&r);
		}
	}
	qsort(recs, nrecs, sizeof(*recs), by_time);
}

/* An edge's health as text: counters, each histogram's bins (a hash). */
static void health_text(const struct cw_edge_health *h, char *buf, size_t len)
{
	const struct cw_rec_hist *x[] = {&h->connect, &h->rtt, &h->client,
					 &h->client_first, &h->server};
	size_t i, at;

	at = (size_t)snprintf(buf, len, " refused %llu timeout %llu resets "
					"%llu/%llu pipelined %llu",
			      (unsigned long long)h->conns_refused,
			      (unsigned long long)h->conns_timeout,
			      (unsigned long long)h->resets_by_client,
			      (unsigned long long)h->resets_by_server,
			      (unsigned long long)h->xchg_pipelined);
	for (i = 0; i < 5 && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, " h%zu %u:%016llx",
				       i, x[i]->len,
				       (unsigned long long)cw_hash_bytes(
					       x[i]->b, x[i]->len));
}

/* Each edge of g as a line, sorted: labels and every total. */
static char **edge_lines(const struct cw_graph *g, size_t *n)
{
	char **out = calloc(g->nedges + 1, sizeof(*out));
	char a[128], b[128], hs[512];
	size_t i;

	for (i = 0; i < g->nedges; i++) {
		const struct cw_edge *e = &g->edges[i];

		health_text(e->h ? e->h : &(struct cw_edge_health){0}, hs,
			    sizeof(hs));
		cw_node_label(&g->nodes[e->client], a, sizeof(a));
		cw_node_label(&g->nodes[e->server], b, sizeof(b));
		if (asprintf(&out[i],
			     "%s@%s -> %s@%s/%u conns %llu paired %llu "
			     "bytes %llu/%llu msgs %llu/%llu diff %lld/%lld "
			     "retrans %llu first %llu last %llu%s",
			     a, g->nodes[e->client].host, b,
			     g->nodes[e->server].host, e->protocol,
			     (unsigned long long)e->conns,
			     (unsigned long long)e->paired,
			     (unsigned long long)e->bytes_c2s,
			     (unsigned long long)e->bytes_s2c,
			     (unsigned long long)e->msgs_c2s,
			     (unsigned long long)e->msgs_s2c,
			     (long long)e->diff_c2s, (long long)e->diff_s2c,
			     (unsigned long long)e->retrans,
			     (unsigned long long)e->first_ns,
			     (unsigned long long)e->last_ns, hs) < 0)
			out[i] = NULL;
	}
	*n = g->nedges;
	qsort(out, *n, sizeof(*out),
	      (int (*)(const void *, const void *))strcmp);
	return out;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool same_graph(struct cw_graph *x, struct cw_graph *y)
{
	size_t nx, ny, i;
	char **a = edge_lines(x, &nx), **b = edge_lines(y, &ny);
	bool same = nx == ny;

	qsort(a, nx, sizeof(*a), cmp_str);
	qsort(b, ny, sizeof(*b), cmp_str);
	for (i = 0; same && i < nx; i++)
		if (strcmp(a[i], b[i])) {
			fprintf(stderr, "got  %s\nwant %s\n", a[i], b[i]);
			same = false;
		}
	if (nx != ny)
		fprintf(stderr, "%zu edges, want %zu\n", nx, ny);
	for (i = 0; i < nx; i++)
		free(a[i]);
	for (i = 0; i < ny; i++)
		free(b[i]);
	free(a);
	free(b);
	return same;
}

static uint64_t lateness = NS;

static void bucketed(struct cw_pairing *p)
{
	cw_pairing_init(p);
	cw_pairing_buckets(p, NS, 10 * NS, lateness);
}

/* Feed recs[from, to) to p, sealing as it goes; the most live ends. */
static size_t feed(struct cw_pairing *p, size_t from, size_t to)
{
	size_t i, most = 0;

	for (i = from; i < to; i++) {
		CHECK(!cw_pairing_add(p, &recs[i]));
		/* As the service: sealed buckets are written, then go. */
		if (p->bk.due) {
			CHECK(!cw_pairing_seal(p));
			cw_pairing_take_sealed(p);
		}
		if (cw_pairing_live_ends(p) > most)
			most = cw_pairing_live_ends(p);
	}
	return most;
}

/* The health of make_stream()'s graph against what it fed. */
static void check_health(const struct cw_graph *g)
{
	struct cw_edge_health sum;
	struct cw_health_q q[CW_HEALTH_NQ];
	size_t i, failed = 0;
	uint64_t net;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < g->nedges; i++) {
		const struct cw_edge *e = &g->edges[i];

		cw_edge_health_add(&sum, e->h);
		if (cw_graph_edge_failed(e)) {
			failed++;
			CHECK(g->nodes[e->server].kind == CW_NODE_EXTERNAL &&
			      g->nodes[e->server].port == 5433);
		}
	}
	cw_edge_health_q(&sum, q);
	printf("health: %llu refused, %llu timed out, %zu failed edges, "
	       "resets %llu/%llu; exchanges client %llu server %llu, "
	       "connects %llu, rtt %llu; network p50 %llu p90 %llu p99 %llu "
	       "ns\n",
	       (unsigned long long)sum.conns_refused,
	       (unsigned long long)sum.conns_timeout, failed,
	       (unsigned long long)sum.resets_by_client,
	       (unsigned long long)sum.resets_by_server,
	       (unsigned long long)q[CW_HEALTH_CLIENT].count,
	       (unsigned long long)q[CW_HEALTH_SERVER].count,
	       (unsigned long long)q[CW_HEALTH_CONNECT].count,
	       (unsigned long long)q[CW_HEALTH_RTT].count,
	       (unsigned long long)q[CW_HEALTH_NETWORK].p50,
	       (unsigned long long)q[CW_HEALTH_NETWORK].p90,
	       (unsigned long long)q[CW_HEALTH_NETWORK].p99);
	/* 100 of 3000 failed, half refused; each exactly once. */
	CHECK(sum.conns_refused == NCON / 60 && sum.conns_timeout == NCON / 60);
	CHECK(failed == 7);
	/* 60 resets by the server, seen at both ends, counted once. */
	CHECK(sum.resets_by_server == NCON / 50 && sum.resets_by_client == 0);
	/* Three exchanges per end that talked: 2900 clients, 2600 servers
	 * (every 10th has no server end); connects once per client. */
	CHECK(q[CW_HEALTH_CLIENT].count == 3 * (NCON - NCON / 30));
	CHECK(q[CW_HEALTH_CLIENT_FIRST].count == 3 * (NCON - NCON / 30));
	CHECK(q[CW_HEALTH_SERVER].count == 3 * (NCON - NCON / 10));
	CHECK(q[CW_HEALTH_RTT].count ==
	      3 * (NCON - NCON / 30) + 3 * (NCON - NCON / 10));
	CHECK(q[CW_HEALTH_CONNECT].count == NCON - NCON / 30);
	/* Connect times 150-199 us. */
	CHECK(q[CW_HEALTH_CONNECT].p50 >= 150000 &&
	      q[CW_HEALTH_CONNECT].p99 <= 200000);
	/* The server's time is the client's less 40 us: within a bin (16 us
	 * at 1 ms) either way. */
	net = q[CW_HEALTH_NETWORK].p50;
	CHECK(net >= 40000 - 17000 && net <= 40000 + 17000);
}

static void test_exact_and_freed(void)
{
	struct cw_pairing all, bk;
	struct cw_graph ga, gb;
	size_t most, bytes_all, bytes_bk;

	cw_pairing_init(&all);
	bucketed(&bk);
	CHECK(!cw_pairing_add_many(&all, recs, nrecs));
	most = feed(&bk, 0, nrecs);
	bytes_all = cw_pairing_bytes(&all);
	bytes_bk = cw_pairing_bytes(&bk);
	printf("%zu records, %zu ends kept without buckets (%zu KiB); with "
	       "buckets at most %zu live, %zu at the end (%zu KiB), %llu "
	       "freed, %llu dormant, %llu revived\n",
	       nrecs, (size_t)all.ends.len, bytes_all / 1024, most,
	       cw_pairing_live_ends(&bk), bytes_bk / 1024,
	       (unsigned long long)bk.bk.s.gone_ends,
	       (unsigned long long)bk.bk.s.dormant,
	       (unsigned long long)bk.bk.s.revived);
	/* ~50 connections open a second, each lives 3 s: about 300 ends. */
	CHECK(most < all.ends.len / 10);
	CHECK(cw_pairing_live_ends(&bk) < 400);
	CHECK(bytes_bk * 4 < bytes_all);
	CHECK(bk.bk.s.dormant >= NCON / 100 - 1);
	CHECK(bk.bk.s.revived >= NCON / 100 - 1);
	cw_graph_init(&ga);
	cw_graph_init(&gb);
	CHECK(!cw_pairing_graph(&all, &ga));
	CHECK(!cw_pairing_graph_buckets(&bk, &gb));
	/* Seven client processes, each to postgres, to 10.0.0.2:5432 and
	 * (connects that failed) to 10.0.0.2:5433. */
	CHECK(ga.nedges == 21);
	CHECK(same_graph(&gb, &ga));
	check_health(&ga);
	CHECK(bk.st.paired == all.st.paired);
	CHECK(bk.st.unpaired == all.st.unpaired);
	cw_graph_release(&ga);
	cw_graph_release(&gb);
	cw_pairing_release(&all);
	cw_pairing_release(&bk);
}

/* The edges of g as edges.json has them: sorted, in JSON. */
static char *graph_json(struct cw_graph *g)
{
	struct cw_jsonw w;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	cw_graph_sort_edges(g);
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_graph_json(g, &w);
	cw_jsonw_obj_close(&w);
	fclose(fp);
	return buf;
}

/* p's checkpoint, through the wire codec, into a new pairing q. */
static void through_checkpoint(const struct cw_pairing *p, struct cw_pairing *q)
{
	static struct cw_wire_msg m, back;
	struct cw_end_delta *d = NULL;
	size_t k, nd = 0, dcap = 0, chunks = cw_pairing_chunks(p), ends = 0;
	uint8_t *buf;
	size_t len;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_STATE;
	for (k = 0; k < chunks; k++) {
		m.state.chunk = (uint32_t)k;
		m.state.chunks = (uint32_t)chunks;
		CHECK(!cw_pairing_chunk(p, k, &m.state));
		CHECK(!cw_wire_encode(&m, &buf, &len));
		CHECK(cw_wire_decode(buf, len, &back, NULL, 0) ==
		      CW_WIRE_STATE);
		free(buf);
		CHECK(!cw_pairing_load_chunk(q, &back.state));
		if (CW_GROW(d, dcap, nd + back.state.ndeltas + 1, 256))
			abort();
		memcpy(d + nd, back.state.deltas,
		       back.state.ndeltas * sizeof(*d));
		nd += back.state.ndeltas;
		ends += back.state.n;
		cw_wire_msg_release(&back);
	}
	CHECK(!cw_pairing_load_deltas(q, d, nd));
	CHECK(q->ends.len == p->ends.len);
	CHECK(q->bk.dormant.len == p->bk.dormant.len);
	CHECK(q->bk.pend.len == p->bk.pend.len);
	CHECK(q->bk.total.len == p->bk.total.len);
	free(d);
	m.kind = CW_WIRE_STATE;
	cw_wire_msg_release(&m);
}

/* Cut the stream anywhere: checkpoint, restore, feed the rest. */
static void test_checkpoint(size_t cut)
{
	struct cw_pairing ref, a, b;
	struct cw_graph g1, g2;
	char *j1, *j2;

	bucketed(&ref);
	bucketed(&a);
	bucketed(&b);
	feed(&ref, 0, nrecs);
	feed(&a, 0, cut);
	if (lateness > NS)
		CHECK(cw_pairing_chunks(&a) > 2);
	through_checkpoint(&a, &b);
	feed(&b, cut, nrecs);
	cw_graph_init(&g1);
	cw_graph_init(&g2);
	CHECK(!cw_pairing_graph_buckets(&ref, &g1));
	CHECK(!cw_pairing_graph_buckets(&b, &g2));
	CHECK(same_graph(&g2, &g1)); /* histograms too, bin for bin */
	j1 = graph_json(&g1);
	j2 = graph_json(&g2);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	if (j1 && j2 && strcmp(j1, j2))
		fprintf(stderr, "cut at %zu:\n%s\n%s\n", cut, j1, j2);
	CHECK(b.bk.s.gone_ends == ref.bk.s.gone_ends);
	free(j1);
	free(j2);
	cw_graph_release(&g1);
	cw_graph_release(&g2);
	cw_pairing_release(&ref);
	cw_pairing_release(&a);
	cw_pairing_release(&b);
}

/* Sealed or open buckets from `from` on into a graph (the truth). */
struct since {
	struct cw_graph *g;
	uint64_t from;
};

static int since_edge(const struct cw_edge_node *client,
		      const struct cw_edge_node *server, uint8_t protocol,
		      uint64_t bucket_ns, const struct cw_edge_total *t,
		      void *arg)
{
	struct since *s = arg;

	if (bucket_ns < s->from)
		return 0;
	return cw_graph_bucket_edge(client, server, protocol, bucket_ns, t,
				    s->g);
}

/*
 * A view of the last 20 s over a stream where every connection has its
 * own client process: the graph is exactly the buckets of the view (as
 * the per-bucket sets of an all-time pairing, written as they seal, say),
 * the edges and nodes before it leave memory, and a checkpoint restored
 * in the middle ends the same, byte for byte.
 */
static void test_view(void)
{
	const uint64_t view = 20 * NS;
	struct cw_pairing v, all, a, b;
	struct cw_graph truth, gv, gb;
	const uint64_t step = 2 * NS; /* a bucket, or an eighth of the view */
	struct since s;
	size_t i, n = 0, old = 0;
	char *j1, *j2;

	/* The stream without the stragglers (the last 40 s): dense. */
	for (i = 0; i < nrecs; i++) {
		if (recs[i].role == CW_REC_ROLE_CLIENT)
			recs[i].proc.tgid = 100000 + (uint32_t)recs[i].cookie;
		if (recs[i].last_ns < T0 + 64 * NS)
			recs[n++] = recs[i];
	}
	nrecs = n;
	bucketed(&v);
	cw_pairing_view(&v, view);
	feed(&v, 0, nrecs);
	CHECK(v.bk.s.sealed_ns >= T0 + 60 * NS);
	s.from = v.bk.s.sealed_ns - view;
	/* The truth: every bucket of an all-time pairing from s.from on. */
	cw_graph_init(&truth);
	s.g = &truth;
	bucketed(&all);
	for (i = 0; i < nrecs; i++) {
		CHECK(!cw_pairing_add(&all, &recs[i]));
		if (all.bk.due) {
			CHECK(!cw_pairing_seal(&all));
			CHECK(!cw_pairing_buckets_each(&all, false, since_edge,
						       &s));
			cw_pairing_take_sealed(&all);
		}
	}
	CHECK(!cw_pairing_buckets_each(&all, true, since_edge, &s));
	cw_graph_init(&gv);
	CHECK(!cw_pairing_graph_buckets(&v, &gv));
	CHECK(gv.nedges > 500 && gv.nedges * 2 < all.bk.total.len);
	CHECK(same_graph(&gv, &truth));
	/* Each sealed total kept is of the view, or of the step before it
	 * (the bucket leads an edge's key). */
	for (i = 0; i < v.bk.total.len; i++)
		old += *(const uint64_t *)cw_htab_key(&v.bk.total, i) <
		       s.from - step;
	printf("view of 20 s: %zu edges (all time %zu); sealed totals kept "
	       "%zu, %zu before the view; nodes %zu (all time %zu)\n",
	       gv.nedges, (size_t)all.bk.total.len, (size_t)v.bk.total.len,
	       old, (size_t)v.bk.nodes.len, (size_t)all.bk.nodes.len);
	CHECK(old == 0);
	/* Nodes no edge names are forgotten once they are half of them:
	 * at most twice the view's (and at most what the last step held). */
	CHECK(v.bk.nodes.len <= 2 * gv.nnodes);
	CHECK(v.bk.nodes.len < all.bk.nodes.len * 2 / 3);
	/* Sealed buckets not yet written name their nodes: those stay
	 * until the buckets are taken, then go, the view's graph the same. */
	bucketed(&a);
	cw_pairing_view(&a, view);
	for (i = 0; i < nrecs; i++) {
		CHECK(!cw_pairing_add(&a, &recs[i]));
		if (a.bk.due)
			CHECK(!cw_pairing_seal(&a));
	}
	CHECK(a.bk.nodes.len == all.bk.nodes.len);
	cw_pairing_take_sealed(&a);
	CHECK(a.bk.nodes.len <= 2 * gv.nnodes);
	CHECK(a.bk.nodes.len < all.bk.nodes.len * 2 / 3);
	cw_graph_init(&gb);
	CHECK(!cw_pairing_graph_buckets(&a, &gb));
	CHECK(same_graph(&gb, &gv));
	cw_graph_release(&gb);
	cw_pairing_release(&a);
	/* Restored from a checkpoint in the middle: the same graph. */
	bucketed(&a);
	bucketed(&b);
	cw_pairing_view(&a, view);
	cw_pairing_view(&b, view);
	feed(&a, 0, nrecs / 2);
	through_checkpoint(&a, &b);
	feed(&b, nrecs / 2, nrecs);
	cw_graph_init(&gb);
	CHECK(!cw_pairing_graph_buckets(&b, &gb));
	j1 = graph_json(&gv);
	j2 = graph_json(&gb);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	free(j1);
	free(j2);
	cw_graph_release(&truth);
	cw_graph_release(&gv);
	cw_graph_release(&gb);
	cw_pairing_release(&v);
	cw_pairing_release(&all);
	cw_pairing_release(&a);
	cw_pairing_release(&b);
}

/* Feed p everything, writing each bucket as it seals into s's graph. */
static void feed_buckets(struct cw_pairing *p, const struct cw_conn_record *r,
			 size_t n, struct since *s)
{
	size_t i;

	for (i = 0; i < n; i++) {
		CHECK(!cw_pairing_add(p, &r[i]));
		if (p->bk.due) {
			CHECK(!cw_pairing_seal(p));
			CHECK(!cw_pairing_buckets_each(p, false, since_edge,
						       s));
			cw_pairing_take_sealed(p);
		}
	}
	CHECK(!cw_pairing_buckets_each(p, true, since_edge, s));
}

/*
 * Two partitions (records by their Kafka key, as the agents publish)
 * each with its own buckets, summed bucket by bucket into one graph, as
 * `graph --kafka --since` sums the partitions' EdgeBuckets: the same
 * edges, counts and histograms, bin for bin, as one pass over all.
 */
static void test_partitions(void)
{
	struct cw_conn_record *part[2];
	struct cw_pairing one, p0, p1;
	struct cw_graph g1, g2;
	struct since s1, s2;
	size_t n[2] = {0, 0}, i;
	char key[CW_WIRE_KEY_MAX];

	part[0] = malloc(nrecs * sizeof(*recs));
	part[1] = malloc(nrecs * sizeof(*recs));
	for (i = 0; i < nrecs; i++) {
		int k = (int)(cw_hash_bytes(key, (size_t)cw_wire_conn_key(
							 &recs[i], key,
							 sizeof(key))) &
			      1);

		part[k][n[k]++] = recs[i];
	}
	CHECK(n[0] > nrecs / 4 && n[1] > nrecs / 4);
	cw_graph_init(&g1);
	cw_graph_init(&g2);
	s1 = (struct since){&g1, 0};
	s2 = (struct since){&g2, 0};
	bucketed(&one);
	bucketed(&p0);
	bucketed(&p1);
	feed_buckets(&one, recs, nrecs, &s1);
	feed_buckets(&p0, part[0], n[0], &s2);
	feed_buckets(&p1, part[1], n[1], &s2);
	CHECK(same_graph(&g2, &g1));
	check_health(&g2);
	cw_graph_release(&g1);
	cw_graph_release(&g2);
	cw_pairing_release(&one);
	cw_pairing_release(&p0);
	cw_pairing_release(&p1);
	free(part[0]);
	free(part[1]);
}

/* An edge bucket record: client "app" on web, server n's address. */
static void edge(struct cw_wire_edge *w, const char *group, uint64_t bucket,
		 int32_t part, int64_t off, uint32_t set_size, uint32_t index,
		 int server, uint64_t bytes)
{
	char a[32];

	memset(w, 0, sizeof(*w));
	snprintf(w->group, sizeof(w->group), "%s", group);
	w->bucket_ns = bucket;
	w->width_ns = 60 * NS;
	w->partition = part;
	w->offset = off;
	w->set_size = set_size;
	w->set_index = index;
	w->protocol = 6;
	w->client.kind = CW_EDGE_NODE_PROCESS;
	snprintf(w->client.host, sizeof(w->client.host), "web");
	w->client.proc.tgid = 7;
	snprintf(w->client.proc.comm, sizeof(w->client.proc.comm), "app");
	w->server.kind = CW_EDGE_NODE_EXTERNAL;
	snprintf(a, sizeof(a), "10.0.0.%d", server);
	cw_addr_parse(&w->server.addr, a);
	w->server.port = 80;
	w->t.conns = 1;
	w->t.bytes_c2s = bytes;
}

struct seen {
	uint64_t bytes[8], conns[8];
	size_t calls;
};

static int merged(const struct cw_edge_node *client,
		  const struct cw_edge_node *server, uint8_t protocol,
		  uint64_t bucket_ns, const struct cw_edge_total *t, void *arg)
{
	struct seen *s = arg;
	int k = server->addr.bytes[3];

	(void)client;
	(void)protocol;
	(void)bucket_ns;
	s->bytes[k & 7] += t->bytes_c2s;
	s->conns[k & 7] += t->conns;
	s->calls++;
	return 0;
}

/*
 * The merge rule: partition 0 writes bucket B at offset 10 (edges to .1
 * and .2), then at 20 (.2's end paired since: its bytes moved to .3);
 * partition 1 writes B at 5.  Every record is delivered twice, a member
 * that lost partition 0 writes its older view at 15 after the others, a
 * set at 30 is cut short by a crash, another group writes too, and a
 * bucket outside the range is there: whatever the order, the graph is
 * .1: 150 + 7, .3: 30, nothing to .2.
 */
static void test_merge(void)
{
	struct cw_wire_edge w[16];
	const uint64_t B = T0, C = T0 + 60 * NS;
	size_t n = 0, order, i;

	edge(&w[n++], "g", B, 0, 10, 2, 0, 1, 100);
	edge(&w[n++], "g", B, 0, 10, 2, 1, 2, 50);
	edge(&w[n++], "g", B, 0, 20, 2, 0, 1, 150);
	edge(&w[n++], "g", B, 0, 20, 2, 1, 3, 30);
	edge(&w[n++], "g", B, 1, 5, 1, 0, 1, 7);
	edge(&w[n++], "g", B, 0, 15, 2, 0, 1, 120); /* the zombie */
	edge(&w[n++], "g", B, 0, 15, 2, 1, 2, 40);
	edge(&w[n++], "g", B, 0, 30, 2, 0, 1, 999);	 /* cut short */
	edge(&w[n++], "other", B, 0, 40, 1, 0, 1, 5000); /* another group */
	edge(&w[n++], "g", C, 0, 50, 1, 0, 1, 77);	 /* out of range */
	for (order = 0; order < 3; order++) {
		struct cw_edge_merge m;
		struct seen s = {0};

		cw_edge_merge_init(&m, "g", B, C);
		for (i = 0; i < 2 * n; i++) {
			/* forwards, backwards, interleaved; each twice */
			size_t j = order == 0	? i % n
				   : order == 1 ? n - 1 - i % n
						: (i * 7) % n;

			CHECK(!cw_edge_merge_add(&m, &w[j]));
		}
		CHECK(!cw_edge_merge_each(&m, false, merged, &s));
		CHECK(s.bytes[1] == 157);
		CHECK(s.bytes[2] == 0);
		CHECK(s.bytes[3] == 30);
		CHECK(s.conns[1] == 2);
		CHECK(s.calls == 2);
		CHECK(m.duplicates >= n - 3);
		CHECK(m.foreign == 2);
		cw_edge_merge_release(&m);
	}
	/* Partition 0 owned: its records are skipped, not kept. */
	{
		static const int32_t mine[] = {0};
		struct cw_edge_merge m;
		struct seen s = {0};

		cw_edge_merge_init(&m, "g", B, C);
		m.owned = mine;
		m.nowned = 1;
		for (i = 0; i < n; i++)
			CHECK(!cw_edge_merge_add(&m, &w[i]));
		CHECK(m.own == 7);
		CHECK(m.recs.len == 1);
		CHECK(!cw_edge_merge_each(&m, false, merged, &s));
		CHECK(s.bytes[1] == 7);
		CHECK(s.calls == 1);
		cw_edge_merge_release(&m);
	}
	/* The range moves on: bucket B is forgotten, C stays; never back. */
	{
		struct cw_edge_merge m;
		struct seen s = {0};

		cw_edge_merge_init(&m, "g", 0, 0);
		for (i = 0; i < n; i++)
			CHECK(!cw_edge_merge_add(&m, &w[i]));
		CHECK(m.newest_ns == C);
		CHECK(!cw_edge_merge_since(&m, C));
		CHECK(!cw_edge_merge_since(&m, B));
		CHECK(m.since_ns == C && m.recs.len == 1 && m.sets.len == 1);
		CHECK(!cw_edge_merge_each(&m, false, merged, &s));
		CHECK(s.bytes[1] == 77 && s.calls == 1);
		/* A record of B read after is outside. */
		CHECK(!cw_edge_merge_add(&m, &w[0]) && m.recs.len == 1);
		cw_edge_merge_release(&m);
	}
	/* 2,000 client processes in B, one edge in C: once the range moves
	 * past B, their nodes go too, and C's edge keeps its own. */
	{
		struct cw_edge_merge m;
		struct cw_wire_edge x;
		struct seen s = {0};

		cw_edge_merge_init(&m, "g", 0, 0);
		for (i = 0; i < 2000; i++) {
			edge(&x, "g", B, 2, 60, 2000, (uint32_t)i, 1, 1);
			x.client.proc.tgid = 1000 + (uint32_t)i;
			CHECK(!cw_edge_merge_add(&m, &x));
		}
		CHECK(!cw_edge_merge_add(&m, &w[n - 1]));
		CHECK(m.nodes.nodes.len == 2002);
		CHECK(!cw_edge_merge_since(&m, C));
		CHECK(m.nodes.nodes.len == 2 && m.recs.len == 1);
		CHECK(!cw_edge_merge_each(&m, false, merged, &s));
		CHECK(s.bytes[1] == 77 && s.calls == 1);
		cw_edge_merge_release(&m);
	}
}

/*
 * Read back from the edges topic, a record is judged by its key first
 * (GROUP/BUCKET/PARTITION, the group may hold slashes): another group's,
 * one outside the range and an owned partition's are counted and never
 * decoded (their values here are not even records: a decode would count
 * them bad); a record with no key is decoded and judged by its value.
 */
static void test_merge_keys(void)
{
	static const struct {
		const char *key, *group;
		int32_t part;
		uint64_t bucket;
		bool garbage;
	} in[] = {
		{"x/y/60000000000/0", "x/y", 0, 60 * NS, true},	  /* own */
		{"x/y/60000000000/1", "x/y", 1, 60 * NS, false},  /* kept */
		{"h/60000000000/1", "h", 1, 60 * NS, true},	  /* foreign */
		{"x/y/180000000000/1", "x/y", 1, 180 * NS, true}, /* outside */
		{NULL, "x/y", 0, 120 * NS, false}, /* own, by its value */
		{"x/y/odd", "x/y", 1, 120 * NS, false}, /* kept, by value */
	};
	struct cw_kafka_conf kc = {.topic_prefix = "cwtest"};
	struct cw_wire_msg msg = {.kind = CW_WIRE_EDGE};
	int32_t owned[] = {0};
	struct cw_edge_merge m;
	struct cw_kafka_log *l;
	char boot[256];
	uint8_t *buf;
	size_t i, len;

	CHECK(cw_kafka_mock_start(1, boot, sizeof(boot)) == 0);
	kc.brokers = boot;
	l = cw_kafka_log_new(&kc, "cwtest.edges");
	CHECK(l && cw_kafka_log_partitions(l) > 0);
	for (i = 0; l && i < sizeof(in) / sizeof(in[0]); i++) {
		edge(&msg.edge, in[i].group, in[i].bucket, in[i].part,
		     (int64_t)i, 1, 0, 2, 100);
		CHECK(cw_wire_encode(&msg, &buf, &len) == 0);
		CHECK(cw_kafka_log_put(l, 0, in[i].key,
				       in[i].garbage ? (const void *)"zz" : buf,
				       in[i].garbage ? 2 : len) == 0);
		free(buf);
	}
	CHECK(l && cw_kafka_log_flush(l, 10000) == 0);
	cw_kafka_log_free(l);
	cw_edge_merge_init(&m, "x/y", 0, 150 * NS);
	m.owned = owned;
	m.nowned = 1;
	CHECK(cw_edge_merge_read(&m, &kc, "cwtest.edges") == 0);
	printf("merge by key: own %" PRIu64 ", kept %" PRIu64
	       ", foreign %" PRIu64 ", outside %" PRIu64 ", bad %" PRIu64 "\n",
	       m.own, m.records, m.foreign, m.outside, m.bad);
	CHECK(m.own == 2 && m.records == 2 && m.foreign == 1 &&
	      m.outside == 1 && m.bad == 0);
	cw_edge_merge_release(&m);
	cw_kafka_mock_stop();
}

int main(void)
{
	make_stream();
	test_exact_and_freed();
	test_checkpoint(nrecs / 3);
	test_checkpoint(nrecs / 2 + 7);
	/* Buckets sealed late: a state of many chunks. */
	lateness = 30 * NS;
	test_checkpoint(nrecs / 2);
	test_merge();
	test_merge_keys();
	test_partitions();
	lateness = NS;
	test_view(); /* last: it gives every client its own process */
	free(recs);
	return failures ? 1 : 0;
}
