// SPDX-License-Identifier: MIT
/* One member of a correlator group, assembled (correlator/member.h). */
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/member.h"
#include "correlator/report.h"

void cw_member_defaults(struct cw_member *m)
{
	m->o.paths = true;
	m->o.grace_ns = 2 * NSEC_PER_SEC;
	/* Buckets on (0 turns them off: every end kept). */
	m->o.bucket_ns = CW_BUCKET_WIDTH_NS;
	m->o.ttl_ns = CW_BUCKET_TTL_NS;
	m->o.lateness_ns = CW_BUCKET_LATENESS_NS;
	m->o.view_ns = CW_VIEW_NS;
	cw_paths_opts_default(&m->o.po);
}

struct topics {
	char conns[CW_KAFKA_TOPIC_MAX], timing[CW_KAFKA_TOPIC_MAX];
	char state[CW_KAFKA_TOPIC_MAX], edges[CW_KAFKA_TOPIC_MAX];
};

/* The topics under the prefix, and the checkpoints' and buckets'. */
static void name_topics(struct cw_member *m, struct topics *t)
{
	struct cw_correlator_opts *o = &m->o;

	cw_kafka_topic(&m->kc, CW_WIRE_CONN, t->conns, sizeof(t->conns));
	cw_kafka_topic(&m->kc, CW_WIRE_TIMING, t->timing, sizeof(t->timing));
	if (m->no_checkpoints)
		return;
	o->kafka = &m->kc;
	o->group = m->kc.group ? m->kc.group : CW_KAFKA_GROUP;
	o->conns_topic = t->conns;
	o->state_topic = cw_kafka_topic(&m->kc, CW_WIRE_STATE, t->state,
					sizeof(t->state));
	if (o->bucket_ns)
		o->edges_topic = cw_kafka_topic(&m->kc, CW_WIRE_EDGE, t->edges,
						sizeof(t->edges));
}

int cw_member_run(struct cw_member *m)
{
	static struct cw_correlator c; /* large: keep it off the stack */
	struct cw_kafka_consumer *consumer = NULL;
	struct cw_snapshots snap;
	const char *topics[2];
	struct topics t;
	int err = -1;

	name_topics(m, &t);
	topics[0] = t.conns;
	topics[1] = t.timing;
	if (cw_snapshots_start(&snap, m->o.out, &m->kc, m->o.group,
			       m->o.edges_topic, m->write, m->write_arg))
		goto out;
	if (cw_correlator_open(&c, &m->o, NULL, t.timing))
		goto out;
	consumer = cw_kafka_consumer_new(&m->kc, topics, m->o.paths ? 2 : 1);
	if (!consumer)
		goto out;
	c.consumer = consumer;
	if (m->o.kafka)
		cw_kafka_consumer_hooks(consumer, cw_correlator_on_assign,
					cw_correlator_on_revoke, &c);
	c.snapshot = cw_snapshots_hook;
	c.snapshot_arg = &snap;
	cw_info("correlating %s%s%s from %s", t.conns,
		m->o.paths ? " and " : "", m->o.paths ? t.timing : "",
		m->kc.brokers);
	if (cw_correlator_run(&c, m->duration_ns, m->idle_ns, m->every_ns))
		goto out;
	cw_correlator_report(&c, &snap.fleet.graph, m->json);
	err = 0;
out:
	if (cw_snapshots_stop(&snap) && !err)
		err = -1;
	cw_kafka_consumer_free(consumer);
	if (cw_correlator_close(&c) && !err)
		err = -1;
	return err;
}
