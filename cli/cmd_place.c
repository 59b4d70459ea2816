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
#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"
#include "place/cmd.h"

struct place_cmd {
	struct cw_place_input in;
	struct cw_place_result res;
	enum cw_place_format format;
};

static const char help[] =
	"usage: causeway place [-H HOSTS.csv] [-U UNITS.csv]\n"
	"                      [--unit container|pod|workload]\n"
	"                      [--method ga|partition|ilp|all] [--max-moves N]\n"
	"                      [--hosts fewest|consolidate|fixed]\n"
	"                      [--max-hosts N] [--headroom F] [--seed S]\n"
	"                      [--time-limit SEC] [--since T] [--until T]\n"
	"                      [--format table|json|k8s|appgroup] [--namespace NS]\n"
	"                      [-o FILE] GRAPH.json | RECORDS... | --kafka BROKERS\n"
	"\n"
	"Plan where each unit (container, pod or workload) should run, from the\n"
	"measured traffic, the hosts' capacities and the units' CPU and memory.  In\n"
	"order: every host within capacity less headroom; no more cross-host bytes\n"
	"than now; the fewest hosts; the fewest cross-host bytes; the fewest moves\n"
	"(each plan's hosts are renamed so the most units stay where they run).\n"
	"Processes outside containers stay.  The traffic: a graph ('causeway graph\n"
	"--format json'), agent record files or Kafka; a graph with no traffic\n"
	"between its units is refused.  Without -U and -H the units' CPU and memory\n"
	"and the hosts' capacities as the agents measured.\n"
	"\n"
	"  -H, --hosts-file F  CSV host,cpu,memory (cpu in cores or 500m, memory\n"
	"                      in bytes or 64Gi, 2G)\n"
	"  -U, --units F       CSV unit,cpu,memory[,host,pod,workload,namespace,kind]:\n"
	"                      unit a container id (or its first 12 characters)\n"
	"                      or 'HOST (no container)'\n"
	"  -u, --unit U        what moves: container (default), pod, workload\n"
	"  -m, --method M      partition (default), ga, ilp (GLPK, small only), all\n"
	"                      (all: the best; on a tie the fewest moves)\n"
	"      --hosts H       fewest (default): the fewest hosts that keep the\n"
	"                      cross-host bytes at most today's;\n"
	"                      consolidate: the fewest hosts even if the bytes rise\n"
	"                      (the plan's first line says by how much);\n"
	"                      fixed: the fewest bytes on the hosts there are\n"
	"      --max-moves N   the best plan moving at most N units\n"
	"      --max-hosts N   use at most N hosts (those of pinned units, then\n"
	"                      the largest)\n"
	"      --headroom F    capacity kept free, 0 to 0.9 (default 0.1)\n"
	"  -s, --seed S        the genetic algorithm's seed (default 1)\n"
	"      --time-limit T  seconds for ilp (default 60)\n"
	"  -k, --kafka B       read the conns and meta topics of brokers B\n"
	"      --kafka-config F  librdkafka properties file\n"
	"      --topic-prefix P  topics P.conns, P.meta (default causeway)\n"
	"      --idle D        Kafka: stop after D with no record (default 3s)\n"
	"      --since T, --until T  only the traffic in [T, T'): seconds since\n"
	"                      the epoch, 'now', -DURATION (-10m), a UTC\n"
	"                      'YYYY-MM-DD HH:MM[:SS]' or RFC 3339\n"
	"      --window D      records: the range's grain (default 1s)\n"
	"  -f, --format F      table (default), json, k8s (node and pod affinity),\n"
	"                      appgroup (diktyo AppGroup)\n"
	"      --namespace NS  for units with none (default 'default')\n"
	"  -o, --out FILE      write FILE (whole or not at all)\n"
	"\n"
	"Exit status: 0 a plan, 1 bad input or no plan, 2 bad usage.\n"
	"\n"
	"EXAMPLES\n"
	"  # the fewest hosts without more cross-host bytes, fewest moves\n"
	"  causeway place -H hosts.csv -U units.csv g.json\n"
	"  # free hosts even at the price of bytes: the first line says the price\n"
	"  causeway place -H hosts.csv -U units.csv --hosts consolidate g.json\n"
	"  # every method side by side, the best (then fewest moves) chosen\n"
	"  causeway place --method all --time-limit 10 conns.jsonl\n"
	"  # the 3 moves that save most, on the hosts there are\n"
	"  causeway place -H hosts.csv --kafka k1:9092 --max-moves 3\n"
	"  # the last hour of the fleet as an AppGroup\n"
	"  causeway place --kafka k1:9092 --since -1h --unit workload --format appgroup\n";

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

static const char *const units[] = {"container", "pod", "workload", NULL};
static const char *const methods[] = {"ga", "partition", "ilp", "all", NULL};
static const char *const hosts[] = {"fewest", "consolidate", "fixed", NULL};
static const char *const formats[] = {"table", "json", "k8s", "appgroup",
				      NULL};

/* The options into c and *out; -1 to go on, else the exit status. */
static int parse_args(struct place_cmd *c, const char **out, int argc,
		      char **argv)
{
	struct cw_place_input *in = &c->in;
	int method = CW_PLACE_PARTITION, fixed = 0;
	uint64_t moves = UINT64_MAX, max_hosts = 0, limit = 0;
	struct cw_kafka_conf kc = {0};
	const struct cw_opt t[] = {
		CW_OPT_STR("hosts-file", 'H', &in->hosts_path),
		CW_OPT_STR("units", 'U', &in->units_path),
		CW_OPT_ENUM("unit", 'u', &in->by, units),
		CW_OPT_ENUM("method", 'm', &method, methods),
		CW_OPT_ENUM("hosts", 0, &fixed, hosts),
		CW_OPT_U64("max-moves", 0, &moves, 0, 1000000000),
		CW_OPT_U64("max-hosts", 0, &max_hosts, 1, 100000000),
		CW_OPT_REAL("headroom", 0, &in->p.headroom, 0, 0.9),
		CW_OPT_U64("seed", 's', &in->p.seed, 0, UINT64_MAX),
		CW_OPT_U64("time-limit", 0, &limit, 1, 86400),
		CW_OPT_ENUM("format", 'f', &c->format, formats),
		CW_OPT_STR("namespace", 'n', &in->ns),
		CW_OPT_STR("out", 'o', out),
		CLI_KAFKA(&kc),
		CW_OPT_DUR("idle", 0, &in->idle_ns, NSEC_PER_MSEC,
			3600 * NSEC_PER_SEC),
		CW_OPT_DUR("window", 0, &in->window_ns, NSEC_PER_MSEC,
			86400 * NSEC_PER_SEC),
		CW_OPT_TIME("since", 0, &in->since_ns),
		CW_OPT_TIME("until", 0, &in->until_ns),
		{0}};
	int rc = cw_opts_parse("place", t, argc, argv, help);

	c->res.all = method == 3;
	c->res.method = c->res.all ? CW_PLACE_PARTITION : method;
	in->p.fixed_hosts = fixed == 2;
	in->p.consolidate = fixed == 1;
	if (moves != UINT64_MAX)
		in->p.max_moves = (long)moves;
	in->p.host_limit = max_hosts ? max_hosts : in->p.host_limit;
	in->p.time_limit = limit ? (double)limit : in->p.time_limit;
	in->brokers = kc.brokers;
	in->kafka_properties = kc.properties;
	in->topic_prefix = kc.topic_prefix;
	return rc;
}

int cmd_place(int argc, char **argv)
{
	struct place_cmd c = {.res.method = CW_PLACE_PARTITION};
	const char *out = NULL;
	int r;

	cw_place_input_init(&c.in);
	c.in.measure = measure;
	c.in.p.headroom = 0.1;
	r = parse_args(&c, &out, argc, argv);
	if (r < 0 && cw_place_inputs(&c.in, argc - optind, argv + optind))
		r = 2;
	else if (r < 0)
		r = cw_place_run(&c.in, &c.res, c.format, out) ? 1 : 0;
	cw_place_result_release(&c.res);
	cw_place_input_release(&c.in);
	return r;
}
