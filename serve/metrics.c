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

#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"
#include "serve/serve_int.h"

#define LBL 96 /* longest label value kept */

struct edge_key {
	char client_host[LBL], client_comm[LBL];
	char server_host[LBL], server_comm[LBL];
};

struct edge_sum {
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c, conns, paired;
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
	}
	return 0;
}

/* A label value with \, " and newlines escaped. */
/* A label value: the format's three escapes, and UTF-8 only (the
 * format requires it; names are clean, but a record file may not be). */
static void label(FILE *fp, const char *name, const char *v)
{
	size_t n = strlen(v), ch;

	fprintf(fp, "%s=\"", name);
	for (; *v; v += ch, n -= ch) {
		ch = cw_utf8_next(v, n);
		if (*v == '\\' || *v == '"')
			fputc('\\', fp);
		if (!ch)
			fputs("\xef\xbf\xbd", fp), ch = 1;
		else if (*v == '\n')
			fputs("\\n", fp);
		else
			fwrite(v, 1, ch, fp);
	}
	fputc('"', fp);
}

static void edge_labels(FILE *fp, const struct edge_key *k, const char *dir)
{
	fputc('{', fp);
	label(fp, "client_host", k->client_host);
	fputc(',', fp);
	label(fp, "client_comm", k->client_comm);
	fputc(',', fp);
	label(fp, "server_host", k->server_host);
	fputc(',', fp);
	label(fp, "server_comm", k->server_comm);
	if (dir) {
		fputc(',', fp);
		label(fp, "direction", dir);
	}
	fputc('}', fp);
}

static void header(FILE *fp, const char *name, const char *type,
		   const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void edge_family(FILE *fp, const struct cw_htab *h, const char *name,
			const char *help, size_t off_c2s, size_t off_s2c)
{
	size_t i;

	header(fp, name, "counter", help);
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

static void one(FILE *fp, const char *name, const char *type, const char *help,
		uint64_t v)
{
	header(fp, name, type, help);
	fprintf(fp, "%s %llu\n", name, (unsigned long long)v);
}

static void health(FILE *fp, const struct serve_stats *st, size_t ne)
{
	one(fp, "causeway_records_total", "counter",
	    "Connection records read (newest per end counts).", st->records);
	one(fp, "causeway_bad_records_total", "counter",
	    "Malformed records counted and skipped.", st->bad);
	one(fp, "causeway_stale_records_total", "counter",
	    "Records older than one already seen for their end.", st->stale);
	one(fp, "causeway_agents", "gauge", "Hosts whose agents sent records.",
	    st->agents);
	one(fp, "causeway_connection_ends", "gauge",
	    "Distinct connection ends.", st->ends);
	one(fp, "causeway_connections_paired", "gauge",
	    "Connections seen from both ends.", st->paired);
	one(fp, "causeway_ends_unpaired", "gauge",
	    "Ends whose partner was not watched.", st->unpaired);
	one(fp, "causeway_ends_ambiguous", "gauge",
	    "Ends that matched several candidates.", st->ambiguous);
	one(fp, "causeway_unattributed_bytes", "gauge",
	    "Window bytes of ends no edge matched.", st->unattributed);
	one(fp, "causeway_edges", "gauge", "Edges of the process graph.",
	    (uint64_t)ne);
	one(fp, "causeway_source_loads_total", "counter",
	    "Times the input files were read.", st->loads);
	one(fp, "causeway_source_errors_total", "counter",
	    "Reads of the inputs that failed.", st->load_errors);
	one(fp, "causeway_kafka_messages_total", "counter",
	    "Kafka messages consumed.", st->kafka_messages);
	one(fp, "causeway_kafka_bad_messages_total", "counter",
	    "Kafka messages that failed to decode.", st->kafka_bad);
}

/* One counter of every agent's newest host metadata. */
struct agent_metric {
	const char *name, *type, *help;
	size_t off; /* in struct cw_host_health */
};

#define AH(f) offsetof(struct cw_host_health, f)
static const struct agent_metric agent_metrics[] = {
	{"causeway_fleet_agent_records_total", "counter",
	 "Connection records each agent made, as it last reported.",
	 AH(records)},
	{"causeway_fleet_agent_delivered_total", "counter",
	 "Records the brokers acknowledged, per agent.", AH(delivered)},
	{"causeway_fleet_agent_lost_total", "counter",
	 "Records an agent could neither deliver nor spool.", AH(lost)},
	{"causeway_fleet_agent_spooled_total", "counter",
	 "Records an agent wrote to its spool.", AH(spooled)},
	{"causeway_fleet_agent_spool_records", "gauge",
	 "Records waiting in an agent's spool.", AH(spool_records)},
	{"causeway_fleet_agent_spool_evicted_total", "counter",
	 "Records an agent's spool dropped for its bound.", AH(spool_evicted)},
	{"causeway_fleet_agent_kernel_lost_total", "counter",
	 "Events an agent's kernel side dropped (rings full).",
	 AH(kernel_lost)},
	{"causeway_fleet_agent_map_full_total", "counter",
	 "Sockets or flows an agent's full maps missed.", AH(map_full)},
	{"causeway_fleet_agent_no_owner_total", "counter",
	 "Ends closed before an agent saw their owner.", AH(no_owner)},
	{"causeway_fleet_agent_windows_total", "counter",
	 "Timing windows an agent collected.", AH(windows)},
};

/* The agents' health from their host metadata, and the consumer's lag. */
static void fleet(FILE *fp, struct serve_feed *f)
{
	size_t i, j;
	uint64_t v;

	serve_feed_lock(f);
	one(fp, "causeway_agents_seen", "gauge",
	    "Agents whose host metadata was read.", f->nhosts);
	for (j = 0; j < CW_ARRAY_SIZE(agent_metrics); j++) {
		header(fp, agent_metrics[j].name, agent_metrics[j].type,
		       agent_metrics[j].help);
		for (i = 0; i < f->nhosts; i++) {
			memcpy(&v,
			       (const char *)&f->hosts[i].health +
				       agent_metrics[j].off,
			       sizeof(v));
			fprintf(fp, "%s{", agent_metrics[j].name);
			label(fp, "host", f->hosts[i].host);
			fprintf(fp, "} %llu\n", (unsigned long long)v);
		}
	}
	header(fp, "causeway_kafka_consumer_lag", "gauge",
	       "Records not yet read: high watermark minus position.");
	for (i = 0; i < f->nlags; i++) {
		fputs("causeway_kafka_consumer_lag{", fp);
		label(fp, "topic", f->lags[i].topic);
		fprintf(fp, ",partition=\"%d\"} %lld\n", f->lags[i].partition,
			(long long)f->lags[i].lag);
	}
	one(fp, "causeway_timing_records_total", "counter",
	    "Timing window records read.", f->timing_records);
	one(fp, "causeway_windows_inferred_total", "counter",
	    "Timing windows whose causal paths were inferred.",
	    f->windows_inferred);
	one(fp, "causeway_windows_failed_total", "counter",
	    "Timing windows with no paths (too few messages).",
	    f->windows_failed);
	one(fp, "causeway_sample_runs_total", "counter",
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
	health(r->fp, &st, g.ne);
	fleet(r->fp, c->feed);
out:
	cw_htab_release(&h);
	serve_graph_release(&g);
}
