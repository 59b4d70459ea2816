// SPDX-License-Identifier: MIT
/*
 * Path inference: the readers take what they should and refuse the rest
 * with the file and line, the FFT and the direct pair count agree, a known
 * 3-tier trace comes back with its delays, and spans become the right
 * messages and truth.
 */
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths/paths.h"

#include "tests/unit/check.h"

static int read_csv_str(struct cw_msgtrace *t, const char *text)
{
	FILE *fp = fmemopen((void *)text, strlen(text), "r");
	int err;

	cw_msgtrace_init(t);
	err = cw_msgtrace_read_csv(t, fp, "mem.csv");
	fclose(fp);
	return err ? err : cw_msgtrace_finish(t, "mem.csv");
}

static void test_csv_good(void)
{
	struct cw_msgtrace t;

	CHECK(!read_csv_str(&t, "dir,bytes,ts_ns,peer,node\n"
				"out,10,100,b,a\n"
				"in,10,150,a,b\n"
				"\n"
				"out,7,200,a,b\r\n"));
	CHECK(t.n_msgs == 3 && t.n_names == 2);
	CHECK(t.msgs[0].ts_ns == 100 && t.msgs[0].dir == CW_MSG_OUT);
	CHECK(t.msgs[2].bytes == 7 && t.msgs[1].dir == CW_MSG_IN);
	CHECK(cw_msgtrace_find(&t, "b") >= 0 && cw_msgtrace_find(&t, "c") < 0);
	cw_msgtrace_release(&t);
}

static void test_csv_bad(void)
{
	static const char *const bad[] = {
		"",					      /* empty */
		"ts_ns,node,peer\n1,a,b\n",		      /* no dir */
		"ts_ns,node,peer,dir\n1,a,b,sideways\n",      /* bad dir */
		"ts_ns,node,peer,dir\n-1,a,b,in\n",	      /* bad time */
		"ts_ns,node,peer,dir\n1,a,b\n",		      /* short row */
		"ts_ns,node,peer,dir\n5,a,b,in\n4,a,c,out\n", /* unsorted */
		"ts_ns,node,peer,dir\n5,a,a,in\n",	      /* self */
		"ts_ns,node,peer,dir\n",		      /* no rows */
	};
	struct cw_msgtrace t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(read_csv_str(&t, bad[i]) < 0);
		cw_msgtrace_release(&t);
	}
}

static void test_names_grow(void)
{
	struct cw_msgtrace t;
	char name[16];
	int i, ok = 1;

	cw_msgtrace_init(&t);
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ok &= cw_msgtrace_node(&t, name) == i;
	}
	for (i = 0; i < 5000; i += 97) {
		snprintf(name, sizeof(name), "n%d", i);
		ok &= cw_msgtrace_find(&t, name) == i;
	}
	CHECK(ok && t.n_names == 5000);
	cw_msgtrace_release(&t);
}

static int synth(struct cw_msgtrace *t, const char *spec)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	int err;

	err = cw_paths_synthetic(spec, fp);
	fclose(fp);
	if (!err)
		err = read_csv_str(t, buf);
	free(buf);
	return err;
}

static const struct cw_hop *find_hop(const struct cw_pathset *ps,
				     const struct cw_msgtrace *t,
				     const char *from, const char *to)
{
	size_t i, k;

	for (i = 0; i < ps->n_paths; i++)
		for (k = 0; k < ps->paths[i].n_hops; k++) {
			const struct cw_hop *h = &ps->paths[i].hops[k];

			if (!strcmp(t->names[h->from], from) &&
			    !strcmp(t->names[h->to], to))
				return h;
		}
	return NULL;
}

static bool within(double got, double want, double pct)
{
	return fabs(got - want) <= want * pct / 100;
}

/* The sparse shortcut and the FFT must find the very same paths. */
static void test_tiers_fft_equals_direct(void)
{
	struct cw_paths_opts o;
	struct cw_pathset a, b;
	struct cw_msgtrace t;
	const struct cw_hop *h, *g;

	CHECK(!synth(&t, "tiers:seed=3,n=600"));
	cw_paths_opts_default(&o);
	CHECK(!cw_paths_convolution(&t, &o, &a));
	o.fft_only = true;
	o.threads = 1;
	CHECK(!cw_paths_convolution(&t, &o, &b));
	CHECK(a.n_paths == 1 && b.n_paths == 1);
	CHECK(a.n_paths && b.n_paths && a.paths[0].n_hops == b.paths[0].n_hops);
	h = find_hop(&a, &t, "web", "app");
	g = find_hop(&b, &t, "web", "app");
	CHECK(h && g && h->messages == g->messages &&
	      h->median_us == g->median_us);
	CHECK(h && within(h->median_us, 2000, 20));
	h = find_hop(&a, &t, "app", "db");
	CHECK(h && within(h->median_us, 5000, 20) && !h->is_return);
	h = find_hop(&a, &t, "db", "app");
	CHECK(h && h->is_return);
	cw_pathset_release(&a);
	cw_pathset_release(&b);
	cw_msgtrace_release(&t);
}

static void test_root_option(void)
{
	struct cw_paths_opts o;
	struct cw_pathset ps;
	struct cw_msgtrace t;
	int roots[8];

	CHECK(!synth(&t, "tiers:seed=4,n=300"));
	CHECK(cw_paths_roots(&t, roots, 8) == 1 &&
	      roots[0] == cw_msgtrace_find(&t, "client"));
	cw_paths_opts_default(&o);
	o.root = cw_msgtrace_find(&t, "app");
	CHECK(!cw_paths_convolution(&t, &o, &ps));
	CHECK(ps.n_paths >= 1 && !strcmp(t.names[ps.paths[0].root], "app"));
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
}

/*
 * A window that opens while the app is in the middle of a database call:
 * the first thing the app sees on that connection is the reply.  Spoken
 * first, the database looks like the caller; the connection's roles say
 * otherwise.
 */
static void test_known_calls(void)
{
	const char *csv = "ts_ns,node,peer,dir\n"
			  "100,db,app,out\n"
			  "110,app,db,in\n"
			  "200,client,app,out\n"
			  "210,app,client,in\n"
			  "300,app,db,out\n"
			  "310,db,app,in\n"
			  "400,db,app,out\n"
			  "410,app,db,in\n"
			  "500,app,client,out\n"
			  "510,client,app,in\n";
	struct cw_msgtrace t;
	int roots[8], n, app, db;

	CHECK(!read_csv_str(&t, csv));
	app = cw_msgtrace_find(&t, "app");
	db = cw_msgtrace_find(&t, "db");
	n = cw_paths_roots(&t, roots, 8);
	CHECK(n == 2); /* guessed: client and db both "call" app */
	CHECK(!cw_msgtrace_add_call(&t, (uint32_t)app, (uint32_t)db));
	n = cw_paths_roots(&t, roots, 8);
	CHECK(n == 1 && roots[0] == cw_msgtrace_find(&t, "client"));
	cw_msgtrace_release(&t);
}

static const char spans_csv[] =
	"TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,"
	"EndTimeUnixNano,Duration\n"
	"t1,a1,root,front-5d9c7f8b6d-abcde,Recv,1000000,9000000,8000\n"
	"t1,a2,a1,front-5d9c7f8b6d-abcde,Call,2000000,8000000,6000\n"
	"t1,b1,a2,back-0,Recv,2100000,7900000,5800\n"
	"t1,b2,b1,back-0,Call,3000000,7000000,4000\n"
	"t1,c1,b2,db-7f8b6d5d9c-zzzzz,Recv,3100000,6900000,3800\n";

static void test_spans_csv(void)
{
	FILE *fp = fmemopen((void *)spans_csv, sizeof(spans_csv) - 1, "r");
	struct cw_msgtrace t;
	struct cw_truth tr;
	int f, b, d, c;

	cw_msgtrace_init(&t);
	cw_truth_init(&tr);
	CHECK(!cw_spans_read(&t, &tr, fp, "mem"));
	fclose(fp);
	f = cw_msgtrace_find(&t, "front");
	b = cw_msgtrace_find(&t, "back");
	d = cw_msgtrace_find(&t, "db");
	c = cw_msgtrace_find(&t, "client");
	CHECK(f >= 0 && b >= 0 && d >= 0 && c >= 0);
	CHECK(t.n_msgs == 12); /* three calls, four observations each */
	CHECK(tr.n_edges == 2 && tr.n_triples == 2);
	CHECK(tr.n_triples == 2 && tr.triples[1].i == (uint32_t)f &&
	      tr.triples[1].j == (uint32_t)b &&
	      tr.triples[1].delay_us == 900); /* b2 start - b1 start */
	cw_truth_release(&tr);
	cw_msgtrace_release(&t);
}

static const char jaeger[] =
	"{\"data\":[{\"traceID\":\"x\",\"spans\":["
	"{\"spanID\":\"1\",\"processID\":\"p1\",\"startTime\":10,"
	"\"duration\":100,\"references\":[]},"
	"{\"spanID\":\"2\",\"processID\":\"p2\",\"startTime\":20,"
	"\"duration\":50,\"references\":[{\"refType\":\"CHILD_OF\","
	"\"spanID\":\"1\"}]}],"
	"\"processes\":{\"p1\":{\"serviceName\":\"web\"},"
	"\"p2\":{\"serviceName\":\"api\"}}}]}";

static void test_spans_jaeger(void)
{
	FILE *fp = fmemopen((void *)jaeger, sizeof(jaeger) - 1, "r");
	struct cw_msgtrace t;
	struct cw_truth tr;

	cw_msgtrace_init(&t);
	cw_truth_init(&tr);
	CHECK(!cw_spans_read(&t, &tr, fp, "mem.json"));
	fclose(fp);
	CHECK(tr.n_edges == 1 && t.n_msgs == 8);
	CHECK(cw_msgtrace_find(&t, "api") >= 0);
	cw_truth_release(&tr);
	cw_msgtrace_release(&t);
}

static void test_spans_bad(void)
{
	static const char *const bad[] = {
		"",
		"{\"data\": 3}",
		"{not json",
		"TraceID,SpanID\nx,y\n",
		"SpanID,ParentID,PodName,StartTimeUnixNano,EndTimeUnixNano\n"
		"a,root,p,12x,13\n",
	};
	struct cw_msgtrace t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i]);
		FILE *fp = fmemopen((void *)bad[i], len ? len : 1, "r");

		cw_msgtrace_init(&t);
		CHECK(cw_spans_read(&t, NULL, fp, "mem") < 0);
		fclose(fp);
		cw_msgtrace_release(&t);
	}
}

/* The synthetic trace without the lines where `drop` is the node. */
static int synth_without(struct cw_msgtrace *t, const char *spec,
			 const char *drop)
{
	char *buf = NULL, *out, *line, *save = NULL, pre[64];
	size_t len = 0, n = 0;
	FILE *fp = open_memstream(&buf, &len);
	int err;

	err = cw_paths_synthetic(spec, fp);
	fclose(fp);
	out = calloc(len + 1, 1);
	snprintf(pre, sizeof(pre), ",%s,", drop);
	for (line = strtok_r(buf, "\n", &save); !err && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c = strchr(line, ',');

		if (c && !strncmp(c, pre, strlen(pre)))
			continue;
		n += sprintf(out + n, "%s\n", line);
	}
	if (!err)
		err = read_csv_str(t, out);
	free(buf);
	free(out);
	return err;
}

/*
 * An outside client seen only as a peer (`web,client,in` and never a
 * `client,...` row) still starts the paths by default, as --root client
 * does.
 */
static void test_peer_only_root(void)
{
	struct cw_paths_opts o;
	struct cw_pathset ps;
	struct cw_msgtrace t;
	int roots[8], m;

	CHECK(!synth_without(&t, "tiers:seed=4,n=300", "client"));
	CHECK(cw_paths_roots(&t, roots, 8) == 1 &&
	      roots[0] == cw_msgtrace_find(&t, "client"));
	cw_paths_opts_default(&o);
	for (m = 0; m < 2; m++) {
		CHECK(!(m ? cw_paths_nesting(&t, &o, &ps)
			  : cw_paths_convolution(&t, &o, &ps)));
		CHECK(ps.n_paths == 1 &&
		      !strcmp(t.names[ps.paths[0].root], "client"));
		CHECK(ps.n_paths && ps.paths[0].hops[0].messages == 300);
		CHECK(find_hop(&ps, &t, "web", "app") &&
		      find_hop(&ps, &t, "app", "db"));
		cw_pathset_release(&ps);
	}
	cw_msgtrace_release(&t);
}

/* Sizes refused before any arithmetic; the visit budget cuts and says so. */
static void test_bounds(void)
{
	struct cw_paths_opts o;
	struct cw_pathset ps;
	struct cw_msgtrace t;
	int m;

	cw_paths_opts_default(&o);
	CHECK(!cw_paths_opts_check(&o));
	o.bin_ns = 1;
	o.max_delay_ns = 9223372036854775808ULL;
	CHECK(cw_paths_opts_check(&o));
	o.max_delay_ns = CW_PATHS_MAX_BINS / 2;
	CHECK(cw_paths_opts_check(&o));
	o.max_delay_ns = CW_PATHS_MAX_BINS / 2 - 1;
	CHECK(!cw_paths_opts_check(&o));
	o.bin_ns = 0;
	CHECK(cw_paths_opts_check(&o));

	CHECK(!synth(&t, "tiers:seed=4,n=300"));
	cw_paths_opts_default(&o);
	CHECK(cw_paths_convolution(
		&t,
		&(struct cw_paths_opts){.bin_ns = 1,
					.max_delay_ns = 9223372036854775808ULL,
					.root = -1,
					.alpha = 0.01,
					.threads = 1,
					.max_depth = 16},
		&ps));
	for (m = 0; m < 2; m++) {
		o.max_visits = 0; /* the default budget: not reached */
		CHECK(!(m ? cw_paths_nesting(&t, &o, &ps)
			  : cw_paths_convolution(&t, &o, &ps)));
		CHECK(!ps.truncated && ps.n_visits >= 2);
		CHECK(find_hop(&ps, &t, "app", "db"));
		cw_pathset_release(&ps);
		o.max_visits = 1; /* web only: app is never reached */
		CHECK(!(m ? cw_paths_nesting(&t, &o, &ps)
			  : cw_paths_convolution(&t, &o, &ps)));
		CHECK(ps.truncated && ps.n_visits == 1);
		CHECK(!find_hop(&ps, &t, "app", "db"));
		cw_pathset_release(&ps);
	}
	cw_msgtrace_release(&t);
}

int main(void)
{
	test_peer_only_root();
	test_bounds();
	test_csv_good();
	test_csv_bad();
	test_names_grow();
	test_tiers_fft_equals_direct();
	test_root_option();
	test_known_calls();
	test_spans_csv();
	test_spans_jaeger();
	test_spans_bad();
	fftw_cleanup();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("all checks passed\n");
	return failures ? 1 : 0;
}
