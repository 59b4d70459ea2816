// SPDX-License-Identifier: MIT
/*
 * The synthetic fleet both modes share: service tiers, hosts and their
 * processes, the random stream, and the sink the records go to (JSON
 * lines, wire frames or the agents' Kafka producer).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"
#include "sim/sim_impl.h"

const struct sim_tier_desc sim_tiers[T_NTIERS] = {
	[T_WEB] = {"nginx", "nginx: worker process", 80, {T_APP, T_APP}},
	[T_APP] = {"python3",
		   "python3 /srv/app/server.py --workers 8",
		   8080,
		   {T_CACHE, T_DB}},
	[T_CACHE] = {"redis-server",
		     "redis-server *:6379",
		     6379,
		     {T_CACHE, T_CACHE}},
	[T_DB] = {"postgres",
		  "postgres: 15/main: app appdb",
		  5432,
		  {T_DB, T_DB}},
	[T_BATCH] = {"java",
		     "java -Xmx4g -jar /opt/etl/etl.jar --nightly",
		     9000,
		     {T_DB, T_CACHE}},
};

/* splitmix64: small, fast and the same everywhere. */
uint64_t sim_mix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t sim_rnd(struct sim *s)
{
	return sim_mix(&s->rng);
}

double sim_unif(struct sim *s)
{
	return (double)(sim_rnd(s) >> 11) / 9007199254740992.0;
}

/* Pareto with shape alpha and minimum xm, capped. */
uint64_t sim_pareto(struct sim *s, double xm, double alpha, double cap)
{
	double x = xm / pow(1.0 - sim_unif(s), 1.0 / alpha);

	return (uint64_t)(x < cap ? x : cap);
}

/* Index in [0, n) favouring small ones (a popularity skew). */
size_t sim_skewed(struct sim *s, size_t n)
{
	double u = sim_unif(s);

	return (size_t)((double)n * u * u * u) % n;
}

static void host_setup(struct sim *s, size_t i, size_t nprocs)
{
	struct sim_host *h = &s->hosts[i];
	size_t j;
	uint32_t ip = 0x0a000000u + (uint32_t)i + 1; /* 10.0.0.1, ... */
	static const char hex[] = "0123456789abcdef";

	snprintf(h->id, sizeof(h->id), "host-%05zu", i);
	h->addr.family = 4;
	h->addr.bytes[0] = (uint8_t)(ip >> 24);
	h->addr.bytes[1] = (uint8_t)(ip >> 16);
	h->addr.bytes[2] = (uint8_t)(ip >> 8);
	h->addr.bytes[3] = (uint8_t)ip;
	h->netns = 4026531840u;
	h->next_port = 32768;
	h->nprocs = nprocs;
	for (j = 0; j < nprocs; j++) {
		struct sim_proc *p = &h->procs[j];
		uint64_t r = sim_rnd(s);
		size_t k;

		/* Hosts lean to one tier, with a cache and others beside. */
		p->tier = j == 0   ? (enum sim_tier)(i % 10 < 2	   ? T_WEB
						     : i % 10 < 6  ? T_APP
						     : i % 10 < 8  ? T_DB
						     : i % 10 == 8 ? T_CACHE
								   : T_BATCH)
			  : j == 1 ? T_CACHE
				   : (enum sim_tier)(sim_rnd(s) % T_NTIERS);
		p->proc.tgid = 1000 + (uint32_t)(r % 60000);
		p->proc.start_ns = 1000000000ULL * (1 + (r >> 20) % 100000);
		p->proc.cgroup_id = 1000 + (r >> 40);
		snprintf(p->proc.comm, sizeof(p->proc.comm), "%s",
			 sim_tiers[p->tier].comm);
		snprintf(p->proc.cmdline, sizeof(p->proc.cmdline), "%s",
			 sim_tiers[p->tier].cmdline);
		if (r % 10 < 7) { /* containerised */
			for (k = 0; k < 64; k++)
				p->proc.container[k] = hex[sim_rnd(s) & 15];
			p->proc.container[64] = '\0';
			snprintf(p->proc.pod, sizeof(p->proc.pod),
				 "%08llx-%04llx-4%03llx-8%03llx-%012llx",
				 (unsigned long long)(sim_rnd(s) & 0xffffffff),
				 (unsigned long long)(sim_rnd(s) & 0xffff),
				 (unsigned long long)(sim_rnd(s) & 0xfff),
				 (unsigned long long)(sim_rnd(s) & 0xfff),
				 (unsigned long long)(sim_rnd(s) &
						      0xffffffffffffULL));
		}
	}
}

int sim_init(struct sim *s, size_t nhosts, size_t nprocs, uint64_t seed)
{
	struct sim_proc *procs;
	size_t i, j, t;

	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x2545f4914f6cdd1dULL + 1;
	s->nhosts = nhosts;
	s->nprocs = nprocs;
	s->hosts = calloc(nhosts, sizeof(*s->hosts));
	procs = calloc(nhosts * nprocs, sizeof(*procs));
	for (t = 0; t < T_NTIERS; t++)
		s->by_tier[t] = calloc(nhosts * nprocs, sizeof(size_t));
	if (!s->hosts || !procs)
		goto nomem;
	for (t = 0; t < T_NTIERS; t++)
		if (!s->by_tier[t])
			goto nomem;
	for (i = 0; i < nhosts; i++) {
		s->hosts[i].procs = procs + i * nprocs;
		host_setup(s, i, nprocs);
		for (j = 0; j < nprocs; j++) {
			t = s->hosts[i].procs[j].tier;
			s->by_tier[t][s->ntier[t]++] = i * nprocs + j;
		}
	}
	return 0;
nomem:
	free(procs);
	return cw_error("out of memory");
}

void sim_release(struct sim *s)
{
	size_t t;

	if (s->hosts)
		free(s->hosts[0].procs);
	free(s->hosts);
	for (t = 0; t < T_NTIERS; t++)
		free(s->by_tier[t]);
	if (s->of.fp)
		cw_outfile_abort(&s->of);
	cw_kafka_producer_free(s->kp);
}

/* One record to Kafka, paced to s->rate records a second. */
static void produce(struct sim *s, const struct cw_conn_record *r)
{
	uint64_t due;

	if (s->failed)
		return;
	if (cw_kafka_produce_conn(s->kp, r)) {
		s->failed = true;
		return;
	}
	cw_kafka_producer_poll(s->kp, 0);
	s->sent++;
	if (!s->rate)
		return;
	due = s->t0 + s->sent * NSEC_PER_SEC / s->rate;
	while (cw_now_mono_ns() < due && !cw_stop) {
		cw_kafka_producer_poll(s->kp, 1);
		usleep(500);
	}
}

void sim_emit(struct sim *s, struct cw_conn_record *r)
{
	uint8_t *buf;
	size_t len;

	r->seq = ++s->seq;
	if (s->kp) {
		produce(s, r);
		return;
	}
	if (!s->wire) {
		cw_conn_record_json(&s->w, r);
		cw_jsonw_end_line(&s->w);
		return;
	}
	if (s->failed)
		return;
	if (cw_wire_encode_conn(r, &buf, &len)) {
		s->failed = true;
		return;
	}
	if (cw_wire_write_frame(s->wire, buf, len))
		s->failed = true;
	free(buf);
}


void sim_end_of(const struct sim_host *h, const struct sim_proc *p,
		struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", h->id);
	r->netns = h->netns;
	r->protocol = 6;
	r->laddr = h->addr;
	if (p)
		r->proc = p->proc;
	else
		r->flags |= CW_REC_NO_OWNER;
}


static int sim_kafka_open(struct sim *s, const char *brokers, uint64_t rate)
{
	struct cw_kafka_conf kc = {.brokers = brokers};

	s->kp = cw_kafka_producer_new(&kc);
	if (!s->kp)
		return -1;
	s->rate = rate;
	s->t0 = cw_now_mono_ns();
	return 0;
}

/* Every record delivered: 0; else -1 after a message. */
static int sim_kafka_close(struct sim *s)
{
	struct cw_kafka_producer_stats st;
	int err = s->failed || cw_kafka_producer_flush(s->kp, 60000);

	cw_kafka_producer_get_stats(s->kp, &st);
	cw_kafka_producer_free(s->kp);
	s->kp = NULL;
	if (err)
		return cw_error("kafka: %" PRIu64 " of %" PRIu64
				" records not delivered",
				st.produced - st.delivered, s->sent);
	cw_info("%" PRIu64 " records published", st.delivered);
	return 0;
}

int sim_sink_open(struct sim *s, const struct cw_sim_sink *sink,
		  uint64_t rate)
{
	FILE *fp;

	if (sink->kafka)
		return sim_kafka_open(s, sink->kafka, rate);
	s->out = sink->out;
	if (s->out && cw_outfile_open(&s->of, s->out))
		return -1;
	fp = s->out ? s->of.fp : stdout;
	cw_jsonw_init(&s->w, fp);
	if (sink->wire) {
		s->wire = fp;
		if (cw_wire_write_magic(fp))
			s->failed = true;
	}
	return 0;
}

int sim_sink_finish(struct sim *s)
{
	int ret = -1;

	if (s->kp)
		return sim_kafka_close(s);
	if (s->failed) {
		cw_error("unable to write the wire records to '%s': %s",
			 s->out ? s->out : "standard output",
			 errno ? strerror(errno) : "out of memory");
		goto out;
	}
	if (s->out) {
		if (cw_outfile_commit(&s->of))
			goto out;
	} else if (fflush(stdout) || ferror(stdout)) {
		cw_error("unable to write to standard output");
		goto out;
	}
	ret = 0;
out:
	if (s->of.fp)
		cw_outfile_abort(&s->of);
	return ret;
}
