// SPDX-License-Identifier: MIT
/*
 * The instance 'causeway place' builds from its files (graph JSON, hosts
 * and units tables), the plan it chooses and the outputs it writes, through
 * place.h: nodes to rows by container id prefix and by 'HOST (no
 * container)', traffic summed per pair, external ends counted apart, and
 * the bad inputs that name their file and row.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "correlator/pipeline.h"
#include "place/place.h"

static char dir[] = "/tmp/cw-test-place-load-XXXXXX";
static char graph[300], hosts[300], units[300];

static void put(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	CHECK(fp != NULL);
	if (!fp)
		return;
	fputs(text, fp);
	fclose(fp);
}

#define IDA "aaaaaaaaaaaa0123456789"
#define IDB "bbbbbbbbbbbb0123456789"
#define IDC "cccccccccccc0123456789"

static const char *graph_json =
	"{\"nodes\":["
	"{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"" IDA "\"},"
	"{\"kind\":\"process\",\"host\":\"h1\",\"container\":\"" IDB "\"},"
	"{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"\"},"
	"{\"kind\":\"external\",\"host\":\"10.0.0.9\"}],"
	"\"edges\":["
	"{\"client\":0,\"server\":1,\"bytes_c2s\":1000,\"bytes_s2c\":500,"
	"\"first_ns\":5000000000,\"last_ns\":7000000000},"
	"{\"client\":1,\"server\":0,\"bytes_c2s\":20,\"bytes_s2c\":0,"
	"\"first_ns\":4000000000,\"last_ns\":6000000000},"
	"{\"client\":0,\"server\":2,\"bytes_c2s\":100,\"bytes_s2c\":0},"
	"{\"client\":2,\"server\":3,\"bytes_c2s\":50,\"bytes_s2c\":0}]}";

/* Load the files as they stand; 0 or -1, the instance released. */
static int load(enum cw_place_by by, struct cw_place_input *in)
{
	cw_place_input_init(in);
	in->graph_path = graph;
	in->hosts_path = hosts;
	in->units_path = units;
	in->by = by;
	in->p.headroom = 0.1;
	return cw_place_input_load(in);
}

static char *write_fmt(const struct cw_place_input *in,
		       const struct cw_place_result *res,
		       enum cw_place_format f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	CHECK(fp != NULL);
	if (!fp)
		return NULL;
	cw_place_write(in, res, f, fp);
	fclose(fp);
	return buf;
}

static void test_good(void)
{
	struct cw_place_input in;
	struct cw_place_result res = {.method = CW_PLACE_PARTITION};
	char *s;
	size_t i;

	put(hosts, "host,cpu,memory\nh0,4,8Gi\nh1,4,8Gi\n");
	put(units, "unit,cpu,memory,pod,kind\n"
		   "aaaaaaaaaaaa,1,1Gi,web,\n"
		   "bbbbbbbbbbbb,500m,1Gi,db,StatefulSet\n"
		   "h0 (no container),0.5,1Gi,,\n");
	put(graph, graph_json);
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == 0);
	CHECK(in.p.nunits == 3 && in.p.nhosts == 2);
	CHECK(in.p.units[0].host == 0 && in.p.units[1].host == 1);
	CHECK(in.p.units[2].host == 0 && !in.p.units[2].movable);
	CHECK(in.p.units[1].cpu == 0.5);
	/* both directions of a-b merged; the external end only counted */
	CHECK(in.p.nlinks == 2);
	for (i = 0; i < in.p.nlinks; i++)
		CHECK(in.p.links[i].bytes ==
		      (in.p.links[i].b == 1 ? 1520u : 100u));
	CHECK(in.outside_bytes == 50);
	CHECK(in.first_ns == 4000000000ull && in.last_ns == 7000000000ull);

	CHECK(cw_place_choose(&in, &res) == 0);
	CHECK(res.best == CW_PLACE_PARTITION && res.ok[res.best]);
	CHECK(res.before.hosts_used == 2 && res.before.cross_bytes == 1520);
	CHECK(res.plans[res.best].hosts_used == 1);
	CHECK(res.plans[res.best].cross_bytes == 0);
	s = write_fmt(&in, &res, CW_PLACE_FMT_TABLE);
	CHECK(s && strstr(s, "# partition: 1 of 2 hosts in use (2 now)"));
	free(s);
	s = write_fmt(&in, &res, CW_PLACE_FMT_K8S);
	CHECK(s && strstr(s, "kind: \"StatefulSet\"") &&
	      strstr(s, "values: [\"h0\"]") && !strstr(s, "no container"));
	free(s);
	s = write_fmt(&in, &res, CW_PLACE_FMT_APPGROUP);
	/* 1520 bytes over 3 s: 507 per second, rounded up */
	CHECK(s && strstr(s, "numMembers: 2") &&
	      strstr(s, "minBandwidth: \"507\""));
	free(s);
	cw_place_result_release(&res);
	cw_place_input_release(&in);

	/* by pod: the pod names become the units */
	CHECK(load(CW_PLACE_BY_POD, &in) == 0);
	CHECK(in.p.nunits == 3 && !strcmp(in.p.units[0].name, "web"));
	cw_place_input_release(&in);
}

static void test_bad(void)
{
	struct cw_place_input in;

	/* a process outside containers with no row */
	put(hosts, "host,cpu,memory\nh0,4,8Gi\nh1,4,8Gi\n");
	put(units, "unit,cpu,memory\naaaaaaaaaaaa,1,1Gi\nbbbbbbbbbbbb,1,1Gi\n");
	put(graph, graph_json);
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == -1);
	cw_place_input_release(&in);

	/* a host the hosts file does not list */
	put(hosts, "host,cpu,memory\nh0,4,8Gi\n");
	put(units, "unit,cpu,memory\naaaaaaaaaaaa,1,1Gi\nbbbbbbbbbbbb,1,1Gi\n"
		   "h0 (no container),1,1Gi\n");
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == -1);
	cw_place_input_release(&in);

	/* an edge past the nodes, not a graph, an empty graph */
	put(hosts, "host,cpu,memory\nh0,4,8Gi\nh1,4,8Gi\n");
	put(units, "unit,cpu,memory,host\naaaaaaaaaaaa,1,1Gi,h0\n");
	put(graph, "{\"nodes\":["
		   "{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"" IDA
		   "\"}],\"edges\":[{\"client\":0,\"server\":7}]}");
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == -1);
	cw_place_input_release(&in);
	put(graph, "[1,2]");
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == -1);
	cw_place_input_release(&in);
	put(graph, "{\"nodes\":[],\"edges\":[]}");
	CHECK(load(CW_PLACE_BY_CONTAINER, &in) == -1);
	cw_place_input_release(&in);
}

/* Measured nodes: CPU and memory per process, two in one container, two
 * outside containers on h1 (summed). */
static const char *measured_json =
	"{\"nodes\":["
	"{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"" IDA "\","
	"\"cpu_cores\":0.5,\"rss_bytes\":100,\"rss_peak_bytes\":300,"
	"\"pod\":\"web-1\",\"namespace\":\"shop\","
	"\"workload\":\"Deployment/web\"},"
	"{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"" IDA "\","
	"\"cpu_cores\":0.25,\"rss_bytes\":50},"
	"{\"kind\":\"process\",\"host\":\"h1\",\"container\":\"" IDB "\","
	"\"cpu_cores\":1,\"rss_bytes\":1000},"
	"{\"kind\":\"process\",\"host\":\"h1\",\"container\":\"\","
	"\"cpu_cores\":0.1,\"rss_bytes\":10},"
	"{\"kind\":\"process\",\"host\":\"h1\",\"container\":\"\","
	"\"cpu_cores\":0.2,\"rss_bytes\":20},"
	"{\"kind\":\"process\",\"host\":\"h0\",\"container\":\"" IDC "\","
	"\"cpu_cores\":0.1,\"rss_bytes\":10}],"
	"\"edges\":["
	"{\"client\":0,\"server\":2,\"bytes_c2s\":1000,\"bytes_s2c\":0},"
	"{\"client\":1,\"server\":3,\"bytes_c2s\":10,\"bytes_s2c\":0},"
	"{\"client\":5,\"server\":2,\"bytes_c2s\":7,\"bytes_s2c\":0}],"
	"\"window_ns\":1000000000,\"windows\":["
	"{\"start_ns\":10000000000,\"edge\":0,\"bytes_c2s\":600},"
	"{\"start_ns\":11000000000,\"edge\":0,\"bytes_c2s\":400},"
	"{\"start_ns\":10000000000,\"edge\":1,\"bytes_c2s\":10},"
	"{\"start_ns\":20000000000,\"edge\":2,\"bytes_c2s\":7}],"
	"\"hosts\":[{\"host\":\"h0\",\"cpus\":4,\"mem_bytes\":4000},"
	"{\"host\":\"h1\",\"cpus\":2,\"mem_bytes\":2000}]}";

static long unit_named(const struct cw_place_input *in, const char *name)
{
	size_t i;

	for (i = 0; i < in->p.nunits; i++)
		if (!strcmp(in->p.units[i].name, name))
			return (long)i;
	return -1;
}

static int load_measured(struct cw_place_input *in, enum cw_place_by by,
			 uint64_t since, uint64_t until)
{
	cw_place_input_init(in);
	in->graph_path = graph;
	in->by = by;
	in->since_ns = since;
	in->until_ns = until;
	in->p.headroom = 0.1;
	return cw_place_input_load(in);
}

static void test_measured(void)
{
	struct cw_place_input in;
	long a, b, pin;

	put(graph, measured_json);
	CHECK(load_measured(&in, CW_PLACE_BY_CONTAINER, 0, 0) == 0);
	/* hosts from the agents' HostMeta, units from the nodes */
	CHECK(in.p.nhosts == 2 && in.p.hosts[1].cpu == 2 &&
	      in.p.hosts[0].memory == 4000);
	CHECK(in.p.nunits == 4);
	a = unit_named(&in, IDA), b = unit_named(&in, IDB);
	pin = unit_named(&in, "h1 (no container)");
	CHECK(a >= 0 && b >= 0 && pin >= 0);
	/* a container's processes carry its cgroup's figures: the largest
	 * (the peak memory when there is one), not their sum */
	CHECK(a >= 0 && in.p.units[a].cpu == 0.5 &&
	      in.p.units[a].memory == 300);
	CHECK(b >= 0 && in.p.units[b].host == 1 &&
	      in.p.units[b].memory == 1000);
	CHECK(pin >= 0 && !in.p.units[pin].movable &&
	      fabs(in.p.units[pin].cpu - 0.3) < 1e-9 &&
	      in.p.units[pin].memory == 30);
	CHECK(a >= 0 && !strcmp(in.meta[a].kind, "Deployment") &&
	      !strcmp(in.meta[a].ns, "shop"));
	cw_place_input_release(&in);

	/* by workload: "Deployment/web" is unit "web" */
	CHECK(load_measured(&in, CW_PLACE_BY_WORKLOAD, 0, 0) == 0);
	CHECK(unit_named(&in, "web") >= 0);
	cw_place_input_release(&in);

	/* a range: the windows in it, the nodes active in it */
	CHECK(load_measured(&in, CW_PLACE_BY_CONTAINER, 11000000000ull,
			    12000000000ull) == 0);
	CHECK(in.p.nunits == 2 && unit_named(&in, IDC) < 0);
	CHECK(in.p.nlinks == 1 && in.p.links[0].bytes == 400);
	cw_place_input_release(&in);
	/* nothing in the range */
	CHECK(load_measured(&in, CW_PLACE_BY_CONTAINER, 30000000000ull, 0) ==
	      -1);
	cw_place_input_release(&in);
}

static void test_measured_bad(void)
{
	struct cw_place_input in;

	/* no resources per node and no units file */
	put(graph, graph_json);
	put(hosts, "host,cpu,memory\nh0,4,8Gi\nh1,4,8Gi\n");
	cw_place_input_init(&in);
	in.graph_path = graph;
	in.hosts_path = hosts;
	CHECK(cw_place_input_load(&in) == -1);
	cw_place_input_release(&in);
	/* no hosts file and no HostMeta */
	put(units, "unit,cpu,memory\naaaaaaaaaaaa,1,1Gi\nbbbbbbbbbbbb,1,1Gi\n"
		   "h0 (no container),1,1Gi\n");
	cw_place_input_init(&in);
	in.graph_path = graph;
	in.units_path = units;
	CHECK(cw_place_input_load(&in) == -1);
	cw_place_input_release(&in);
	/* a range on a graph with no windows */
	cw_place_input_init(&in);
	in.graph_path = graph;
	in.units_path = units;
	in.hosts_path = hosts;
	in.since_ns = 1;
	CHECK(cw_place_input_load(&in) == -1);
	cw_place_input_release(&in);
	/* a measured unit larger than any host: named */
	put(graph, measured_json);
	put(hosts, "host,cpu,memory\nh0,4,500\nh1,4,500\n");
	cw_place_input_init(&in);
	in.graph_path = graph;
	in.hosts_path = hosts;
	in.p.headroom = 0.1;
	CHECK(cw_place_input_load(&in) == -1);
	cw_place_input_release(&in);
}

/* Two ends of one connection, client on h0 and server on h1. */
static const char *records_jsonl =
	"{\"host\":\"h0\",\"cookie\":1,\"proto\":\"tcp\",\"role\":\"client\","
	"\"laddr\":\"10.0.0.1\",\"lport\":40000,\"raddr\":\"10.0.0.2\","
	"\"rport\":80,\"bytes_out\":3000,\"bytes_in\":200,"
	"\"first_ns\":10000000000,\"last_ns\":10500000000,"
	"\"process\":{\"pid\":10,\"start_ns\":5,\"comm\":\"w\","
	"\"container\":\"" IDA "\"}}\n"
	"{\"host\":\"h1\",\"cookie\":2,\"proto\":\"tcp\",\"role\":\"server\","
	"\"laddr\":\"10.0.0.2\",\"lport\":80,\"raddr\":\"10.0.0.1\","
	"\"rport\":40000,\"bytes_out\":200,\"bytes_in\":3000,"
	"\"first_ns\":10000000000,\"last_ns\":10500000000,"
	"\"process\":{\"pid\":20,\"start_ns\":6,\"comm\":\"s\","
	"\"container\":\"" IDB "\"}}\n";

/* The measured route, as 'causeway place' gives it: the correlator's. */
static int measure(struct cw_place_input *in)
{
	struct cw_measured m = {.records = in->records,
				.nrecords = in->nrecords,
				.since_ns = in->since_ns,
				.until_ns = in->until_ns,
				.name = in->graph_name};
	int ret = cw_measured_graph(&m);

	in->graph_text = m.json;
	in->graph_len = m.len;
	return ret;
}

static void test_records(void)
{
	char rec[300], *paths[1] = {rec};
	struct cw_place_input in;

	snprintf(rec, sizeof(rec), "%s/r.jsonl", dir);
	put(rec, records_jsonl);
	CHECK(cw_place_is_records(rec) && !cw_place_is_records(graph));
	/* An agent's -o and run's meta.jsonl may begin with metadata. */
	snprintf(rec, sizeof(rec), "%s/m.jsonl", dir);
	put(rec, "{\"kind\":\"process\",\"host\":\"h0\",\"seq\":1}\n");
	CHECK(cw_place_is_records(rec));
	put(rec, "{\"kind\":\"process\",\"nodes\":[]}\n");
	CHECK(!cw_place_is_records(rec));
	snprintf(rec, sizeof(rec), "%s/r.jsonl", dir);
	put(hosts, "host,cpu,memory\nh0,4,8Gi\nh1,4,8Gi\n");
	put(units, "unit,cpu,memory\naaaaaaaaaaaa,1,1Gi\nbbbbbbbbbbbb,1,1Gi\n");
	cw_place_input_init(&in);
	in.measure = measure;
	in.records = paths;
	in.nrecords = 1;
	in.hosts_path = hosts;
	in.units_path = units;
	CHECK(cw_place_input_load(&in) == 0);
	CHECK(in.p.nunits == 2 && in.p.nlinks == 1);
	CHECK(in.p.nlinks == 1 && in.p.links[0].bytes == 3200);
	CHECK(in.p.units[0].host != in.p.units[1].host);
	cw_place_input_release(&in);
	/* a range after the records: none falls in it */
	cw_place_input_init(&in);
	in.measure = measure;
	in.records = paths;
	in.nrecords = 1;
	in.hosts_path = hosts;
	in.units_path = units;
	in.since_ns = 20000000000ull;
	CHECK(cw_place_input_load(&in) == -1);
	cw_place_input_release(&in);
	/* the same range that holds them: the bytes, through the windows */
	cw_place_input_init(&in);
	in.measure = measure;
	in.records = paths;
	in.nrecords = 1;
	in.hosts_path = hosts;
	in.units_path = units;
	in.since_ns = 9000000000ull;
	in.until_ns = 12000000000ull;
	CHECK(cw_place_input_load(&in) == 0);
	CHECK(in.p.nlinks == 1 && in.p.links[0].bytes == 3200);
	cw_place_input_release(&in);
	unlink(rec);
}

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	snprintf(graph, sizeof(graph), "%s/g.json", dir);
	snprintf(hosts, sizeof(hosts), "%s/h.csv", dir);
	snprintf(units, sizeof(units), "%s/u.csv", dir);
	test_good();
	test_bad();
	test_measured();
	test_measured_bad();
	test_records();
	unlink(graph);
	unlink(hosts);
	unlink(units);
	rmdir(dir);
	if (!failures)
		printf("ok\n");
	return failures ? 1 : 0;
}
