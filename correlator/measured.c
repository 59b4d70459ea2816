// SPDX-License-Identifier: MIT
/*
 * The measured graph of 'causeway place': agent records and the agents'
 * host and process metadata, from files or from Kafka, through the
 * pipeline 'causeway graph' runs (read, pair, build, project by process),
 * written as the graph JSON place's loader reads.  With a time range,
 * records of connection ends wholly outside it are left out (their
 * processes then are not seen in the range) and the windows cut the bytes
 * of those that cross its edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/pipeline.h"

#define BATCH	   256
#define FIRST_WAIT (15 * NSEC_PER_SEC)

struct feed {
	struct cw_measured *in;
	struct cw_pipeline *pl;
	struct cw_conn_record *batch;
	size_t n;
	uint64_t conns, kept, bad;
};

static bool in_range(const struct cw_measured *in,
		     const struct cw_conn_record *r)
{
	uint64_t first = r->first_ns ? r->first_ns : r->last_ns;

	if (in->since_ns && r->last_ns < in->since_ns)
		return false;
	return !in->until_ns || first < in->until_ns;
}

static int flush(struct feed *f)
{
	int ret = f->n ? cw_pipeline_add(f->pl, f->batch, f->n) : 0;

	f->n = 0;
	return ret;
}

static int feed_conn(struct feed *f, const struct cw_conn_record *r)
{
	f->conns++;
	if (!in_range(f->in, r))
		return 0;
	f->kept++;
	f->batch[f->n++] = *r;
	return f->n == BATCH ? flush(f) : 0;
}

/* Metadata whatever the range: it joins only the processes kept. */
static int on_meta(const struct cw_wire_msg *m, void *arg)
{
	struct feed *f = arg;

	return cw_pipeline_add_meta(f->pl, m);
}

static int on_records(const struct cw_conn_record *r, size_t n, void *arg)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (feed_conn(arg, &r[i]))
			return -1;
	return 0;
}

/*
 * One record from Kafka into the pipeline; *backlog tells whether it was
 * stamped before the read began (agents publish all the time: only the
 * backlog decides when the read is done).
 */
static int feed_msg(struct feed *f, const struct cw_kafka_msg *km,
		    uint64_t start_ns, bool *backlog)
{
	struct cw_wire_msg m;
	char err[128];
	int kind = cw_wire_decode(km->value, km->len, &m, err, sizeof(err));
	uint64_t t = 0;
	int ret = 0;

	*backlog = false;
	if (kind < 0) {
		f->bad++;
		return 0;
	}
	if (kind == CW_WIRE_CONN)
		ret = feed_conn(f, &m.conn), t = m.conn.last_ns;
	else if (kind == CW_WIRE_HOST)
		ret = cw_pipeline_add_meta(f->pl, &m), t = m.host.time_ns;
	else if (kind == CW_WIRE_PROC)
		ret = cw_pipeline_add_meta(f->pl, &m), t = m.proc.time_ns;
	*backlog = t < start_ns;
	cw_wire_msg_release(&m);
	return ret;
}

/*
 * Both topics from the beginning, in a group of its own, until `idle`
 * passes with no record from before the read began.
 */
static int read_kafka(struct feed *f)
{
	struct cw_measured *in = f->in;
	char group[80], conns[CW_KAFKA_TOPIC_MAX], meta[CW_KAFKA_TOPIC_MAX];
	struct cw_kafka_conf conf = {
		.brokers = in->brokers,
		.properties = in->kafka_properties,
		.topic_prefix = in->topic_prefix,
		.group = group,
		.from_beginning = true,
	};
	uint64_t idle = in->idle_ns ? in->idle_ns : 3 * NSEC_PER_SEC, last,
		 wait, start = cw_now_real_ns();
	bool backlog;
	const char *topics[2];
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg km;
	int r, ret = 0;

	snprintf(group, sizeof(group), "causeway-place-%d-%llu", (int)getpid(),
		 (unsigned long long)cw_now_real_ns());
	topics[0] = cw_kafka_topic(&conf, CW_WIRE_CONN, conns, sizeof(conns));
	topics[1] = cw_kafka_topic(&conf, CW_WIRE_HOST, meta, sizeof(meta));
	if (!topics[0] || !topics[1])
		return -1;
	c = cw_kafka_consumer_new(&conf, topics, 2);
	if (!c)
		return -1;
	/* Joining the group takes seconds: the first record may be slow. */
	last = cw_now_mono_ns();
	wait = idle > FIRST_WAIT ? idle : FIRST_WAIT;
	while (!ret && cw_now_mono_ns() - last < wait) {
		r = cw_kafka_consume(c, 100, &km);
		if (r < 0)
			ret = cw_error("reading '%s' at %s failed", conns,
				       in->brokers);
		if (r <= 0)
			continue;
		ret = feed_msg(f, &km, start, &backlog);
		cw_kafka_msg_release(&km);
		if (backlog)
			last = cw_now_mono_ns(), wait = idle;
	}
	cw_kafka_consumer_free(c);
	if (!ret && !f->conns)
		ret = cw_error("no connection records on '%s' at %s (none came "
			       "in %.1f s)",
			       conns, in->brokers, (double)wait / 1e9);
	return ret;
}

static int read_records(struct feed *f)
{
	struct cw_measured *in = f->in;

	/* No range: the pipeline's own reading, tables sized from files. */
	if (!in->since_ns && !in->until_ns)
		return cw_pipeline_read_files(f->pl, in->records, in->nrecords,
					      false);
	return cw_record_read_files_meta(in->records, in->nrecords, false,
					 on_records, on_meta, f, &f->pl->read);
}

/* The view as 'causeway graph --by process --format json' writes it. */
static int write_graph(struct cw_measured *in, const struct cw_view *v)
{
	FILE *fp = open_memstream(&in->json, &in->len);
	struct cw_jsonw w;

	if (!fp)
		return cw_error("out of memory");
	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_view_json(v, &w, NULL, 0);
	cw_jsonw_obj_close(&w);
	if (fclose(fp) || !in->json)
		return cw_error("out of memory");
	return 0;
}

int cw_measured_graph(struct cw_measured *in)
{
	struct cw_pipeline pl;
	bool range = in->since_ns || in->until_ns;
	uint64_t width = in->window_ns ? in->window_ns : NSEC_PER_SEC;
	struct feed f = {.in = in, .pl = &pl};
	int ret;

	f.batch = malloc(BATCH * sizeof(*f.batch));
	if (!f.batch)
		return cw_error("out of memory");
	cw_pipeline_init(&pl, range ? width : 0);
	ret = in->brokers ? read_kafka(&f) : read_records(&f);
	if (!ret)
		ret = flush(&f);
	if (!ret && f.bad)
		cw_warn("%s: %llu malformed records skipped", in->name,
			(unsigned long long)f.bad);
	if (!ret && f.conns && !f.kept)
		ret = cw_error("%s: none of the %llu connection records falls "
			       "in the time range",
			       in->name, (unsigned long long)f.conns);
	if (!ret)
		ret = cw_pipeline_finish(&pl, CW_BY_PROCESS);
	if (!ret)
		ret = write_graph(in, &pl.view);
	cw_pipeline_release(&pl);
	free(f.batch);
	return ret;
}
