// SPDX-License-Identifier: MIT
/*
 * causeway place: a placement plan from the measured traffic graph (the
 * JSON of 'causeway graph --format json'), the hosts' capacities and the
 * units' CPU and memory, by the genetic algorithm, our partitioning or the
 * integer program; as a table, JSON, Kubernetes affinities or an AppGroup.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/htab.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"
#include "place/place.h"

enum unit_kind { U_CONTAINER, U_POD, U_WORKLOAD };
enum out_format { F_TABLE, F_JSON, F_K8S, F_APPGROUP };

struct unit_meta {
	char *ns, *kind; /* for the Kubernetes outputs */
	uint32_t *host_votes;
};

struct place_cmd {
	const char *graph_path, *hosts_path, *units_path;
	enum unit_kind unit;
	enum out_format format;
	bool all;
	enum cw_place_method method;
	struct cw_place p;
	struct cw_place_table hosts, units;
	struct cw_htab unit_rows; /* hash of a container id's first 12 -> row */
	struct cw_htab by_name;	  /* hash of a unit name -> unit + 1 */
	struct unit_meta *meta;
	size_t cap_meta;
	uint64_t outside_bytes; /* to or from external and unknown ends */
	uint64_t first_ns, last_ns;
	const char *ns; /* default namespace */
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway place -H HOSTS.csv -U UNITS.csv [--unit "
		"container|pod|workload]\n"
		"                      [--method ga|partition|ilp|all] "
		"[--hosts fewest|fixed]\n"
		"                      [--max-moves N] [--max-hosts N] "
		"[--headroom F]\n"
		"                      [--seed S] [--time-limit SEC]\n"
		"                      [--format table|json|k8s|appgroup] "
		"[--namespace NS]\n"
		"                      [-o FILE] GRAPH.json\n\n"
		"Plan where each unit (container, pod or workload) should run, "
		"from the\n"
		"traffic graph 'causeway graph --format json' wrote (any "
		"--by), the hosts'\n"
		"capacities and the units' CPU and memory: the fewest hosts "
		"that fit with\n"
		"the headroom, then the fewest cross-host bytes.  Processes "
		"outside\n"
		"containers stay where they are.\n\n"
		"  -H, --hosts-file F  CSV host,cpu,memory (cpu in cores or "
		"500m, memory\n"
		"                      in bytes or 64Gi, 2G)\n"
		"  -U, --units F       CSV unit,cpu,memory[,host,pod,workload,"
		"namespace,kind]:\n"
		"                      unit a container id (or its first 12 "
		"characters)\n"
		"                      or 'HOST (no container)'\n"
		"  -u, --unit U        what moves: container (default), pod, "
		"workload\n"
		"  -m, --method M      partition (default), ga, ilp (GLPK, "
		"small only), all\n"
		"      --hosts fixed   the fewest bytes on the hosts there "
		"are\n"
		"      --max-moves N   the best plan moving at most N units\n"
		"      --max-hosts N   use at most N hosts (those of pinned "
		"units, then\n"
		"                      the largest)\n"
		"      --headroom F    capacity kept free, 0 to 0.9 (default "
		"0.1)\n"
		"  -s, --seed S        the genetic algorithm's seed (default "
		"1)\n"
		"      --time-limit T  seconds for ilp (default 60)\n"
		"  -f, --format F      table (default), json, k8s (node and "
		"pod affinity),\n"
		"                      appgroup (diktyo AppGroup)\n"
		"      --namespace NS  for units with none (default "
		"'default')\n"
		"  -o, --out FILE      write FILE (whole or not at all)\n\n"
		"Exit status: 0 a plan, 1 bad input or no plan, 2 bad "
		"usage.\n\n"
		"Examples:\n"
		"  causeway graph --by container --format json -o g.json "
		"conns.jsonl\n"
		"  causeway place -H hosts.csv -U units.csv g.json\n"
		"  causeway place -H hosts.csv -U units.csv --method all "
		"g.json\n"
		"  causeway place -H hosts.csv -U units.csv --unit workload "
		"--format appgroup g.json\n");
}

static int read_text(const char *path, char **out, size_t *len)
{
	FILE *fp = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	for (;;) {
		if (CW_GROW(buf, cap, n + 65536, 65536)) {
			n = SIZE_MAX;
			break;
		}
		r = fread(buf + n, 1, cap - n - 1, fp);
		n += r;
		if (r == 0)
			break;
	}
	if (n != SIZE_MAX && ferror(fp))
		n = SIZE_MAX - 1;
	if (fp != stdin)
		fclose(fp);
	if (n >= SIZE_MAX - 1) {
		free(buf);
		return cw_error("unable to read '%s': %s", path,
				n == SIZE_MAX ? "out of memory" : "read error");
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int load_table(const char *path, bool units, struct cw_place_table *t)
{
	char *text, err[256];
	size_t len;
	int ret;

	if (read_text(path, &text, &len))
		return -1;
	ret = cw_place_table_parse(t, text, len, units, err, sizeof(err));
	free(text);
	if (ret)
		return cw_error("%s '%s': %s",
				units ? "units file" : "hosts file", path, err);
	return 0;
}

static uint64_t name_key(const char *s, size_t n)
{
	return cw_hash_bytes(s, strnlen(s, n));
}

/* The units-file row of a container id (or pinned name); -1 if none. */
static long find_row(struct place_cmd *c, const char *id)
{
	uint64_t k = name_key(id, 12);
	uint32_t *r = cw_htab_get(&c->unit_rows, &k);
	size_t i;

	if (r) {
		const char *n = c->units.rows[*r - 1].f[CW_PCOL_NAME];

		if (!strcmp(n, id) ||
		    (strlen(n) >= 12 && !strncmp(n, id, strlen(n))))
			return (long)*r - 1;
	}
	for (i = 0; i < c->units.nrows; i++) /* a collision: rare */
		if (!strcmp(c->units.rows[i].f[CW_PCOL_NAME], id))
			return (long)i;
	return -1;
}

static int index_rows(struct place_cmd *c)
{
	size_t i;
	bool created;

	cw_htab_init(&c->unit_rows, sizeof(uint64_t), sizeof(uint32_t));
	cw_htab_init(&c->by_name, sizeof(uint64_t), sizeof(uint32_t));
	for (i = 0; i < c->units.nrows; i++) {
		uint64_t k = name_key(c->units.rows[i].f[CW_PCOL_NAME], 12);
		uint32_t *r = cw_htab_upsert(&c->unit_rows, &k, &created);

		if (!r)
			return cw_error("out of memory");
		if (created)
			*r = (uint32_t)i + 1;
	}
	return 0;
}

static const char *pinned_suffix = " (no container)";

static bool row_pinned(const struct cw_place_row *r)
{
	const char *n = r->f[CW_PCOL_NAME];
	size_t l = strlen(n), s = strlen(pinned_suffix);

	return l > s && !strcmp(n + l - s, pinned_suffix);
}

/* The placement unit a row belongs to, by --unit. */
static const char *row_unit(const struct place_cmd *c,
			    const struct cw_place_row *r)
{
	if (row_pinned(r) || c->unit == U_CONTAINER)
		return r->f[CW_PCOL_NAME];
	if (c->unit == U_WORKLOAD && r->f[CW_PCOL_WORKLOAD])
		return r->f[CW_PCOL_WORKLOAD];
	return r->f[CW_PCOL_POD] ? r->f[CW_PCOL_POD] : r->f[CW_PCOL_NAME];
}

static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static uint64_t json_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return (uint64_t)json_object_get_uint64(v);
}

/* Graph node -> units-file row (-1: external or unknown); hosts learnt. */
static int map_nodes(struct place_cmd *c, struct json_object *nodes,
		     long *node_row, const char **row_host)
{
	size_t i, n = json_object_array_length(nodes);
	char pinned[CW_HOST_LEN + 32];

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(nodes, i);
		const char *kind = json_str(o, "kind"),
			   *host = json_str(o, "host"),
			   *ctr = json_str(o, "container"), *id;

		node_row[i] = -1;
		if (!kind || strcmp(kind, "process") || !host)
			continue;
		if (ctr && *ctr) {
			id = ctr;
		} else {
			snprintf(pinned, sizeof(pinned), "%s%s", host,
				 pinned_suffix);
			id = pinned;
		}
		node_row[i] = find_row(c, id);
		if (node_row[i] < 0)
			return cw_error("'%s': %s '%s' on host '%s' has no row "
					"in units file '%s'",
					c->graph_path,
					id == pinned
						? "process outside containers"
						: "container",
					id, host, c->units_path);
		if (!row_host[node_row[i]])
			row_host[node_row[i]] = host;
	}
	return 0;
}

/* One unit per --unit key; each row's resources added once. */
static long unit_for_row(struct place_cmd *c, size_t r, const char *host)
{
	const struct cw_place_row *row = &c->units.rows[r];
	const char *name = row_unit(c, row);
	uint64_t k = cw_hash_bytes(name, strlen(name));
	long h = cw_place_host_index(&c->p, host), u;
	uint32_t *v;
	bool created;

	if (h < 0)
		return cw_error("unknown host '%s': unit '%s' runs there but "
				"hosts file '%s' does not list it",
				host, name, c->hosts_path);
	v = cw_htab_upsert(&c->by_name, &k, &created);
	if (!v)
		return cw_error("out of memory");
	if (!created && strcmp(c->p.units[*v - 1].name, name))
		return cw_error("units '%s' and '%s' hash alike: rename one",
				name, c->p.units[*v - 1].name);
	if (created) {
		u = cw_place_add_unit(&c->p, name, (uint32_t)h, 0, 0,
				      !row_pinned(row));
		if (u < 0 || CW_GROW(c->meta, c->cap_meta, (size_t)u + 1, 64))
			return cw_error("out of memory");
		*v = (uint32_t)u + 1;
		c->meta[u].ns = row->f[CW_PCOL_NAMESPACE];
		c->meta[u].kind = row->f[CW_PCOL_KIND];
	}
	u = (long)*v - 1;
	c->p.units[u].cpu += c->units.cpu[r];
	c->p.units[u].memory += c->units.memory[r];
	return u;
}

static int add_hosts(struct place_cmd *c)
{
	size_t i;

	for (i = 0; i < c->hosts.nrows; i++)
		if (cw_place_add_host(&c->p, c->hosts.rows[i].f[CW_PCOL_NAME],
				      c->hosts.cpu[i], c->hosts.memory[i]) < 0)
			return -1;
	return 0;
}

static int add_edges(struct place_cmd *c, struct json_object *edges,
		     const long *node_row, size_t nnodes, const long *row_unit)
{
	size_t i, n = json_object_array_length(edges);

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(edges, i);
		uint64_t a = json_u64(o, "client"), b = json_u64(o, "server"),
			 bytes = json_u64(o, "bytes_c2s") +
				 json_u64(o, "bytes_s2c"),
			 f = json_u64(o, "first_ns"),
			 l = json_u64(o, "last_ns");

		if (a >= nnodes || b >= nnodes)
			return cw_error("'%s': edge %zu names node %llu, past "
					"the %zu nodes",
					c->graph_path, i,
					(unsigned long long)(a > b ? a : b),
					nnodes);
		if (f && (!c->first_ns || f < c->first_ns))
			c->first_ns = f;
		if (l > c->last_ns)
			c->last_ns = l;
		if (node_row[a] < 0 || node_row[b] < 0) {
			c->outside_bytes += bytes;
			continue;
		}
		if (cw_place_add_traffic(&c->p, (uint32_t)row_unit[node_row[a]],
					 (uint32_t)row_unit[node_row[b]],
					 bytes))
			return -1;
	}
	return 0;
}

static int build_units(struct place_cmd *c, long *row_unit,
		       const char **row_host)
{
	size_t r;

	for (r = 0; r < c->units.nrows; r++) {
		const char *h = c->units.rows[r].f[CW_PCOL_HOST];

		if (!h)
			h = row_host[r];
		if (!h)
			return cw_error("units file '%s': '%s' has no host "
					"column and is not in graph '%s'",
					c->units_path,
					c->units.rows[r].f[CW_PCOL_NAME],
					c->graph_path);
		row_unit[r] = unit_for_row(c, r, h);
		if (row_unit[r] < 0)
			return -1;
	}
	return 0;
}

static int load_graph(struct place_cmd *c)
{
	struct json_object *root = NULL, *nodes, *edges;
	long *node_row = NULL, *row_unit = NULL;
	const char **row_host = NULL;
	char *text;
	size_t len, n;
	int ret = -1;

	if (read_text(c->graph_path, &text, &len))
		return -1;
	root = json_tokener_parse(text);
	free(text);
	if (!root || !json_object_object_get_ex(root, "nodes", &nodes) ||
	    !json_object_is_type(nodes, json_type_array) ||
	    !json_object_object_get_ex(root, "edges", &edges) ||
	    !json_object_is_type(edges, json_type_array)) {
		cw_error("'%s' is not a graph (want the JSON of 'causeway "
			 "graph --format json')",
			 c->graph_path);
		goto out;
	}
	n = json_object_array_length(nodes);
	if (!n) {
		cw_error("graph '%s' is empty: no nodes to place",
			 c->graph_path);
		goto out;
	}
	node_row = calloc(n, sizeof(*node_row));
	row_unit = calloc(c->units.nrows, sizeof(*row_unit));
	row_host = calloc(c->units.nrows, sizeof(*row_host));
	if (!node_row || !row_unit || !row_host) {
		cw_error("out of memory");
		goto out;
	}
	if (index_rows(c) || add_hosts(c) ||
	    map_nodes(c, nodes, node_row, row_host) ||
	    build_units(c, row_unit, row_host) ||
	    add_edges(c, edges, node_row, n, row_unit))
		goto out;
	ret = 0;
out:
	free(node_row);
	free(row_unit);
	free(row_host);
	json_object_put(root);
	return ret;
}

static const char *bytes_str(uint64_t b, char *buf, size_t len)
{
	return cw_fmt_bytes(b, buf, len);
}

static void print_table(const struct place_cmd *c,
			const struct cw_place_plan *plan,
			const struct cw_place_plan *before, FILE *fp)
{
	const struct cw_place *p = &c->p;
	char b1[32], b2[32], b3[32];
	size_t i;

	fprintf(fp,
		"# %s: %zu of %zu hosts in use (%zu now); cross-host bytes "
		"%s, now %s (%+.1f%%); %zu moves; %.3f s%s\n",
		cw_place_method_name(c->method), plan->hosts_used, p->nhosts,
		before->hosts_used,
		bytes_str(plan->cross_bytes, b1, sizeof(b1)),
		bytes_str(before->cross_bytes, b2, sizeof(b2)),
		before->cross_bytes ? 100.0 *
					      ((double)plan->cross_bytes -
					       (double)before->cross_bytes) /
					      (double)before->cross_bytes
				    : 0.0,
		plan->nmoves, plan->seconds, plan->optimal ? " (optimal)" : "");
	fprintf(fp, "%-28s %-16s %-16s %6s %10s %10s\n", "UNIT", "FROM", "TO",
		"CPU", "RAM", "LOCAL");
	for (i = 0; i < p->nunits; i++) {
		const struct cw_place_unit *u = &p->units[i];

		fprintf(fp, "%-28.28s %-16s %-16s %6.2f %10s %10s\n", u->name,
			p->hosts[u->host].name, p->hosts[plan->host[i]].name,
			u->cpu, bytes_str((uint64_t)u->memory, b1, sizeof(b1)),
			bytes_str(cw_place_local_bytes(p, plan->host,
						       (uint32_t)i),
				  b3, sizeof(b3)));
	}
	if (plan->nmoves)
		fprintf(fp, "\n%-4s %-28s %-16s %-16s %12s\n", "MOVE", "UNIT",
			"FROM", "TO", "SAVES");
	for (i = 0; i < plan->nmoves; i++) {
		const struct cw_place_move *m = &plan->moves[i];

		fprintf(fp, "%-4zu %-28.28s %-16s %-16s %12lld\n", i + 1,
			p->units[m->unit].name, p->hosts[m->from].name,
			p->hosts[m->to].name, (long long)m->gain);
	}
}

static void plan_json(const struct place_cmd *c, enum cw_place_method m,
		      const struct cw_place_plan *plan,
		      const struct cw_place_plan *before, struct cw_jsonw *w)
{
	const struct cw_place *p = &c->p;
	size_t i;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "method", cw_place_method_name(m));
	cw_jsonw_u64(w, "hosts", p->nhosts);
	cw_jsonw_u64(w, "hosts_used", plan->hosts_used);
	cw_jsonw_u64(w, "hosts_used_now", before->hosts_used);
	cw_jsonw_u64(w, "cross_bytes", plan->cross_bytes);
	cw_jsonw_u64(w, "cross_bytes_now", before->cross_bytes);
	cw_jsonw_u64(w, "outside_bytes", c->outside_bytes);
	cw_jsonw_bool(w, "fits", plan->fits);
	cw_jsonw_bool(w, "optimal", plan->optimal);
	cw_jsonw_double(w, "seconds", plan->seconds);
	cw_jsonw_arr_open(w, "units");
	for (i = 0; i < p->nunits; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "unit", p->units[i].name);
		cw_jsonw_str(w, "from", p->hosts[p->units[i].host].name);
		cw_jsonw_str(w, "to", p->hosts[plan->host[i]].name);
		cw_jsonw_double(w, "cpu", p->units[i].cpu);
		cw_jsonw_u64(w, "memory", (uint64_t)p->units[i].memory);
		cw_jsonw_u64(w, "local_bytes",
			     cw_place_local_bytes(p, plan->host, (uint32_t)i));
		cw_jsonw_bool(w, "movable", p->units[i].movable);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_arr_open(w, "moves");
	for (i = 0; i < plan->nmoves; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "unit", p->units[plan->moves[i].unit].name);
		cw_jsonw_str(w, "from", p->hosts[plan->moves[i].from].name);
		cw_jsonw_str(w, "to", p->hosts[plan->moves[i].to].name);
		cw_jsonw_i64(w, "gain", plan->moves[i].gain);
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

/* A YAML double-quoted scalar: always well-formed. */
static void yq(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(fp, "\\x%02x", ch);
		else
			fputc(ch, fp);
	}
	fputc('"', fp);
}

static const char *unit_kind(const struct place_cmd *c, size_t u)
{
	if (c->meta[u].kind)
		return c->meta[u].kind;
	return c->unit == U_WORKLOAD ? "Deployment" : "Pod";
}

static const char *unit_ns(const struct place_cmd *c, size_t u)
{
	return c->meta[u].ns ? c->meta[u].ns : c->ns;
}

static const char *api_version(const char *kind)
{
	return !strcmp(kind, "Pod") ? "v1" : "apps/v1";
}

/* The peers a unit exchanged most bytes with, for soft pod affinity. */
static void print_pod_affinity(const struct place_cmd *c, size_t u,
			       uint64_t max_bytes, const char *ind, FILE *fp)
{
	const struct cw_place *p = &c->p;
	size_t k, n = p->adj_off[u + 1] - p->adj_off[u], shown = 0;

	if (!n)
		return;
	fprintf(fp,
		"%s  podAffinity:\n%s    "
		"preferredDuringSchedulingIgnoredDuringExecution:\n",
		ind, ind);
	for (k = p->adj_off[u]; k < p->adj_off[u + 1] && shown < 8; k++) {
		uint32_t v = p->adj_to[k];
		long weight = 1 + lround(99.0 * (double)p->adj_bytes[k] /
					 (double)max_bytes);

		if (!p->units[v].movable)
			continue;
		shown++;
		fprintf(fp, "%s    - weight: %ld  # %llu bytes\n", ind, weight,
			(unsigned long long)p->adj_bytes[k]);
		fprintf(fp,
			"%s      podAffinityTerm:\n%s        "
			"topologyKey: kubernetes.io/hostname\n"
			"%s        labelSelector:\n%s          "
			"matchLabels:\n%s            app: ",
			ind, ind, ind, ind, ind);
		yq(fp, p->units[v].name);
		fputc('\n', fp);
	}
	if (!shown)
		fprintf(fp, "%s    []\n", ind);
}

static int print_k8s(const struct place_cmd *c,
		     const struct cw_place_plan *plan, FILE *fp)
{
	const struct cw_place *p = &c->p;
	uint64_t max_bytes = 1;
	size_t i;

	for (i = 0; i < p->nlinks; i++)
		max_bytes = p->links[i].bytes > max_bytes ? p->links[i].bytes
							  : max_bytes;
	fprintf(fp,
		"# causeway place (%s): node affinity to the planned "
		"host,\n# soft pod affinity to the peers weighted by "
		"bytes (1-100)\n",
		cw_place_method_name(c->method));
	for (i = 0; i < p->nunits; i++) {
		const char *kind = unit_kind(c, i),
			   *ind = strcmp(kind, "Pod") ? "      " : "  ";

		if (!p->units[i].movable)
			continue;
		fprintf(fp, "---\napiVersion: %s\nkind: ", api_version(kind));
		yq(fp, kind);
		fprintf(fp, "\nmetadata:\n  name: ");
		yq(fp, p->units[i].name);
		fprintf(fp, "\n  namespace: ");
		yq(fp, unit_ns(c, i));
		fprintf(fp, "\nspec:\n");
		if (strcmp(kind, "Pod"))
			fprintf(fp, "  template:\n    spec:\n");
		fprintf(fp,
			"%saffinity:\n%s  nodeAffinity:\n%s    "
			"requiredDuringSchedulingIgnoredDuringExecution:\n"
			"%s      nodeSelectorTerms:\n%s      - "
			"matchExpressions:\n%s        - key: "
			"kubernetes.io/hostname\n%s          operator: In\n"
			"%s          values: [",
			ind, ind, ind, ind, ind, ind, ind, ind);
		yq(fp, p->hosts[plan->host[i]].name);
		fprintf(fp, "]\n");
		print_pod_affinity(c, i, max_bytes, ind, fp);
	}
	return 0;
}

static void print_workload_ref(const struct place_cmd *c, size_t u,
			       const char *ind, FILE *fp)
{
	const char *kind = unit_kind(c, u);

	fprintf(fp, "%skind: ", ind);
	yq(fp, kind);
	fprintf(fp, "\n%sname: ", ind);
	yq(fp, c->p.units[u].name);
	fprintf(fp, "\n%sselector: ", ind);
	yq(fp, c->p.units[u].name);
	fprintf(fp, "\n%sapiVersion: %s\n%snamespace: ", ind, api_version(kind),
		ind);
	yq(fp, unit_ns(c, u));
	fputc('\n', fp);
}

/* Bytes per second as a Kubernetes quantity, rounded up: "12Ki". */
static void quantity(double bps, char *buf, size_t len)
{
	static const char *const sfx[] = {"", "Ki", "Mi", "Gi", "Ti"};
	size_t i = 0;

	while (i + 1 < CW_ARRAY_SIZE(sfx) && bps >= 1024 * 10)
		bps /= 1024, i++;
	snprintf(buf, len, "%.0f%s", ceil(bps), sfx[i]);
}

/*
 * A diktyo AppGroup: every movable unit a workload, and as its
 * dependencies the units with a higher index it exchanged bytes with (each
 * pair once, so the graph has no cycle for the topology sort).
 * minBandwidth: the pair's bytes (both ways) over the graph's time span,
 * per second; maxNetworkCost: 1 for the chattiest pair up to 100 for the
 * quietest, so chatty pairs are kept close.
 */
static int print_appgroup(const struct place_cmd *c, FILE *fp)
{
	const struct cw_place *p = &c->p;
	double span = c->last_ns > c->first_ns
			      ? (double)(c->last_ns - c->first_ns) / 1e9
			      : 1.0;
	uint64_t max_bytes = 1;
	size_t i, k, members = 0;
	char q[32];

	for (i = 0; i < p->nlinks; i++)
		max_bytes = p->links[i].bytes > max_bytes ? p->links[i].bytes
							  : max_bytes;
	for (i = 0; i < p->nunits; i++)
		members += p->units[i].movable;
	fprintf(fp, "apiVersion: appgroup.diktyo.x-k8s.io/v1alpha1\n"
		    "kind: AppGroup\nmetadata:\n  name: causeway-place\n"
		    "  namespace: ");
	yq(fp, c->ns);
	fprintf(fp,
		"\nspec:\n  numMembers: %zu\n"
		"  topologySortingAlgorithm: KahnSort\n  workloads:\n",
		members);
	for (i = 0; i < p->nunits; i++) {
		size_t deps = 0;

		if (!p->units[i].movable)
			continue;
		fprintf(fp, "  - workload:\n");
		print_workload_ref(c, i, "      ", fp);
		fprintf(fp, "    dependencies:\n");
		for (k = p->adj_off[i]; k < p->adj_off[i + 1]; k++) {
			uint32_t v = p->adj_to[k];
			long cost = lround(100.0 *
					   (1.0 - (double)p->adj_bytes[k] /
							  (double)max_bytes));

			if (v < i || !p->units[v].movable)
				continue;
			deps++;
			fprintf(fp, "    - workload:\n");
			print_workload_ref(c, v, "        ", fp);
			quantity((double)p->adj_bytes[k] / span, q, sizeof(q));
			fprintf(fp,
				"      minBandwidth: \"%s\"\n"
				"      maxNetworkCost: %ld\n",
				q, cost < 1 ? 1 : cost);
		}
		if (!deps)
			fprintf(fp, "      []\n");
	}
	return 0;
}

static int bad_value(const char *opt, const char *val, const char *want)
{
	cw_error("%s '%s': want %s", opt, val, want);
	return 2;
}

/* One option's value into c; 0, or 2 (bad usage, line printed). */
static int parse_option(struct place_cmd *c, int opt, const char *arg)
{
	uint64_t v;
	double d;
	char *end;

	switch (opt) {
	case 'H':
		c->hosts_path = arg;
		return 0;
	case 'U':
		c->units_path = arg;
		return 0;
	case 'u':
		if (!strcmp(arg, "container"))
			c->unit = U_CONTAINER;
		else if (!strcmp(arg, "pod"))
			c->unit = U_POD;
		else if (!strcmp(arg, "workload"))
			c->unit = U_WORKLOAD;
		else
			return bad_value("--unit", arg,
					 "container, pod or workload");
		return 0;
	case 'm':
		c->all = !strcmp(arg, "all");
		if (!c->all && cw_place_method_parse(arg, &c->method))
			return bad_value("--method", arg,
					 "ga, partition, ilp or all");
		return 0;
	case 'F':
		if (strcmp(arg, "fixed") && strcmp(arg, "fewest"))
			return bad_value("--hosts", arg, "fixed or fewest");
		c->p.fixed_hosts = !strcmp(arg, "fixed");
		return 0;
	case 'M':
		if (cw_parse_u64(arg, 0, 1000000000, &v))
			return bad_value("--max-moves", arg, "0 or more");
		c->p.max_moves = (long)v;
		return 0;
	case 'r':
		d = strtod(arg, &end);
		if (*end || end == arg || !(d >= 0 && d <= 0.9))
			return bad_value("--headroom", arg, "0 to 0.9");
		c->p.headroom = d;
		return 0;
	case 's':
		if (cw_parse_u64(arg, 0, UINT64_MAX, &c->p.seed))
			return bad_value("--seed", arg, "a number");
		return 0;
	case 'T':
		if (cw_parse_u64(arg, 1, 86400, &v))
			return bad_value("--time-limit", arg, "1 to 86400");
		c->p.time_limit = (double)v;
		return 0;
	case 'f':
		if (!strcmp(arg, "table"))
			c->format = F_TABLE;
		else if (!strcmp(arg, "json"))
			c->format = F_JSON;
		else if (!strcmp(arg, "k8s"))
			c->format = F_K8S;
		else if (!strcmp(arg, "appgroup"))
			c->format = F_APPGROUP;
		else
			return bad_value("--format", arg,
					 "table, json, k8s or appgroup");
		return 0;
	case 'n':
		c->ns = arg;
		return 0;
	case 'K':
		if (cw_parse_u64(arg, 1, 100000000, &v))
			return bad_value("--max-hosts", arg, "1 or more");
		c->p.host_limit = (size_t)v;
		return 0;
	}
	return 1;
}

static bool better(const struct cw_place_plan *a, const struct cw_place_plan *b,
		   bool fixed)
{
	if (!fixed && a->hosts_used != b->hosts_used)
		return a->hosts_used < b->hosts_used;
	return a->cross_bytes < b->cross_bytes;
}

static int write_out(struct place_cmd *c, struct cw_place_plan *plans,
		     const bool *ok, long best, struct cw_place_plan *before,
		     FILE *fp)
{
	struct cw_jsonw w;
	int m;

	if (c->format == F_K8S)
		return print_k8s(c, &plans[best], fp);
	if (c->format == F_APPGROUP)
		return print_appgroup(c, fp);
	if (c->format == F_TABLE) {
		for (m = 0; c->all && m < 3; m++)
			if (ok[m])
				fprintf(fp,
					"%-10s hosts %zu  cross-host bytes "
					"%llu  %.3f s%s\n",
					cw_place_method_name(m),
					plans[m].hosts_used,
					(unsigned long long)plans[m]
						.cross_bytes,
					plans[m].seconds,
					plans[m].optimal ? "  optimal" : "");
		c->method = (enum cw_place_method)best;
		print_table(c, &plans[best], before, fp);
		return 0;
	}
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_str(&w, "chosen", cw_place_method_name(best));
	cw_jsonw_arr_open(&w, "plans");
	for (m = 0; m < 3; m++)
		if (ok[m])
			plan_json(c, m, &plans[m], before, &w);
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	return 0;
}

/* Solve by the chosen method(s); the best plan's method, or -1. */
static long solve(struct place_cmd *c, struct cw_place_plan *plans, bool *ok)
{
	long best = -1;
	int m;

	for (m = 0; m < 3; m++) {
		if (!c->all && m != (int)c->method)
			continue;
		ok[m] = cw_place_solve(&c->p, m, &plans[m]) == 0;
		if (ok[m] && (best < 0 ||
			      better(&plans[m], &plans[best],
				     c->p.fixed_hosts || c->p.max_moves >= 0)))
			best = m;
	}
	return best;
}

static int run(struct place_cmd *c, const char *out)
{
	struct cw_place_plan plans[3] = {0}, before = {0};
	struct cw_outfile of = {0};
	bool ok[3] = {0};
	long best;
	size_t i;
	int ret = 1, m;

	if (load_table(c->hosts_path, false, &c->hosts) ||
	    load_table(c->units_path, true, &c->units) || load_graph(c) ||
	    cw_place_check(&c->p))
		return 1;
	before.host = malloc((c->p.nunits + 1) * sizeof(*before.host));
	if (!before.host)
		return cw_error("out of memory"), 1;
	for (i = 0; i < c->p.nunits; i++)
		before.host[i] = c->p.units[i].host;
	before.nunits = c->p.nunits;
	if (cw_place_plan_score(&c->p, &before))
		goto out;
	best = solve(c, plans, ok);
	if (best < 0)
		goto out;
	if (out && cw_outfile_open(&of, out))
		goto out;
	write_out(c, plans, ok, best, &before, out ? of.fp : stdout);
	if (out ? cw_outfile_commit(&of) : fflush(stdout) || ferror(stdout)) {
		if (!out)
			cw_error("unable to write to standard output");
		goto out;
	}
	ret = 0;
out:
	if (of.fp)
		cw_outfile_abort(&of);
	for (m = 0; m < 3; m++)
		cw_place_plan_release(&plans[m]);
	cw_place_plan_release(&before);
	return ret;
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
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct place_cmd c = {.ns = "default", .method = CW_PLACE_PARTITION};
	const char *out = NULL;
	int opt, r;

	cw_place_init(&c.p);
	c.p.headroom = 0.1;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "H:U:u:m:s:f:n:o:h", opts,
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
	if (optind + 1 != argc || !c.hosts_path || !c.units_path) {
		cw_error("want -H HOSTS.csv, -U UNITS.csv and one GRAPH.json "
			 "(see 'causeway place --help')");
		return 2;
	}
	c.graph_path = argv[optind];
	r = run(&c, out);
	cw_place_table_release(&c.hosts);
	cw_place_table_release(&c.units);
	cw_htab_release(&c.unit_rows);
	cw_htab_release(&c.by_name);
	free(c.meta);
	cw_place_release(&c.p);
	return r;
}
