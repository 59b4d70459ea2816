// SPDX-License-Identifier: MIT
/*
 * Synthetic message traces whose answer is known, for tests and benchmarks.
 * Each node gets its own clock offset so that only same-node comparisons
 * can work, as on a real fleet.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "paths/paths.h"

struct synth {
	uint64_t rng;
	uint64_t seed, n, nodes, edges, bins, rate;
	uint64_t d1, d2, d3; /* ns */
	double jitter;
	struct cw_msgtrace t; /* sorted before it is written */
	int err;
};

/* xorshift64*: reproducible across libcs, unlike rand(). */
static double uniform(struct synth *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 2685821657736338717ULL) >> 11) /
	       9007199254740992.0;
}

static double expo(struct synth *s, double mean)
{
	return -log(1 - uniform(s)) * mean;
}

static uint64_t jittered(struct synth *s, uint64_t ns)
{
	return (uint64_t)((double)ns * (1 + s->jitter * (2 * uniform(s) - 1)));
}

/* A clock offset per node: whole seconds plus a fraction, never negative. */
static uint64_t skew(const char *node)
{
	uint64_t h = 0;

	while (*node)
		h = h * 31 + (unsigned char)*node++;
	return 1000 * NSEC_PER_SEC + (h % 5000) * NSEC_PER_MSEC;
}

/* One message: leaves `a` at t (a's clock), arrives at `b` ~50us later. */
static void msg(struct synth *s, const char *a, const char *b, uint64_t t)
{
	uint64_t net = 40 * NSEC_PER_USEC + (uint64_t)(uniform(s) * 20e3);
	int x = cw_msgtrace_node(&s->t, a), y = cw_msgtrace_node(&s->t, b);

	if (x < 0 || y < 0 ||
	    cw_msgtrace_add(&s->t, t + skew(a), (uint32_t)x, (uint32_t)y,
			    CW_MSG_OUT, 0) ||
	    cw_msgtrace_add(&s->t, t + net + skew(b), (uint32_t)y, (uint32_t)x,
			    CW_MSG_IN, 0))
		s->err = -1;
}

static int write_csv(struct synth *s, FILE *out)
{
	size_t i;

	if (s->err || cw_msgtrace_finish(&s->t, "synthetic"))
		return cw_error("unable to make the synthetic trace");
	fprintf(out, "ts_ns,node,peer,dir\n");
	for (i = 0; i < s->t.n_msgs; i++) {
		const struct cw_msg *m = &s->t.msgs[i];

		fprintf(out, "%llu,%s,%s,%s\n", (unsigned long long)m->ts_ns,
			s->t.names[m->node], s->t.names[m->peer],
			m->dir == CW_MSG_OUT ? "out" : "in");
	}
	return ferror(out) ? cw_error("unable to write the trace: %m") : 0;
}

/* client -> web -> app -> db and the replies back, requests overlapping. */
static void gen_tiers(struct synth *s)
{
	double t = 0;
	uint64_t i, t0, t1, t2, t3, t4, t5;

	for (i = 0; i < s->n; i++) {
		t += expo(s, 1e9 / (double)s->rate);
		t0 = (uint64_t)t;
		t1 = t0 + 50 * NSEC_PER_USEC + jittered(s, s->d1);
		t2 = t1 + 50 * NSEC_PER_USEC + jittered(s, s->d2);
		t3 = t2 + 50 * NSEC_PER_USEC + jittered(s, s->d3);
		t4 = t3 + 50 * NSEC_PER_USEC + jittered(s, 300000);
		t5 = t4 + 50 * NSEC_PER_USEC + jittered(s, 200000);
		msg(s, "client", "web", t0);
		msg(s, "web", "app", t1);
		msg(s, "app", "db", t2);
		msg(s, "db", "app", t3);
		msg(s, "app", "web", t4);
		msg(s, "web", "client", t5);
	}
}

/* The same edges as gen_tiers, every message independent of the others. */
static void gen_random(struct synth *s)
{
	static const char *const e[][2] = {
		{"client", "web"}, {"web", "app"}, {"app", "db"},
		{"db", "app"},	   {"app", "web"}, {"web", "client"},
	};
	double span = (double)s->n * 1e9 / (double)s->rate, t;
	size_t k;
	uint64_t i;

	for (k = 0; k < CW_ARRAY_SIZE(e); k++)
		for (t = (double)k * 1e6, i = 0; i < s->n; i++) {
			t += expo(s, span / (double)s->n);
			msg(s, e[k][0], e[k][1], (uint64_t)t);
		}
}

/*
 * `nodes` services s0..s(n-1) joined by `edges` random forward edges (a
 * DAG), requests entering s0 from a client and walking down one child at
 * a time, plus independent background messages on every edge.
 */
static void gen_graph(struct synth *s)
{
	uint64_t *from = calloc(s->edges + 1, sizeof(*from));
	uint64_t *to = calloc(s->edges + 1, sizeof(*to));
	uint64_t *first = calloc(s->nodes + 1, sizeof(*first));
	double window = (double)s->bins * 100e3, t, at;
	uint64_t i, k, v, hop;
	char a[32], b[32];

	if (!from || !to || !first)
		goto out;
	for (i = 0; i < s->edges; i++) {
		from[i] = i * (s->nodes - 1) / s->edges;
		to[i] = from[i] + 1 +
			(uint64_t)(uniform(s) *
				   (double)(s->nodes - from[i] - 1));
	}
	for (v = 0, i = 0; v <= s->nodes; v++) {
		while (i < s->edges && from[i] < v)
			i++;
		first[v] = i;
	}
	for (t = 0; t < window * 0.9;) {
		t += expo(s, 1e9 / (double)s->rate);
		msg(s, "client", "s0", (uint64_t)t);
		at = t;
		for (v = 0, hop = 0; hop < 6 && first[v] < first[v + 1];
		     hop++) {
			k = first[v] +
			    (uint64_t)(uniform(s) *
				       (double)(first[v + 1] - first[v]));
			at += 50e3 +
			      (double)jittered(s, (1 + v % 5) * NSEC_PER_MSEC);
			snprintf(a, sizeof(a), "s%llu", (unsigned long long)v);
			v = to[k];
			snprintf(b, sizeof(b), "s%llu", (unsigned long long)v);
			msg(s, a, b, (uint64_t)at);
		}
	}
	for (i = 0; i < s->edges; i++)
		for (k = 0; k < 4; k++) {
			snprintf(a, sizeof(a), "s%llu",
				 (unsigned long long)from[i]);
			snprintf(b, sizeof(b), "s%llu",
				 (unsigned long long)to[i]);
			msg(s, a, b, (uint64_t)(uniform(s) * window));
		}
out:
	free(from);
	free(to);
	free(first);
}

static int synth_param(struct synth *s, const char *key, const char *val)
{
	static const struct {
		const char *name;
		size_t off;
		bool duration;
	} keys[] = {
		{"seed", offsetof(struct synth, seed), false},
		{"n", offsetof(struct synth, n), false},
		{"nodes", offsetof(struct synth, nodes), false},
		{"edges", offsetof(struct synth, edges), false},
		{"bins", offsetof(struct synth, bins), false},
		{"rate", offsetof(struct synth, rate), false},
		{"d1", offsetof(struct synth, d1), true},
		{"d2", offsetof(struct synth, d2), true},
		{"d3", offsetof(struct synth, d3), true},
	};
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(keys); i++) {
		uint64_t *p = (uint64_t *)((char *)s + keys[i].off);

		if (strcmp(key, keys[i].name))
			continue;
		if (keys[i].duration ? cw_parse_duration(val, 1, p)
				     : cw_parse_u64(val, 1, 1ULL << 40, p))
			return cw_error("bad synthetic parameter '%s=%s'", key,
					val);
		return 0;
	}
	return cw_error("unknown synthetic parameter '%s'", key);
}

int cw_paths_synthetic(const char *spec, FILE *out)
{
	struct synth s = {.seed = 1,
			  .n = 2000,
			  .nodes = 1000,
			  .edges = 10000,
			  .bins = 131072,
			  .rate = 200,
			  .d1 = 2 * NSEC_PER_MSEC,
			  .d2 = 5 * NSEC_PER_MSEC,
			  .d3 = NSEC_PER_MSEC,
			  .jitter = 0.2};
	char *copy = strdup(spec), *kind, *kv, *save = NULL, *eq;
	int err = 0;

	if (!copy)
		return cw_error("out of memory");
	kind = strtok_r(copy, ":", &save);
	while (!err && (kv = strtok_r(NULL, ",", &save))) {
		eq = strchr(kv, '=');
		if (!eq) {
			err = cw_error("synthetic parameter '%s' lacks '='",
				       kv);
			break;
		}
		*eq = '\0';
		err = synth_param(&s, kv, eq + 1);
	}
	s.rng = s.seed * 0x9E3779B97F4A7C15ULL + 1;
	cw_msgtrace_init(&s.t);
	if (!err && kind && !strcmp(kind, "graph") && s.edges < s.nodes)
		err = cw_error("a synthetic graph needs edges >= nodes");
	if (!err) {
		if (kind && !strcmp(kind, "tiers"))
			gen_tiers(&s);
		else if (kind && !strcmp(kind, "random"))
			gen_random(&s);
		else if (kind && !strcmp(kind, "graph"))
			gen_graph(&s);
		else
			err = cw_error("unknown synthetic trace '%s' (tiers, "
				       "random, graph)",
				       kind ? kind : "");
	}
	if (!err)
		err = write_csv(&s, out);
	cw_msgtrace_release(&s.t);
	free(copy);
	return err;
}
