// SPDX-License-Identifier: MIT
/*
 * Kafka delivery errors by kind, against the embedded broker: a permanent
 * one (the record is too large, or not authorised) is counted lost with
 * its reason and never spooled (it once cycled through the spool for
 * ever); a retriable one goes to the spool and is delivered when the
 * broker takes records again; a fatal idempotent-producer error makes a
 * new producer, and its records are delivered.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <librdkafka/rdkafka.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include "tests/unit/check.h"

static void make_rec(struct cw_conn_record *r, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "errs");
	r->protocol = 6;
	cw_addr_parse(&r->laddr, "10.79.0.1");
	cw_addr_parse(&r->raddr, "10.79.0.2");
	r->lport = 30000;
	r->rport = 80;
	r->cookie = 1;
	r->seq = seq;
}

static void test_classes(void)
{
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR_NO_ERROR) == CW_KAFKA_OK);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT) ==
	      CW_KAFKA_RETRIABLE);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR__TRANSPORT) ==
	      CW_KAFKA_RETRIABLE);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR__PURGE_QUEUE) ==
	      CW_KAFKA_RETRIABLE);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION) ==
	      CW_KAFKA_RETRIABLE);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) ==
	      CW_KAFKA_PERMANENT);
	CHECK(cw_kafka_err_class(
		      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) ==
	      CW_KAFKA_PERMANENT);
	CHECK(cw_kafka_err_class(RD_KAFKA_RESP_ERR__FATAL) == CW_KAFKA_FATAL);
}

/* Poll until nothing is in flight and the spool is empty, or `ms`. */
static void settle(struct cw_kafka_producer *p, int ms)
{
	cw_kafka_producer_flush(p, ms);
}

int main(void)
{
	char dir[] = "/tmp/causeway-unit-kerr.XXXXXX", boot[256], cmd[300];
	struct cw_kafka_conf conf = {.topic_prefix = "cwerr"};
	struct cw_kafka_producer_stats st;
	struct cw_spool_stats ss;
	struct cw_kafka_producer *p;
	struct cw_conn_record r;
	struct cw_spool *sp;
	static char log[65536];
	int i, fd, saved;
	ssize_t n;

	test_classes();
	CHECK(mkdtemp(dir) != NULL);
	CHECK(cw_kafka_mock_start(1, boot, sizeof(boot)) == 0);
	CHECK(cw_kafka_mock_topic_create("cwerr.conns", 1) == 0);
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	conf.brokers = boot;
	conf.spool = sp;
	conf.message_timeout_ms = 5000;
	p = cw_kafka_producer_new(&conf);
	CHECK(p != NULL);
	if (!p)
		return 1;
	/* A warm-up record, so the next ones are one produce request. */
	make_rec(&r, 0);
	CHECK(cw_kafka_produce_conn(p, &r) == 0);
	settle(p, 10000);

	/* Permanent: lost, counted, never in the spool. */
	CHECK(cw_kafka_mock_produce_errors(
		      RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 1) == 0);
	make_rec(&r, 1);
	CHECK(cw_kafka_produce_conn(p, &r) == 0);
	settle(p, 10000);
	cw_kafka_producer_get_stats(p, &st);
	cw_spool_get_stats(sp, &ss);
	printf("permanent: lost %" PRIu64 " (permanent %" PRIu64
	       "), spooled %" PRIu64 ", in spool %" PRIu64 "\n",
	       st.lost, st.lost_permanent, st.spooled, ss.records);
	CHECK(st.lost_permanent == 1 && st.lost == 1);
	CHECK(st.spooled == 0 && ss.appended == 0 && cw_spool_empty(sp));

	/* Fatal (the idempotent producer's sequence broke): a new producer,
	 * and the records still arrive.  librdkafka's own error-level log
	 * says why, shown without -v (stderr captured to see it). */
	snprintf(cmd, sizeof(cmd), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(2);
	fd = open(cmd, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
	close(fd);
	CHECK(cw_kafka_mock_produce_errors(
		      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, 1) == 0);
	for (i = 2; i < 12; i++) {
		make_rec(&r, (uint64_t)i);
		CHECK(cw_kafka_produce_conn(p, &r) == 0);
	}
	for (i = 0; i < 100; i++) {
		cw_kafka_producer_poll(p, 100);
		cw_kafka_producer_get_stats(p, &st);
		if (st.recreated && st.delivered >= 11 && cw_spool_empty(sp))
			break;
	}
	settle(p, 20000);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = cw_read_file(cmd, log, sizeof(log));
	CHECK(n > 0 && strstr(log, "warning: kafka: FATAL: ") != NULL);
	cw_kafka_producer_get_stats(p, &st);
	printf("fatal: recreated %" PRIu64 ", delivered %" PRIu64
	       ", spooled %" PRIu64 ", replayed %" PRIu64 ", lost %" PRIu64
	       "\n",
	       st.recreated, st.delivered, st.spooled, st.replayed, st.lost);
	CHECK(st.recreated >= 1);
	CHECK(st.delivered >= 11 && st.lost == 1 && cw_spool_empty(sp));

	cw_kafka_producer_free(p);
	cw_spool_close(sp);
	cw_kafka_mock_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	printf("%s\n", failures ? "FAILED"
				: "test_kafka_errors: all checks "
				  "passed");
	return failures ? 1 : 0;
}
