// SPDX-License-Identifier: MIT
/*
 * Records -> pairing -> traffic graph -> view, the one way every command
 * does it: ingest (pairing and windows), pair, build, place the windows,
 * free the ends, project.  Or the graph from a group's P.edges, merged.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/pipeline.h"

static double secs_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

void cw_pipeline_init(struct cw_pipeline *pl, uint64_t window_ns)
{
	memset(pl, 0, sizeof(*pl));
	cw_pairing_init(&pl->pairing);
	cw_windows_init(&pl->windows, window_ns);
	cw_graph_init(&pl->graph);
	cw_resources_init(&pl->res);
	cw_peer_names_init(&pl->names, 0);
}

void cw_pipeline_release(struct cw_pipeline *pl)
{
	cw_view_release(&pl->view);
	cw_graph_release(&pl->graph);
	cw_windows_release(&pl->windows);
	cw_pairing_release(&pl->pairing);
	cw_resources_release(&pl->res);
	cw_peer_names_release(&pl->names);
}

int cw_pipeline_add(struct cw_pipeline *pl, const struct cw_conn_record *r,
		    size_t n)
{
	size_t i;

	if (cw_pairing_add_many(&pl->pairing, r, n))
		return cw_error("out of memory");
	for (i = 0; i < n; i++)
		if (cw_windows_add(&pl->windows, &r[i]))
			return cw_error("out of memory");
	return 0;
}

int cw_pipeline_add_meta(struct cw_pipeline *pl, const struct cw_wire_msg *m)
{
	if (m->kind == CW_WIRE_DNS && cw_peer_names_add(&pl->names, &m->dns))
		return cw_error("out of memory for names");
	if (cw_resources_add(&pl->res, m))
		return cw_error("out of memory for process metadata");
	return 0;
}

static int on_records(const struct cw_conn_record *r, size_t n, void *arg)
{
	return cw_pipeline_add(arg, r, n);
}

static int on_meta(const struct cw_wire_msg *m, void *arg)
{
	return cw_pipeline_add_meta(arg, m);
}

int cw_pipeline_read_files(struct cw_pipeline *pl, char *const *paths, size_t n,
			   bool skip_bad)
{
	struct timespec t0;
	uint64_t guess = 0;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		guess += cw_record_file_guess(paths[i]);
	/* Sized once from the files' sizes: no copies as the tables grow. */
	if (guess && guess < 1000000000 &&
	    cw_pairing_reserve(&pl->pairing, (size_t)guess))
		return cw_error("out of memory for %llu records",
				(unsigned long long)guess);
	if (cw_record_read_files_meta(paths, n, skip_bad, on_records, on_meta,
				      pl, &pl->read))
		return -1;
	pl->t_read = secs_since(&t0);
	return 0;
}

/* Each merged edge into the graph, its connections into the counts. */
static int edge_in(const struct cw_edge_node *client,
		   const struct cw_edge_node *server, uint8_t protocol,
		   uint64_t bucket_ns, const struct cw_edge_total *t, void *arg)
{
	struct cw_pipeline *pl = arg;

	pl->pairs.paired += t->paired;
	pl->pairs.unpaired += t->conns - t->paired;
	pl->pairs.ends += 2 * t->paired + (t->conns - t->paired);
	return cw_graph_bucket_edge(client, server, protocol, bucket_ns, t,
				    &pl->graph);
}

int cw_pipeline_read_kafka(struct cw_pipeline *pl,
			   const struct cw_kafka_conf *kc, const char *group,
			   uint64_t since_ns, uint64_t until_ns)
{
	char topic[CW_KAFKA_TOPIC_MAX];
	struct cw_edge_merge m;
	struct timespec t0;
	int err = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cw_edge_merge_init(&m, group, since_ns, until_ns);
	cw_kafka_topic(kc, CW_WIRE_EDGE, topic, sizeof(topic));
	if (cw_edge_merge_read(&m, kc, topic) ||
	    cw_peer_names_read_kafka(&pl->names, kc))
		goto out;
	pl->read.records = m.records;
	pl->read.bad = m.bad;
	if (cw_edge_merge_each(&m, false, edge_in, pl)) {
		cw_error("out of memory building the graph");
		goto out;
	}
	if (!m.records)
		cw_warn("'%s': no edge buckets of group '%s' in that time",
			topic, group);
	pl->from_edges = true;
	pl->windows.width_ns = 0;
	err = 0;
out:
	pl->t_read = secs_since(&t0);
	cw_edge_merge_release(&m);
	return err;
}

int cw_time_arg(const char *opt, const char *val, uint64_t now_ns, uint64_t *ns)
{
	return cw_time_opt(opt, val, now_ns, ns);
}

int cw_time_range(const char *since, const char *until, uint64_t *since_ns,
		  uint64_t *until_ns)
{
	uint64_t now = cw_now_real_ns();

	*since_ns = *until_ns = 0;
	if ((since && cw_time_arg("--since", since, now, since_ns)) ||
	    (until && cw_time_arg("--until", until, now, until_ns)))
		return -1;
	if (*until_ns && *since_ns >= *until_ns)
		return cw_error("--since '%s' is not before --until '%s'",
				since, until);
	return 0;
}

/*
 * The view with the windows' cells.  The view copies them: the deltas and
 * ends go first (their counts stay), so the windows cost no more memory
 * at the peak than before the view had them.
 */
static int view_windows(struct cw_pipeline *pl, enum cw_group_by by)
{
	struct cw_windows *w = &pl->windows;
	uint64_t lumped = w->lumped, max_deltas = w->max_deltas,
		 stale = w->stale, width = w->width_ns;
	struct cw_edge_windows ew;
	int err;

	if (cw_windows_by_edge(w, &ew))
		return cw_error("out of memory building the %s graph",
				cw_group_by_name(by));
	cw_windows_release(w);
	cw_windows_init(w, width);
	w->lumped = lumped;
	w->max_deltas = max_deltas;
	w->stale = stale;
	err = cw_view_build(&pl->view, &pl->graph, by, &ew);
	cw_edge_windows_release(&ew);
	return err;
}

int cw_pipeline_finish(struct cw_pipeline *pl, enum cw_group_by by)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* From the buckets, the graph is built already: nothing to pair. */
	if (!pl->from_edges &&
	    (cw_pairing_graph(&pl->pairing, &pl->graph) ||
	     (pl->windows.width_ns &&
	      cw_windows_place(&pl->windows, &pl->graph, &pl->pairing))))
		return cw_error("out of memory pairing connection ends");
	pl->t_pair = secs_since(&t0);
	cw_graph_set_resources(&pl->graph, &pl->res);
	cw_peer_names_apply(&pl->names, &pl->graph);
	/* The view needs the graph only: its memory can have the ends'. */
	if (!pl->from_edges)
		pl->pairs = pl->pairing.st;
	cw_pairing_release(&pl->pairing);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (view_windows(pl, by))
		return -1;
	pl->t_view = secs_since(&t0);
	if (pl->windows.lumped)
		cw_warn("per-window traffic: %llu changes spanned more than "
			"%u windows, or came past %llu entries, and were put "
			"whole in their last window",
			(unsigned long long)pl->windows.lumped,
			CW_WINDOWS_SPAN_MAX,
			(unsigned long long)pl->windows.max_deltas);
	return 0;
}
