// SPDX-License-Identifier: MIT
/*
 * The outputs of 'causeway place': a table, JSON of every plan, Kubernetes
 * node and pod affinities, or a diktyo AppGroup.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/util.h"
#include "place/place.h"

static const char *bytes_str(uint64_t b, char *buf, size_t len)
{
	return cw_fmt_bytes(b, buf, len);
}

/*
 * A plan that raises the cross-host bytes says so, and why, in the first
 * line of every output: "raises cross-host bytes from X to Y (+Z%) ...".
 * Nothing when it does not.
 */
static bool trade_line(const struct cw_place_input *c,
		       const struct cw_place_plan *plan,
		       const struct cw_place_plan *before, char *buf,
		       size_t len)
{
	char b1[32], b2[32];
	int n;

	if (plan->cross_bytes <= before->cross_bytes)
		return false;
	n = snprintf(buf, len,
		     "this plan raises cross-host bytes from %s to %s "
		     "(%+.1f%%)",
		     bytes_str(before->cross_bytes, b1, sizeof(b1)),
		     bytes_str(plan->cross_bytes, b2, sizeof(b2)),
		     before->cross_bytes
			     ? 100.0 * ((double)plan->cross_bytes -
					(double)before->cross_bytes) /
				       (double)before->cross_bytes
			     : 100.0);
	if (n < 0 || (size_t)n >= len)
		return true;
	if (plan->hosts_used < before->hosts_used)
		snprintf(buf + n, len - (size_t)n,
			 " to use %zu hosts instead of %zu%s", plan->hosts_used,
			 before->hosts_used,
			 c->p.consolidate ? " (--hosts consolidate)" : "");
	else if (!before->fits)
		snprintf(buf + n, len - (size_t)n,
			 ": the current placement is over capacity less "
			 "headroom and no plan within it keeps the bytes");
	return true;
}

static void print_trade(const struct cw_place_input *c,
			const struct cw_place_plan *plan,
			const struct cw_place_plan *before, FILE *fp)
{
	char line[256];

	if (trade_line(c, plan, before, line, sizeof(line)))
		fprintf(fp, "# %s\n", line);
}

static void print_table(const struct cw_place_input *c,
			enum cw_place_method method,
			const struct cw_place_plan *plan,
			const struct cw_place_plan *before, FILE *fp)
{
	const struct cw_place *p = &c->p;
	char b1[32], b2[32], b3[32];
	size_t i;

	fprintf(fp,
		"# %s: %zu of %zu hosts in use (%zu now); cross-host bytes "
		"%s, now %s (%+.1f%%); %zu moves; %.3f s%s\n",
		cw_place_method_name(method), plan->hosts_used, p->nhosts,
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

static void plan_json(const struct cw_place_input *c, enum cw_place_method m,
		      const struct cw_place_plan *plan,
		      const struct cw_place_plan *before, struct cw_jsonw *w)
{
	const struct cw_place *p = &c->p;
	size_t i;

	char line[256];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "method", cw_place_method_name(m));
	if (trade_line(c, plan, before, line, sizeof(line)))
		cw_jsonw_str(w, "trade", line);
	cw_jsonw_u64(w, "hosts", p->nhosts);
	cw_jsonw_u64(w, "hosts_used", plan->hosts_used);
	cw_jsonw_u64(w, "hosts_used_now", before->hosts_used);
	cw_jsonw_u64(w, "cross_bytes", plan->cross_bytes);
	cw_jsonw_u64(w, "cross_bytes_now", before->cross_bytes);
	cw_jsonw_u64(w, "outside_bytes", c->outside_bytes);
	cw_jsonw_bool(w, "fits", plan->fits);
	cw_jsonw_bool(w, "optimal", plan->optimal);
	cw_jsonw_double(w, "seconds", plan->seconds);
	cw_jsonw_u64(w, "moves_saved", plan->moves_saved);
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

static const char *unit_kind(const struct cw_place_input *c, size_t u)
{
	if (c->meta[u].kind)
		return c->meta[u].kind;
	return c->by == CW_PLACE_BY_WORKLOAD ? "Deployment" : "Pod";
}

static const char *unit_ns(const struct cw_place_input *c, size_t u)
{
	return c->meta[u].ns ? c->meta[u].ns : c->ns;
}

static const char *api_version(const char *kind)
{
	return !strcmp(kind, "Pod") ? "v1" : "apps/v1";
}

/* The peers a unit exchanged most bytes with, for soft pod affinity. */
static void print_pod_affinity(const struct cw_place_input *c, size_t u,
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

static void print_k8s(const struct cw_place_input *c,
		      enum cw_place_method method,
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
		cw_place_method_name(method));
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
}

static void print_workload_ref(const struct cw_place_input *c, size_t u,
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
static void print_appgroup(const struct cw_place_input *c, FILE *fp)
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
}
/* With --method all, the table starts with one line per method. */
static void print_tables(const struct cw_place_input *c,
			 const struct cw_place_result *res, FILE *fp)
{
	const struct cw_place_plan *plans = res->plans;
	int m;

	for (m = 0; res->all && m < 3; m++)
		if (res->ok[m])
			fprintf(fp,
				"%-10s hosts %zu  cross-host bytes "
				"%llu  %.3f s%s\n",
				cw_place_method_name(m), plans[m].hosts_used,
				(unsigned long long)plans[m].cross_bytes,
				plans[m].seconds,
				plans[m].optimal ? "  optimal" : "");
	print_table(c, (enum cw_place_method)res->best, &plans[res->best],
		    &res->before, fp);
}

void cw_place_write(const struct cw_place_input *in,
		    const struct cw_place_result *res, enum cw_place_format f,
		    FILE *fp)
{
	struct cw_jsonw w;
	int m;

	const struct cw_place_plan *best = &res->plans[res->best];
	char line[256];

	/* The AppGroup is no plan: the scheduler places by it. */
	if (f == CW_PLACE_FMT_APPGROUP) {
		print_appgroup(in, fp);
		return;
	}
	if (f != CW_PLACE_FMT_JSON)
		print_trade(in, best, &res->before, fp);
	if (f == CW_PLACE_FMT_K8S) {
		print_k8s(in, (enum cw_place_method)res->best, best, fp);
		return;
	}
	if (f == CW_PLACE_FMT_TABLE) {
		print_tables(in, res, fp);
		return;
	}
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	if (trade_line(in, best, &res->before, line, sizeof(line)))
		cw_jsonw_str(&w, "trade", line);
	cw_jsonw_str(&w, "chosen", cw_place_method_name(res->best));
	cw_jsonw_arr_open(&w, "plans");
	for (m = 0; m < 3; m++)
		if (res->ok[m])
			plan_json(in, m, &res->plans[m], &res->before, &w);
	cw_jsonw_arr_close(&w);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}
