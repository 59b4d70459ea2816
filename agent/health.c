// SPDX-License-Identifier: MIT
/*
 * The agent's own counters as Prometheus metrics and as the health in host
 * metadata.  One table names every metric; the values are read off a
 * struct cw_agent_health in the same order, so the two cannot drift.
 */
#include <stddef.h>
#include <string.h>

#include "agent/agent.h"
#include "common/kafka.h"
#include "common/metrics.h"
#include "common/spool.h"

#define C CW_METRIC_COUNTER
#define G CW_METRIC_GAUGE

struct health_metric {
	struct cw_metric_def def;
	size_t off; /* of a uint64_t in struct cw_agent_health */
};

#define A(f) offsetof(struct cw_agent_health, agent.f)
#define D(f) offsetof(struct cw_agent_health, daemon.f)
#define H(f) offsetof(struct cw_agent_health, f)
#define N(f) offsetof(struct cw_agent_health, dns.f)

static const struct health_metric metrics[] = {
	{{"causeway_agent_records_total", C,
	  "Connection records the agent made (one per changed end)."},
	 A(records)},
	{{"causeway_agent_collections_total", C,
	  "Collections of the kernel's "
	  "connection state."},
	 A(collections)},
	{{"causeway_agent_close_lost_total", C,
	  "Close records the kernel dropped: ring buffer full."},
	 A(close_lost)},
	{{"causeway_agent_event_lost_total", C,
	  "Per-event mode: events the kernel dropped."},
	 A(event_lost)},
	{{"causeway_agent_timing_lost_total", C,
	  "Message starts dropped: timing ring full."},
	 A(timing_lost)},
	{{"causeway_agent_storage_failures_total", C,
	  "Sockets whose state could not be stored (map full)."},
	 A(storage_fail)},
	{{"causeway_agent_udp_map_full_total", C,
	  "UDP datagrams missed: flow map full."},
	 A(udp_map_full)},
	{{"causeway_agent_connect_failed_total", C,
	  "Connects that never got established."},
	 A(connect_failed)},
	{{"causeway_agent_no_owner_total", C,
	  "Ends closed before any process-context hook saw them."},
	 A(no_owner)},
	{{"causeway_agent_events_total", C, "Per-event mode: events summed."},
	 A(events)},
	{{"causeway_agent_windows_total", C, "Timing windows collected."},
	 A(windows)},
	{{"causeway_agent_nat_lookups_total", C, "Conntrack queries."},
	 A(nat_lookups)},
	{{"causeway_agent_nat_undone_total", C,
	  "Client ends found behind DNAT."},
	 A(nat_undone)},
	{{"causeway_agent_nat_errors_total", C,
	  "Conntrack queries that failed."},
	 A(nat_errors)},
	{{"causeway_agent_sample_runs_total", C, "Sample runs stored."},
	 D(sample_runs)},
	{{"causeway_agent_sample_failures_total", C,
	  "Sample runs that failed."},
	 D(sample_failures)},
	{{"causeway_agent_samples_published_total", C,
	  "Sample runs handed to Kafka."},
	 D(samples_published)},
	{{"causeway_agent_timing_records_total", C,
	  "Timing window records made."},
	 D(timing_records)},
	{{"causeway_agent_timing_messages_total", C,
	  "Message starts in timing windows."},
	 D(messages)},
	{{"causeway_agent_timing_failures_total", C,
	  "Timing records that could not be published."},
	 D(timing_failures)},
	{{"causeway_agent_meta_published_total", C,
	  "Host metadata records published."},
	 D(host_meta)},
	{{"causeway_agent_meta_failures_total", C,
	  "Metadata records that could not be made or queued."},
	 D(meta_failures)},
	{{"causeway_agent_kafka_produced_total", C,
	  "Records handed to the Kafka client."},
	 H(produced)},
	{{"causeway_agent_kafka_delivered_total", C,
	  "Records the brokers acknowledged."},
	 H(delivered)},
	{{"causeway_agent_kafka_failed_total", C,
	  "Deliveries that failed (then spooled)."},
	 H(failed)},
	{{"causeway_agent_kafka_spooled_total", C,
	  "Records written to the spool."},
	 H(spooled)},
	{{"causeway_agent_kafka_replayed_total", C,
	  "Records taken from the spool and produced again."},
	 H(replayed)},
	{{"causeway_agent_kafka_lost_total", C,
	  "Records neither delivered nor spooled."},
	 H(lost)},
	{{"causeway_agent_kafka_in_flight", G,
	  "Records produced with no delivery report yet."},
	 H(in_flight)},
	{{"causeway_agent_spool_records", G, "Records waiting in the spool."},
	 H(spool_records)},
	{{"causeway_agent_spool_bytes", G, "Bytes of the spool on disk."},
	 H(spool_bytes)},
	{{"causeway_agent_spool_evicted_total", C,
	  "Records dropped from the spool, oldest first, for its bound or a "
	  "full disk."},
	 H(spool_evicted)},
	{{"causeway_agent_spool_full_evicted_total", C,
	  "Of those, records dropped because the disk was full."},
	 H(spool_evicted_full)},
	{{"causeway_agent_spool_full_episodes_total", C,
	  "Times the spool's disk filled up (one warning each)."},
	 H(spool_full_episodes)},
	{{"causeway_agent_spool_lost_total", C,
	  "Records the spool could not take: nothing left to evict."},
	 H(spool_lost_full)},
	{{"causeway_agent_dns_datagrams_total", C,
	  "--dns: UDP datagrams from port 53 the kernel saw."},
	 N(datagrams)},
	{{"causeway_agent_dns_unsolicited_total", C,
	  "--dns: of those, answering no query of their socket: ignored."},
	 N(unsolicited)},
	{{"causeway_agent_dns_lost_total", C,
	  "--dns: of those, not copied: DNS ring full."},
	 N(lost)},
	{{"causeway_agent_dns_malformed_total", C,
	  "--dns: answers refused by the parser: nothing learned."},
	 N(malformed)},
	{{"causeway_agent_dns_names_total", C,
	  "--dns: DnsName records made."},
	 N(names)},
	{{"causeway_agent_dns_evicted_total", C,
	  "--dns: live names pushed out of the full cache."},
	 N(evicted)},
};

#define NMETRICS (sizeof(metrics) / sizeof(metrics[0]))

void cw_agent_health_kafka(struct cw_agent_health *h,
			   const struct cw_kafka_producer_stats *ks,
			   const struct cw_spool_stats *ss)
{
	if (ks) {
		h->has_kafka = true;
		h->produced = ks->produced;
		h->delivered = ks->delivered;
		h->failed = ks->failed;
		h->spooled = ks->spooled;
		h->replayed = ks->replayed;
		h->lost = ks->lost;
		h->queue_full = ks->queue_full;
		h->in_flight = ks->in_flight;
	}
	if (ss) {
		h->has_spool = true;
		h->spool_records = ss->records;
		h->spool_bytes = ss->bytes;
		h->spool_evicted = ss->evicted_records;
		h->spool_lost_full = ss->lost_full;
		h->spool_evicted_full = ss->evicted_full;
		h->spool_full_episodes = ss->full_episodes;
	}
}

struct cw_metrics_board *cw_agent_metrics_board(const char *host)
{
	/* The board keeps the definitions by pointer: one static copy. */
	static struct cw_metric_def defs[NMETRICS];
	size_t i;

	for (i = 0; i < NMETRICS; i++)
		defs[i] = metrics[i].def;
	return cw_metrics_board_new(defs, NMETRICS, "host", host);
}

void cw_agent_health_post(const struct cw_agent_health *h,
			  struct cw_metrics_board *b)
{
	uint64_t v[NMETRICS];
	size_t i;

	for (i = 0; i < NMETRICS; i++)
		memcpy(&v[i], (const char *)h + metrics[i].off, sizeof(v[i]));
	cw_metrics_board_set(b, v);
}

void cw_agent_health_meta(const struct cw_agent_health *h,
			  struct cw_host_health *out)
{
	const struct cw_agent_stats *a = &h->agent;

	memset(out, 0, sizeof(*out));
	out->records = a->records;
	out->delivered = h->delivered;
	out->lost = h->lost; /* the spool's refusals are among them */
	out->spooled = h->spooled;
	out->spool_records = h->spool_records;
	out->spool_evicted = h->spool_evicted;
	out->kernel_lost =
		a->close_lost + a->event_lost + a->timing_lost + h->dns.lost;
	out->map_full = a->storage_fail + a->udp_map_full;
	out->no_owner = a->no_owner;
	out->windows = a->windows;
}
