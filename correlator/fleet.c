// SPDX-License-Identifier: MIT
/*
 * A member's fleet graph: the partitions it owns from its own state (what
 * it would read back, never lost to the topic's retention), every other
 * partition's buckets read on from P.edges and merged; without buckets,
 * its own pairing.  Rebuilt only when what it is made of moved.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"

void cw_fleet_init(struct cw_fleet *f, const struct cw_kafka_conf *kc,
		   const char *group, const char *edges_topic)
{
	memset(f, 0, sizeof(*f));
	cw_graph_init(&f->graph);
	cw_peer_names_init(&f->names, 0);
	if (!edges_topic)
		return;
	f->kc = kc;
	f->edges_topic = edges_topic;
	cw_edge_merge_init(&f->merge, group, 0, 0);
	f->merging = true;
}

void cw_fleet_release(struct cw_fleet *f)
{
	cw_graph_release(&f->graph);
	if (f->merging)
		cw_edge_merge_release(&f->merge);
	cw_kafka_log_free(f->log);
	cw_kafka_log_free(f->meta_log);
	cw_peer_names_release(&f->names);
	free(f->skip);
	free(f->owned);
	memset(f, 0, sizeof(*f));
}

/*
 * The partitions c owns now into f->owned.  If one owned before is not
 * any more, the merge starts again from the topic's beginning: it skipped
 * that partition's records while its own state had them.  0 or -1.
 */
static int own_partitions(struct cw_correlator *c, struct cw_fleet *f)
{
	int32_t *now = malloc((c->nparts + 1) * sizeof(*now));
	char group[CW_WIRE_NAME_MAX];
	size_t i, j;
	bool lost = false;

	if (!now)
		return cw_error("out of memory");
	for (i = 0; i < c->nparts; i++)
		now[i] = c->parts[i].partition;
	for (j = 0; j < f->nowned && !lost; j++) {
		for (i = 0; i < c->nparts && now[i] != f->owned[j]; i++)
			;
		lost = i == c->nparts;
	}
	if (lost) {
		cw_debug("%s: a partition was handed over: read again",
			 f->edges_topic);
		snprintf(group, sizeof(group), "%s", f->merge.group);
		cw_edge_merge_release(&f->merge);
		cw_edge_merge_init(&f->merge, group, 0, 0);
	}
	free(f->owned);
	f->owned = now;
	f->nowned = c->nparts;
	f->merge.owned = f->owned;
	f->merge.nowned = f->nowned;
	return 0;
}

/*
 * Where the graph's view starts: --view before the newest sealed bucket
 * of the partitions owned (else of those read from the topic); 0 without
 * a view.
 */
static uint64_t view_since(const struct cw_correlator *c,
			   const struct cw_fleet *f)
{
	uint64_t newest = 0;
	size_t i;

	for (i = 0; i < c->nparts; i++)
		if (c->parts[i].pairing.bk.s.sealed_ns > newest)
			newest = c->parts[i].pairing.bk.s.sealed_ns;
	if (!c->nparts && f->merge.newest_ns)
		newest = f->merge.newest_ns + c->o.bucket_ns;
	return c->o.view_ns && newest > c->o.view_ns ? newest - c->o.view_ns
						     : 0;
}

/*
 * Which partitions of the edges topic need not be read: input partition p
 * writes its buckets to p modulo their count (correlator/edges.c), so one
 * that only owned partitions write to holds nothing this member keeps.
 * Should the count change, which partition held what before is unknown:
 * from then on every partition is read; while the input's count is not
 * known, this time.  e: the edges topic's partitions.  0 or -1.
 */
static int skip_owned(struct cw_correlator *c, struct cw_fleet *f, int e)
{
	int n, p;
	bool *skip;
	size_t i;

	if (f->nparts > 0 && f->nparts != e) {
		cw_warn("%s: %d partitions, %d before: all of it is read from "
			"now on", f->edges_topic, e, f->nparts);
		f->nparts = -1;
	}
	f->merge.skip = NULL;
	f->merge.nskip = 0;
	if (f->nparts < 0 || !c->nparts)
		return 0;
	/* Not known now (a rebalance, a broker away): read it all. */
	n = cw_kafka_consumer_partitions(c->consumer, c->o.conns_topic, 1000);
	if (n <= 0) {
		cw_debug("%s: partitions unknown: all of %s is read",
			 c->o.conns_topic, f->edges_topic);
		return 0;
	}
	skip = realloc(f->skip, (size_t)e * sizeof(*skip));
	if (!skip)
		return cw_error("out of memory");
	f->skip = skip;
	f->nparts = e;
	for (p = 0; p < e; p++)
		skip[p] = true;
	for (p = 0; p < n; p++) {
		for (i = 0; i < c->nparts && c->parts[i].partition != p; i++)
			;
		if (i == c->nparts)
			skip[p % e] = false;
	}
	f->merge.skip = skip;
	f->merge.nskip = e;
	return 0;
}

/*
 * The fleet graph's other half: every other partition's buckets, read on
 * from P.edges.  Records of owned partitions are not kept: what this
 * member wrote itself is never read back into memory, and partitions of
 * P.edges that only owned partitions write to are not read.  0 or -1.
 */
static int read_fleet(struct cw_correlator *c, struct cw_fleet *f)
{
	struct cw_edge_merge *m = &f->merge;
	uint64_t t0 = cw_now_mono_ns(), before;
	int e;

	if (own_partitions(c, f))
		return -1;
	if (cw_edge_merge_since(m, view_since(c, f)))
		return cw_error("out of memory");
	if (!f->log && !(f->log = cw_kafka_log_new(f->kc, f->edges_topic)))
		return -1;
	e = cw_kafka_log_partitions(f->log);
	if (e <= 0 || skip_owned(c, f, e))
		return -1;
	before = m->records + m->own + m->foreign + m->outside;
	if (cw_edge_merge_read_log(m, f->log, e))
		return cw_error("unable to read the edge buckets of '%s'",
				f->edges_topic);
	cw_debug("%s: %" PRIu64 " records read in %.3f s (%" PRIu64
		 " of owned partitions in all), %zu kept",
		 f->edges_topic,
		 m->records + m->own + m->foreign + m->outside - before,
		 (double)(cw_now_mono_ns() - t0) / 1e9, m->own, m->recs.len);
	return 0;
}

/* What the graph is made of, as of now. */
static void inputs_of(const struct cw_correlator *c,
		      const struct cw_fleet *f, struct cw_fleet_inputs *in)
{
	memset(in, 0, sizeof(*in));
	in->applied = c->applied;
	in->states = c->sst.restored + c->sst.fresh + c->sst.dropped;
	in->merged = f->merging ? f->merge.records : 0;
	in->names = f->names.records;
	in->nparts = c->nparts;
}

/* The agents' names of external peers, read on from P.meta. */
static int read_names(struct cw_fleet *f)
{
	char topic[CW_KAFKA_TOPIC_MAX];

	if (!cw_kafka_topic(f->kc, CW_WIRE_DNS, topic, sizeof(topic)))
		return -1;
	if (!f->meta_log && !(f->meta_log = cw_kafka_log_new(f->kc, topic)))
		return -1;
	if (cw_peer_names_read_on(&f->names, f->meta_log))
		return cw_error("unable to read the names of '%s'", topic);
	return 0;
}

int cw_fleet_read(struct cw_fleet *f, struct cw_correlator *c)
{
	if (!f->merging)
		return 0;
	return read_fleet(c, f) || read_names(f) ? -1 : 0;
}

bool cw_fleet_moved(const struct cw_fleet *f, const struct cw_correlator *c)
{
	struct cw_fleet_inputs in;

	inputs_of(c, f, &in);
	return !f->built || memcmp(&in, &f->built_from, sizeof(in));
}

int cw_fleet_build(struct cw_fleet *f, struct cw_correlator *c)
{
	struct cw_fleet_inputs in;

	inputs_of(c, f, &in);
	cw_graph_release(&f->graph);
	cw_graph_init(&f->graph);
	if (c->o.bucket_ns) {
		if (cw_correlator_edges(c, cw_graph_bucket_edge, &f->graph) ||
		    (f->merging &&
		     cw_edge_merge_each(&f->merge, false, cw_graph_bucket_edge,
					&f->graph)))
			return cw_error("out of memory building the graph");
	} else if (cw_pairing_graph(&c->pairing, &f->graph)) {
		return cw_error("out of memory while pairing");
	}
	cw_graph_sort_edges(&f->graph);
	cw_peer_names_apply(&f->names, &f->graph);
	f->built_from = in;
	f->built = true;
	return 0;
}
