// SPDX-License-Identifier: MIT
/*
 * Units and hosts of 'causeway place' from the graph itself, when no
 * units or hosts file is given: each container (or each host's processes
 * outside containers) becomes a units row with the CPU and memory its
 * processes were measured using, each host the agents described a hosts
 * row with the cores and memory they reported.  The rows are those the
 * files would give, so the rest of the loading is the same.  The figures
 * are those 'causeway graph' puts on its vertices: a container's are its
 * cgroup's, on each of its processes alike.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/record.h"
#include "common/util.h"
#include "place/place_int.h"

struct rows {
	struct cw_place_table *t;
	size_t cap_cpu, cap_mem;
};

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* A number member: true and *out, or false when absent or not a number. */
static bool jnum(struct json_object *o, const char *key, double *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) ||
	      json_object_is_type(v, json_type_double)))
		return false;
	*out = json_object_get_double(v);
	return *out >= 0;
}

static int set_field(struct cw_place_row *r, int col, const char *s)
{
	if (!s || !*s)
		return 0;
	free(r->f[col]);
	r->f[col] = strdup(s);
	return r->f[col] ? 0 : cw_error("out of memory");
}

/* A new row named `name`; its index, or -1 (out of memory). */
static long row_new(struct rows *b, const char *name)
{
	struct cw_place_table *t = b->t;
	size_t n = t->nrows;

	if (CW_GROW(t->rows, t->cap, n + 1, 16) ||
	    CW_GROW(t->cpu, b->cap_cpu, n + 1, 16) ||
	    CW_GROW(t->memory, b->cap_mem, n + 1, 16))
		return cw_error("out of memory");
	memset(&t->rows[n], 0, sizeof(t->rows[n]));
	t->cpu[n] = t->memory[n] = 0;
	t->nrows++;
	if (set_field(&t->rows[n], CW_PCOL_NAME, name))
		return -1;
	return (long)n;
}

/* The workload's kind: its own member, else "Kind/name" split. */
static int set_workload(struct cw_place_row *r, struct json_object *o)
{
	const char *w = jstr(o, "workload"), *k = jstr(o, "workload_kind");
	const char *slash = w ? strchr(w, '/') : NULL;
	char kind[64];

	if (slash && !k && slash > w && (size_t)(slash - w) < sizeof(kind)) {
		snprintf(kind, sizeof(kind), "%.*s", (int)(slash - w), w);
		return set_field(r, CW_PCOL_WORKLOAD, slash + 1) ||
		       set_field(r, CW_PCOL_KIND, kind);
	}
	return set_field(r, CW_PCOL_WORKLOAD, w) ||
	       set_field(r, CW_PCOL_KIND, k);
}

/*
 * One node into its unit's row: a new row takes the node's names; the host
 * is that of the node seen last (a unit moved within the range runs where
 * it was seen last); resources add up.  The row, or -1.
 */
static long add_node(struct rows *b, struct cw_htab *idx, uint64_t *seen,
		     struct json_object *o, const char *id, bool pinned,
		     uint64_t seen_ns, bool *measured)
{
	uint64_t k = cw_hash_bytes(id, strlen(id));
	bool created;
	uint32_t *v = cw_htab_upsert(idx, &k, &created);
	struct cw_place_row *r;
	double cpu = 0, mem = 0;
	long row;

	if (!v)
		return cw_error("out of memory");
	if (*v && strcmp(b->t->rows[*v - 1].f[CW_PCOL_NAME], id))
		return cw_error("units '%s' and '%s' hash alike", id,
				b->t->rows[*v - 1].f[CW_PCOL_NAME]);
	if (!*v) {
		row = row_new(b, id);
		if (row < 0)
			return -1;
		*v = (uint32_t)row + 1;
		r = &b->t->rows[row];
		if (set_field(r, CW_PCOL_POD, jstr(o, "pod")) ||
		    set_field(r, CW_PCOL_NAMESPACE, jstr(o, "namespace")) ||
		    set_workload(r, o))
			return -1;
	}
	row = (long)*v - 1;
	r = &b->t->rows[row];
	if (!r->f[CW_PCOL_HOST] || seen_ns > seen[row]) {
		if (set_field(r, CW_PCOL_HOST, jstr(o, "host")))
			return -1;
		seen[row] = seen_ns;
	}
	if (jnum(o, "cpu_cores", &cpu))
		*measured = true;
	if (jnum(o, "rss_peak_bytes", &mem) || jnum(o, "rss_bytes", &mem))
		*measured = true;
	/*
	 * A container's figures are its cgroup's, the same on each of its
	 * processes: the largest, not the sum.  Processes outside
	 * containers are each their own: summed.
	 */
	if (pinned) {
		b->t->cpu[row] += cpu;
		b->t->memory[row] += mem;
	} else {
		b->t->cpu[row] = cpu > b->t->cpu[row] ? cpu : b->t->cpu[row];
		b->t->memory[row] =
			mem > b->t->memory[row] ? mem : b->t->memory[row];
	}
	return row;
}

int place_units_from_graph(struct cw_place_input *in, struct json_object *nodes,
			   const bool *active, const uint64_t *seen_ns)
{
	size_t i, n = json_object_array_length(nodes);
	struct rows b = {.t = &in->units};
	uint64_t *seen = calloc(n + 1, sizeof(*seen));
	char id[CW_HOST_LEN + 32];
	struct cw_htab idx;
	bool measured = false;
	int ret = 0;

	if (!seen)
		return cw_error("out of memory");
	cw_htab_init(&idx, sizeof(uint64_t), sizeof(uint32_t));
	for (i = 0; i < n && !ret; i++) {
		struct json_object *o = json_object_array_get_idx(nodes, i);
		const char *kind = jstr(o, "kind"), *host = jstr(o, "host"),
			   *ctr = jstr(o, "container");

		if (!active[i] || !kind || strcmp(kind, "process") || !host)
			continue;
		if (ctr && *ctr)
			snprintf(id, sizeof(id), "%s", ctr);
		else
			snprintf(id, sizeof(id), "%s (no container)", host);
		if (add_node(&b, &idx, seen, o, id, !(ctr && *ctr), seen_ns[i],
			     &measured) < 0)
			ret = -1;
	}
	cw_htab_release(&idx);
	free(seen);
	if (!ret && in->units.nrows && !measured)
		ret = cw_error("%s has no CPU or memory per node (cpu_cores, "
			       "rss_bytes: agents that publish process "
			       "metadata): give a units file (-U)",
			       in->graph_name);
	return ret;
}

/* The graph's "hosts": the agents' HostMeta. */
static struct json_object *host_list(struct json_object *root)
{
	struct json_object *a;

	if (json_object_object_get_ex(root, "hosts", &a) &&
	    json_object_is_type(a, json_type_array))
		return a;
	return NULL;
}

int place_hosts_from_graph(struct cw_place_input *in, struct json_object *root)
{
	struct json_object *a = host_list(root);
	struct rows b = {.t = &in->hosts};
	size_t i, n = a ? json_object_array_length(a) : 0;
	double cpus, mem;
	long r;

	if (!n)
		return cw_error("no hosts file (-H) and %s has no host "
				"capacities (the agents' HostMeta: cpus, "
				"mem_bytes)",
				in->graph_name);
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i);
		const char *h = jstr(o, "host");

		if (!h || !*h || !jnum(o, "cpus", &cpus) ||
		    !jnum(o, "mem_bytes", &mem) || cpus <= 0 || mem <= 0)
			return cw_error("%s: host %zu of its HostMeta has no "
					"name, cpus or mem_bytes",
					in->graph_name, i);
		for (r = (long)in->hosts.nrows - 1; r >= 0; r--)
			if (!strcmp(in->hosts.rows[r].f[CW_PCOL_NAME], h))
				break;
		if (r < 0)
			r = row_new(&b, h);
		if (r < 0)
			return -1;
		in->hosts.cpu[r] = cpus;
		in->hosts.memory[r] = mem;
	}
	return 0;
}
