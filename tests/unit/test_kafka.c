// SPDX-License-Identifier: MIT
/*
 * Kafka transport against the embedded broker (librdkafka's mock cluster),
 * through the same code as a real broker: produce, consume in a group,
 * commit; then an outage: records spool, brokers return, the spool replays
 * and the consumer gets every record exactly once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include "tests/unit/check.h"

#define N_UP   200 /* records produced while the brokers are up */
#define N_DOWN 100 /* records produced during the outage */

static void make_rec(struct cw_conn_record *r, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "h1");
	r->protocol = 6;
	cw_addr_parse(&r->laddr, "10.77.0.1");
	cw_addr_parse(&r->raddr, "10.77.0.2");
	r->lport = (uint16_t)(10000 + seq % 50);
	r->rport = 80;
	r->cookie = seq % 50;
	r->bytes_out = seq * 100;
	r->seq = seq;
}

/*
 * Consume from `group` until `want` records came or `quiet_ms` passed with
 * none; mark each applied, commit.  seen[seq] counts deliveries.
 */
static int consume(struct cw_kafka_conf *conf, const char *group, int want,
		   int quiet_ms, int *seen, int nseen, bool apply)
{
	const char *topics[] = {"cwtest.conns"};
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	struct cw_wire_msg w;
	char key[CW_WIRE_KEY_MAX], err[128];
	uint64_t last = cw_now_mono_ns();
	int got = 0, r;

	conf->group = group;
	conf->from_beginning = true;
	c = cw_kafka_consumer_new(conf, topics, 1);
	CHECK(c != NULL);
	if (!c)
		return -1;
	while (cw_now_mono_ns() - last < (uint64_t)quiet_ms * NSEC_PER_MSEC) {
		r = cw_kafka_consume(c, 100, &m);
		CHECK(r >= 0);
		if (r <= 0)
			continue;
		last = cw_now_mono_ns();
		CHECK(cw_wire_decode(m.value, m.len, &w, err, sizeof(err)) ==
		      CW_WIRE_CONN);
		CHECK(cw_wire_conn_key(&w.conn, key, sizeof(key)) > 0);
		CHECK(m.key_len == strlen(key) &&
		      !memcmp(m.key, key, m.key_len));
		if (!apply) {
			cw_kafka_msg_release(&m);
		} else {
			if (w.conn.seq < (uint64_t)nseen)
				seen[w.conn.seq]++;
			cw_kafka_msg_applied(c, &m);
		}
		if (++got == want)
			quiet_ms = 1500; /* then make sure nothing more comes */
	}
	CHECK(cw_kafka_consumer_commit(c) == 0);
	cw_kafka_consumer_free(c);
	return got;
}

static void wait_for(struct cw_kafka_producer *p, int ms, uint64_t delivered,
		     uint64_t failed)
{
	struct cw_kafka_producer_stats st;
	uint64_t end = cw_now_mono_ns() + (uint64_t)ms * NSEC_PER_MSEC;

	do {
		cw_kafka_producer_poll(p, 50);
		cw_kafka_producer_get_stats(p, &st);
		if (st.delivered >= delivered && st.failed >= failed &&
		    !st.in_flight)
			return;
	} while (cw_now_mono_ns() < end);
}

int main(void)
{
	char bootstrap[256], dir[] = "/tmp/causeway-unit-kafka.XXXXXX",
			     cmd[300];
	char props[300];
	FILE *fp;
	struct cw_kafka_conf conf = {.topic_prefix = "cwtest"};
	struct cw_kafka_producer *p;
	struct cw_kafka_producer_stats st;
	struct cw_spool_stats ss;
	struct cw_conn_record r;
	struct cw_spool *sp;
	int seen[N_UP + N_DOWN] = {0}, i, got, dup = 0, miss = 0;

	if (getenv("CW_TEST_VERBOSE"))
		cw_log_level = CW_LOG_DEBUG;
	CHECK(mkdtemp(dir) != NULL);
	CHECK(cw_kafka_mock_start(3, bootstrap, sizeof(bootstrap)) == 0);
	CHECK(cw_kafka_mock_topic_create("cwtest.conns", 4) == 0);
	printf("embedded brokers: %s\n", bootstrap);
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	conf.brokers = bootstrap;
	conf.spool = sp;
	/*
	 * The mock coordinator holds a group that lost its last member for
	 * session.timeout.ms - 1s before a new member may join (a real
	 * broker does not), and expires a joining member after
	 * session.timeout.ms while it waits 3s for the first join: 6s, the
	 * least a real broker takes, through the properties file as a user
	 * would set it.  CW_TEST_KAFKA_DEBUG=cgrp,eos shows the clients' view.
	 */
	snprintf(props, sizeof(props), "%s/test.properties", dir);
	fp = fopen(props, "w");
	CHECK(fp != NULL);
	fprintf(fp, "# test settings\nsession.timeout.ms = 6000\n"
		    "heartbeat.interval.ms=500\n");
	if (getenv("CW_TEST_KAFKA_DEBUG"))
		fprintf(fp, "debug=%s\n", getenv("CW_TEST_KAFKA_DEBUG"));
	fclose(fp);
	conf.properties = props;
	conf.message_timeout_ms = 2000;

	p = cw_kafka_producer_new(&conf);
	CHECK(p != NULL);
	if (!p)
		return 1;
	for (i = 0; i < N_UP; i++) {
		make_rec(&r, i);
		CHECK(cw_kafka_produce_conn(p, &r) == 0);
	}
	CHECK(cw_kafka_producer_flush(p, 10000) == 0);
	cw_kafka_producer_get_stats(p, &st);
	printf("up: produced %" PRIu64 " delivered %" PRIu64 " failed %" PRIu64
	       "\n",
	       st.produced, st.delivered, st.failed);
	CHECK(st.delivered == N_UP && st.failed == 0 && st.spooled == 0);

	got = consume(&conf, "g1", N_UP, 10000, seen, N_UP + N_DOWN, true);
	printf("consumer g1: %d records\n", got);
	CHECK(got == N_UP);
	/* Committed: the group's next member starts after them. */
	got = consume(&conf, "g1", 0, 9000, seen, N_UP + N_DOWN, true);
	CHECK(got == 0);

	/* Outage: every broker goes away while the agent keeps producing. */
	CHECK(cw_kafka_mock_broker_down(-1) == 0);
	for (i = N_UP; i < N_UP + N_DOWN; i++) {
		make_rec(&r, i);
		CHECK(cw_kafka_produce_conn(p, &r) == 0);
		cw_kafka_producer_poll(p, 0);
	}
	wait_for(p, 10000, 0, 1);
	cw_kafka_producer_get_stats(p, &st);
	cw_spool_get_stats(sp, &ss);
	printf("down: failed %" PRIu64 " spooled %" PRIu64 " in spool %" PRIu64
	       "\n",
	       st.failed, st.spooled, ss.records);
	CHECK(st.failed > 0);
	CHECK(ss.records == N_DOWN);

	CHECK(cw_kafka_mock_broker_up(-1) == 0);
	CHECK(cw_kafka_producer_flush(p, 30000) == 0);
	cw_kafka_producer_get_stats(p, &st);
	cw_spool_get_stats(sp, &ss);
	printf("back: delivered %" PRIu64 " replayed %" PRIu64
	       " in spool %" PRIu64 " lost %" PRIu64 "\n",
	       st.delivered, st.replayed, ss.records, st.lost);
	CHECK(cw_spool_empty(sp) && st.lost == 0);
	CHECK(st.delivered == N_UP + N_DOWN);

	/* Read but not applied: not committed, so the group reads them again.
	 */
	got = consume(&conf, "g1", N_DOWN, 10000, seen, N_UP + N_DOWN, false);
	printf("consumer g1 after the outage, not applying: %d records\n", got);
	CHECK(got == N_DOWN);
	got = consume(&conf, "g1", N_DOWN, 10000, seen, N_UP + N_DOWN, true);
	printf("consumer g1 after the outage: %d records\n", got);
	CHECK(got == N_DOWN);
	for (i = 0; i < N_UP + N_DOWN; i++) {
		dup += seen[i] > 1;
		miss += seen[i] == 0;
	}
	printf("missing %d, doubled %d\n", miss, dup);
	CHECK(miss == 0 && dup == 0);

	cw_kafka_producer_free(p);
	cw_spool_close(sp);
	cw_kafka_mock_stop();

	/* Properties files: a bad line is named. */
	snprintf(cmd, sizeof(cmd), "%s/bad.properties", dir);
	fp = fopen(cmd, "w");
	CHECK(fp != NULL);
	fprintf(fp, "# comment\n\nlinger.ms = 5\nno equals sign\n");
	fclose(fp);
	conf.properties = cmd;
	conf.spool = NULL;
	CHECK(cw_kafka_producer_new(&conf) == NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_kafka: all checks passed\n");
	return 0;
}
