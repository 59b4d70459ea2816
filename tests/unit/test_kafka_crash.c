// SPDX-License-Identifier: MIT
/*
 * Nothing lost when the agent dies in the middle of a replay.  A spool
 * holds N connection records (seq 0..N-1); a child process (this binary,
 * run again as "child") replays them to the embedded broker as the agent
 * does, and is killed with SIGKILL part way through; a second child
 * finishes the replay.  Every seq must arrive.
 *
 * Two kills: while the brokers are down (records handed to librdkafka but
 * not confirmed: none may be lost, none may arrive twice), and while they
 * are up (none lost; a record the broker took whose confirmation the
 * child never saw is sent again, so a few may arrive twice: counted,
 * bounded by the records in flight).
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/util.h"
#include "common/wire.h"

#include "tests/unit/check.h"

#define N	     20000
#define SPOOL_BYTES  (64ULL << 20)
#define REPLAY_BATCH 1000 /* common/kafka.c: records in flight at most */

static void make_rec(struct cw_conn_record *r, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "crash");
	r->protocol = 6;
	cw_addr_parse(&r->laddr, "10.78.0.1");
	cw_addr_parse(&r->raddr, "10.78.0.2");
	r->lport = (uint16_t)(20000 + seq % 64);
	r->rport = 80;
	r->cookie = seq % 64;
	r->bytes_out = seq;
	r->seq = seq;
}

/* The agent's side: replay the spool until it is empty, saying how far
 * it got in dir/progress. */
static int child(const char *dir, const char *boot, const char *prefix)
{
	struct cw_kafka_conf conf = {.brokers = boot, .topic_prefix = prefix};
	struct cw_kafka_producer_stats st;
	struct cw_kafka_producer *p;
	struct cw_spool *sp;
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *fp;

	if (cw_spool_open(&sp, dir, SPOOL_BYTES))
		return 1;
	conf.spool = sp;
	conf.message_timeout_ms = 120000;
	p = cw_kafka_producer_new(&conf);
	if (!p)
		return 1;
	snprintf(path, sizeof(path), "%s/progress", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	while (!cw_spool_empty(sp)) {
		cw_kafka_producer_poll(p, 10);
		cw_kafka_producer_get_stats(p, &st);
		fp = fopen(tmp, "w");
		if (fp) {
			fprintf(fp, "%" PRIu64 "\n", st.delivered);
			fclose(fp);
			rename(tmp, path);
		}
	}
	cw_kafka_producer_free(p);
	cw_spool_close(sp);
	return 0;
}

static pid_t spawn(const char *dir, const char *boot, const char *prefix)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "test_kafka_crash", "child", dir, boot,
		      prefix, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static uint64_t progress(const char *dir)
{
	char path[PATH_MAX], buf[32];

	snprintf(path, sizeof(path), "%s/progress", dir);
	return cw_read_file(path, buf, sizeof(buf)) > 0 ? strtoull(buf, 0, 10)
							: 0;
}

static void fill(const char *dir)
{
	struct cw_conn_record r;
	struct cw_spool *sp;
	uint8_t *buf;
	size_t len;
	uint64_t i;

	CHECK(cw_spool_open(&sp, dir, SPOOL_BYTES) == 0);
	for (i = 0; i < N; i++) {
		make_rec(&r, i);
		CHECK(cw_wire_encode_conn(&r, &buf, &len) == 0);
		CHECK(cw_spool_append(sp, buf, len) == 0);
		free(buf);
	}
	cw_spool_close(sp);
}

/* Count each seq in the topic, from its start, until none comes for a
 * while (an end condition, not a check). */
static void count_seqs(const char *boot, const char *prefix, int *seen)
{
	struct cw_kafka_conf conf = {.brokers = boot,
				     .topic_prefix = prefix,
				     .group = prefix,
				     .from_beginning = true};
	char topic[CW_KAFKA_TOPIC_MAX];
	const char *topics[] = {
		cw_kafka_topic(&conf, CW_WIRE_CONN, topic, sizeof(topic))};
	static struct cw_wire_msg w;
	struct cw_kafka_consumer *c = cw_kafka_consumer_new(&conf, topics, 1);
	struct cw_kafka_msg m;
	char err[128];
	uint64_t last = cw_now_mono_ns(), quiet = 15 * NSEC_PER_SEC;
	int got = 0;

	CHECK(c != NULL);
	while (c && cw_now_mono_ns() - last < quiet) {
		if (cw_kafka_consume(c, 100, &m) <= 0)
			continue;
		last = cw_now_mono_ns();
		if (cw_wire_decode(m.value, m.len, &w, err, sizeof(err)) ==
			    CW_WIRE_CONN &&
		    w.conn.seq < N)
			seen[w.conn.seq]++;
		cw_kafka_msg_release(&m);
		if (++got >= N)
			quiet = 2 * NSEC_PER_SEC; /* anything more is a dup */
	}
	cw_kafka_consumer_free(c);
}

/* Fill, replay, kill at a third (brokers taken down first if `down`),
 * restart, count.  Returns the records that arrived twice. */
static int run(const char *base, const char *boot, const char *prefix,
	       bool down)
{
	static int seen[N];
	char dir[256], topic[64];
	int status, i, miss = 0, dup = 0;
	uint64_t at;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", base, prefix);
	snprintf(topic, sizeof(topic), "%s.conns", prefix);
	CHECK(cw_kafka_mock_topic_create(topic, 4) == 0);
	fill(dir);
	pid = spawn(dir, boot, prefix);
	while ((at = progress(dir)) < N / 3)
		usleep(1000);
	if (down) {
		CHECK(cw_kafka_mock_broker_down(-1) == 0);
		sleep(1); /* what the brokers confirmed has been reported */
	}
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	at = progress(dir);
	CHECK(at < N); /* killed in the middle */
	if (down)
		CHECK(cw_kafka_mock_broker_up(-1) == 0);
	pid = spawn(dir, boot, prefix);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	memset(seen, 0, sizeof(seen));
	count_seqs(boot, prefix, seen);
	for (i = 0; i < N; i++) {
		miss += !seen[i];
		dup += seen[i] > 1;
	}
	printf("kill %s, %" PRIu64 " of %d confirmed: %d missing, %d twice\n",
	       down ? "with the brokers down" : "while delivering", at, N, miss,
	       dup);
	CHECK(miss == 0);
	return dup;
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/causeway-unit-crash.XXXXXX", boot[256], cmd[300];
	int dup;

	if (argc == 5 && !strcmp(argv[1], "child"))
		return child(argv[2], argv[3], argv[4]);
	CHECK(mkdtemp(base) != NULL);
	CHECK(cw_kafka_mock_start(1, boot, sizeof(boot)) == 0);
	dup = run(base, boot, "cwcrash1", true);
	CHECK(dup == 0);
	dup = run(base, boot, "cwcrash2", false);
	CHECK(dup <= REPLAY_BATCH);
	cw_kafka_mock_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	CHECK(system(cmd) == 0);
	printf("%s\n", failures ? "FAILED"
				: "test_kafka_crash: all checks "
				  "passed");
	return failures ? 1 : 0;
}
