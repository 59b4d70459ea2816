// SPDX-License-Identifier: MIT
/*
 * Making the topics correlators keep their state in (<prefix>.state,
 * <prefix>.edges) with causeway's settings, rather than leaving it to a
 * broker's auto-creation and its defaults (cleanup.policy=delete): a
 * CreateTopics request with the brokers' default partitions and
 * replication.  The embedded broker answers no such request: there the
 * topic is made the old way, by a metadata request that allows it.
 */
#include <stdio.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

#include "common/kafka.h"
#include "common/kafka_impl.h"
#include "common/log.h"

/* The CreateTopics result's error for our one topic (its text in why). */
static rd_kafka_resp_err_t create_result(rd_kafka_event_t *ev, char *why,
					 size_t len)
{
	const rd_kafka_CreateTopics_result_t *res;
	const rd_kafka_topic_result_t **topics;
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	size_t n = 0;

	snprintf(why, len, "%s",
		 err ? rd_kafka_event_error_string(ev) : "");
	if (err)
		return err;
	res = rd_kafka_event_CreateTopics_result(ev);
	topics = res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
	if (n != 1) {
		snprintf(why, len, "no answer for the topic");
		return RD_KAFKA_RESP_ERR__FAIL;
	}
	err = rd_kafka_topic_result_error(topics[0]);
	snprintf(why, len, "%s",
		 rd_kafka_topic_result_error_string(topics[0])
			 ? rd_kafka_topic_result_error_string(topics[0])
			 : rd_kafka_err2str(err));
	return err;
}

int kafka_topic_create(rd_kafka_t *rk, const char *topic,
		       const char *const *kv, int n, int timeout_ms)
{
	rd_kafka_NewTopic_t *nt;
	rd_kafka_AdminOptions_t *opt;
	rd_kafka_queue_t *q;
	rd_kafka_event_t *ev;
	rd_kafka_resp_err_t err;
	char why[512];
	int i;

	nt = rd_kafka_NewTopic_new(topic, -1, -1, why, sizeof(why));
	if (!nt)
		return cw_error("kafka: unable to make topic '%s': %s", topic,
				why);
	for (i = 0; i < n; i++)
		if (rd_kafka_NewTopic_set_config(nt, kv[2 * i],
						 kv[2 * i + 1])) {
			rd_kafka_NewTopic_destroy(nt);
			return cw_error("kafka: topic setting %s=%s refused",
					kv[2 * i], kv[2 * i + 1]);
		}
	opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, NULL, 0);
	rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, NULL, 0);
	q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	/* The client times the request out itself: the slack is for that. */
	ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
	err = ev ? create_result(ev, why, sizeof(why))
		 : RD_KAFKA_RESP_ERR__TIMED_OUT;
	if (!ev)
		snprintf(why, sizeof(why), "no answer in time");
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	switch (err) {
	case RD_KAFKA_RESP_ERR_NO_ERROR:
		cw_info("kafka: made topic '%s'", topic);
		return 0;
	case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
		return 0; /* another member made it meanwhile */
	case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
	case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
	case RD_KAFKA_RESP_ERR_INVALID_REQUEST:
		return 1; /* the embedded broker */
	default:
		return cw_error("kafka: unable to make topic '%s': %s", topic,
				why);
	}
}

int kafka_topic_auto_create(const struct cw_kafka_conf *c, const char *topic)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_conf_t *conf = kafka_conf_common(c);
	rd_kafka_topic_t *rkt;
	rd_kafka_t *rk;
	rd_kafka_resp_err_t err;
	char why[512];

	if (!conf)
		return -1;
	if ((c->properties && kafka_conf_load_file(conf, c->properties)) ||
	    kafka_conf_set(conf, "allow.auto.create.topics", "true")) {
		rd_kafka_conf_destroy(conf);
		return -1;
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
	if (!rk) {
		rd_kafka_conf_destroy(conf);
		return cw_error("unable to create kafka producer: %s", why);
	}
	rkt = rd_kafka_topic_new(rk, topic, NULL);
	err = rkt ? rd_kafka_metadata(rk, 0, rkt, &md, 5000)
		  : RD_KAFKA_RESP_ERR__FAIL;
	if (!err)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	if (err)
		return cw_error("kafka: unable to make topic '%s': %s", topic,
				rd_kafka_err2str(err));
	return 0;
}
