// SPDX-License-Identifier: MIT
/*
 * Spool: records come back in order, the byte bound evicts oldest first and
 * counts it, a torn tail is cut and counted, a damaged stretch is stepped
 * over without losing what follows, a full disk evicts and retries, and a
 * record leaves only when it is confirmed done (across restarts too).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/spool.h"
#include "common/util.h"
#include "common/wire.h"

#include "tests/unit/check.h"
#include "tests/unit/spool_rec.h"

#define MAX_TOKS 4096

struct sink {
	uint64_t next;	/* the record number we expect */
	uint64_t limit; /* stop after this many */
	uint64_t got;
	int out_of_order;
	/* what was taken, to confirm after the replay */
	struct cw_spool_token tok[MAX_TOKS];
	uint64_t num[MAX_TOKS];
	size_t ntok;
};

static int take(const uint8_t *buf, size_t len,
		const struct cw_spool_token *tok, void *arg)
{
	struct sink *s = arg;
	uint64_t n = rec_num(buf, len);

	if (s->got == s->limit)
		return 1;
	if (n != s->next)
		s->out_of_order++;
	s->next = n + 1;
	s->got++;
	if (s->ntok < MAX_TOKS) {
		s->tok[s->ntok] = *tok;
		s->num[s->ntok++] = n;
	}
	return 0;
}

/* Replay, then confirm every record taken: what a delivered batch does. */
static long replay_done(struct cw_spool *sp, struct sink *s)
{
	long n = cw_spool_replay(sp, take, s);
	size_t i;

	for (i = 0; i < s->ntok; i++)
		cw_spool_done(sp, &s->tok[i]);
	s->ntok = 0;
	return n;
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
	CHECK(replay_done(sp, &s) == 1000);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 2000 && st.replayed == 1000);
	s.limit = UINT64_MAX;
	CHECK(replay_done(sp, &s) == 2000);
	CHECK(s.got == 3000 && s.out_of_order == 0);
	CHECK(cw_spool_empty(sp));
	CHECK(cw_spool_sync(sp) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 0 && st.bytes == 0 && st.segments == 0);

	/* Appending after a full replay starts again cleanly. */
	make_rec(rec, 3000);
	CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	CHECK(replay_done(sp, &s) == 1);
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
	CHECK(replay_done(sp, &s) == 150);
	cw_spool_close(sp);

	/* The taken 150 do not come back; the rest do, in order. */
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 350);
	s.limit = UINT64_MAX;
	CHECK(replay_done(sp, &s) == 350);
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
	CHECK(replay_done(sp, &s) == (long)st.records);
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
	CHECK(replay_done(sp, &s) == 10);
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
	CHECK(replay_done(sp, &s) == 2);
	CHECK(s.out_of_order == 1); /* 0, then 2 */
	cw_spool_get_stats(sp, &st);
	CHECK(st.corrupt_records == 1);
	cw_spool_close(sp);
	clean();
}

/*
 * A garbage length field on record 4 of 10 once left 3 records, counted
 * as one torn record, and truncated the file: now the reader steps to the
 * next frame whose CRC holds, counts the stretch, and keeps the rest.
 */
static void test_resync(void)
{
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = UINT64_MAX};
	char rec[100], path[256];
	struct stat before, after;
	uint64_t i;
	int fd;

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	for (i = 0; i < 10; i++) {
		make_rec(rec, i);
		CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	}
	cw_spool_close(sp);
	snprintf(path, sizeof(path), "%s/seg-%016d.cww", dir, 0);
	CHECK(stat(path, &before) == 0);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "\x10\x27\x00\x00", 4, 8 + 3 * 108) == 4);
	close(fd);

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	CHECK(stat(path, &after) == 0);
	CHECK(after.st_size == before.st_size); /* nothing cut */
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 9 && st.torn_records == 0);
	CHECK(st.corrupt_records == 1 && st.corrupt_bytes == 108);
	CHECK(replay_done(sp, &s) == 9);
	CHECK(s.out_of_order == 1 && s.next == 10); /* 0-2, then 4-9 */
	CHECK(cw_spool_empty(sp));
	cw_spool_close(sp);
	clean();
}

/*
 * RLIMIT_FSIZE standing in for a full disk: 5 of 10 appends were once
 * lost with nothing evicted.  Now a full segment starts another, and the
 * oldest is evicted (counted) to make room; SIGXFSZ kills no one, nor
 * does SIGUSR1 (both caught by cw_catch_signals()).
 */
static void test_disk_full(void)
{
	struct rlimit old, lim;
	struct cw_spool *sp;
	struct cw_spool_stats st;
	struct sink s = {.limit = UINT64_MAX};
	char rec[100];
	uint64_t i;
	int fails = 0;

	cw_catch_signals();
	raise(SIGUSR1);
	CHECK(!cw_stop);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	lim = old;
	lim.rlim_cur = 8 + 5 * 108 + 50; /* five records a segment */
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	for (i = 0; i < 15; i++) {
		make_rec(rec, i);
		fails += cw_spool_append(sp, rec, sizeof(rec)) != 0;
	}
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	cw_spool_get_stats(sp, &st);
	printf("disk full: %d of 15 appends failed, %" PRIu64 " full, %" PRIu64
	       " evicted, %" PRIu64 " kept\n",
	       fails, st.disk_full, st.evicted_records, st.records);
	CHECK(fails == 0 && st.appended == 15 && st.lost_full == 0);
	CHECK(st.disk_full == 3 && st.evicted_records == 5);
	CHECK(st.records == 10);
	s.next = 5;
	CHECK(replay_done(sp, &s) == 10);
	CHECK(s.out_of_order == 0 && s.next == 15);
	cw_spool_close(sp);
	clean();
}

/*
 * A record leaves only when confirmed: of 150 handed out, 100 confirmed
 * out of order, then a restart: the 50 unconfirmed come back, the
 * confirmed never do.  A retried record is handed out again, alone.
 */
static void test_confirm(void)
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
	for (i = 0; i < 150; i++)
		if (i < 50 || i >= 100)
			cw_spool_done(sp, &s.tok[149 - i]);
	cw_spool_get_stats(sp, &st);
	CHECK(st.in_flight == 50 && st.records == 400);
	CHECK(!cw_spool_empty(sp));
	cw_spool_close(sp); /* as a crash would: nothing more confirmed */

	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 400);
	memset(&s, 0, sizeof(s));
	s.limit = UINT64_MAX;
	CHECK(cw_spool_replay(sp, take, &s) == 400);
	/* 50..99 were never confirmed: they come first, then 150..499 */
	CHECK(s.num[0] == 50 && s.num[49] == 99 && s.num[50] == 150 &&
	      s.num[399] == 499);
	/* One fails: nothing more goes out until the rest are reported,
	 * then it alone comes back. */
	cw_spool_retry(sp, &s.tok[7]);
	CHECK(cw_spool_replay(sp, take, &s) == 0);
	for (i = 0; i < 400; i++)
		if (i != 7)
			cw_spool_done(sp, &s.tok[i]);
	s.ntok = 0;
	CHECK(replay_done(sp, &s) == 1);
	CHECK(s.num[0] == 57);
	CHECK(cw_spool_empty(sp));
	cw_spool_get_stats(sp, &st);
	CHECK(st.retried == 1 && st.in_flight == 0);
	CHECK(cw_spool_sync(sp) == 0);
	cw_spool_close(sp);
	CHECK(cw_spool_open(&sp, dir, 1 << 20) == 0);
	CHECK(cw_spool_empty(sp));
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
	test_resync();
	test_disk_full();
	test_confirm();
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_spool: all checks passed\n");
	return 0;
}
