// SPDX-License-Identifier: MIT
/*
 * causeway simulate --churn: the options of the simulator's churn mode
 * (sim/sim.h), the run, and its report.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/simulate.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/sim.h"

struct churn_args {
	struct simulate_shared sh;
	struct cw_sim_churn_opts o;
	bool speedup_set;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway simulate --churn [--hosts N] [--live L] "
		"[--lifetime D]\n"
		"                         [--interval D] [--duration D] "
		"[--procs P] [--seed S]\n"
		"                         [--format json|wire] [-o FILE | "
		"--kafka B [--speedup X]]\n\n"
		"The records of a fleet whose connections come and go: N "
		"hosts each\n"
		"keep L client connections open to servers of the next tier; "
		"each lives\n"
		"D/2 to 3D/2 (--lifetime D), is closed and replaced by a new "
		"one (new\n"
		"port, new cookies).  Both ends publish a record every "
		"--interval while\n"
		"live and a closed record at the end, in time order; the "
		"span's last\n"
		"collection flushes the ends still live.  The defaults are "
		"a day of a\n"
		"1,000-host fleet (360,000 connections, about 1.8 million "
		"records) in\n"
		"three minutes.\n\n"
		"  -H, --hosts N     hosts, 1 to 1000000 (default 1000)\n"
		"  -L, --live L      live connections per host, 1 to 20000 "
		"(default 5)\n"
		"      --lifetime D  mean connection lifetime, 1ms to 30d "
		"(default 20m)\n"
		"  -i, --interval D  the agents' collection interval, 1ms to "
		"1d (default 10m)\n"
		"  -d, --duration D  the simulated span, 1s to 366d (default "
		"1d)\n"
		"  -p, --procs P     processes per host, 1 to 64 (default 4)\n"
		"  -s, --seed S      random seed (default 1): the same seed, "
		"the same file\n"
		"  -f, --format F    json (the default) or wire; with -o "
		"FILE.cww, wire\n"
		"  -o, --out FILE    write FILE (default standard output); "
		"the span starts\n"
		"                    at 2026-01-01T00:00:00Z\n"
		"  -k, --kafka B     publish to P.conns on brokers B through "
		"the agents'\n"
		"                    producer; the span ends as the run "
		"does\n"
		"  -x, --speedup X   with --kafka, X simulated seconds per "
		"second, 0 to\n"
		"                    10000000 (default 480: a day in three "
		"minutes; 0: as\n"
		"                    fast as the brokers take them)\n\n"
		"Examples:\n"
		"  causeway simulate --churn -o day.cww\n"
		"  causeway simulate --churn -H 20 -L 10 --lifetime 1m -d 1h "
		"-o hour.jsonl\n"
		"  causeway simulate --churn --kafka 127.0.0.1:9092\n"
		"  causeway simulate --churn -H 10000 -L 100 --lifetime 1m "
		"-i 1m \\\n"
		"      -d 10m --kafka kafka1:9092 --speedup 1\n");
}

/* One option into ctx (struct churn_args): 0, or -1 after a message. */
static int churn_opt(void *ctx, int c, const char *arg)
{
	struct churn_args *a = ctx;
	struct cw_sim_churn_opts *o = &a->o;
	int ret = simulate_shared_opt(&a->sh, c, arg);

	if (ret <= 0)
		return ret;
	switch (c) {
	case 'L':
		return simulate_u64("--live", arg, 1, 20000, "1 to 20000",
				    &o->live);
	case 'l':
		return cli_duration("--lifetime", arg, NSEC_PER_MSEC,
				    30 * 86400 * NSEC_PER_SEC, &o->lifetime_ns);
	case 'i':
		return cli_duration("--interval", arg, NSEC_PER_MSEC,
				    86400 * NSEC_PER_SEC, &o->interval_ns);
	case 'd':
		return cli_duration("--duration", arg, NSEC_PER_SEC,
				    366 * 86400 * NSEC_PER_SEC, &o->duration_ns);
	case 'x':
		a->speedup_set = true;
		return simulate_u64("--speedup", arg, 0, 10000000,
				    "0 to 10000000", &o->speedup);
	case 'C': /* --churn: how we got here */
		return 0;
	}
	return -1;
}

static const struct option opts[] = {
	{"churn", no_argument, NULL, 'C'},
	{"hosts", required_argument, NULL, 'H'},
	{"live", required_argument, NULL, 'L'},
	{"lifetime", required_argument, NULL, 'l'},
	{"interval", required_argument, NULL, 'i'},
	{"duration", required_argument, NULL, 'd'},
	{"procs", required_argument, NULL, 'p'},
	{"seed", required_argument, NULL, 's'},
	{"format", required_argument, NULL, 'f'},
	{"out", required_argument, NULL, 'o'},
	{"kafka", required_argument, NULL, 'k'},
	{"speedup", required_argument, NULL, 'x'},
	{"help", no_argument, NULL, 'h'},
	{},
};

/* The options that go together: 0, or -1 after a message. */
static int check_options(struct churn_args *a)
{
	a->o.hosts = a->sh.hosts;
	a->o.procs = a->sh.procs;
	a->o.seed = a->sh.seed;
	if (simulate_shared_check(&a->sh))
		return -1;
	if (a->speedup_set && !a->sh.sink.kafka)
		return cw_error("--speedup paces --kafka only");
	if (a->o.hosts * a->o.live > 4000000)
		return cw_error("--hosts x --live: at most 4000000 live "
				"connections");
	return 0;
}

static void report(const struct cw_sim_churn_stats *st, uint64_t speedup)
{
	char span[32], reached[48] = "";

	cw_fmt_duration(st->span_ns, span, sizeof(span));
	if (st->reached_ns < st->span_ns)
		snprintf(reached, sizeof(reached), "%.2f h of ",
			 (double)st->reached_ns / 3600e9);
	cw_info("churn: %" PRIu64 " connections between %zu hosts (%zu "
		"live throughout, %" PRIu64 " closed), %" PRIu64
		" records over %s%s simulated",
		st->made, st->hosts, st->live, st->closed, st->records,
		reached, span);
	if (st->paced)
		cw_info("churn: at most %.1f s behind the pace of %" PRIu64
			" simulated seconds a second",
			(double)st->lag_ns / 1e9, speedup);
}

int simulate_churn(int argc, char **argv)
{
	struct churn_args a = {.sh = {.hosts = 1000, .procs = 4, .seed = 1},
			       .o = {.live = 5,
				     .speedup = 480,
				     .lifetime_ns = 20 * 60 * NSEC_PER_SEC,
				     .interval_ns = 10 * 60 * NSEC_PER_SEC,
				     .duration_ns = 86400 * NSEC_PER_SEC}};
	struct cw_sim_churn_stats st;
	struct cw_sim_churn *ch;
	int ret;

	ret = cli_getopt("simulate", argc, argv, "H:L:i:d:p:s:f:o:k:x:h",
			 opts, churn_opt, &a, usage);
	if (ret)
		return ret == 1 ? 0 : ret;
	if (cli_one_operand(argc, argv, NULL) || check_options(&a))
		return 2;
	cw_catch_signals();
	ch = cw_sim_churn_new(&a.o, &a.sh.sink);
	if (!ch)
		return 1;
	cw_sim_churn_run(ch, &st);
	report(&st, a.o.speedup);
	if (cw_stop)
		cw_warn("stopped by a signal: the span is cut short");
	ret = cw_sim_churn_finish(ch) ? 1 : 0;
	cw_sim_churn_free(ch);
	return ret;
}
