// SPDX-License-Identifier: MIT
/*
 * `causeway dump --kafka` against the embedded broker hosted by this test:
 * the records produced here come out of the binary as JSON lines, each
 * once.  Needs $CW (tests/run.sh sets it); skips without it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kafka.h"
#include "common/wire.h"

#define N 50

int main(void)
{
	char bootstrap[256], cmd[1024], line[4096];
	struct cw_kafka_conf conf = {.topic_prefix = "dumptest"};
	struct cw_kafka_producer *p;
	struct cw_conn_record r;
	const char *cw = getenv("CW");
	int seen[N] = {0}, i, lines = 0, bad = 0, status;
	unsigned long seq;
	FILE *fp;

	if (!cw) {
		printf("SKIP: $CW is not set (run through tests/run.sh)\n");
		return 77;
	}
	if (cw_kafka_mock_start(1, bootstrap, sizeof(bootstrap)) ||
	    cw_kafka_mock_topic_create("dumptest.conns", 2))
		return 1;
	conf.brokers = bootstrap;
	p = cw_kafka_producer_new(&conf);
	if (!p)
		return 1;
	for (i = 0; i < N; i++) {
		memset(&r, 0, sizeof(r));
		strcpy(r.host, "h");
		r.protocol = 6;
		cw_addr_parse(&r.laddr, "10.0.0.1");
		cw_addr_parse(&r.raddr, "10.0.0.2");
		r.lport = (uint16_t)(20000 + i);
		r.rport = 80;
		r.seq = (uint64_t)i;
		if (cw_kafka_produce_conn(p, &r))
			return 1;
	}
	if (cw_kafka_producer_flush(p, 10000)) {
		fprintf(stderr, "records not delivered\n");
		return 1;
	}
	cw_kafka_producer_free(p);

	snprintf(cmd, sizeof(cmd),
		 "'%s' dump --kafka '%s' --topic dumptest.conns "
		 "--from-beginning --count %d --timeout 20s",
		 cw, bootstrap, N);
	printf("%s\n", cmd);
	fp = popen(cmd, "r");
	if (!fp)
		return 1;
	while (fgets(line, sizeof(line), fp)) {
		char *s = strstr(line, "\"seq\":");

		lines++;
		if (!s || sscanf(s, "\"seq\":%lu", &seq) != 1 || seq >= N) {
			bad++;
			continue;
		}
		seen[seq]++;
	}
	status = pclose(fp);
	cw_kafka_mock_stop();
	for (i = 0; i < N; i++)
		bad += seen[i] != 1;
	printf("dump printed %d lines, %d wrong, exit status %d\n", lines, bad,
	       status);
	if (lines != N || bad || status != 0) {
		fprintf(stderr, "test_kafka_dump: FAILED\n");
		return 1;
	}
	printf("test_kafka_dump: all checks passed\n");
	return 0;
}
