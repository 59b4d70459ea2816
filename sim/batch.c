// SPDX-License-Identifier: MIT
/*
 * The batch mode: hosts run processes of a few service tiers; clients call
 * servers of the next tier with heavy-tailed bytes; both ends of each
 * connection are written with consistent 4-tuples so they pair, except for
 * some ends whose partner was not watched and the traffic with a few
 * external peers.  Long connections get intermediate records with
 * cumulative counters.  Or the SAC'20 paper's Q1/Q2 traffic instead.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "sim/sim.h"
#include "sim/sim_impl.h"

#define SIM_SPAN     (10 * 60 * NSEC_PER_SEC)
#define SIM_EXTERNAL 16 /* external peers */

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
 * Placement units and resources: CPU (cores) and memory (MiB) of a
 * process, by its role, jittered.  Their own random stream st (from the
 * seed), so the records stay what they were without these options.
 */
static void proc_resources(const struct sim_proc *p, uint64_t *st, double *cpu,
			   uint64_t *mib)
{
	static const double base_cpu[T_NTIERS] = {0.5, 1.0, 0.5, 2.0, 1.5};
	static const uint64_t base_mib[T_NTIERS] = {512, 2048, 4096, 8192,
						    4096};
	double j = 0.5 + (double)(sim_mix(st) % 1001) / 1000.0; /* 0.5 to 1.5 */

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
				p->proc.container[k] = hex[sim_mix(&st) & 15];
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


int cw_sim_fleet_write(const struct cw_sim_fleet_opts *o,
		       const struct cw_sim_sink *sink)
{
	struct sim s;
	uint64_t i, j;
	int ret = -1;

	if (sim_init(&s, o->hosts, o->procs, o->seed))
		goto out;
	if (o->pattern)
		pattern_setup(&s, o->pattern);
	if ((o->units_out && write_units(&s, o->units_out, o->seed)) ||
	    (o->hosts_out && write_hosts(&s, o->hosts_out)))
		goto out;
	if (sim_sink_open(&s, sink, sink->rate))
		goto out;
	if (o->pattern)
		pattern_conns(&s, o->pattern, o->conns);
	else
		for (j = 0; j < o->conns && !s.failed; j++)
			for (i = 0; i < o->hosts; i++)
				one_conn(&s, i, sim_rnd(&s) % o->procs);
	ret = sim_sink_finish(&s);
out:
	sim_release(&s);
	return ret;
}
