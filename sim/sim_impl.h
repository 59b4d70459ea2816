/* SPDX-License-Identifier: MIT */
/*
 * Inside the simulator (sim/sim.h is its public face): the synthetic fleet
 * both modes share (sim/fleet.c), hosts running processes of service
 * tiers, a random stream that the same seed repeats, and the sink every
 * record goes to.  sim/batch.c and sim/churn.c use it:
 *
 *	struct sim s;
 *
 *	if (sim_init(&s, hosts, procs, seed) ||
 *	    sim_sink_open(&s, sink, rate))
 *		goto out;
 *	sim_end_of(&s.hosts[i], &s.hosts[i].procs[j], &r);
 *	...				// the connection's fields
 *	sim_emit(&s, &r);
 *	ret = sim_sink_finish(&s);
 * out:
 *	sim_release(&s);
 */
#ifndef CW_SIM_IMPL_H
#define CW_SIM_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "common/record.h"
#include "common/util.h"
#include "sim/sim.h"

/* 2026-01-01T00:00:00Z: where simulated time starts for files */
#define SIM_T0 1767225600000000000ULL

enum sim_tier { T_WEB, T_APP, T_CACHE, T_DB, T_BATCH, T_NTIERS };

struct sim_tier_desc {
	const char *comm, *cmdline;
	uint16_t port;
	enum sim_tier calls[2]; /* the tiers it calls; its own: replication */
};

extern const struct sim_tier_desc sim_tiers[T_NTIERS];

struct sim_proc {
	enum sim_tier tier;
	struct cw_process proc;
};

struct sim_host {
	char id[CW_HOST_LEN];
	struct cw_addr addr;
	uint32_t netns;
	uint64_t cookie;
	uint16_t next_port;
	struct sim_proc *procs;
	size_t nprocs;
};

struct sim {
	uint64_t rng;
	struct sim_host *hosts;
	size_t nhosts, nprocs;
	/* host indices per tier, for picking servers */
	size_t *by_tier[T_NTIERS];
	size_t ntier[T_NTIERS];
	/* the file sink: out (NULL: standard output) through of */
	const char *out;
	struct cw_outfile of;
	struct cw_jsonw w;
	FILE *wire; /* wire frames to this, else JSON lines */
	bool failed;
	uint64_t seq;
	/* the Kafka sink: each record through the agents' producer, at rate */
	struct cw_kafka_producer *kp;
	uint64_t rate, t0, sent;
};

/* The next number of a stream kept in *state (splitmix64). */
uint64_t sim_mix(uint64_t *state);
/* The next number of the fleet's stream. */
uint64_t sim_rnd(struct sim *s);
/* Uniform in [0, 1). */
double sim_unif(struct sim *s);
/* Pareto with shape alpha and minimum xm, capped at cap. */
uint64_t sim_pareto(struct sim *s, double xm, double alpha, double cap);
/* An index in [0, n) favouring small ones (a popularity skew); n > 0. */
size_t sim_skewed(struct sim *s, size_t n);

/* nhosts hosts of nprocs processes each: 0, or -1 after a message. */
int sim_init(struct sim *s, size_t nhosts, size_t nprocs, uint64_t seed);
/* Frees the fleet; a sink not finished is dropped (its file removed). */
void sim_release(struct sim *s);

/* The fields of an end owned by p on h (p NULL: no owner known). */
void sim_end_of(const struct sim_host *h, const struct sim_proc *p,
		struct cw_conn_record *r);
/* Number r (seq) and write it to the sink; a failure sets s->failed. */
void sim_emit(struct sim *s, struct cw_conn_record *r);

/*
 * Records to sink->kafka, paced to rate a second (0: no limit), or else
 * to the file sink->out as sink->wire says: 0, or -1 after a message.
 */
int sim_sink_open(struct sim *s, const struct cw_sim_sink *sink,
		  uint64_t rate);
/*
 * Every record written whole (the file committed) or delivered: 0; else
 * -1 after a message, nothing half-written left.  Closes the sink.
 */
int sim_sink_finish(struct sim *s);

#endif
