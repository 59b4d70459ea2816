// SPDX-License-Identifier: MIT
/*
 * Prometheus text format (version 0.0.4).  Edges are summed to a level
 * whose cardinality stays bounded: (host, command) at each end, never a
 * pid or a port; a peer nobody watched is its address with the command
 * "external", an end whose owner was never seen has the command "unknown".
 * Counters are the totals of the records served, so they only grow while
 * records only grow (a re-read file that shrank is a reset, which
 * Prometheus handles).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/htab.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "serve/serve_int.h"

#define LBL 96 /* longest label value kept */

struct edge_key {
	char client_host[LBL], client_comm[LBL];
	char server_host[LBL], server_comm[LBL];
};

struct edge_sum {
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c, conns, paired;
	struct cw_edge_health *health; /* NULL: none of its edges has any */
};

static void key_end(const struct serve_node *n, char *host, char *comm)
{
	snprintf(host, LBL, "%s", n->host);
	/* An end whose owner was never seen has no command: "unknown". */
	snprintf(comm, LBL, "%s",
		 n->external  ? "external"
		 : n->comm[0] ? n->comm
			      : "unknown");
}

/* Process edges summed per (host, command) pair; 0 or -1. */
static int sum_edges(const struct serve_graph *g, struct cw_htab *h)
{
	struct edge_key k;
	struct edge_sum *s;
	bool created;
	size_t i;

	for (i = 0; i < g->ne; i++) {
		const struct serve_edge *e = &g->edges[i];

		memset(&k, 0, sizeof(k));
		key_end(&g->nodes[e->from], k.client_host, k.client_comm);
		key_end(&g->nodes[e->to], k.server_host, k.server_comm);
		s = cw_htab_upsert(h, &k, &created);
		if (!s)
			return -1;
		if (created)
			memset(s, 0, sizeof(*s));
		s->bytes_c2s += e->bytes_c2s, s->bytes_s2c += e->bytes_s2c;
		s->msgs_c2s += e->msgs_c2s, s->msgs_s2c += e->msgs_s2c;
		s->conns += e->conns, s->paired += e->paired;
		if (!e->health)
			continue;
		if (!s->health && !(s->health = calloc(1, sizeof(*s->health))))
			return -1;
		cw_edge_health_add(s->health, e->health);
	}
	return 0;
}

/* The four ends' labels of every edge family, without braces. */
static void key_labels(FILE *fp, const struct edge_key *k)
{
	cw_prom_label(fp, "client_host", k->client_host);
	fputc(',', fp);
	cw_prom_label(fp, "client_comm", k->client_comm);
	fputc(',', fp);
	cw_prom_label(fp, "server_host", k->server_host);
	fputc(',', fp);
	cw_prom_label(fp, "server_comm", k->server_comm);
}

static void edge_labels(FILE *fp, const struct edge_key *k, const char *dir)
{
	fputc('{', fp);
	key_labels(fp, k);
	if (dir) {
		fputc(',', fp);
		cw_prom_label(fp, "direction", dir);
	}
	fputc('}', fp);
}

static void edge_family(FILE *fp, const struct cw_htab *h, const char *name,
			const char *help, size_t off_c2s, size_t off_s2c)
{
	size_t i;

	cw_prom_header(fp, name, CW_METRIC_COUNTER, help);
	for (i = 0; i < h->len; i++) {
		const struct edge_key *k = cw_htab_key(h, i);
		const char *s = cw_htab_val(h, i);
		uint64_t v;

		memcpy(&v, s + off_c2s, sizeof(v));
		fputs(name, fp);
		edge_labels(fp, k, off_s2c != off_c2s ? "c2s" : NULL);
		fprintf(fp, " %llu\n", (unsigned long long)v);
		if (off_s2c == off_c2s)
			continue;
		memcpy(&v, s + off_s2c, sizeof(v));
		fputs(name, fp);
		edge_labels(fp, k, "s2c");
		fprintf(fp, " %llu\n", (unsigned long long)v);
	}
}

/* The labels of key k as text without braces, malloc'd (NULL: no
 * memory). */
static char *labels_of(const struct edge_key *k)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	if (!fp)
		return NULL;
	key_labels(fp, k);
	if (fclose(fp)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Edge health (docs/edge-health.md), per (host, command) pair as the
 * bytes, in OpenTelemetry's spirit: durations as histograms in seconds,
 * failures and resets as counters with a label saying which.
 */
#define EH(f) offsetof(struct cw_edge_health, f)
static const struct {
	const char *name, *help;
	size_t off; /* of the histogram in struct cw_edge_health */
} hist_families[] = {
	{"causeway_edge_client_duration_seconds",
	 "Exchange time at the client: request start to reply end.",
	 EH(client)},
	{"causeway_edge_client_first_byte_seconds",
	 "Exchange time at the client: request start to reply start.",
	 EH(client_first)},
	{"causeway_edge_server_duration_seconds",
	 "Exchange time at the server: request arrival to reply sent.",
	 EH(server)},
	{"causeway_edge_connect_duration_seconds",
	 "Client connect time: SYN sent to established.", EH(connect)},
	{"causeway_edge_rtt_seconds",
	 "Smoothed RTT of the connections, one reading per collection.",
	 EH(rtt)},
};

/* Counters: one series per key, or two told apart by a label. */
static const struct {
	const char *name, *help, *label, *value[2];
	size_t off[2]; /* of the counters in struct cw_edge_health */
} count_families[] = {
	{"causeway_edge_connections_failed_total",
	 "Connections that failed to open.",
	 "reason",
	 {"refused", "timeout"},
	 {EH(conns_refused), EH(conns_timeout)}},
	{"causeway_edge_resets_total",
	 "Connections reset after they were established.",
	 "by",
	 {"client", "server"},
	 {EH(resets_by_client), EH(resets_by_server)}},
	{"causeway_edge_exchanges_untimed_total",
	 "Exchanges not timed: several requests were in flight.",
	 NULL,
	 {NULL, NULL},
	 {EH(xchg_pipelined), 0}},
};

/* One counter series: name{labels[,label="value"]} v. */
static void count_line(FILE *fp, size_t f, size_t k, const char *lab,
		       const struct cw_edge_health *x)
{
	uint64_t v;

	memcpy(&v, (const char *)x + count_families[f].off[k], sizeof(v));
	fprintf(fp, "%s{%s", count_families[f].name, lab);
	if (count_families[f].label)
		fprintf(fp, ",%s=\"%s\"", count_families[f].label,
			count_families[f].value[k]);
	fprintf(fp, "} %llu\n", (unsigned long long)v);
}

/* The health of key i (NULL: none). */
static const struct cw_edge_health *health_at(const struct cw_htab *h, size_t i)
{
	return ((const struct edge_sum *)cw_htab_val(h, i))->health;
}

/*
 * The network time (docs/edge-health.md's rule: the client's exchange
 * time minus the server's at the same quantile), a gauge per quantile,
 * where both sides timed exchanges.
 */
static void network_family(FILE *fp, const struct cw_htab *h, char **lab)
{
	static const double q[] = {0.5, 0.9, 0.99};
	const struct cw_edge_health *x;
	size_t i, k;

	cw_prom_header(fp, "causeway_edge_network_seconds", CW_METRIC_GAUGE,
		       "Network and queueing time of the exchanges: the "
		       "client's time minus the server's, at the quantile.");
	for (i = 0; i < h->len; i++) {
		x = health_at(h, i);
		if (!lab[i] || !x->client.len || !x->server.len)
			continue;
		for (k = 0; k < CW_ARRAY_SIZE(q); k++)
			fprintf(fp,
				"causeway_edge_network_seconds{%s,quantile="
				"\"%g\"} %.9g\n",
				lab[i], q[k],
				(double)cw_edge_network_ns(x, q[k]) / 1e9);
	}
}

/* The health families of every key that has health; 0 or -1. */
static int edge_health(FILE *fp, const struct cw_htab *h)
{
	char **lab = calloc(h->len + 1, sizeof(*lab));
	struct cw_hist hist = CW_HIST_INIT;
	const struct cw_edge_health *x;
	const struct cw_rec_hist *r;
	size_t f, i;
	int ret = -1;

	for (i = 0; lab && i < h->len; i++) {
		x = health_at(h, i);
		if (x && !(lab[i] = labels_of(cw_htab_key(h, i))))
			goto out;
	}
	for (f = 0; lab && f < CW_ARRAY_SIZE(count_families); f++) {
		cw_prom_header(fp, count_families[f].name, CW_METRIC_COUNTER,
			       count_families[f].help);
		for (i = 0; i < h->len; i++) {
			x = health_at(h, i);
			if (!lab[i])
				continue;
			count_line(fp, f, 0, lab[i], x);
			if (count_families[f].label)
				count_line(fp, f, 1, lab[i], x);
		}
	}
	for (f = 0; lab && f < CW_ARRAY_SIZE(hist_families); f++) {
		cw_prom_header(fp, hist_families[f].name, CW_METRIC_HISTOGRAM,
			       hist_families[f].help);
		for (i = 0; i < h->len; i++) {
			if (!lab[i])
				continue;
			x = health_at(h, i);
			r = (const void *)((const char *)x +
					   hist_families[f].off);
			if (cw_rec_hist_get(r, &hist))
				goto out;
			if (!hist.count) /* no series for what never came */
				continue;
			cw_prom_hist(fp, hist_families[f].name, lab[i], &hist,
				     cw_prom_latency_le, cw_prom_latency_nle);
		}
	}
	if (lab)
		network_family(fp, h, lab);
	ret = lab ? 0 : -1;
out:
	cw_hist_release(&hist);
	for (i = 0; lab && i < h->len; i++)
		free(lab[i]);
	free(lab);
	return ret;
}

static void one(FILE *fp, const char *name, enum cw_metric_type type,
		const char *help, uint64_t v)
{
	cw_prom_header(fp, name, type, help);
	fprintf(fp, "%s %llu\n", name, (unsigned long long)v);
}

static void health(FILE *fp, const struct serve_stats *st, size_t ne)
{
	one(fp, "causeway_records_total", CW_METRIC_COUNTER,
	    "Connection records read (newest per end counts).", st->records);
	one(fp, "causeway_bad_records_total", CW_METRIC_COUNTER,
	    "Malformed records counted and skipped.", st->bad);
	one(fp, "causeway_stale_records_total", CW_METRIC_COUNTER,
	    "Records older than one already seen for their end.", st->stale);
	one(fp, "causeway_agents", CW_METRIC_GAUGE,
	    "Hosts whose agents sent records.", st->agents);
	one(fp, "causeway_connection_ends", CW_METRIC_GAUGE,
	    "Distinct connection ends.", st->ends);
	one(fp, "causeway_connections_paired", CW_METRIC_GAUGE,
	    "Connections seen from both ends.", st->paired);
	one(fp, "causeway_ends_unpaired", CW_METRIC_GAUGE,
	    "Ends whose partner was not watched.", st->unpaired);
	one(fp, "causeway_ends_ambiguous", CW_METRIC_GAUGE,
	    "Ends that matched several candidates.", st->ambiguous);
	one(fp, "causeway_unattributed_bytes", CW_METRIC_GAUGE,
	    "Window bytes of ends no edge matched.", st->unattributed);
	one(fp, "causeway_edges", CW_METRIC_GAUGE,
	    "Edges of the process graph.", (uint64_t)ne);
	one(fp, "causeway_source_loads_total", CW_METRIC_COUNTER,
	    "Times the input files were read.", st->loads);
	one(fp, "causeway_source_errors_total", CW_METRIC_COUNTER,
	    "Reads of the inputs that failed.", st->load_errors);
	one(fp, "causeway_kafka_messages_total", CW_METRIC_COUNTER,
	    "Kafka messages consumed.", st->kafka_messages);
	one(fp, "causeway_kafka_bad_messages_total", CW_METRIC_COUNTER,
	    "Kafka messages that failed to decode.", st->kafka_bad);
}

/* One counter of every agent's newest host metadata. */
struct agent_metric {
	const char *name;
	enum cw_metric_type type;
	const char *help;
	size_t off; /* in struct cw_host_health */
};

#define AH(f) offsetof(struct cw_host_health, f)
static const struct agent_metric agent_metrics[] = {
	{"causeway_fleet_agent_records_total", CW_METRIC_COUNTER,
	 "Connection records each agent made, as it last reported.",
	 AH(records)},
	{"causeway_fleet_agent_delivered_total", CW_METRIC_COUNTER,
	 "Records the brokers acknowledged, per agent.", AH(delivered)},
	{"causeway_fleet_agent_lost_total", CW_METRIC_COUNTER,
	 "Records an agent could neither deliver nor spool.", AH(lost)},
	{"causeway_fleet_agent_spooled_total", CW_METRIC_COUNTER,
	 "Records an agent wrote to its spool.", AH(spooled)},
	{"causeway_fleet_agent_spool_records", CW_METRIC_GAUGE,
	 "Records waiting in an agent's spool.", AH(spool_records)},
	{"causeway_fleet_agent_spool_evicted_total", CW_METRIC_COUNTER,
	 "Records an agent's spool dropped for its bound.", AH(spool_evicted)},
	{"causeway_fleet_agent_kernel_lost_total", CW_METRIC_COUNTER,
	 "Events an agent's kernel side dropped (rings full).",
	 AH(kernel_lost)},
	{"causeway_fleet_agent_map_full_total", CW_METRIC_COUNTER,
	 "Sockets or flows an agent's full maps missed.", AH(map_full)},
	{"causeway_fleet_agent_no_owner_total", CW_METRIC_COUNTER,
	 "Ends closed before an agent saw their owner.", AH(no_owner)},
	{"causeway_fleet_agent_windows_total", CW_METRIC_COUNTER,
	 "Timing windows an agent collected.", AH(windows)},
};

/* The agents' health from their host metadata, and the consumer's lag. */
static void fleet(FILE *fp, struct serve_feed *f)
{
	size_t i, j;
	uint64_t v;

	serve_feed_lock(f);
	one(fp, "causeway_agents_seen", CW_METRIC_GAUGE,
	    "Agents whose host metadata was read.", f->nhosts);
	for (j = 0; j < CW_ARRAY_SIZE(agent_metrics); j++) {
		cw_prom_header(fp, agent_metrics[j].name, agent_metrics[j].type,
			       agent_metrics[j].help);
		for (i = 0; i < f->nhosts; i++) {
			memcpy(&v,
			       (const char *)&f->hosts[i].health +
				       agent_metrics[j].off,
			       sizeof(v));
			fprintf(fp, "%s{", agent_metrics[j].name);
			cw_prom_label(fp, "host", f->hosts[i].host);
			fprintf(fp, "} %llu\n", (unsigned long long)v);
		}
	}
	cw_prom_header(fp, "causeway_kafka_consumer_lag", CW_METRIC_GAUGE,
		       "Records not yet read: high watermark minus position.");
	for (i = 0; i < f->nlags; i++) {
		fputs("causeway_kafka_consumer_lag{", fp);
		cw_prom_label(fp, "topic", f->lags[i].topic);
		fprintf(fp, ",partition=\"%d\"} %lld\n", f->lags[i].partition,
			(long long)f->lags[i].lag);
	}
	one(fp, "causeway_timing_records_total", CW_METRIC_COUNTER,
	    "Timing window records read.", f->timing_records);
	one(fp, "causeway_windows_inferred_total", CW_METRIC_COUNTER,
	    "Timing windows whose causal paths were inferred.",
	    f->windows_inferred);
	one(fp, "causeway_windows_failed_total", CW_METRIC_COUNTER,
	    "Timing windows with no paths (too few messages).",
	    f->windows_failed);
	one(fp, "causeway_sample_runs_total", CW_METRIC_COUNTER,
	    "Sample runs read from Kafka.", f->sample_runs);
	serve_feed_unlock(f);
}

void serve_metrics(const struct serve_ctx *c, struct serve_reply *r)
{
	struct cw_serve_query q = {.by = CW_SERVE_BY_PROCESS};
	struct serve_stats st;
	struct serve_graph g;
	struct cw_htab h;
	char err[300];
	size_t i;

	cw_htab_init(&h, sizeof(struct edge_key), sizeof(struct edge_sum));
	if (serve_model_graph(c->model, &q, &g, err, sizeof(err)))
		return serve_reply_error(r, 500, "%s", err);
	serve_model_stats(c->model, &st);
	if (sum_edges(&g, &h)) {
		serve_reply_error(r, 500, "out of memory");
		goto out;
	}
	if (serve_reply_open(r, 200, "text/plain; version=0.0.4"))
		goto out;
	edge_family(r->fp, &h, "causeway_edge_bytes_total",
		    "Bytes between two (host, command) groups, as the sender "
		    "counted.",
		    offsetof(struct edge_sum, bytes_c2s),
		    offsetof(struct edge_sum, bytes_s2c));
	edge_family(r->fp, &h, "causeway_edge_messages_total",
		    "Messages between two (host, command) groups.",
		    offsetof(struct edge_sum, msgs_c2s),
		    offsetof(struct edge_sum, msgs_s2c));
	edge_family(r->fp, &h, "causeway_edge_connections_total",
		    "Connections between two (host, command) groups.",
		    offsetof(struct edge_sum, conns),
		    offsetof(struct edge_sum, conns));
	edge_family(r->fp, &h, "causeway_edge_connections_paired_total",
		    "Of those, connections seen from both ends.",
		    offsetof(struct edge_sum, paired),
		    offsetof(struct edge_sum, paired));
	if (edge_health(r->fp, &h))
		cw_warn("out of memory for the edges' health in /metrics");
	health(r->fp, &st, g.ne);
	fleet(r->fp, c->feed);
out:
	for (i = 0; i < h.len; i++)
		free(((struct edge_sum *)cw_htab_val(&h, i))->health);
	cw_htab_release(&h);
	serve_graph_release(&g);
}
