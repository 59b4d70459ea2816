// SPDX-License-Identifier: MIT
/*
 * The instance 'causeway place' builds from its files (graph JSON, hosts
 * and units tables), the plan it chooses and the outputs it writes, through
 * place.h: nodes to rows by container id prefix and by 'HOST (no
 * container)', traffic summed per pair, external ends counted apart, and
 * the bad inputs that name their file and row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
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

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	snprintf(graph, sizeof(graph), "%s/g.json", dir);
	snprintf(hosts, sizeof(hosts), "%s/h.csv", dir);
	snprintf(units, sizeof(units), "%s/u.csv", dir);
	test_good();
	test_bad();
	unlink(graph);
	unlink(hosts);
	unlink(units);
	rmdir(dir);
	if (!failures)
		printf("ok\n");
	return failures ? 1 : 0;
}
