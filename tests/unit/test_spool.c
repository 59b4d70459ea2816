// SPDX-License-Identifier: MIT
/*
 * Spool: records come back in order, the byte bound evicts oldest first and
 * counts it, a torn tail is cut and counted, a restart resumes replay.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/spool.h"
#include "common/wire.h"

#include "tests/unit/check.h"

struct sink {
	uint64_t next;	/* the record number we expect */
	uint64_t limit; /* stop after this many */
	uint64_t got;
	int out_of_order;
};

/* Records are "rec <n>" padded to 100 bytes. */
static void make_rec(char *buf, uint64_t n)
{
	memset(buf, '.', 100);
	snprintf(buf, 100, "rec %" PRIu64, n);
}

static int take(const uint8_t *buf, size_t len, void *arg)
{
	struct sink *s = arg;
	uint64_t n = UINT64_MAX;

	if (s->got == s->limit)
		return 1;
	if (len != 100 || sscanf((const char *)buf, "rec %" SCNu64, &n) != 1 ||
	    n != s->next)
		s->out_of_order++;
	s->next = n + 1;
	s->got++;
	return 0;
}

static char dir[] = "/tmp/causeway-unit-spool.XXXXXX";

static void clean(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/*", dir);
	if (system(cmd))
		fprintf(stderr, "cleanup failed\n");
}

static void test_order(void)
{
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = UINT64_MAX};
	char rec[100];
	uint64_t i;

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	CHECK(cw_spool_empty(sp));
	for (i = 0; i < 3000; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	}
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 3000 && st.appended == 3000);
	CHECK(st.segments > 1);
	CHECK(st.evicted_records == 0);

	/* Stop half way, go on: one sequence, no gap, no repeat. */
	s.limit = 1000;
	CHECK(cw_spool_replay(sp, take, &s) == 1000);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 2000 && st.replayed == 1000);
	s.limit = UINT64_MAX;
	CHECK(cw_spool_replay(sp, take, &s) == 2000);
	CHECK(s.got == 3000 && s.out_of_order == 0);
	CHECK(cw_spool_empty(sp));
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 0 && st.bytes == 0);

	/* Appending after a full replay starts again cleanly. */
	make_rec(rec, 3000);
	CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	CHECK(cw_spool_replay(sp, take, &s) == 1);
	CHECK(s.out_of_order == 0);
	cw_spool_close(sp);
	clean();
}

static void test_restart(void)
{
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = 150};
	char rec[100];
	uint64_t i;

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	for (i = 0; i < 500; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	}
	CHECK(cw_spool_replay(sp, take, &s) == 150);
	cw_spool_close(sp);

	/* The taken 150 do not come back; the rest do, in order. */
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 350);
	s.limit = UINT64_MAX;
	CHECK(cw_spool_replay(sp, take, &s) == 350);
	CHECK(s.got == 500 && s.out_of_order == 0);
	cw_spool_close(sp);
	clean();
}

static void test_bound(void)
{
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = UINT64_MAX};
	const uint64_t max = 64 << 10, n = 2000;
	char rec[100];
	uint64_t i;

	CHECK(cw_spool_open(&sp, dir, max) == 0);
	for (i = 0; i < n; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
		cw_spool_get_stats(sp, &st);
		CHECK(st.bytes <= max);
	}
	cw_spool_get_stats(sp, &st);
	CHECK(st.evicted_records > 0);
	CHECK(st.evicted_records + st.records == n);
	CHECK(st.evicted_bytes == st.evicted_records * 108);
	/* What is left is the newest, still in order. */
	s.next = st.evicted_records;
	CHECK(cw_spool_replay(sp, take, &s) == (long)st.records);
	CHECK(s.out_of_order == 0 && s.next == n);
	cw_spool_close(sp);
	clean();

	CHECK(cw_spool_open(&sp, dir, 1000) == -1);
}

static void test_torn(void)
{
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = UINT64_MAX};
	char rec[100], path[256];
	struct stat stb;
	uint64_t i;
	int fd;

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	for (i = 0; i < 10; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	}
	cw_spool_close(sp);

	/* A crash inside the last write: half a frame at the end. */
	snprintf(path, sizeof(path), "%s/seg-%016d.cww", dir, 0);
	CHECK(stat(path, &stb) == 0);
	CHECK(truncate(path, stb.st_size - 30) == 0);
	/* And a frame whose length is garbage after that. */
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, "\xff\xff\xff\xff", 4) == 4);
	close(fd);

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.torn_records == 1);
	CHECK(st.torn_bytes == 108 - 30 + 4);
	CHECK(st.records == 9);
	/* Appending goes on after the cut, replay sees 0..8 then 9 again. */
	make_rec(rec, 9);
	CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	CHECK(cw_spool_replay(sp, take, &s) == 10);
	CHECK(s.out_of_order == 0);
	cw_spool_close(sp);
	clean();

	/* A flipped bit inside a record: skipped and counted, not fatal. */
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	for (i = 0; i < 3; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	}
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "X", 1, 8 + 108 + 8 + 50) == 1);
	close(fd);
	memset(&s, 0, sizeof(s));
	s.limit = UINT64_MAX;
	CHECK(cw_spool_replay(sp, take, &s) == 2);
	CHECK(s.out_of_order == 1); /* 0, then 2 */
	cw_spool_get_stats(sp, &st);
	CHECK(st.corrupt_records == 1);
	cw_spool_close(sp);
	clean();
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_order();
	test_restart();
	test_bound();
	test_torn();
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_spool: all checks passed\n");
	return 0;
}
