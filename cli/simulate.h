/* SPDX-License-Identifier: MIT */
/*
 * `causeway simulate`'s two option parsers (cli/cmd_simulate.c: the batch;
 * cli/simulate_churn.c: --churn) and what they share.  The simulator
 * itself is sim/sim.h.
 */
#ifndef CW_CLI_SIMULATE_H
#define CW_CLI_SIMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/sim.h"

/* A number in [min, max] into *out: 0, or -1 after "OPT 'VAL': want WANT". */
int simulate_u64(const char *opt, const char *val, uint64_t min, uint64_t max,
		 const char *want, uint64_t *out);

/* The options both modes take, and where their records go. */
struct simulate_shared {
	uint64_t hosts, procs, seed;
	const char *format;
	struct cw_sim_sink sink;
};

/*
 * -H/--hosts, -p/--procs, -s/--seed, -f/--format, -o/--out, -k/--kafka
 * into sh: 1 if c is none of them; else 0, or -1 after a message.
 */
int simulate_shared_opt(struct simulate_shared *sh, int c, const char *arg);
/*
 * After the options: --kafka with -o or --format refused (-1 after a
 * message); else 0, with sink.wire set: --format wire, or with no
 * --format an -o FILE.cww.
 */
int simulate_shared_check(struct simulate_shared *sh);

/* `causeway simulate --churn ...`: the churn mode's whole command. */
int simulate_churn(int argc, char **argv);

#endif
