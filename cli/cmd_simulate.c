// SPDX-License-Identifier: MIT
/*
 * causeway simulate: a synthetic fleet as agent records, for tests,
 * benchmarks and trying the graph commands without a fleet.  Hosts run
 * processes of a few service tiers; clients call servers of the next tier
 * with heavy-tailed bytes; both ends of each connection are written with
 * consistent 4-tuples so they pair, except for some ends whose partner was
 * not watched and the traffic with a few external peers.  Long connections
 * get intermediate records with cumulative counters.  The same seed gives
 * the same bytes.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/simulate.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"

#define SIM_SPAN     (10 * 60 * NSEC_PER_SEC)
#define SIM_EXTERNAL 16 /* external peers */

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
uint64_t sim_rnd(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
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

int sim_bad_value(const char *opt, const char *val, const char *want)
{
	cw_error("%s '%s': want %s", opt, val, want);
	return 2;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway simulate --hosts N --conns M [--procs P] "
		"[--seed S]\n"
		"                         [--format json|wire] [-o FILE]\n"
		"                         [--units-out F] [--hosts-out F] "
		"[--pattern q1|q2]\n"
		"                         [--kafka BROKERS [--rate R]]\n\n"
		"Write the agent records of a synthetic fleet as JSON lines "
		"(or a\n"
		"wire stream file, what the correlator reads from Kafka): N "
		"hosts\n"
		"running P processes each from service tiers (nginx -> app -> "
		"redis,\n"
		"postgres; batch jobs), M client connections per host with\n"
		"heavy-tailed bytes, both ends of each on their hosts, a few\n"
		"external peers and some ends whose partner was not "
		"watched.\n\n"
		"  -H, --hosts N   hosts, 1 to 1000000\n"
		"  -c, --conns M   client connections per host, 1 to 1000000\n"
		"  -p, --procs P   processes per host, 1 to 64 (default 4)\n"
		"  -s, --seed S    random seed (default 1): the same seed, the "
		"same file\n"
		"  -f, --format F  json (JSON lines, the default) or wire "
		"(protobuf\n"
		"                  envelopes in CRC-checked frames, as "
		"'causeway "
		"dump'\n"
		"                  reads); with -o FILE.cww, wire\n"
		"  -o, --out FILE  write FILE (default standard output)\n"
		"  --units-out F   also write the placement units as CSV "
		"(container, cpu,\n"
		"                  memory, host, pod, workload, namespace, "
		"kind), for\n"
		"                  'causeway place -U'\n"
		"  --hosts-out F   also write the hosts' capacities as CSV "
		"(host, cpu,\n"
		"                  memory), for 'causeway place -H'\n"
		"  --pattern Q     the SAC'20 paper's traffic instead of the "
		"tiers: q1,\n"
		"                  workers scanning from storage servers; q2, "
		"workers\n"
		"                  shuffling among themselves (process 0 of "
		"each host\n"
		"                  stores, the others work; all in "
		"containers)\n"
		"  -k, --kafka B   publish the records to P.conns on brokers "
		"B instead,\n"
		"                  through the agents' producer\n"
		"  --rate R        with --kafka, R records a second (default: "
		"as fast\n"
		"                  as the brokers take them)\n"
		"  --churn ...     the churn mode: hosts whose connections "
		"open and\n"
		"                  close over simulated time, paced for a "
		"broker (see\n"
		"                  'causeway simulate --churn --help')\n\n"
		"Examples:\n"
		"  causeway simulate --hosts 20 --conns 50 -o fleet.jsonl\n"
		"  causeway simulate -H 1000 -c 1000 --format wire -o "
		"fleet.cww\n"
		"  causeway simulate -H 1000 -c 1000 | causeway graph --by "
		"host -\n");
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

/* One end's records: cumulative updates every minute, the last closed. */
static void emit_end(struct sim *s, struct cw_conn_record *r, uint64_t first,
		     uint64_t last)
{
	uint64_t out = r->bytes_out, in = r->bytes_in, mo = r->msgs_out,
		 mi = r->msgs_in, t;
	double f;

	r->first_ns = first;
	for (t = first + 60 * NSEC_PER_SEC; t < last; t += 60 * NSEC_PER_SEC) {
		f = (double)(t - first) / (double)(last - first);
		r->bytes_out = (uint64_t)(out * f);
		r->bytes_in = (uint64_t)(in * f);
		r->msgs_out = (uint64_t)(mo * f);
		r->msgs_in = (uint64_t)(mi * f);
		r->calls_out = r->msgs_out;
		r->calls_in = r->msgs_in;
		r->last_ns = t;
		r->flags &= ~(uint32_t)CW_REC_CLOSED;
		sim_emit(s, r);
	}
	r->bytes_out = out;
	r->bytes_in = in;
	r->msgs_out = r->calls_out = mo;
	r->msgs_in = r->calls_in = mi;
	r->last_ns = last;
	r->flags |= CW_REC_CLOSED;
	sim_emit(s, r);
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

static void external_addr(struct sim *s, struct cw_addr *a, bool inbound)
{
	memset(a, 0, sizeof(*a));
	a->family = 4;
	a->bytes[0] = inbound ? 198 : 203;
	a->bytes[1] = inbound ? 51 : 0;
	a->bytes[2] = inbound ? 100 : 113;
	a->bytes[3] = (uint8_t)(1 + sim_rnd(s) % SIM_EXTERNAL);
}

static void one_conn(struct sim *s, size_t ci, size_t cj)
{
	struct sim_host *ch = &s->hosts[ci], *sh;
	struct sim_proc *cp = &ch->procs[cj], *sp;
	struct cw_conn_record c, r;
	enum sim_tier want = sim_tiers[cp->tier].calls[sim_rnd(s) & 1];
	uint64_t first, dur, c2s, s2c, msgs, u = sim_rnd(s) % 1000;
	size_t k;

	first = SIM_T0 + sim_rnd(s) % SIM_SPAN;
	dur = sim_pareto(s, 5e6, 1.1, (double)(SIM_T0 + SIM_SPAN - first));
	msgs = 1 + sim_pareto(s, 1, 1.3, 1e6);
	c2s = msgs * (64 + sim_rnd(s) % 512);
	s2c = sim_pareto(s, 200.0 * (double)msgs, 1.2, 1e11);
	sim_end_of(ch, cp, &c);
	c.role = CW_REC_ROLE_CLIENT;
	c.lport = ch->next_port++;
	if (ch->next_port < 32768)
		ch->next_port = 32768;
	c.cookie = ++ch->cookie;
	c.bytes_out = c2s;
	c.bytes_in = s2c;
	c.msgs_out = msgs;
	c.msgs_in = msgs;
	c.srtt_us = 50 + (uint32_t)(sim_rnd(s) % 400);
	if (u < 30) { /* to an external service: only our end is watched */
		external_addr(s, &c.raddr, false);
		c.rport = 443;
		emit_end(s, &c, first, first + dur);
		return;
	}
	if ((cp->tier == T_WEB && u < 200) ||
	    ((cp->tier == T_CACHE || cp->tier == T_DB) && u < 100)) {
		/* Clients outside the fleet: only the server end is seen. */
		sim_end_of(ch, cp, &r);
		r.role = CW_REC_ROLE_SERVER;
		r.lport = sim_tiers[cp->tier].port;
		external_addr(s, &r.raddr, true);
		r.rport = c.lport;
		r.cookie = c.cookie;
		r.bytes_out = s2c;
		r.bytes_in = c2s;
		r.msgs_out = r.msgs_in = msgs;
		emit_end(s, &r, first, first + dur);
		return;
	}
	/* A tenth of cache calls stay on the host, when it has one. */
	if (want == T_CACHE && u < 130 && cp != &ch->procs[1] &&
	    ch->nprocs > 1 && ch->procs[1].tier == T_CACHE)
		k = ci * s->nprocs + 1;
	else if (s->ntier[want])
		k = s->by_tier[want][sim_skewed(s, s->ntier[want])];
	else /* a small fleet may lack the tier: anyone serves */
		k = sim_rnd(s) % (s->nhosts * s->nprocs);
	sh = &s->hosts[k / s->nprocs];
	sp = &sh->procs[k % s->nprocs];
	c.raddr = sh->addr;
	c.rport = sim_tiers[sp->tier].port;
	sim_end_of(sh, sp, &r);
	r.role = CW_REC_ROLE_SERVER;
	r.lport = c.rport;
	r.raddr = c.laddr;
	r.rport = c.lport;
	r.cookie = ++sh->cookie;
	r.bytes_out = s2c;
	r.bytes_in = c2s;
	r.msgs_out = r.msgs_in = msgs;
	r.srtt_us = c.srtt_us;
	/* Some ends are lost (the agent was down): the other stays alone. */
	if (u < 40)
		r.flags |= CW_REC_NO_OWNER;
	if (!(u >= 40 && u < 50))
		emit_end(s, &c, first, first + dur);
	if (!(u >= 50 && u < 60))
		emit_end(s, &r, first + dur / 20, first + dur - dur / 10);
}

/*
 * Placement units and resources.  Their own random stream (from the seed),
 * so the records stay what they were without these options.
 */
static uint64_t mix(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* CPU (cores) and memory (MiB) of a process: by its role, jittered. */
static void proc_resources(const struct sim_proc *p, uint64_t *st, double *cpu,
			   uint64_t *mib)
{
	static const double base_cpu[T_NTIERS] = {0.5, 1.0, 0.5, 2.0, 1.5};
	static const uint64_t base_mib[T_NTIERS] = {512, 2048, 4096, 8192,
						    4096};
	double j = 0.5 + (double)(mix(st) % 1001) / 1000.0; /* 0.5 to 1.5 */

	*cpu = round(base_cpu[p->tier] * j * 1000) / 1000;
	*mib = (uint64_t)((double)base_mib[p->tier] * j);
}

/* One row per container; processes outside containers per host. */
static int write_units(struct sim *s, const char *path, uint64_t seed)
{
	struct cw_outfile of;
	uint64_t st = seed ^ 0x706c616365ULL, mib, pmib;
	size_t i, j, wl[T_NTIERS] = {0};
	double cpu, pcpu;

	if (cw_outfile_open(&of, path))
		return -1;
	fprintf(of.fp, "unit,cpu,memory,host,pod,workload,namespace,kind\n");
	for (i = 0; i < s->nhosts; i++) {
		pcpu = 0, pmib = 0;
		for (j = 0; j < s->hosts[i].nprocs; j++) {
			const struct sim_proc *p = &s->hosts[i].procs[j];

			proc_resources(p, &st, &cpu, &mib);
			if (!p->proc.container[0]) {
				pcpu += cpu, pmib += mib;
				continue;
			}
			/* Workloads of two replicas each, per role. */
			fprintf(of.fp,
				"%s,%.3f,%lluMi,%s,%s,%s-%zu,default,%s\n",
				p->proc.container, cpu, (unsigned long long)mib,
				s->hosts[i].id,
				p->proc.pod[0] ? p->proc.pod
					       : p->proc.container,
				p->proc.comm, wl[p->tier]++ / 2,
				p->tier == T_DB ? "StatefulSet" : "Deployment");
		}
		if (pmib)
			fprintf(of.fp, "%s (no container),%.3f,%lluMi,%s,,,,\n",
				s->hosts[i].id, pcpu, (unsigned long long)pmib,
				s->hosts[i].id);
	}
	return cw_outfile_commit(&of);
}

/* Every host the same: twice what the processes need on average. */
static int write_hosts(struct sim *s, const char *path)
{
	struct cw_outfile of;
	size_t i;

	if (cw_outfile_open(&of, path))
		return -1;
	fprintf(of.fp, "host,cpu,memory\n");
	for (i = 0; i < s->nhosts; i++)
		fprintf(of.fp, "%s,%zu,%zuGi\n", s->hosts[i].id, 3 * s->nprocs,
			8 * s->nprocs);
	return cw_outfile_commit(&of);
}

/* The paper's stack: process 0 of each host stores, the others work. */
static void pattern_setup(struct sim *s, int pattern)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t st = 0x5ac2020 + (uint64_t)pattern;
	size_t i, j, k;

	for (i = 0; i < s->nhosts; i++)
		for (j = 0; j < s->nprocs; j++) {
			struct sim_proc *p = &s->hosts[i].procs[j];

			p->tier = j == 0 ? T_DB : T_BATCH;
			snprintf(p->proc.comm, sizeof(p->proc.comm), "%s",
				 j == 0 ? "cassandra" : "java");
			snprintf(p->proc.cmdline, sizeof(p->proc.cmdline), "%s",
				 j == 0 ? "cassandra -f"
					: "java org.apache.spark.executor");
			if (p->proc.container[0])
				continue;
			for (k = 0; k < 64; k++)
				p->proc.container[k] = hex[mix(&st) & 15];
			p->proc.container[64] = '\0';
		}
}

/* One connection between two given processes, both ends watched. */
static void emit_pair(struct sim *s, size_t ci, size_t cj, size_t si, size_t sj,
		      uint64_t c2s, uint64_t s2c, uint16_t port)
{
	struct sim_host *ch = &s->hosts[ci], *sh = &s->hosts[si];
	struct cw_conn_record c, r;
	uint64_t first = SIM_T0 + sim_rnd(s) % (SIM_SPAN / 2),
		 dur = SIM_SPAN / 4;

	sim_end_of(ch, &ch->procs[cj], &c);
	c.role = CW_REC_ROLE_CLIENT;
	c.lport = ch->next_port++;
	if (ch->next_port < 32768)
		ch->next_port = 32768;
	c.cookie = ++ch->cookie;
	c.raddr = sh->addr;
	c.rport = port;
	c.bytes_out = c2s;
	c.bytes_in = s2c;
	c.msgs_out = c.msgs_in = 1 + c2s / 65536;
	sim_end_of(sh, &sh->procs[sj], &r);
	r.role = CW_REC_ROLE_SERVER;
	r.lport = port;
	r.raddr = c.laddr;
	r.rport = c.lport;
	r.cookie = ++sh->cookie;
	r.bytes_out = s2c;
	r.bytes_in = c2s;
	r.msgs_out = r.msgs_in = c.msgs_out;
	emit_end(s, &c, first, first + dur);
	emit_end(s, &r, first, first + dur);
}

/*
 * Q1: each worker scans mostly from the storage server of the next host
 * (placed away from its data on purpose), a little from others.  Q2: each
 * worker shuffles with other workers.  `conns` connections per worker.
 */
static void pattern_conns(struct sim *s, int pattern, uint64_t conns)
{
	size_t i, j, n = s->nhosts, w = s->nprocs;
	uint64_t k;

	for (k = 0; k < conns && !s->failed; k++)
		for (i = 0; i < n; i++)
			for (j = 1; j < w; j++) {
				size_t si = (i + 1) % n, sj = 0;

				if (pattern == 1 && sim_rnd(s) % 10 >= 8)
					si = sim_rnd(s) % n;
				if (pattern == 2) {
					si = sim_rnd(s) % n;
					sj = w > 1 ? 1 + sim_rnd(s) % (w - 1)
						   : 0;
					if (si == i && sj == j)
						continue;
				}
				if (pattern == 1)
					emit_pair(s, i, j, si, sj,
						  4096 + sim_rnd(s) % 4096,
						  (16 + sim_rnd(s) % 48) << 20,
						  9042);
				else
					emit_pair(s, i, j, si, sj,
						  (4 + sim_rnd(s) % 12) << 20,
						  65536, 7337);
			}
}

struct sim_opts {
	uint64_t hosts, conns, procs, seed;
	const char *out, *format, *units_out, *hosts_out;
	int pattern;	   /* 0: the tiers; 1, 2: Q1, Q2 */
	const char *kafka; /* publish to these brokers instead */
	uint64_t rate;	   /* records a second to Kafka; 0: no limit */
};

/*
 * Options into o: -1 to go on, else the exit status (help, bad usage).
 * One getopt switch with a case per option, longer than 80 lines for it.
 */
static int parse_options(int argc, char **argv, struct sim_opts *o)
{
	static const struct option opts[] = {
		{"hosts", required_argument, NULL, 'H'},
		{"conns", required_argument, NULL, 'c'},
		{"procs", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"out", required_argument, NULL, 'o'},
		{"units-out", required_argument, NULL, 'U'},
		{"hosts-out", required_argument, NULL, 'C'},
		{"pattern", required_argument, NULL, 'P'},
		{"kafka", required_argument, NULL, 'k'},
		{"rate", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "H:c:p:s:f:o:k:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'H':
			if (cw_parse_u64(optarg, 1, 1000000, &o->hosts))
				return sim_bad_value("--hosts", optarg,
						     "1 to 1000000");
			break;
		case 'c':
			if (cw_parse_u64(optarg, 1, 1000000, &o->conns))
				return sim_bad_value("--conns", optarg,
						     "1 to 1000000");
			break;
		case 'p':
			if (cw_parse_u64(optarg, 1, 64, &o->procs))
				return sim_bad_value("--procs", optarg,
						     "1 to 64");
			break;
		case 's':
			if (cw_parse_u64(optarg, 0, UINT64_MAX, &o->seed))
				return sim_bad_value("--seed", optarg,
						     "a number");
			break;
		case 'f':
			if (strcmp(optarg, "json") && strcmp(optarg, "wire"))
				return sim_bad_value("--format", optarg,
						     "json or wire");
			o->format = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'U':
			o->units_out = optarg;
			break;
		case 'C':
			o->hosts_out = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "q1") && strcmp(optarg, "q2"))
				return sim_bad_value("--pattern", optarg,
						     "q1 or q2");
			o->pattern = optarg[1] - '0';
			break;
		case 'k':
			o->kafka = optarg;
			break;
		case 'r':
			if (cw_parse_u64(optarg, 1, 100000000, &o->rate))
				return sim_bad_value("--rate", optarg,
						     "1 to 100000000");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("simulate", argv);
		}
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!o->hosts || !o->conns) {
		cw_error("--hosts and --conns are required (see 'causeway "
			 "simulate --help')");
		return 2;
	}
	if (o->kafka && (o->out || o->format)) {
		cw_error("--kafka publishes the records: no -o or --format");
		return 2;
	}
	if (o->rate && !o->kafka) {
		cw_error("--rate paces --kafka only");
		return 2;
	}
	if (o->hosts * o->conns > 200000000ULL) {
		cw_error("--hosts x --conns: at most 200000000 connections");
		return 2;
	}
	return -1;
}

int sim_kafka_open(struct sim *s, const char *brokers, uint64_t rate)
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

int sim_sink_open(struct sim *s, struct cw_outfile *of, const char *out,
		  bool wire)
{
	FILE *fp;

	if (out && cw_outfile_open(of, out))
		return -1;
	fp = out ? of->fp : stdout;
	cw_jsonw_init(&s->w, fp);
	if (wire) {
		s->wire = fp;
		if (cw_wire_write_magic(fp))
			s->failed = true;
	}
	return 0;
}

int sim_sink_finish(struct sim *s, struct cw_outfile *of, const char *out)
{
	int ret = -1;

	if (s->kp)
		return sim_kafka_close(s);
	if (s->failed) {
		cw_error("unable to write the wire records to '%s': %s",
			 out ? out : "standard output",
			 errno ? strerror(errno) : "out of memory");
		goto out;
	}
	if (out) {
		if (cw_outfile_commit(of))
			goto out;
	} else if (fflush(stdout) || ferror(stdout)) {
		cw_error("unable to write to standard output");
		goto out;
	}
	ret = 0;
out:
	if (of->fp)
		cw_outfile_abort(of);
	return ret;
}

/* Is --churn among the arguments?  Then the churn mode parses them all. */
static bool churn_mode(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--churn"))
			return true;
	return false;
}

int cmd_simulate(int argc, char **argv)
{
	struct sim_opts o = {.procs = 4, .seed = 1};
	struct cw_outfile of = {0};
	uint64_t i, j;
	bool wire;
	struct sim s = {0};
	int ret;

	if (churn_mode(argc, argv))
		return simulate_churn(argc, argv);
	ret = parse_options(argc, argv, &o);
	if (ret >= 0)
		return ret;
	ret = 1;
	if (o.format)
		wire = !strcmp(o.format, "wire");
	else
		wire = o.out && strlen(o.out) > 4 &&
		       !strcmp(o.out + strlen(o.out) - 4, ".cww");
	if (sim_init(&s, o.hosts, o.procs, o.seed))
		goto out;
	if (o.pattern)
		pattern_setup(&s, o.pattern);
	if ((o.units_out && write_units(&s, o.units_out, o.seed)) ||
	    (o.hosts_out && write_hosts(&s, o.hosts_out)))
		goto out;
	if (o.kafka && sim_kafka_open(&s, o.kafka, o.rate))
		goto out;
	if (!o.kafka && sim_sink_open(&s, &of, o.out, wire))
		goto out;
	if (o.pattern)
		pattern_conns(&s, o.pattern, o.conns);
	else
		for (j = 0; j < o.conns && !s.failed; j++)
			for (i = 0; i < o.hosts; i++)
				one_conn(&s, i, sim_rnd(&s) % o.procs);
	ret = sim_sink_finish(&s, &of, o.out) ? 1 : 0;
out:
	if (of.fp)
		cw_outfile_abort(&of);
	sim_release(&s);
	return ret;
}
