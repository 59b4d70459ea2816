// SPDX-License-Identifier: MIT
/*
 * causeway place: a placement plan from the measured traffic (the JSON of
 * 'causeway graph --format json', agent record files, or Kafka), the
 * hosts' capacities and the units' CPU and memory, by the genetic
 * algorithm, our partitioning or the integer program; as a table, JSON,
 * Kubernetes affinities or an AppGroup.
 * The work is in place/ (place.h); this file reads the options, and
 * hands place the correlator's reader for records and Kafka.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "place/place.h"

struct place_cmd {
	struct cw_place_input in;
	struct cw_place_result res;
	enum cw_place_format format;
};

static int bad_value(const char *opt, const char *val, const char *want)
{
	cw_error("%s '%s': want %s", opt, val, want);
	return 2;
}

static void usage(FILE *fp)
{
	fputs("usage: causeway place [-H HOSTS.csv] [-U UNITS.csv]\n"
	      "                      [--unit container|pod|workload]\n"
	      "                      [--method ga|partition|ilp|all] "
	      "[--max-moves N]\n"
	      "                      [--hosts fewest|consolidate|fixed]\n"
	      "                      [--max-hosts N] [--headroom F] [--seed "
	      "S]\n"
	      "                      [--time-limit SEC] [--since T] [--until "
	      "T]\n"
	      "                      [--format table|json|k8s|appgroup] "
	      "[--namespace NS]\n"
	      "                      [-o FILE] GRAPH.json | RECORDS... | "
	      "--kafka BROKERS\n"
	      "\n"
	      "Plan where each unit (container, pod or workload) should run, "
	      "from the\n"
	      "measured traffic, the hosts' capacities and the units' CPU and "
	      "memory.  In\n"
	      "order: every host within capacity less headroom; no more "
	      "cross-host bytes\n"
	      "than now; the fewest hosts; the fewest cross-host bytes; the "
	      "fewest moves\n"
	      "(each plan's hosts are renamed so the most units stay where "
	      "they run).\n"
	      "Processes outside containers stay.  The traffic: a graph "
	      "('causeway graph\n"
	      "--format json'), agent record files or Kafka; a graph with no "
	      "traffic\n"
	      "between its units is refused.  Without -U and -H the units' CPU "
	      "and memory\n"
	      "and the hosts' capacities as the agents measured.\n"
	      "\n"
	      "  -H, --hosts-file F  CSV host,cpu,memory (cpu in cores or "
	      "500m, "
	      "memory\n"
	      "                      in bytes or 64Gi, 2G)\n"
	      "  -U, --units F       CSV unit,cpu,memory[,host,pod,workload,"
	      "namespace,kind]:\n"
	      "                      unit a container id (or its first 12 "
	      "characters)\n"
	      "                      or 'HOST (no container)'\n"
	      "  -u, --unit U        what moves: container (default), pod, "
	      "workload\n"
	      "  -m, --method M      partition (default), ga, ilp (GLPK, small "
	      "only), all\n"
	      "                      (all: the best; on a tie the fewest "
	      "moves)\n"
	      "      --hosts H       fewest (default): the fewest hosts that "
	      "keep the\n"
	      "                      cross-host bytes at most today's;\n"
	      "                      consolidate: the fewest hosts even if the "
	      "bytes rise\n"
	      "                      (the plan's first line says by how "
	      "much);\n"
	      "                      fixed: the fewest bytes on the hosts "
	      "there "
	      "are\n"
	      "      --max-moves N   the best plan moving at most N units\n"
	      "      --max-hosts N   use at most N hosts (those of pinned "
	      "units, "
	      "then\n"
	      "                      the largest)\n"
	      "      --headroom F    capacity kept free, 0 to 0.9 (default "
	      "0.1)\n"
	      "  -s, --seed S        the genetic algorithm's seed (default 1)\n"
	      "      --time-limit T  seconds for ilp (default 60)\n"
	      "  -k, --kafka B       read the conns and meta topics of brokers "
	      "B\n"
	      "      --kafka-config F  librdkafka properties file\n"
	      "      --topic-prefix P  topics P.conns, P.meta (default "
	      "causeway)\n"
	      "      --idle D        Kafka: stop after D with no record "
	      "(default "
	      "3s)\n"
	      "      --since T, --until T  only the traffic in [T, T'): "
	      "seconds "
	      "since\n"
	      "                      the epoch, 'now' or -DURATION (-10m)\n"
	      "      --window D      records: the range's grain (default 1s)\n"
	      "  -f, --format F      table (default), json, k8s (node and pod "
	      "affinity),\n"
	      "                      appgroup (diktyo AppGroup)\n"
	      "      --namespace NS  for units with none (default 'default')\n"
	      "  -o, --out FILE      write FILE (whole or not at all)\n"
	      "\n"
	      "Exit status: 0 a plan, 1 bad input or no plan, 2 bad usage.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  # the fewest hosts without more cross-host bytes, fewest "
	      "moves\n"
	      "  causeway place -H hosts.csv -U units.csv g.json\n"
	      "  # free hosts even at the price of bytes: the first line says "
	      "the price\n"
	      "  causeway place -H hosts.csv -U units.csv --hosts consolidate "
	      "g.json\n"
	      "  # every method side by side, the best (then fewest moves) "
	      "chosen\n"
	      "  causeway place --method all --time-limit 10 conns.jsonl\n"
	      "  # the 3 moves that save most, on the hosts there are\n"
	      "  causeway place -H hosts.csv --kafka k1:9092 --max-moves 3\n"
	      "  # the last hour of the fleet as an AppGroup\n"
	      "  causeway place --kafka k1:9092 --since -1h --unit workload "
	      "--format appgroup\n",
	      fp);
}

/* A point in time (cw_time_arg); 0, or 2 (told).  The epoch itself is
 * no time to ask for. */
static int parse_time(const char *opt, const char *arg, uint64_t *out)
{
	if (cw_time_arg(opt, arg, cw_now_real_ns(), out))
		return 2;
	if (!*out)
		return bad_value(opt, arg, "a time after the epoch");
	return 0;
}

/* The options of the measured route; 0, 1 (not one of them) or 2. */
static int parse_source(struct place_cmd *c, int opt, const char *arg)
{
	switch (opt) {
	case 'k':
		c->in.brokers = arg;
		return 0;
	case 'C':
		c->in.kafka_properties = arg;
		return 0;
	case 'P':
		c->in.topic_prefix = arg;
		return 0;
	case 'I':
		return cli_duration("--idle", arg, NSEC_PER_MSEC,
				    3600 * NSEC_PER_SEC, &c->in.idle_ns)
			       ? 2
			       : 0;
	case 'W':
		return cli_duration("--window", arg, NSEC_PER_MSEC,
				    86400 * NSEC_PER_SEC, &c->in.window_ns)
			       ? 2
			       : 0;
	case 'S':
		return parse_time("--since", arg, &c->in.since_ns);
	case 'E':
		return parse_time("--until", arg, &c->in.until_ns);
	}
	return 1;
}

/*
 * One option's value into c; 0, or 2 (bad usage, line printed).  One case
 * per option, as the option table reads: longer than 80 lines for that.
 */
static int parse_option(struct place_cmd *c, int opt, const char *arg)
{
	uint64_t v;
	double d;
	char *end;

	switch (opt) {
	case 'H':
		c->in.hosts_path = arg;
		return 0;
	case 'U':
		c->in.units_path = arg;
		return 0;
	case 'u':
		if (!strcmp(arg, "container"))
			c->in.by = CW_PLACE_BY_CONTAINER;
		else if (!strcmp(arg, "pod"))
			c->in.by = CW_PLACE_BY_POD;
		else if (!strcmp(arg, "workload"))
			c->in.by = CW_PLACE_BY_WORKLOAD;
		else
			return bad_value("--unit", arg,
					 "container, pod or workload");
		return 0;
	case 'm':
		c->res.all = !strcmp(arg, "all");
		if (!c->res.all && cw_place_method_parse(arg, &c->res.method))
			return bad_value("--method", arg,
					 "ga, partition, ilp or all");
		return 0;
	case 'F':
		if (strcmp(arg, "fixed") && strcmp(arg, "fewest") &&
		    strcmp(arg, "consolidate"))
			return bad_value("--hosts", arg,
					 "fewest, consolidate or fixed");
		c->in.p.fixed_hosts = !strcmp(arg, "fixed");
		c->in.p.consolidate = !strcmp(arg, "consolidate");
		return 0;
	case 'M':
		if (cw_parse_u64(arg, 0, 1000000000, &v))
			return bad_value("--max-moves", arg, "0 or more");
		c->in.p.max_moves = (long)v;
		return 0;
	case 'r':
		d = strtod(arg, &end);
		if (*end || end == arg || !(d >= 0 && d <= 0.9))
			return bad_value("--headroom", arg, "0 to 0.9");
		c->in.p.headroom = d;
		return 0;
	case 's':
		if (cw_parse_u64(arg, 0, UINT64_MAX, &c->in.p.seed))
			return bad_value("--seed", arg, "a number");
		return 0;
	case 'T':
		if (cw_parse_u64(arg, 1, 86400, &v))
			return bad_value("--time-limit", arg, "1 to 86400");
		c->in.p.time_limit = (double)v;
		return 0;
	case 'f':
		if (!strcmp(arg, "table"))
			c->format = CW_PLACE_FMT_TABLE;
		else if (!strcmp(arg, "json"))
			c->format = CW_PLACE_FMT_JSON;
		else if (!strcmp(arg, "k8s"))
			c->format = CW_PLACE_FMT_K8S;
		else if (!strcmp(arg, "appgroup"))
			c->format = CW_PLACE_FMT_APPGROUP;
		else
			return bad_value("--format", arg,
					 "table, json, k8s or appgroup");
		return 0;
	case 'n':
		c->in.ns = arg;
		return 0;
	case 'K':
		if (cw_parse_u64(arg, 1, 100000000, &v))
			return bad_value("--max-hosts", arg, "1 or more");
		c->in.p.host_limit = (size_t)v;
		return 0;
	}
	return parse_source(c, opt, arg);
}

static int run(struct place_cmd *c, const char *out)
{
	struct cw_outfile of = {0};
	FILE *fp = stdout;

	if (cw_place_input_load(&c->in) || cw_place_choose(&c->in, &c->res))
		return 1;
	if (out) {
		if (cw_outfile_open(&of, out))
			return 1;
		fp = of.fp;
	}
	cw_place_write(&c->in, &c->res, c->format, fp);
	if (out)
		return cw_outfile_commit(&of) ? 1 : 0;
	if (fflush(stdout) || ferror(stdout))
		return cw_error("unable to write to standard output"), 1;
	return 0;
}

/* Records or Kafka into the graph JSON place reads, by the correlator. */
static int measure(struct cw_place_input *in)
{
	struct cw_measured m = {
		.records = in->records,
		.nrecords = in->nrecords,
		.brokers = in->brokers,
		.kafka_properties = in->kafka_properties,
		.topic_prefix = in->topic_prefix,
		.idle_ns = in->idle_ns,
		.since_ns = in->since_ns,
		.until_ns = in->until_ns,
		.window_ns = in->window_ns,
		.name = in->graph_name,
	};
	int ret = cw_measured_graph(&m);

	in->graph_text = m.json;
	in->graph_len = m.len;
	return ret;
}

/* The inputs: one graph, record files, or Kafka; 0 or 2 (told). */
static int sources(struct place_cmd *c, int n, char **paths)
{
	int i;

	if (c->in.since_ns && c->in.until_ns &&
	    c->in.since_ns >= c->in.until_ns) {
		cw_error("--since is not before --until");
		return 2;
	}
	if (c->in.brokers) {
		if (n) {
			cw_error("--kafka reads the topics: it takes no INPUT");
			return 2;
		}
		return 0;
	}
	if (!n) {
		cw_error("no input: give a GRAPH.json, record files or "
			 "--kafka (see 'causeway place --help')");
		return 2;
	}
	if (n == 1 && !cw_place_is_records(paths[0])) {
		c->in.graph_path = paths[0];
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!cw_place_is_records(paths[i])) {
			cw_error("'%s' is not a record file (JSON lines or "
				 "wire): give one graph, or record files",
				 paths[i]);
			return 2;
		}
	c->in.records = paths;
	c->in.nrecords = (size_t)n;
	return 0;
}

int cmd_place(int argc, char **argv)
{
	static const struct option opts[] = {
		{"hosts-file", required_argument, NULL, 'H'},
		{"units", required_argument, NULL, 'U'},
		{"unit", required_argument, NULL, 'u'},
		{"method", required_argument, NULL, 'm'},
		{"hosts", required_argument, NULL, 'F'},
		{"max-moves", required_argument, NULL, 'M'},
		{"max-hosts", required_argument, NULL, 'K'},
		{"headroom", required_argument, NULL, 'r'},
		{"seed", required_argument, NULL, 's'},
		{"time-limit", required_argument, NULL, 'T'},
		{"format", required_argument, NULL, 'f'},
		{"namespace", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"kafka", required_argument, NULL, 'k'},
		{"kafka-config", required_argument, NULL, 'C'},
		{"topic-prefix", required_argument, NULL, 'P'},
		{"idle", required_argument, NULL, 'I'},
		{"window", required_argument, NULL, 'W'},
		{"since", required_argument, NULL, 'S'},
		{"until", required_argument, NULL, 'E'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct place_cmd c = {.res.method = CW_PLACE_PARTITION};
	const char *out = NULL;
	int opt, r;

	cw_place_input_init(&c.in);
	c.in.measure = measure;
	c.in.p.headroom = 0.1;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "H:U:u:m:s:f:n:o:k:h", opts,
				  NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'o') {
			out = optarg;
			continue;
		}
		r = opt == '?' || opt == ':' ? 1
					     : parse_option(&c, opt, optarg);
		if (r == 1)
			return cli_bad_option("place", argv);
		if (r)
			return r;
	}
	r = sources(&c, argc - optind, argv + optind);
	if (!r)
		r = run(&c, out);
	cw_place_result_release(&c.res);
	cw_place_input_release(&c.in);
	return r;
}
