// SPDX-License-Identifier: MIT
/*
 * causeway simulate: a synthetic fleet as agent records (sim/sim.h), for
 * tests, benchmarks and trying the graph commands without a fleet: the
 * batch mode, or with --churn the churn mode.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/sim.h"

static const char help[] =
	"usage: causeway simulate --hosts N --conns M [--procs P] [--seed S]\n"
	"                         [--format json|wire] [-o FILE]\n"
	"                         [--units-out F] [--hosts-out F] [--pattern q1|q2]\n"
	"                         [--kafka BROKERS [--rate R]]\n"
	"\n"
	"Write the agent records of a synthetic fleet as JSON lines (or a\n"
	"wire stream file, what the correlator reads from Kafka): N hosts\n"
	"running P processes each from service tiers (nginx -> app -> redis,\n"
	"postgres; batch jobs), M client connections per host with\n"
	"heavy-tailed bytes, both ends of each on their hosts, a few\n"
	"external peers and some ends whose partner was not watched.\n"
	"\n"
	"  -H, --hosts N   hosts, 1 to 1000000\n"
	"  -c, --conns M   client connections per host, 1 to 1000000\n"
	"  -p, --procs P   processes per host, 1 to 64 (default 4)\n"
	"  -s, --seed S    random seed (default 1): the same seed, the same file\n"
	"  -f, --format F  json (JSON lines, the default) or wire (protobuf\n"
	"                  envelopes in CRC-checked frames, as 'causeway dump'\n"
	"                  reads); with -o FILE.cww, wire\n"
	"  -o, --out FILE  write FILE (default standard output)\n"
	"  --units-out F   also write the placement units as CSV (container, cpu,\n"
	"                  memory, host, pod, workload, namespace, kind), for\n"
	"                  'causeway place -U'\n"
	"  --hosts-out F   also write the hosts' capacities as CSV (host, cpu,\n"
	"                  memory), for 'causeway place -H'\n"
	"  --pattern Q     the SAC'20 paper's traffic instead of the tiers: q1,\n"
	"                  workers scanning from storage servers; q2, workers\n"
	"                  shuffling among themselves (process 0 of each host\n"
	"                  stores, the others work; all in containers)\n"
	"  -k, --kafka B   publish the records to P.conns on brokers B instead,\n"
	"                  through the agents' producer\n"
	"  --rate R        with --kafka, R records a second (default: as fast\n"
	"                  as the brokers take them)\n"
	"  --churn ...     the churn mode: hosts whose connections open and\n"
	"                  close over simulated time, paced for a broker (see\n"
	"                  'causeway simulate --churn --help')\n"
	"\n"
	"Examples:\n"
	"  causeway simulate --hosts 20 --conns 50 -o fleet.jsonl\n"
	"  causeway simulate -H 1000 -c 1000 --format wire -o fleet.cww\n"
	"  causeway simulate -H 1000 -c 1000 | causeway graph --by host -\n";

static const char churn_help[] =
	"usage: causeway simulate --churn [--hosts N] [--live L] [--lifetime D]\n"
	"                         [--interval D] [--duration D] [--procs P] [--seed S]\n"
	"                         [--format json|wire] [-o FILE | --kafka B [--speedup X]]\n"
	"\n"
	"The records of a fleet whose connections come and go: N hosts each\n"
	"keep L client connections open to servers of the next tier; each lives\n"
	"D/2 to 3D/2 (--lifetime D), is closed and replaced by a new one (new\n"
	"port, new cookies).  Both ends publish a record every --interval while\n"
	"live and a closed record at the end, in time order; the span's last\n"
	"collection flushes the ends still live.  The defaults are a day of a\n"
	"1,000-host fleet (360,000 connections, about 1.8 million records) in\n"
	"three minutes.\n"
	"\n"
	"  -H, --hosts N     hosts, 1 to 1000000 (default 1000)\n"
	"  -L, --live L      live connections per host, 1 to 20000 (default 5)\n"
	"      --lifetime D  mean connection lifetime, 1ms to 30d (default 20m)\n"
	"  -i, --interval D  the agents' collection interval, 1ms to 1d (default 10m)\n"
	"  -d, --duration D  the simulated span, 1s to 366d (default 1d)\n"
	"  -p, --procs P     processes per host, 1 to 64 (default 4)\n"
	"  -s, --seed S      random seed (default 1): the same seed, the same file\n"
	"  -f, --format F    json (the default) or wire; with -o FILE.cww, wire\n"
	"  -o, --out FILE    write FILE (default standard output); the span starts\n"
	"                    at 2026-01-01T00:00:00Z\n"
	"  -k, --kafka B     publish to P.conns on brokers B through the agents'\n"
	"                    producer; the span ends as the run does\n"
	"  -x, --speedup X   with --kafka, X simulated seconds per second, 0 to\n"
	"                    10000000 (default 480: a day in three minutes; 0: as\n"
	"                    fast as the brokers take them)\n"
	"\n"
	"Examples:\n"
	"  causeway simulate --churn -o day.cww\n"
	"  causeway simulate --churn -H 20 -L 10 --lifetime 1m -d 1h -o hour.jsonl\n"
	"  causeway simulate --churn --kafka 127.0.0.1:9092\n"
	"  causeway simulate --churn -H 10000 -L 100 --lifetime 1m -i 1m \\\n"
	"      -d 10m --kafka kafka1:9092 --speedup 1\n";

static const char *const formats[] = {"json", "wire", NULL};
static const char *const patterns[] = {"q1", "q2", NULL};

static const struct cw_sim_churn_opts churn_defaults = {
	.live = 5,
	.speedup = 480,
	.lifetime_ns = 20 * 60 * NSEC_PER_SEC,
	.interval_ns = 10 * 60 * NSEC_PER_SEC,
	.duration_ns = 86400 * NSEC_PER_SEC};

struct simulate_args {
	struct cw_sim_fleet_opts fleet;
	struct cw_sim_churn_opts churn;
	struct cw_sim_sink sink;
	int format, pattern;
	bool churn_mode, speedup_set;
	uint64_t speedup;
};

/* --churn among the arguments: its help, and its defaults. */
static bool churn_mode(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--churn"))
			return true;
	return false;
}

/* The options that go together, and the sink's format: 0, or -1. */
static int check_options(struct simulate_args *a)
{
	struct cw_sim_fleet_opts *f = &a->fleet;
	struct cw_sim_churn_opts *c = &a->churn;
	const char *out = a->sink.out;
	size_t n = out ? strlen(out) : 0;

	if (a->sink.kafka && (out || a->format >= 0))
		return cw_error("--kafka publishes the records: no -o or "
				"--format");
	a->sink.wire = a->format >= 0 ? a->format == 1
				      : n > 4 && !strcmp(out + n - 4, ".cww");
	if (a->churn_mode) {
		c->hosts = f->hosts ? f->hosts : 1000;
		c->procs = f->procs, c->seed = f->seed;
		if (f->conns || f->units_out || f->hosts_out || a->pattern ||
		    a->sink.rate)
			return cw_error("--conns, --units-out, --hosts-out, "
					"--pattern and --rate are not for "
					"--churn");
		if (a->speedup_set && !a->sink.kafka)
			return cw_error("--speedup paces --kafka only");
		c->speedup = a->speedup_set ? a->speedup : c->speedup;
		if (c->hosts * c->live > 4000000)
			return cw_error("--hosts x --live: at most 4000000 "
					"live connections");
		return 0;
	}
	if (a->speedup_set || memcmp(c, &churn_defaults, sizeof(*c)))
		return cw_error("--live, --lifetime, --interval, --duration "
				"and --speedup go with --churn");
	if (!f->hosts || !f->conns)
		return cw_error("--hosts and --conns are required (see "
				"'causeway simulate --help')");
	if (a->sink.rate && !a->sink.kafka)
		return cw_error("--rate paces --kafka only");
	if (f->hosts * f->conns > 200000000ULL)
		return cw_error("--hosts x --conns: at most 200000000 "
				"connections");
	f->pattern = a->pattern;
	return 0;
}

static int speedup_opt(const struct cw_opt *o, const char *arg)
{
	struct simulate_args *a = o->to;

	if (cw_parse_u64(arg, 0, 10000000, &a->speedup))
		return cw_opts_bad("--speedup", arg, "a number from 0 to 10000000"),
		       -1;
	a->speedup_set = true;
	return 0;
}

int cmd_simulate(int argc, char **argv)
{
	const uint64_t day = 86400 * NSEC_PER_SEC;
	struct simulate_args a = {
		.fleet = {.procs = 4, .seed = 1},
		.churn = churn_defaults,
		.format = -1,
		.churn_mode = churn_mode(argc, argv)};
	struct cw_sim_fleet_opts *f = &a.fleet;
	struct cw_sim_churn_opts *c = &a.churn;
	const struct cw_opt t[] = {
		CW_OPT_FLAG("churn", 0, &a.churn_mode),
		CW_OPT_U64("hosts", 'H', &f->hosts, 1, 1000000),
		CW_OPT_U64("procs", 'p', &f->procs, 1, 64),
		CW_OPT_U64("seed", 's', &f->seed, 0, UINT64_MAX),
		CW_OPT_ENUM("format", 'f', &a.format, formats),
		CW_OPT_STR("out", 'o', &a.sink.out),
		CW_OPT_STR("kafka", 'k', &a.sink.kafka),
		/* the batch mode */
		CW_OPT_U64("conns", 'c', &f->conns, 1, 1000000),
		CW_OPT_STR("units-out", 0, &f->units_out),
		CW_OPT_STR("hosts-out", 0, &f->hosts_out),
		CW_OPT_ENUM("pattern", 0, &a.pattern, patterns),
		CW_OPT_U64("rate", 0, &a.sink.rate, 1, 100000000),
		/* the churn mode */
		CW_OPT_U64("live", 'L', &c->live, 1, 20000),
		CW_OPT_DUR("lifetime", 0, &c->lifetime_ns, NSEC_PER_MSEC,
			30 * day),
		CW_OPT_DUR("interval", 'i', &c->interval_ns, NSEC_PER_MSEC, day),
		CW_OPT_DUR("duration", 'd', &c->duration_ns, NSEC_PER_SEC,
			366 * day),
		CW_OPT_CALL("speedup", 'x', &a, speedup_opt),
		{0}};
	int rc;

	/* --pattern q1|q2 is 1 or 2; none is 0 */
	a.pattern = -1;
	rc = cw_opts_parse("simulate", t, argc, argv,
		       a.churn_mode ? churn_help : help);
	a.pattern++;
	if (rc >= 0)
		return rc;
	if (cw_opts_one_operand(argc, argv, NULL) || check_options(&a))
		return 2;
	if (a.churn_mode)
		return cw_sim_churn(c, &a.sink) ? 1 : 0;
	return cw_sim_fleet_write(f, &a.sink) ? 1 : 0;
}
