// SPDX-License-Identifier: MIT
/*
 * causeway simulate: a synthetic fleet as agent records (sim/sim.h), for
 * tests, benchmarks and trying the graph commands without a fleet.  This
 * file reads the batch mode's options; --churn goes to
 * cli/simulate_churn.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/simulate.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/sim.h"

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

int simulate_u64(const char *opt, const char *val, uint64_t min, uint64_t max,
		 const char *want, uint64_t *out)
{
	if (cw_parse_u64(val, min, max, out))
		return cw_error("%s '%s': want %s", opt, val, want);
	return 0;
}

int simulate_shared_opt(struct simulate_shared *sh, int c, const char *arg)
{
	switch (c) {
	case 'H':
		return simulate_u64("--hosts", arg, 1, 1000000, "1 to 1000000",
				    &sh->hosts);
	case 'p':
		return simulate_u64("--procs", arg, 1, 64, "1 to 64",
				    &sh->procs);
	case 's':
		return simulate_u64("--seed", arg, 0, UINT64_MAX, "a number",
				    &sh->seed);
	case 'f':
		if (strcmp(arg, "json") && strcmp(arg, "wire"))
			return cw_error("--format '%s': want json or wire",
					arg);
		sh->format = arg;
		return 0;
	case 'o':
		sh->sink.out = arg;
		return 0;
	case 'k':
		sh->sink.kafka = arg;
		return 0;
	}
	return 1;
}

int simulate_shared_check(struct simulate_shared *sh)
{
	const char *out = sh->sink.out;
	size_t n = out ? strlen(out) : 0;

	if (sh->sink.kafka && (out || sh->format))
		return cw_error("--kafka publishes the records: no -o or "
				"--format");
	if (sh->format)
		sh->sink.wire = !strcmp(sh->format, "wire");
	else
		sh->sink.wire = n > 4 && !strcmp(out + n - 4, ".cww");
	return 0;
}

struct simulate_args {
	struct simulate_shared sh;
	struct cw_sim_fleet_opts fleet;
};

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

/* One option into ctx (struct simulate_args): 0, or -1 after a message. */
static int simulate_opt(void *ctx, int c, const char *arg)
{
	struct simulate_args *a = ctx;
	struct cw_sim_fleet_opts *o = &a->fleet;
	int ret = simulate_shared_opt(&a->sh, c, arg);

	if (ret <= 0)
		return ret;
	switch (c) {
	case 'c':
		return simulate_u64("--conns", arg, 1, 1000000, "1 to 1000000",
				    &o->conns);
	case 'U':
		o->units_out = arg;
		return 0;
	case 'C':
		o->hosts_out = arg;
		return 0;
	case 'P':
		if (strcmp(arg, "q1") && strcmp(arg, "q2"))
			return cw_error("--pattern '%s': want q1 or q2", arg);
		o->pattern = arg[1] - '0';
		return 0;
	case 'r':
		return simulate_u64("--rate", arg, 1, 100000000,
				    "1 to 100000000", &a->sh.sink.rate);
	}
	return -1;
}

/* The options that go together: 0, or -1 after a message. */
static int check_options(struct simulate_args *a)
{
	struct cw_sim_fleet_opts *o = &a->fleet;

	o->hosts = a->sh.hosts;
	o->procs = a->sh.procs;
	o->seed = a->sh.seed;
	if (!o->hosts || !o->conns)
		return cw_error("--hosts and --conns are required (see "
				"'causeway simulate --help')");
	if (simulate_shared_check(&a->sh))
		return -1;
	if (a->sh.sink.rate && !a->sh.sink.kafka)
		return cw_error("--rate paces --kafka only");
	if (o->hosts * o->conns > 200000000ULL)
		return cw_error("--hosts x --conns: at most 200000000 "
				"connections");
	return 0;
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
	struct simulate_args a = {.sh = {.procs = 4, .seed = 1}};
	int rc;

	if (churn_mode(argc, argv))
		return simulate_churn(argc, argv);
	rc = cli_getopt("simulate", argc, argv, "H:c:p:s:f:o:k:h", opts,
			simulate_opt, &a, usage);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (cli_one_operand(argc, argv, NULL) || check_options(&a))
		return 2;
	return cw_sim_fleet_write(&a.fleet, &a.sh.sink) ? 1 : 0;
}
