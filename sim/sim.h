/* SPDX-License-Identifier: MIT */
/*
 * The fleet simulator: the agent records of a synthetic fleet, for tests,
 * benchmarks and trying the graph commands without a fleet.  Hosts run
 * processes of a few service tiers (nginx -> app -> redis, postgres; batch
 * jobs); both ends of a connection carry consistent 4-tuples, so they pair.
 * The same seed gives the same records, byte for byte.
 *
 * Two modes.  A batch: M client connections per host with heavy-tailed
 * bytes, spread over ten minutes (or the SAC'20 paper's Q1/Q2 traffic):
 *
 *	struct cw_sim_fleet_opts o = {.hosts = 20, .conns = 50, .procs = 4};
 *	struct cw_sim_sink sink = {.out = "fleet.cww", .wire = true};
 *
 *	if (cw_sim_fleet_write(&o, &sink))
 *		return 1;			// message printed
 *
 * Churn: connections that open and close over simulated time, paced for a
 * broker, with a report between the run and the sink's flush:
 *
 *	struct cw_sim_churn *ch = cw_sim_churn_new(&co, &sink);
 *	struct cw_sim_churn_stats st;
 *
 *	if (!ch)
 *		return 1;
 *	cw_sim_churn_run(ch, &st);		// until the span ends or cw_stop
 *	...					// print st
 *	ret = cw_sim_churn_finish(ch);
 *	cw_sim_churn_free(ch);
 *
 * Records go to a file (or standard output) as JSON lines or wire frames,
 * or through the agents' Kafka producer to P.conns.  Nothing else is
 * printed but errors and, after a publish, the count of records delivered.
 */
#ifndef CW_SIM_H
#define CW_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the records go. */
struct cw_sim_sink {
	const char *out;   /* a file, whole or not at all; NULL: stdout */
	bool wire;	   /* wire stream frames (common/wire.h), else JSON */
	const char *kafka; /* brokers: publish to P.conns instead of out */
	uint64_t rate;	   /* batch with kafka: records a second; 0: no cap */
};

/* The batch mode. */
struct cw_sim_fleet_opts {
	uint64_t hosts, conns, procs, seed; /* conns: client ones per host */
	int pattern;			    /* 0: the tiers; 1, 2: Q1, Q2 */
	/* Also the placement units and the hosts' capacities as CSV, for
	 * `causeway place -U/-H` (their own random stream: the records stay
	 * the same with or without them); NULL: not written. */
	const char *units_out, *hosts_out;
};

/*
 * The batch's records to sink, and the CSV files asked for: 0 once every
 * record is written whole (the file committed) or delivered; else -1
 * after a message, nothing half-written left.
 */
int cw_sim_fleet_write(const struct cw_sim_fleet_opts *o,
		       const struct cw_sim_sink *sink);

/* The churn mode: every host keeps `live` client connections open. */
struct cw_sim_churn_opts {
	uint64_t hosts, live, procs, seed;
	uint64_t lifetime_ns; /* mean; each lives half to 1.5 times that */
	uint64_t interval_ns; /* the agents' collection interval */
	uint64_t duration_ns; /* the simulated span */
	uint64_t speedup;     /* with kafka: simulated s a second; 0: none */
};

/* What a churn run did, for its report. */
struct cw_sim_churn_stats {
	uint64_t made, closed, records; /* connections, records written */
	size_t hosts, live;		/* live: connections throughout */
	uint64_t span_ns, reached_ns;	/* asked for; simulated (<= span) */
	bool paced;			/* publishing at a speedup: lag_ns */
	uint64_t lag_ns;		/* the worst lag behind that pace */
};

struct cw_sim_churn;

/*
 * The fleet, each slot's first connection and the sink opened: a churn
 * ready to run; NULL after a message.  With sink->kafka the span ends as
 * the run should (now, plus its length over the speedup); for files it
 * starts at 2026-01-01T00:00:00Z, so the same seed gives the same bytes.
 * sink->rate is not used: speedup paces.
 */
struct cw_sim_churn *cw_sim_churn_new(const struct cw_sim_churn_opts *o,
				      const struct cw_sim_sink *sink);
/*
 * The span, in simulated-time order, until it ends, cw_stop is set or a
 * write fails; then the last collection (every live end).  Fills st.
 */
void cw_sim_churn_run(struct cw_sim_churn *ch, struct cw_sim_churn_stats *st);
/* Flush and close the sink: 0, or -1 after a message (cw_sim_fleet_write's
 * rule). */
int cw_sim_churn_finish(struct cw_sim_churn *ch);
/* NULL is fine; an unfinished file sink is removed. */
void cw_sim_churn_free(struct cw_sim_churn *ch);
/*
 * The churn mode whole: new, run, what it made said on stderr (with a
 * warning if a signal cut the span short), finish and free.  0, or -1
 * after a message.
 */
int cw_sim_churn(const struct cw_sim_churn_opts *o,
		 const struct cw_sim_sink *sink);

#endif
