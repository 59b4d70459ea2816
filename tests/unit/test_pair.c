// SPDX-License-Identifier: MIT
/*
 * The pairing's compact storage and fast paths against the plain ones:
 * cw_pairing_end() gives back the newest record of each end exactly (TCP
 * and UDP, a process that changes, an owner that becomes known),
 * cw_pairing_add_many() builds the same graph as one cw_pairing_add() per
 * record, cw_graph_add_links() the same edges as cw_graph_add(), and
 * cw_sort_by_key() is a stable sort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "correlator/correlator.h"
#include "correlator/pipeline.h"
#include "graph/graph.h"

#include "tests/unit/check.h"

static uint64_t rng = 42;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The record as JSON, for comparing whole records. */
static char *json_of(const struct cw_conn_record *r)
{
	struct cw_jsonw w;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	cw_jsonw_init(&w, fp);
	cw_conn_record_json(&w, r);
	fclose(fp);
	return buf;
}

static bool same_record(const struct cw_conn_record *a,
			const struct cw_conn_record *b)
{
	char *x = json_of(a), *y = json_of(b);
	bool same = x && y && !strcmp(x, y);

	if (!same)
		fprintf(stderr, "got  %s\nwant %s\n", x, y);
	free(x);
	free(y);
	return same;
}

static void base(struct cw_conn_record *r, const char *host, uint64_t cookie)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->netns = 4026531840u;
	r->cookie = cookie;
	r->protocol = 6;
	r->role = CW_REC_ROLE_CLIENT;
	cw_addr_parse(&r->laddr, "10.0.0.1");
	cw_addr_parse(&r->raddr, "10.0.0.2");
	r->lport = 40000;
	r->rport = 80;
	r->first_ns = 1000000000000ULL;
	r->last_ns = r->first_ns + 5000;
	r->proc.tgid = 77;
	r->proc.start_ns = 123;
	r->proc.cgroup_id = 9;
	snprintf(r->proc.comm, sizeof(r->proc.comm), "curl");
	snprintf(r->proc.cmdline, sizeof(r->proc.cmdline), "curl -s x");
	snprintf(r->proc.container, sizeof(r->proc.container), "c0ffee");
	snprintf(r->proc.pod, sizeof(r->proc.pod), "pod-1");
	r->seq = 1;
}

static void test_newest(void)
{
	struct cw_conn_record a, b, c, u, u2;
	const struct cw_conn_record *x, *y;
	struct cw_pairing p;
	long i, j;

	cw_pairing_init(&p);
	base(&a, "host-a", 5);
	a.bytes_out = 100;
	a.calls_out = 2;
	b = a; /* newer: more bytes, another process name, known later */
	b.bytes_out = 300;
	b.seq = 2;
	b.last_ns += 1000;
	snprintf(b.proc.cmdline, sizeof(b.proc.cmdline), "%s",
		 "curl -s http://example.com/a/much/longer/command/line");
	c = a; /* stale: fewer bytes */
	c.bytes_out = 50;
	c.seq = 3;
	CHECK(!cw_pairing_add(&p, &a));
	CHECK(!cw_pairing_add(&p, &b));
	CHECK(!cw_pairing_add(&p, &c));
	CHECK(p.st.records == 3 && p.st.stale == 1 && p.ends.len == 1);
	i = cw_pairing_find(&p, "host-a", "", 5);
	CHECK(i == 0);
	CHECK(cw_pairing_find(&p, "host-b", "", 5) == -1);
	CHECK(cw_pairing_find(&p, "host-a", "", 6) == -1);
	if (i == 0)
		CHECK(same_record(cw_pairing_end(&p, 0), &b));
	/* Back to the short command line, closed: it fits where it was. */
	c = b;
	c.flags = CW_REC_CLOSED;
	snprintf(c.proc.cmdline, sizeof(c.proc.cmdline), "curl");
	CHECK(!cw_pairing_add(&p, &c));
	CHECK(same_record(cw_pairing_end(&p, 0), &c));
	/* UDP: one end per peer and generation, the owner unknown. */
	base(&u, "host-a", 5);
	u.protocol = 17;
	u.flags = CW_REC_NO_OWNER;
	memset(&u.proc, 0, sizeof(u.proc));
	u2 = u;
	u2.first_ns += 1;
	u2.last_ns += 1;
	CHECK(!cw_pairing_add(&p, &u));
	CHECK(!cw_pairing_add(&p, &u2));
	CHECK(p.ends.len == 3);
	CHECK(cw_pairing_find(&p, "host-a", "", 5) == 0);
	/* Two records at once, each valid until the next add. */
	x = cw_pairing_end(&p, 1);
	y = cw_pairing_end(&p, 2);
	CHECK(x != y && same_record(x, &u) && same_record(y, &u2));
	j = cw_pairing_find(&p, "host-a", "", 5);
	CHECK(j == 0 && same_record(cw_pairing_end(&p, 0), &c));
	CHECK(same_record(x, &u));
	cw_pairing_release(&p);
}

/* A small fleet with reused tuples, lone ends, UDP and stale records. */
static size_t fleet(struct cw_conn_record **out)
{
	size_t n = 0, cap = 4096, i;
	struct cw_conn_record *r = calloc(cap, sizeof(*r)), c, s;

	for (i = 0; r && i < 1500; i++) {
		unsigned int ch = rnd() % 7, sh = rnd() % 7;
		char ip[32];

		base(&c, "", 1000 + i);
		snprintf(c.host, sizeof(c.host), "host-%u", ch);
		snprintf(ip, sizeof(ip), "10.0.0.%u", ch + 1);
		cw_addr_parse(&c.laddr, ip);
		snprintf(ip, sizeof(ip), "10.0.0.%u", sh + 1);
		cw_addr_parse(&c.raddr, ip);
		c.lport = (uint16_t)(30000 + rnd() % 40); /* tuples recur */
		c.rport = (uint16_t)(rnd() % 2 ? 80 : 5432);
		c.protocol = rnd() % 5 ? 6 : 17;
		c.proc.tgid = 100 + (uint32_t)(rnd() % 5);
		c.first_ns = 1000000000000ULL + (rnd() % 100) * 1000000000ULL;
		c.last_ns = c.first_ns + rnd() % 3000000000ULL;
		c.bytes_out = rnd() % 100000;
		c.bytes_in = rnd() % 100000;
		c.msgs_out = rnd() % 10;
		if (rnd() % 9 == 0)
			c.role = CW_REC_ROLE_UNKNOWN;
		s = c;
		snprintf(s.host, sizeof(s.host), "host-%u", sh);
		s.cookie += 100000;
		s.laddr = c.raddr;
		s.raddr = c.laddr;
		s.lport = c.rport;
		s.rport = c.lport;
		s.role = c.role ? CW_REC_ROLE_SERVER : 0;
		s.bytes_out = c.bytes_in;
		s.bytes_in = c.bytes_out;
		s.proc.tgid = 200 + (uint32_t)(rnd() % 3);
		if (rnd() % 11 == 0)
			s.flags = CW_REC_NO_OWNER;
		r[n++] = c;
		if (rnd() % 13)
			r[n++] = s;
		if (rnd() % 5 == 0) { /* an earlier, stale report */
			c.bytes_out /= 2;
			r[n++] = c;
		}
	}
	*out = r;
	return n;
}

static char *graph_json(const struct cw_graph *g)
{
	struct cw_jsonw w;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_graph_json(g, &w);
	cw_jsonw_obj_close(&w);
	fclose(fp);
	return buf;
}

static void test_many(void)
{
	struct cw_pairing p1, p2;
	struct cw_graph g1, g2;
	struct cw_conn_record *r;
	size_t n = fleet(&r), i;
	char *j1, *j2;

	CHECK(n > 1500);
	cw_pairing_init(&p1);
	cw_pairing_init(&p2);
	CHECK(!cw_pairing_reserve(&p2, 10));
	for (i = 0; i < n; i++)
		CHECK(!cw_pairing_add(&p1, &r[i]));
	CHECK(!cw_pairing_add_many(&p2, r, n));
	cw_graph_init(&g1);
	cw_graph_init(&g2);
	CHECK(!cw_pairing_graph(&p1, &g1));
	CHECK(!cw_pairing_graph(&p2, &g2));
	CHECK(!memcmp(&p1.st, &p2.st, sizeof(p1.st)));
	CHECK(p1.st.paired > 100 && p1.st.unpaired > 10);
	CHECK(p1.st.stale > 10);
	for (i = 0; i < p1.ends.len; i++) {
		CHECK(p1.partner[i] == p2.partner[i]);
		CHECK(same_record(cw_pairing_end(&p1, i),
				  cw_pairing_end(&p2, i)));
	}
	j1 = graph_json(&g1);
	j2 = graph_json(&g2);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	free(j1);
	free(j2);
	/* The edges, sorted, then one more: the index is rebuilt. */
	cw_graph_sort_edges(&g1);
	for (i = 1; i < g1.nedges; i++)
		CHECK(g1.edges[i - 1].bytes_c2s + g1.edges[i - 1].bytes_s2c >=
		      g1.edges[i].bytes_c2s + g1.edges[i].bytes_s2c);
	if (g1.nedges) {
		struct cw_conn_traffic t = {.protocol = g1.edges[0].protocol};
		uint64_t conns = g1.edges[0].conns;
		size_t ne = g1.nedges;

		CHECK(!cw_graph_add(&g1, g1.edges[0].client, g1.edges[0].server,
				    &t));
		CHECK(g1.nedges == ne && g1.edges[0].conns == conns + 1);
	}
	cw_graph_release(&g1);
	cw_graph_release(&g2);
	cw_pairing_release(&p1);
	cw_pairing_release(&p2);
	free(r);
}

/* p's pairing against one made afresh from its ends, in their order. */
static void same_pairs(struct cw_pairing *p)
{
	struct cw_pairing q;
	size_t i;

	cw_pairing_init(&q);
	CHECK(!cw_pairing_add_all(&q, p));
	CHECK(!cw_pairing_pair(p));
	CHECK(!cw_pairing_pair(&q));
	CHECK(q.ends.len == p->ends.len && q.ngroups == p->ngroups);
	for (i = 0; i < p->ends.len && i < q.ends.len; i++) {
		CHECK(p->partner[i] == q.partner[i]);
		CHECK(p->order[i] == q.order[i]);
	}
	for (i = 0; i < p->ngroups && i < q.ngroups; i++)
		CHECK(p->group_end[i] == q.group_end[i]);
	CHECK(p->st.paired - p->bk.s.gone_paired == q.st.paired);
	CHECK(p->st.unpaired - p->bk.s.gone_unpaired == q.st.unpaired);
	CHECK(p->st.ambiguous == q.st.ambiguous);
	cw_pairing_release(&q);
}

/*
 * Each end's tuple is kept as records come (cw_pairing_tuple_note()),
 * through ends freed by seals (the last end moved into a freed one's
 * place), ends whose tuple changes and the tuples' compaction: the
 * pairing is the one made from the ends afresh.
 */
static void test_kept_tuples(void)
{
	uint64_t t0 = 1000000000000ULL, sec = 1000000000ULL;
	struct cw_conn_record c, s;
	struct cw_pairing p;
	size_t i, seals = 0, moved = 0, most = 0;

	cw_pairing_init(&p);
	cw_pairing_buckets(&p, sec, 3 * sec, 0);
	for (i = 0; i < 6000; i++) {
		char ip[32];

		base(&c, "", 1000 + i);
		snprintf(c.host, sizeof(c.host), "host-%u", (unsigned)(i % 5));
		snprintf(ip, sizeof(ip), "10.0.0.%u", (unsigned)(i % 5 + 1));
		cw_addr_parse(&c.laddr, ip);
		c.lport = (uint16_t)(30000 + rnd() % 3000);
		c.first_ns = t0 + i * (sec / 100);
		c.last_ns = c.first_ns + rnd() % (2 * sec);
		c.bytes_out = 1 + rnd() % 1000;
		c.flags = rnd() % 3 ? CW_REC_CLOSED : 0;
		if (rnd() % 17 == 0) /* a loopback tuple: host and netns too */
			cw_addr_parse(&c.laddr, "127.0.0.1"),
				cw_addr_parse(&c.raddr, "127.0.0.1");
		s = c;
		snprintf(s.host, sizeof(s.host), "host-%u",
			 (unsigned)(i % 5 + 1));
		s.cookie += 100000;
		s.laddr = c.raddr;
		s.raddr = c.laddr;
		s.lport = c.rport;
		s.rport = c.lport;
		s.role = CW_REC_ROLE_SERVER;
		CHECK(!cw_pairing_add(&p, &c));
		if (rnd() % 9)
			CHECK(!cw_pairing_add(&p, &s));
		if (rnd() % 7 == 0) { /* the same end, another tuple */
			c.lport++;
			c.bytes_out += 10;
			c.last_ns += 1000;
			CHECK(!cw_pairing_add(&p, &c));
			moved++;
		}
		if (p.bk.due) {
			CHECK(!cw_pairing_seal(&p));
			seals++;
		}
		if (p.tuples.len > most)
			most = p.tuples.len;
		if (i % 500 == 499)
			same_pairs(&p);
	}
	same_pairs(&p);
	CHECK(seals > 50 && moved > 500 && p.bk.s.gone_ends > 5000);
	/* Compacted: the tuples of freed ends do not pile up. */
	CHECK(most > 1024 && most <= 2 * 6000 / 10 + 1024 + 100);
	CHECK(p.tuples.len <= 2 * p.ends.len + 1024 + 100);
	cw_pairing_release(&p);
}

struct traffic_of {
	const struct cw_conn_traffic *t;
};

static void link_traffic(const struct cw_conn_link *l,
			 struct cw_conn_traffic *t, void *arg)
{
	const struct traffic_of *o = arg;

	*t = o->t[l->a];
}

static void test_links(void)
{
	enum { N = 5000, NODES = 40 };
	struct cw_conn_link *l = calloc(N, sizeof(*l));
	struct cw_conn_traffic *t = calloc(N, sizeof(*t));
	struct traffic_of o = {t};
	struct cw_graph g1, g2;
	char *j1, *j2;
	size_t i;

	cw_graph_init(&g1);
	cw_graph_init(&g2);
	for (i = 0; l && t && i < N; i++) {
		l[i].client = (uint32_t)(rnd() % NODES);
		l[i].server = (uint32_t)(rnd() % NODES);
		l[i].protocol = rnd() % 3 ? 6 : 17;
		l[i].a = (uint32_t)i;
		t[i].protocol = l[i].protocol;
		t[i].bytes_c2s = rnd() % 1000;
		t[i].bytes_s2c = rnd() % 1000;
		t[i].first_ns = rnd() % 4 ? rnd() % 1000 : 0;
		t[i].last_ns = t[i].first_ns + rnd() % 100;
		t[i].diff_c2s = (int64_t)(rnd() % 7) - 3;
		t[i].both_ends = (int)(rnd() % 2);
		CHECK(!cw_graph_add(&g1, l[i].client, l[i].server, &t[i]));
	}
	CHECK(!cw_graph_add_links(&g2, l, N, link_traffic, &o));
	CHECK(g1.nedges == g2.nedges && g1.nedges > NODES);
	j1 = graph_json(&g1);
	j2 = graph_json(&g2);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	free(j1);
	free(j2);
	/* Into a graph that has edges: one by one, the same result. */
	CHECK(!cw_graph_add_links(&g2, l, N, link_traffic, &o));
	for (i = 0; i < N; i++)
		CHECK(!cw_graph_add(&g1, l[i].client, l[i].server, &t[i]));
	j1 = graph_json(&g1);
	j2 = graph_json(&g2);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	free(j1);
	free(j2);
	cw_graph_release(&g1);
	cw_graph_release(&g2);
	free(l);
	free(t);
}

static void test_sort(void)
{
	enum { N = 100000 };
	uint64_t *key = malloc(N * sizeof(*key));
	uint32_t *order = malloc(N * sizeof(*order));
	size_t i;

	for (i = 0; key && i < N; i++)
		key[i] = i % 3 ? rnd() % 1000 : rnd() << 1;
	CHECK(key && order && !cw_sort_by_key(key, N, order));
	for (i = 1; key && order && i < N; i++) {
		CHECK(key[order[i - 1]] <= key[order[i]]);
		if (key[order[i - 1]] == key[order[i]])
			CHECK(order[i - 1] < order[i]);
	}
	CHECK(!cw_sort_by_key(key, 1, order) && order[0] == 0);
	free(key);
	free(order);
}

int main(void)
{
	test_newest();
	test_many();
	test_kept_tuples();
	test_links();
	test_sort();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_pair: all checks passed\n");
	return 0;
}
