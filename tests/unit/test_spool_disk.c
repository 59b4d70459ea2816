// SPDX-License-Identifier: MIT
/*
 * The spool on a disk smaller than its bound (a 512 KiB tmpfs, the bound
 * 1 GiB), as issue #34 found it: the newest records were dropped with one
 * error line each, the cursor could not be saved, the used segments stayed
 * and a restart sent everything again; a read-only spool folder was taken
 * at open.  Now the oldest go (counted, one warning), the cursor is saved
 * in the room it keeps, used segments go, a restart resends only what was
 * not confirmed, and a read-only folder is refused at open.
 *
 * Needs root for its mounts, made in a mount namespace of its own so that
 * they go with the process whatever happens; skipped (77) without.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/spool.h"
#include "common/util.h"

#include "tests/unit/check.h"
#include "tests/unit/spool_rec.h"

#define NREC 10000

static char mnt[] = "/tmp/causeway-unit-spool-disk.XXXXXX";
static char spool[sizeof(mnt) + 16];
static bool mounted;

struct sink {
	uint64_t first, next, got;
	int out_of_order;
	struct cw_spool_token *tok;
	size_t ntok;
};

static int take(const uint8_t *buf, size_t len,
		const struct cw_spool_token *tok, void *arg)
{
	struct sink *s = arg;
	uint64_t n = rec_num(buf, len);

	if (n == UINT64_MAX || (s->got && n != s->next))
		s->out_of_order++;
	if (!s->got)
		s->first = n;
	s->next = n + 1;
	s->got++;
	s->tok[s->ntok++] = *tok;
	return 0;
}

static int mount_tmpfs(const char *opts)
{
	if (mount("tmpfs", mnt, "tmpfs", 0, opts))
		return -1;
	mounted = true;
	return mkdir(spool, 0755);
}

static void unmount(void)
{
	if (mounted && umount2(mnt, MNT_DETACH))
		perror("umount");
	mounted = false;
}

static size_t count_segments(void)
{
	DIR *d = opendir(spool);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return SIZE_MAX;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "seg-", 4);
	closedir(d);
	return n;
}

/* Take whatever room is left, so the disk is full for what follows. */
static void fill_disk(void)
{
	char path[sizeof(mnt) + 16], buf[4096] = {0};
	int fd;

	snprintf(path, sizeof(path), "%s/filler", mnt);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	CHECK(fd >= 0);
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* Lines of stderr while fn runs: the warnings the spool printed. */
static int stderr_lines(void (*fn)(void))
{
	char path[] = "/tmp/causeway-unit-stderr.XXXXXX", line[512];
	int fd = mkstemp(path), saved = dup(2), n = 0;
	FILE *fp;

	CHECK(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	fp = fdopen(fd, "r");
	rewind(fp);
	while (fgets(line, sizeof(line), fp)) {
		fputs(line, stderr);
		n++;
	}
	fclose(fp);
	unlink(path);
	return n;
}

static struct cw_spool_stats full_st;
static int full_fails;

static void append_all(void)
{
	struct cw_spool *sp;
	char rec[100];
	uint64_t i;

	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == 0);
	if (!sp)
		return;
	for (i = 0; i < NREC; i++) {
		make_rec(rec, i);
		full_fails += cw_spool_append(sp, rec, sizeof(rec)) != 0;
	}
	cw_spool_get_stats(sp, &full_st);
	cw_spool_close(sp);
}

/*
 * 10,000 records of 108 bytes on disk into 512 KiB: every append is taken,
 * the oldest go, one warning says so; the kept ones are the newest, in
 * order.  With the disk full, 100 short of the end are confirmed: the
 * cursor is saved, the used segments go, and a restart hands out only the
 * 100 that were not confirmed.
 */
static void test_full_disk(void)
{
	struct cw_spool_stats st;
	struct cw_spool *sp;
	struct sink s = {0};
	size_t i, segs;
	int lines;

	CHECK(mount_tmpfs("size=512k") == 0);
	lines = stderr_lines(append_all);
	printf("full disk: %d of %d appends failed, %" PRIu64
	       " evicted (%" PRIu64 " for the disk, %" PRIu64
	       " times full), %" PRIu64 " kept, %d lines logged\n",
	       full_fails, NREC, full_st.evicted_records, full_st.evicted_full,
	       full_st.full_episodes, full_st.records, lines);
	CHECK(full_fails == 0 && full_st.lost_full == 0);
	CHECK(full_st.evicted_full > 0 &&
	      full_st.evicted_full == full_st.evicted_records);
	CHECK(full_st.evicted_records + full_st.records == NREC);
	CHECK(full_st.full_episodes == 1 && lines == 1);
	/* Eighths of the disk: most of it still holds records. */
	CHECK(full_st.records * 108 > 256 << 10);

	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == 0);
	if (!sp)
		return;
	fill_disk();
	s.tok = calloc(NREC, sizeof(*s.tok));
	CHECK(cw_spool_replay(sp, take, &s) == (long)full_st.records);
	CHECK(s.out_of_order == 0 && s.next == NREC);
	CHECK(s.first == full_st.evicted_records);
	for (i = 0; i + 100 < s.ntok; i++)
		cw_spool_done(sp, &s.tok[i]);
	segs = count_segments();
	CHECK(cw_spool_sync(sp) == 0);
	CHECK(count_segments() < segs && count_segments() <= 2);
	cw_spool_close(sp);

	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == 0);
	if (!sp)
		return;
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 100);
	memset(s.tok, 0, NREC * sizeof(*s.tok));
	s.got = s.ntok = 0;
	CHECK(cw_spool_replay(sp, take, &s) == 100);
	CHECK(s.first == NREC - 100 && s.next == NREC && !s.out_of_order);
	for (i = 0; i < s.ntok; i++)
		cw_spool_done(sp, &s.tok[i]);
	CHECK(cw_spool_sync(sp) == 0);
	CHECK(count_segments() == 0);
	cw_spool_close(sp);
	free(s.tok);
	unmount();
}

/*
 * A disk full before the spool writes a byte: a record it cannot take is
 * counted and refused (1, no error line each), and the spool works again
 * once there is room.
 */
static void test_no_room(void)
{
	struct cw_spool_stats st;
	struct cw_spool *sp;
	char rec[100], path[sizeof(mnt) + 16];
	uint64_t i;
	int fails = 0;

	CHECK(mount_tmpfs("size=256k") == 0);
	fill_disk();
	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == 0);
	if (!sp)
		return;
	for (i = 0; i < 100; i++) {
		make_rec(rec, i);
		fails += cw_spool_append(sp, rec, sizeof(rec)) == 1;
	}
	cw_spool_get_stats(sp, &st);
	CHECK(fails == 100 && st.lost_full == 100 && st.full_episodes == 1);
	snprintf(path, sizeof(path), "%s/filler", mnt);
	CHECK(unlink(path) == 0);
	make_rec(rec, 100);
	CHECK(cw_spool_append(sp, rec, sizeof(rec)) == 0);
	cw_spool_get_stats(sp, &st);
	CHECK(st.records == 1);
	cw_spool_close(sp);
	unmount();
}

/* A spool folder on a read-only file system is refused at open, with or
 * without a spool in it. */
static void test_read_only(void)
{
	struct cw_spool *sp;
	char rec[100];

	CHECK(mount_tmpfs("size=256k") == 0);
	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == 0);
	make_rec(rec, 0);
	CHECK(sp && cw_spool_append(sp, rec, sizeof(rec)) == 0);
	cw_spool_close(sp);
	CHECK(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
	sp = NULL;
	CHECK(cw_spool_open(&sp, spool, 1ULL << 30) == -1 && !sp);
	cw_spool_close(sp);
	unmount();

	CHECK(mount_tmpfs("size=256k,mode=755") == 0);
	CHECK(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
	sp = NULL;
	CHECK(cw_spool_open(&sp, mnt, 1ULL << 30) == -1 && !sp);
	cw_spool_close(sp);
	unmount();
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: needs root to mount a small tmpfs\n");
		return 77;
	}
	/* Mounts of our own, gone with the process whatever happens. */
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		printf("SKIP: no mount namespace: %s\n", strerror(errno));
		return 77;
	}
	if (!mkdtemp(mnt)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(spool, sizeof(spool), "%s/spool", mnt);
	test_full_disk();
	unmount();
	test_no_room();
	unmount();
	test_read_only();
	unmount();
	rmdir(mnt);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_spool_disk: all checks passed\n");
	return 0;
}
