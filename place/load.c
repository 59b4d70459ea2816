// SPDX-License-Identifier: MIT
/*
 * The instance of 'causeway place' from its inputs: the hosts and units
 * tables and the traffic graph 'causeway graph --format json' wrote.  Graph
 * nodes map to units-file rows (by container id, or 'HOST (no container)'
 * for processes outside containers), rows to units by --unit, edges to
 * traffic between units.  Outside data: errors name the file and the row.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wire.h"
#include "place/place_int.h"

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

	if (!path) /* from the graph, later */
		return 0;
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
static long find_row(struct cw_place_input *c, const char *id)
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

static int index_rows(struct cw_place_input *c)
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
static const char *row_unit(const struct cw_place_input *c,
			    const struct cw_place_row *r)
{
	if (row_pinned(r) || c->by == CW_PLACE_BY_CONTAINER)
		return r->f[CW_PCOL_NAME];
	if (c->by == CW_PLACE_BY_WORKLOAD && r->f[CW_PCOL_WORKLOAD])
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
static int map_nodes(struct cw_place_input *c, struct json_object *nodes,
		     const bool *active, long *node_row, const char **row_host)
{
	size_t i, n = json_object_array_length(nodes);
	char pinned[CW_HOST_LEN + 32];

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(nodes, i);
		const char *kind = json_str(o, "kind"),
			   *host = json_str(o, "host"),
			   *ctr = json_str(o, "container"), *id;

		node_row[i] = -1;
		if (!active[i] || !kind || strcmp(kind, "process") || !host)
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
			return cw_error("%s: %s '%s' on host '%s' has no row "
					"in %s",
					c->graph_name,
					id == pinned
						? "process outside containers"
						: "container",
					id, host, c->units_from);
		if (!row_host[node_row[i]])
			row_host[node_row[i]] = host;
	}
	return 0;
}

/* One unit per --unit key; each row's resources added once. */
static long unit_for_row(struct cw_place_input *c, size_t r, const char *host)
{
	const struct cw_place_row *row = &c->units.rows[r];
	const char *name = row_unit(c, row);
	uint64_t k = cw_hash_bytes(name, strlen(name));
	long h = cw_place_host_index(&c->p, host), u;
	uint32_t *v;
	bool created;

	if (h < 0)
		return cw_error("unknown host '%s': unit '%s' runs there but "
				"%s does not list it",
				host, name, c->hosts_from);
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

static int add_hosts(struct cw_place_input *c)
{
	size_t i;

	for (i = 0; i < c->hosts.nrows; i++)
		if (cw_place_add_host(&c->p, c->hosts.rows[i].f[CW_PCOL_NAME],
				      c->hosts.cpu[i], c->hosts.memory[i]) < 0)
			return -1;
	return 0;
}

static int add_edges(struct cw_place_input *c, struct json_object *edges,
		     const long *node_row, const long *row_unit,
		     const uint64_t *edge_bytes)
{
	size_t i, n = json_object_array_length(edges);

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(edges, i);
		uint64_t a = json_u64(o, "client"), b = json_u64(o, "server"),
			 bytes = edge_bytes[i], f = json_u64(o, "first_ns"),
			 l = json_u64(o, "last_ns");

		if (c->since_ns || c->until_ns) {
			if (!bytes)
				continue;
			f = 0, l = 0; /* the range's, not the edge's */
		}
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

static int build_units(struct cw_place_input *c, long *row_unit,
		       const char **row_host)
{
	size_t r;

	for (r = 0; r < c->units.nrows; r++) {
		const char *h = c->units.rows[r].f[CW_PCOL_HOST];

		if (!h)
			h = row_host[r];
		if (!h)
			return cw_error("%s: '%s' has no host column and is "
					"not in %s",
					c->units_from,
					c->units.rows[r].f[CW_PCOL_NAME],
					c->graph_name);
		row_unit[r] = unit_for_row(c, r, h);
		if (row_unit[r] < 0)
			return -1;
	}
	return 0;
}

/* Per edge its bytes (in the range: from the windows), per node whether
 * it was active (in the range) and when it was seen last. */
struct graph_scan {
	uint64_t *edge_bytes, *seen;
	bool *active;
	struct json_object *nodes, *edges;
	size_t n, m;
};

static int scan_edges(struct cw_place_input *c, struct graph_scan *g)
{
	size_t i;

	for (i = 0; i < g->m; i++) {
		struct json_object *o = json_object_array_get_idx(g->edges, i);
		uint64_t a = json_u64(o, "client"), b = json_u64(o, "server"),
			 l = json_u64(o, "last_ns");

		if (a >= g->n || b >= g->n)
			return cw_error("%s: edge %zu names node %llu, past "
					"the %zu nodes",
					c->graph_name, i,
					(unsigned long long)(a > b ? a : b),
					g->n);
		if (c->since_ns || c->until_ns)
			continue;
		g->edge_bytes[i] =
			json_u64(o, "bytes_c2s") + json_u64(o, "bytes_s2c");
		g->seen[a] = l > g->seen[a] ? l : g->seen[a];
		g->seen[b] = l > g->seen[b] ? l : g->seen[b];
	}
	if (!c->since_ns && !c->until_ns)
		for (i = 0; i < g->n; i++)
			g->active[i] = true;
	return 0;
}

/* With a range: the windows that overlap it, whole. */
static int scan_windows(struct cw_place_input *c, struct json_object *root,
			struct graph_scan *g)
{
	struct json_object *wins;
	uint64_t width = json_u64(root, "window_ns");
	size_t i, n;

	if (!c->since_ns && !c->until_ns)
		return 0;
	if (!width || !json_object_object_get_ex(root, "windows", &wins) ||
	    !json_object_is_type(wins, json_type_array))
		return cw_error("%s has no per-window traffic for --since and "
				"--until (make it with 'causeway graph "
				"--window D')",
				c->graph_name);
	n = json_object_array_length(wins);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(wins, i);
		uint64_t e = json_u64(o, "edge"), t = json_u64(o, "start_ns"),
			 a, b;

		if (e >= g->m)
			return cw_error("%s: window %zu names edge %llu, past "
					"the %zu edges",
					c->graph_name, i, (unsigned long long)e,
					g->m);
		if (t + width <= c->since_ns ||
		    (c->until_ns && t >= c->until_ns))
			continue;
		g->edge_bytes[e] +=
			json_u64(o, "bytes_c2s") + json_u64(o, "bytes_s2c");
		o = json_object_array_get_idx(g->edges, e);
		a = json_u64(o, "client"), b = json_u64(o, "server");
		g->active[a] = g->active[b] = true;
		g->seen[a] = t > g->seen[a] ? t : g->seen[a];
		g->seen[b] = t > g->seen[b] ? t : g->seen[b];
	}
	return 0;
}

static int parse_graph(struct cw_place_input *c, struct json_object **root,
		       struct graph_scan *g)
{
	char *text = c->graph_text;
	size_t len = c->graph_len;

	if (!text && read_text(c->graph_path, &text, &len))
		return -1;
	*root = json_tokener_parse(text);
	if (text != c->graph_text)
		free(text);
	if (!*root || !json_object_object_get_ex(*root, "nodes", &g->nodes) ||
	    !json_object_is_type(g->nodes, json_type_array) ||
	    !json_object_object_get_ex(*root, "edges", &g->edges) ||
	    !json_object_is_type(g->edges, json_type_array))
		return cw_error("%s is not a graph (want the JSON of "
				"'causeway graph --format json')",
				c->graph_name);
	g->n = json_object_array_length(g->nodes);
	g->m = json_object_array_length(g->edges);
	if (!g->n)
		return cw_error("%s is empty: no nodes to place",
				c->graph_name);
	g->edge_bytes = calloc(g->m + 1, sizeof(*g->edge_bytes));
	g->seen = calloc(g->n, sizeof(*g->seen));
	g->active = calloc(g->n, sizeof(*g->active));
	if (!g->edge_bytes || !g->seen || !g->active)
		return cw_error("out of memory");
	return scan_edges(c, g) || scan_windows(c, *root, g) ? -1 : 0;
}

/* The units and hosts the files did not give, from the graph. */
static int derive_tables(struct cw_place_input *c, struct json_object *root,
			 struct graph_scan *g)
{
	if (!c->hosts_path && place_hosts_from_graph(c, root))
		return -1;
	if (!c->units_path &&
	    place_units_from_graph(c, g->nodes, g->active, g->seen))
		return -1;
	if (!c->units.nrows)
		return cw_error(
			"%s has no processes to place%s", c->graph_name,
			c->since_ns || c->until_ns ? " in the time range" : "");
	return 0;
}

static int load_graph(struct cw_place_input *c)
{
	struct graph_scan g = {0};
	struct json_object *root = NULL;
	long *node_row = NULL, *row_unit = NULL;
	const char **row_host = NULL;
	int ret = -1;

	if (parse_graph(c, &root, &g) || derive_tables(c, root, &g))
		goto out;
	node_row = calloc(g.n, sizeof(*node_row));
	row_unit = calloc(c->units.nrows, sizeof(*row_unit));
	row_host = calloc(c->units.nrows, sizeof(*row_host));
	if (!node_row || !row_unit || !row_host) {
		cw_error("out of memory");
		goto out;
	}
	if (index_rows(c) || add_hosts(c) ||
	    map_nodes(c, g.nodes, g.active, node_row, row_host) ||
	    build_units(c, row_unit, row_host) ||
	    add_edges(c, g.edges, node_row, row_unit, g.edge_bytes))
		goto out;
	ret = 0;
out:
	free(node_row);
	free(row_unit);
	free(row_host);
	free(g.edge_bytes);
	free(g.seen);
	free(g.active);
	json_object_put(root);
	return ret;
}

bool cw_place_is_records(const char *path)
{
	char buf[65536], *nl;
	struct json_object *o, *v;
	FILE *fp;
	size_t n;
	bool rec = false;

	if (!strcmp(path, "-") || !(fp = fopen(path, "r")))
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	if (!n) /* no records: the loader says its graph is empty */
		return true;
	buf[n] = '\0';
	if (n >= CW_WIRE_MAGIC_LEN &&
	    !memcmp(buf, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN))
		return true;
	/* JSON lines: the first line is a whole record: a connection's
	 * (a cookie) or metadata (a kind: host, process, dns), as an agent's
	 * -o and run's meta.jsonl begin; a graph has nodes. */
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	o = json_tokener_parse(buf);
	rec = o && json_object_is_type(o, json_type_object) &&
	      (json_object_object_get_ex(o, "cookie", &v) ||
	       json_object_object_get_ex(o, "kind", &v)) &&
	      !json_object_object_get_ex(o, "nodes", &v);
	json_object_put(o);
	return rec;
}

void cw_place_input_init(struct cw_place_input *in)
{
	memset(in, 0, sizeof(*in));
	in->ns = "default";
	cw_place_init(&in->p);
}

/* Names of the sources, for messages. */
static void name_sources(struct cw_place_input *in)
{
	char *graph = in->graph_name;
	size_t len = sizeof(in->graph_name);

	if (in->brokers)
		snprintf(graph, len, "the graph of Kafka at %s", in->brokers);
	else if (in->nrecords)
		snprintf(graph, len, "the graph of '%s'%s", in->records[0],
			 in->nrecords > 1 ? " ..." : "");
	else
		snprintf(graph, len, "graph '%s'", in->graph_path);
	if (in->units_path)
		snprintf(in->units_from, sizeof(in->units_from),
			 "units file '%.64s'", in->units_path);
	else
		snprintf(in->units_from, sizeof(in->units_from),
			 "the measured units");
	if (in->hosts_path)
		snprintf(in->hosts_from, sizeof(in->hosts_from),
			 "hosts file '%.64s'", in->hosts_path);
	else
		snprintf(in->hosts_from, sizeof(in->hosts_from),
			 "the agents' host metadata");
}

int cw_place_input_load(struct cw_place_input *in)
{
	name_sources(in);
	if (load_table(in->hosts_path, false, &in->hosts) ||
	    load_table(in->units_path, true, &in->units))
		return -1;
	if ((in->brokers || in->nrecords) &&
	    (!in->measure ? cw_error("%s: nothing to read it with",
				     in->graph_name)
			  : in->measure(in)))
		return -1;
	if (load_graph(in))
		return -1;
	/* Nothing to place by: a plan would only pack CPU and memory. */
	if (!in->p.nlinks)
		return cw_error("%s has no traffic between its %zu units%s: "
				"nothing to plan from",
				in->graph_name, in->p.nunits,
				in->since_ns || in->until_ns
					? " in the time range"
					: "");
	return cw_place_check(&in->p);
}

void cw_place_input_release(struct cw_place_input *in)
{
	cw_place_table_release(&in->hosts);
	cw_place_table_release(&in->units);
	cw_htab_release(&in->unit_rows);
	cw_htab_release(&in->by_name);
	free(in->meta);
	free(in->graph_text);
	cw_place_release(&in->p);
}
