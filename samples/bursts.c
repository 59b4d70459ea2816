// SPDX-License-Identifier: MIT
/* Bursts in a run, and the connections active during each. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "samples/samples.h"
#include "common/log.h"
#include "common/util.h"

static uint64_t dir_bytes(const struct cw_sample_bin *b, bool ingress,
			  bool *sat)
{
	return ingress ? cw_u64_add_sat(b->v[CW_SF_BYTES_IN],
					b->v[CW_SF_BYTES_IN_X], sat)
		       : cw_u64_add_sat(b->v[CW_SF_BYTES_OUT],
					b->v[CW_SF_BYTES_OUT_X], sat);
}

static uint32_t dir_flows(const struct cw_sample_bin *b, bool ingress,
			  bool *sat)
{
	int f = ingress ? CW_SF_FLOWS_IN : CW_SF_FLOWS_OUT;

	*sat = b->saturated & (3 << (f - CW_SF_FLOWS_FIRST));
	return b->v[f] + b->v[f + 1];
}

int cw_sample_bursts(const struct cw_sample_run *run, bool ingress,
		     double threshold, uint64_t speed_bps,
		     struct cw_burst **out, size_t *n)
{
	double cap = (double)speed_bps * run->interval_ns / 8e9, util;
	struct cw_burst *v = NULL, *cur = NULL;
	size_t cnt = 0, room = 0;
	uint32_t i, flows;
	bool sat, bsat;

	*out = NULL;
	*n = 0;
	if (!speed_bps || cap <= 0)
		return cw_error("link speed unknown");
	for (i = 0; i < run->nbins; i++) {
		uint64_t bytes;

		bsat = false;
		bytes = dir_bytes(&run->bins[i], ingress, &bsat);

		util = bytes / cap;
		if (!bytes || util < threshold) {
			cur = NULL;
			continue;
		}
		if (!cur) {
			if (CW_GROW(v, room, cnt + 1, 16)) {
				free(v);
				return cw_error("out of memory for bursts");
			}
			cur = &v[cnt++];
			memset(cur, 0, sizeof(*cur));
			cur->first = i;
		}
		cur->last = i;
		cur->bytes = cw_u64_add_sat(cur->bytes, bytes, &bsat);
		cur->bytes_saturated |= bsat;
		if (util > cur->peak_util)
			cur->peak_util = util;
		flows = dir_flows(&run->bins[i], ingress, &sat);
		if (flows > cur->max_flows)
			cur->max_flows = flows;
		cur->flows_saturated |= sat;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int juint(json_object *o, const char *key, uint64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -1;
	*out = json_object_get_uint64(v);
	return 0;
}

static int parse_edge(json_object *o, struct cw_burst_edge *e)
{
	const char *la = jstr(o, "laddr"), *ra = jstr(o, "raddr"), *comm;
	uint64_t lport, rport, pid;
	json_object *proc;

	memset(e, 0, sizeof(*e));
	if (!la || !ra || juint(o, "lport", &lport) ||
	    juint(o, "rport", &rport) || juint(o, "bytes_out", &e->bytes_out) ||
	    juint(o, "bytes_in", &e->bytes_in) ||
	    juint(o, "first_ns", &e->first_ns) ||
	    juint(o, "last_ns", &e->last_ns) || lport > 65535 || rport > 65535)
		return -1;
	snprintf(e->laddr, sizeof(e->laddr), "%s", la);
	snprintf(e->raddr, sizeof(e->raddr), "%s", ra);
	e->lport = lport;
	e->rport = rport;
	e->pid = -1;
	strcpy(e->comm, "?");
	if (json_object_object_get_ex(o, "process", &proc) &&
	    json_object_is_type(proc, json_type_object)) {
		comm = jstr(proc, "comm");
		if (comm)
			snprintf(e->comm, sizeof(e->comm), "%s", comm);
		if (!juint(proc, "pid", &pid) && pid <= INT32_MAX)
			e->pid = pid;
	}
	return 0;
}

int cw_burst_edges_load(const char *path, struct cw_burst_edge **out, size_t *n)
{
	struct cw_burst_edge *v = NULL;
	size_t cnt = 0, room = 0, lineno = 0, cap = 0;
	char *line = NULL;
	json_object *o;
	ssize_t len;
	FILE *fp;
	int err = 0;

	*out = NULL;
	*n = 0;
	fp = fopen(path, "r");
	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	while ((len = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		if (CW_GROW(v, room, cnt + 1, 64)) {
			err = cw_error("out of memory for connections");
			break;
		}
		o = json_tokener_parse(line);
		if (!o || !json_object_is_type(o, json_type_object) ||
		    parse_edge(o, &v[cnt])) {
			json_object_put(o);
			err = cw_error("'%s' line %zu: not a connection record",
				       path, lineno);
			break;
		}
		json_object_put(o);
		cnt++;
	}
	free(line);
	fclose(fp);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static const struct cw_burst_edge *sort_edges;

static int by_bytes(const void *a, const void *b)
{
	const struct cw_burst_edge *x = &sort_edges[*(const size_t *)a];
	const struct cw_burst_edge *y = &sort_edges[*(const size_t *)b];
	uint64_t bx = x->bytes_out + x->bytes_in,
		 by = y->bytes_out + y->bytes_in;

	if (bx != by)
		return bx > by ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

size_t cw_burst_attribute(const struct cw_sample_run *run,
			  const struct cw_burst *b,
			  const struct cw_burst_edge *edges, size_t n,
			  size_t *idx)
{
	uint64_t from = run->start_real_ns + b->first * run->interval_ns;
	uint64_t to = run->start_real_ns + (b->last + 1) * run->interval_ns;
	size_t i, cnt = 0;

	for (i = 0; i < n; i++)
		if (edges[i].first_ns < to && edges[i].last_ns >= from)
			idx[cnt++] = i;
	sort_edges = edges;
	qsort(idx, cnt, sizeof(*idx), by_bytes);
	return cnt;
}
