// SPDX-License-Identifier: MIT
/*
 * The floor of the correlator's ingest: a librdkafka consumer-group member
 * configured as `causeway correlate`'s (a group of its own, from the
 * beginning, no auto commit, the same properties file) that reads a topic
 * and does nothing with its records.  Its CPU per record is what reading
 * the records alone costs, the part no work in the correlator can remove.
 *
 *   consume BROKERS TOPIC GROUP PROPERTIES IDLE_MS
 *
 * Stops once it held an assignment and IDLE_MS passed with no record; prints
 * the number of records read and the CPU seconds (all threads) from the
 * first record to the last (the clock read at most once a millisecond),
 * as the correlator's "ingest:" line tells its own: the join and the
 * idling left out.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];

	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK) {
		fprintf(stderr, "consume: %s=%s: %s\n", k, v, err);
		exit(2);
	}
}

/* Each "key=value" line of path; '#' lines and blank ones skipped. */
static void load(rd_kafka_conf_t *conf, const char *path)
{
	char line[1024], *eq, *end;
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		end = line + strcspn(line, "\r\n");
		*end = 0;
		if (line[0] == '#' || !(eq = strchr(line, '=')))
			continue;
		*eq = 0;
		set(conf, line, eq + 1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_conf_t *conf;
	rd_kafka_message_t *m;
	rd_kafka_t *rk;
	long long last, idle, n = 0, t, cpu_first = 0, cpu_last = 0;
	char err[512];

	if (argc != 6) {
		fprintf(stderr, "usage: consume BROKERS TOPIC GROUP "
				"PROPERTIES IDLE_MS\n");
		return 2;
	}
	idle = atoll(argv[5]);
	conf = rd_kafka_conf_new();
	set(conf, "bootstrap.servers", argv[1]);
	set(conf, "group.id", argv[3]);
	set(conf, "auto.offset.reset", "earliest");
	load(conf, argv[4]);
	set(conf, "enable.auto.commit", "false");
	set(conf, "enable.auto.offset.store", "false");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "consume: %s\n", err);
		return 1;
	}
	rd_kafka_poll_set_consumer(rk);
	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, argv[2], RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(rk, list)) {
		fprintf(stderr, "consume: unable to subscribe to %s\n",
			argv[2]);
		return 1;
	}
	rd_kafka_topic_partition_list_destroy(list);
	last = now_ms();
	for (;;) {
		rd_kafka_topic_partition_list_t *a = NULL;
		int assigned = 0;

		m = rd_kafka_consumer_poll(rk, 200);
		if (m) {
			if (!m->err) {
				n++;
				t = now_ms();
				if (!cpu_first)
					cpu_first = cpu_last = cpu_ns();
				else if (t != last)
					cpu_last = cpu_ns();
				last = t;
			}
			rd_kafka_message_destroy(m);
			continue;
		}
		if (!rd_kafka_assignment(rk, &a) && a) {
			assigned = a->cnt > 0;
			rd_kafka_topic_partition_list_destroy(a);
		}
		if (!assigned)
			last = now_ms();
		else if (now_ms() >= last + idle)
			break;
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	printf("%lld %.6f\n", n, (double)(cpu_last - cpu_first) / 1e9);
	return 0;
}
