// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spool.h"
#include "common/util.h"
#include "common/wire.h"

#define SPOOL_MIN_BYTES (64ULL << 10)
#define SEG_MAX_BYTES	(64ULL << 20)

struct spool_seg {
	uint64_t id;
	uint64_t bytes;	  /* file size */
	uint64_t records; /* whole frames in it (bad-CRC ones included) */
};

struct cw_spool {
	char *dir;
	uint64_t max_bytes, seg_bytes;
	struct spool_seg *segs; /* oldest first; the last one is appended to */
	size_t nsegs, cap;
	int fd;			/* of the last segment, or -1 */
	uint64_t head_off;	/* next unread byte of segs[0] */
	uint64_t head_consumed; /* records of segs[0] already taken */
	uint64_t next_id;
	struct cw_spool_stats st;
};

static void seg_path(const struct cw_spool *sp, uint64_t id, char *buf,
		     size_t len)
{
	snprintf(buf, len, "%s/seg-%016" PRIu64 ".cww", sp->dir, id);
}

static int seg_push(struct cw_spool *sp, uint64_t id)
{
	if (CW_GROW(sp->segs, sp->cap, sp->nsegs + 1, 16))
		return cw_error("out of memory for spool segments");
	sp->segs[sp->nsegs++] = (struct spool_seg){.id = id};
	return 0;
}

/* Forget segs[0] and delete its file. */
static void seg_drop_head(struct cw_spool *sp)
{
	char path[PATH_MAX];

	if (sp->nsegs == 1 && sp->fd >= 0) {
		close(sp->fd);
		sp->fd = -1;
	}
	seg_path(sp, sp->segs[0].id, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		cw_warn("unable to remove spool segment '%s': %s", path,
			strerror(errno));
	memmove(sp->segs, sp->segs + 1, --sp->nsegs * sizeof(*sp->segs));
	sp->head_off = CW_WIRE_MAGIC_LEN;
	sp->head_consumed = 0;
}

/*
 * Count a segment's frames and cut off a torn tail.  Returns 0, 1 if the
 * file is not a segment (left alone, skipped), or -1.
 */
static int seg_check(struct cw_spool *sp, struct spool_seg *s)
{
	char path[PATH_MAX], err[128];
	struct cw_wire_reader rd;
	const uint8_t *p;
	size_t n;
	struct stat stb;
	FILE *fp;
	int r;

	seg_path(sp, s->id, path, sizeof(path));
	fp = fopen(path, "r+");
	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	if (fstat(fileno(fp), &stb)) {
		fclose(fp);
		return cw_error("unable to stat '%s': %s", path,
				strerror(errno));
	}
	if (stb.st_size < CW_WIRE_MAGIC_LEN) {
		/* Torn at creation: nothing in it. */
		fclose(fp);
		unlink(path);
		return 1;
	}
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err))) {
		fclose(fp);
		cw_warn("ignoring '%s': %s", path, err);
		return 1;
	}
	while ((r = cw_wire_reader_next(&rd, &p, &n)) != 0) {
		if (r == 1 || r == CW_WIRE_RCRC) {
			s->records++;
			continue;
		}
		if (r == CW_WIRE_RIO) {
			r = cw_error("unable to read '%s': %s", path,
				     strerror(errno));
			goto out;
		}
		/* Torn or impossible length: everything from here is lost. */
		sp->st.torn_records++;
		sp->st.torn_bytes += (uint64_t)stb.st_size - rd.offset;
		cw_warn("spool segment '%s': cutting a torn record at offset "
			"%" PRIu64,
			path, rd.offset);
		if (ftruncate(fileno(fp), (off_t)rd.offset)) {
			r = cw_error("unable to truncate '%s': %s", path,
				     strerror(errno));
			goto out;
		}
		break;
	}
	s->bytes = rd.offset;
	r = 0;
out:
	cw_wire_reader_release(&rd);
	fclose(fp);
	return r;
}

/*
 * The replay position inside the oldest segment, kept in "cursor" so that
 * records taken before a restart are not replayed again.
 */
static void cursor_save(const struct cw_spool *sp)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/cursor", sp->dir);
	if (!sp->nsegs || !sp->head_consumed) {
		unlink(path);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fp = fopen(tmp, "w");
	if (!fp)
		return;
	fprintf(fp, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", sp->segs[0].id,
		sp->head_off, sp->head_consumed);
	if (fclose(fp) || rename(tmp, path))
		cw_warn("unable to save the spool cursor '%s': %s", path,
			strerror(errno));
}

static void cursor_load(struct cw_spool *sp)
{
	char path[PATH_MAX], buf[128];
	uint64_t id, off, consumed;

	snprintf(path, sizeof(path), "%s/cursor", sp->dir);
	if (!sp->nsegs || cw_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &id, &off,
		   &consumed) != 3 ||
	    id != sp->segs[0].id || off > sp->segs[0].bytes ||
	    off < CW_WIRE_MAGIC_LEN || consumed > sp->segs[0].records)
		return;
	sp->head_off = off;
	sp->head_consumed = consumed;
}

static int id_cmp(const void *a, const void *b)
{
	const struct spool_seg *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int spool_scan(struct cw_spool *sp)
{
	DIR *d = opendir(sp->dir);
	struct dirent *de;
	uint64_t id;
	size_t i, keep = 0;
	int n, r = 0;

	if (!d)
		return cw_error("unable to open spool '%s': %s", sp->dir,
				strerror(errno));
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "seg-%" SCNu64 ".cww%n", &id, &n) == 1 &&
		    n == (int)strlen(de->d_name) && seg_push(sp, id)) {
			r = -1;
			break;
		}
	}
	closedir(d);
	if (r)
		return r;
	qsort(sp->segs, sp->nsegs, sizeof(*sp->segs), id_cmp);
	for (i = 0; i < sp->nsegs; i++) {
		r = seg_check(sp, &sp->segs[i]);
		if (r < 0)
			return r;
		if (r == 0)
			sp->segs[keep++] = sp->segs[i];
		if (sp->segs[i].id >= sp->next_id)
			sp->next_id = sp->segs[i].id + 1;
	}
	sp->nsegs = keep;
	cursor_load(sp);
	return 0;
}

int cw_spool_open(struct cw_spool **spp, const char *dir, uint64_t max_bytes)
{
	struct cw_spool *sp;

	*spp = NULL;
	if (max_bytes < SPOOL_MIN_BYTES)
		return cw_error("spool bound %" PRIu64
				" bytes is too small (at least %llu)",
				max_bytes, SPOOL_MIN_BYTES);
	if (cw_mkdir_p(dir))
		return -1;
	sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->dir = strdup(dir))) {
		free(sp);
		return cw_error("out of memory");
	}
	sp->fd = -1;
	sp->max_bytes = max_bytes;
	/* Eight or more segments, so eviction drops at most 1/8 at a time. */
	sp->seg_bytes = max_bytes / 8;
	if (sp->seg_bytes > SEG_MAX_BYTES)
		sp->seg_bytes = SEG_MAX_BYTES;
	sp->head_off = CW_WIRE_MAGIC_LEN;
	if (spool_scan(sp)) {
		cw_spool_close(sp);
		return -1;
	}
	*spp = sp;
	return 0;
}

static uint64_t total_bytes(const struct cw_spool *sp)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < sp->nsegs; i++)
		n += sp->segs[i].bytes;
	return n;
}

/* Start a new last segment. */
static int seg_roll(struct cw_spool *sp)
{
	char path[PATH_MAX];
	int fd;

	if (sp->fd >= 0) {
		fdatasync(sp->fd);
		close(sp->fd);
		sp->fd = -1;
	}
	seg_path(sp, sp->next_id, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return cw_error("unable to create '%s': %s", path,
				strerror(errno));
	if (write(fd, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN) != CW_WIRE_MAGIC_LEN) {
		cw_error("unable to write '%s': %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	if (seg_push(sp, sp->next_id)) {
		close(fd);
		unlink(path);
		return -1;
	}
	sp->next_id++;
	sp->segs[sp->nsegs - 1].bytes = CW_WIRE_MAGIC_LEN;
	if (sp->nsegs == 1) {
		sp->head_off = CW_WIRE_MAGIC_LEN;
		sp->head_consumed = 0;
	}
	sp->fd = fd;
	return 0;
}

/* Reopen the last segment found at open to append to it. */
static int seg_reopen_last(struct cw_spool *sp)
{
	char path[PATH_MAX];

	seg_path(sp, sp->segs[sp->nsegs - 1].id, path, sizeof(path));
	sp->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (sp->fd < 0)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	return 0;
}

static void evict_head(struct cw_spool *sp)
{
	struct spool_seg *s = &sp->segs[0];

	sp->st.evicted_records += s->records - sp->head_consumed;
	sp->st.evicted_bytes += s->bytes - sp->head_off;
	seg_drop_head(sp);
}

int cw_spool_append(struct cw_spool *sp, const void *buf, size_t len)
{
	uint64_t need = CW_WIRE_FRAME_HDR + len;
	uint8_t hdr[CW_WIRE_FRAME_HDR];
	struct iovec iov[2];
	struct spool_seg *last;
	ssize_t n;

	if (len > CW_WIRE_FRAME_MAX || need + CW_WIRE_MAGIC_LEN > sp->seg_bytes)
		return cw_error("spool record of %zu bytes is too large", len);
	if (sp->nsegs && sp->fd < 0 && seg_reopen_last(sp))
		return -1;
	last = sp->nsegs ? &sp->segs[sp->nsegs - 1] : NULL;
	if (!last || (last->records && last->bytes + need > sp->seg_bytes)) {
		if (seg_roll(sp))
			return -1;
	}
	while (sp->nsegs > 1 && total_bytes(sp) + need > sp->max_bytes)
		evict_head(sp);
	last = &sp->segs[sp->nsegs - 1];
	cw_wire_frame_header(hdr, buf, (uint32_t)len);
	iov[0] = (struct iovec){hdr, sizeof(hdr)};
	iov[1] = (struct iovec){(void *)buf, len};
	n = writev(sp->fd, iov, 2);
	if (n != (ssize_t)need) {
		int err = n < 0 ? errno : ENOSPC;

		/* Leave no torn frame behind for the next open to find. */
		if (n > 0 && ftruncate(sp->fd, (off_t)last->bytes))
			cw_warn("unable to cut a short spool write: %s",
				strerror(errno));
		return cw_error("unable to append to spool '%s': %s", sp->dir,
				strerror(err));
	}
	last->bytes += need;
	last->records++;
	sp->st.appended++;
	return 0;
}

/*
 * Replay segs[0] from head_off.  Returns 1 when the segment is used up, 0
 * when `fn` stopped, -1 on error.
 */
static int replay_head(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg,
		       long *taken)
{
	char path[PATH_MAX], err[128];
	struct cw_wire_reader rd;
	const uint8_t *p;
	size_t n;
	FILE *fp;
	int r;

	seg_path(sp, sp->segs[0].id, path, sizeof(path));
	fp = fopen(path, "r");
	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err))) {
		fclose(fp);
		return cw_error("spool segment '%s': %s", path, err);
	}
	if (fseeko(fp, (off_t)sp->head_off, SEEK_SET)) {
		r = cw_error("unable to seek in '%s': %s", path,
			     strerror(errno));
		goto out;
	}
	rd.offset = sp->head_off;
	for (;;) {
		r = cw_wire_reader_next(&rd, &p, &n);
		if (r == 0) {
			r = 1;
			break;
		}
		if (r == CW_WIRE_RCRC) {
			sp->st.corrupt_records++;
			sp->head_off = rd.offset;
			sp->head_consumed++;
			continue;
		}
		if (r < 0) {
			/* Damaged after open: the rest of it is lost. */
			sp->st.torn_records +=
				sp->segs[0].records - sp->head_consumed;
			sp->st.torn_bytes += sp->segs[0].bytes - rd.offset;
			cw_warn("spool segment '%s' is damaged at offset "
				"%" PRIu64 ": dropping its rest",
				path, rd.offset);
			sp->head_consumed = sp->segs[0].records;
			r = 1;
			break;
		}
		r = fn(p, n, arg);
		if (r) {
			r = r > 0 ? 0 : -1;
			break;
		}
		sp->head_off = rd.offset;
		sp->head_consumed++;
		sp->st.replayed++;
		(*taken)++;
	}
out:
	cw_wire_reader_release(&rd);
	fclose(fp);
	return r;
}

long cw_spool_replay(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg)
{
	long taken = 0;
	int r;

	while (sp->nsegs) {
		r = replay_head(sp, fn, arg, &taken);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		seg_drop_head(sp);
	}
	if (taken)
		cursor_save(sp);
	return taken;
}

bool cw_spool_empty(const struct cw_spool *sp)
{
	return sp->nsegs == 0 ||
	       (sp->nsegs == 1 && sp->head_consumed == sp->segs[0].records);
}

void cw_spool_get_stats(const struct cw_spool *sp, struct cw_spool_stats *st)
{
	size_t i;

	*st = sp->st;
	st->records = 0;
	for (i = 0; i < sp->nsegs; i++)
		st->records += sp->segs[i].records;
	st->records -= sp->nsegs ? sp->head_consumed : 0;
	st->bytes = total_bytes(sp);
	st->segments = sp->nsegs;
}

void cw_spool_close(struct cw_spool *sp)
{
	if (!sp)
		return;
	if (sp->fd >= 0) {
		fdatasync(sp->fd);
		close(sp->fd);
	}
	/* Taken records must not come back: drop what is used up. */
	while (sp->nsegs && sp->head_consumed == sp->segs[0].records &&
	       sp->head_consumed)
		seg_drop_head(sp);
	if (sp->dir)
		cursor_save(sp);
	free(sp->segs);
	free(sp->dir);
	free(sp);
}
