// SPDX-License-Identifier: MIT
/*
 * Reading a spool folder back: its segments checked frame by frame (damage
 * stepped over and counted, a torn tail cut), and the cursor file that
 * says which records were already delivered, trusted only where it names
 * frames the segments hold.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "common/log.h"
#include "common/spool_impl.h"
#include "common/util.h"
#include "common/wire.h"

/* The file's bytes, mapped read-only; *size 0 (and NULL) when empty. */
const uint8_t *spool_seg_map(const char *path, uint64_t want, size_t *size)
{
	struct stat stb;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*size = 0;
	if (fd < 0 || fstat(fd, &stb)) {
		cw_error("unable to open '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return MAP_FAILED;
	}
	*size = want && want < (uint64_t)stb.st_size ? want
						     : (size_t)stb.st_size;
	if (!*size) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		cw_error("unable to map '%s': %s", path, strerror(errno));
	return p;
}

/*
 * Count a segment's frames, stepping over damaged stretches to the next
 * frame whose CRC holds (counted, never cut: what follows is kept).  A
 * tail with no good frame after it is torn: counted, and cut from the
 * last segment so appends follow good data.  Returns 0, 1 if the file is
 * not a segment (left alone, skipped), or -1.
 */
static int seg_check(struct cw_spool *sp, struct spool_seg *s, bool last)
{
	char path[PATH_MAX];
	const uint8_t *m;
	size_t size, off, next;
	uint32_t len;

	spool_seg_path(sp, s->id, path, sizeof(path));
	m = spool_seg_map(path, 0, &size);
	if (m == MAP_FAILED)
		return -1;
	if (size < CW_WIRE_MAGIC_LEN) { /* torn at creation: nothing in it */
		if (m)
			munmap((void *)m, size);
		unlink(path);
		return 1;
	}
	if (memcmp(m, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN)) {
		munmap((void *)m, size);
		cw_warn("ignoring '%s': not a causeway wire file", path);
		return 1;
	}
	for (off = CW_WIRE_MAGIC_LEN; off < size;) {
		if (cw_wire_frame_ok(m, size, off, &len)) {
			s->records++;
			off += CW_WIRE_FRAME_HDR + len;
			continue;
		}
		next = cw_wire_frame_find(m, size, off + 1, &len);
		if (next == size)
			break;
		sp->st.corrupt_records++;
		sp->st.corrupt_bytes += next - off;
		cw_warn("spool segment '%s': %zu damaged bytes at offset %zu: "
			"skipped to the next good record",
			path, next - off, off);
		off = next;
	}
	munmap((void *)m, size);
	s->bytes = s->counted = size;
	if (off >= size)
		return 0;
	sp->st.torn_records++;
	sp->st.torn_bytes += size - off;
	cw_warn("spool segment '%s': torn record at offset %zu (%zu bytes)%s",
		path, off, size - off, last ? ": cut" : ": ignored");
	if (last && truncate(path, (off_t)off))
		return cw_error("unable to truncate '%s': %s", path,
				strerror(errno));
	if (last)
		s->bytes = off;
	return 0;
}

/*
 * The cursor file: two slots of CURSOR_SLOT bytes, written whole (zeros)
 * when it is made, then rewritten in place in turn, so that saving it
 * takes no new space on a full disk and a crash inside one write leaves
 * the other slot whole.  A slot is a header line "cw-spool-cursor SEQ LEN
 * CRC" (hex, fixed width; CRC-32 of the text) and LEN bytes of text: "SEG
 * OFF IDX" (the done prefix: segment id, offset and index of the first
 * record not done), then one "SEG OFF" line per record done after it, as
 * many as fit (one left out is sent again after a crash).  The slot whose
 * CRC holds with the highest SEQ is the cursor.  Older versions wrote the
 * text alone, renamed into place: read too, and replaced at open.
 */
#define SLOT_MAGIC   "cw-spool-cursor "
#define SLOT_MAGIC_N (sizeof(SLOT_MAGIC) - 1)
#define SLOT_HDR     (SLOT_MAGIC_N + 16 + 1 + 8 + 1 + 8 + 1)

static void cursor_path(const struct cw_spool *sp, char *buf, size_t len)
{
	snprintf(buf, len, "%s/cursor", sp->dir);
}

/* The text into buf, at most room bytes: its length; *left: the
 * confirmations that did not fit. */
static size_t cursor_text(const struct cw_spool *sp, char *buf, size_t room,
			  size_t *left)
{
	size_t len, i;
	int n;

	len = snprintf(buf, room, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		       sp->nsegs ? sp->segs[0].id : sp->next_id, sp->done_off,
		       sp->done_idx);
	for (i = 0; i < sp->nacked; i++) {
		n = snprintf(buf + len, room - len, "%" PRIu64 " %" PRIu64 "\n",
			     sp->acked[i].seg, sp->acked[i].off);
		if ((size_t)n >= room - len)
			break;
		len += n;
	}
	*left = sp->nacked - i;
	return len;
}

static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return ENOSPC;
		buf = (const char *)buf + n;
		len -= n, off += n;
	}
	return 0;
}

/* Write the cursor into one slot of fd, durably: 0 or an errno. */
static int slot_write(struct cw_spool *sp, int fd, unsigned int slot,
		      uint64_t seq)
{
	char *buf = malloc(CURSOR_SLOT), hdr[SLOT_HDR + 1];
	size_t len, left;
	int err;

	if (!buf)
		return ENOMEM;
	len = cursor_text(sp, buf + SLOT_HDR, CURSOR_SLOT - SLOT_HDR, &left);
	snprintf(hdr, sizeof(hdr), SLOT_MAGIC "%016" PRIx64 " %08zx %08lx\n",
		 seq, len, crc32(0L, (const Bytef *)buf + SLOT_HDR, len));
	memcpy(buf, hdr, SLOT_HDR);
	err = write_all(fd, buf, SLOT_HDR + len, (off_t)slot * CURSOR_SLOT);
	free(buf);
	if (!err && fdatasync(fd))
		err = errno;
	if (!err && left && !sp->cursor_warned) {
		sp->cursor_warned = true;
		cw_warn("spool '%s': %zu confirmations do not fit its cursor: "
			"a crash now would send them again",
			sp->dir, left);
	}
	return err;
}

int spool_cursor_reserve(struct cw_spool *sp)
{
	static const char zeros[4096];
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, err = 0;
	off_t off;

	if (sp->cursor_fd >= 0)
		return 0;
	cursor_path(sp, path, sizeof(path));
	if (sp->cursor_kept) {
		sp->cursor_fd = open(path, O_RDWR | O_CLOEXEC);
		if (sp->cursor_fd >= 0)
			return 0;
		if (errno != ENOENT)
			return errno;
	}
	/* Made whole aside, so a crash leaves the old cursor or the new. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	for (off = 0; !err && off < (off_t)CURSOR_BYTES; off += sizeof(zeros))
		err = write_all(fd, zeros, sizeof(zeros), off);
	if (!err)
		err = slot_write(sp, fd, 0, sp->cursor_seq + 1);
	if (!err && rename(tmp, path))
		err = errno;
	if (!err && spool_fsync_dir(sp->dir))
		err = errno;
	if (err) {
		close(fd);
		unlink(tmp);
		return err;
	}
	sp->cursor_fd = fd;
	sp->cursor_slot = 0;
	sp->cursor_seq++;
	sp->cursor_kept = true;
	return 0;
}

int spool_cursor_save(struct cw_spool *sp)
{
	unsigned int slot = sp->cursor_slot ^ 1;
	int err;

	if (sp->cursor_fd < 0)
		return spool_cursor_reserve(sp);
	err = slot_write(sp, sp->cursor_fd, slot, sp->cursor_seq + 1);
	if (err)
		return err;
	sp->cursor_slot = slot;
	sp->cursor_seq++;
	return 0;
}

/*
 * The newest whole slot of a cursor file of ours, its text moved to the
 * start of buf and NUL-terminated: its length, or -1 if neither holds.
 */
static ssize_t cursor_slots(struct cw_spool *sp, char *buf, size_t n)
{
	unsigned long long seq;
	unsigned int len, crc, s;
	const char *p;
	ssize_t best = -1;
	size_t at = 0;

	for (s = 0; s < 2 && (s + 1) * (size_t)CURSOR_SLOT <= n; s++) {
		p = buf + (size_t)s * CURSOR_SLOT;
		if (memcmp(p, SLOT_MAGIC, SLOT_MAGIC_N) ||
		    p[SLOT_HDR - 1] != '\n' ||
		    sscanf(p + SLOT_MAGIC_N, "%16llx %8x %8x", &seq, &len,
			   &crc) != 3 ||
		    len > CURSOR_SLOT - SLOT_HDR ||
		    crc32(0L, (const Bytef *)p + SLOT_HDR, len) != crc)
			continue;
		if (best >= 0 && seq <= sp->cursor_seq)
			continue;
		sp->cursor_seq = seq;
		sp->cursor_slot = s;
		best = len;
		at = (size_t)s * CURSOR_SLOT + SLOT_HDR;
	}
	if (best < 0)
		return -1;
	memmove(buf, buf + at, best);
	buf[best] = 0;
	return best;
}

/* The good frames of s in order, as seg_check() counts them. */
static void seg_walk(struct cw_spool *sp, const struct spool_seg *s,
		     void (*fn)(uint64_t off, uint64_t idx, void *arg),
		     void *arg)
{
	char path[PATH_MAX];
	const uint8_t *m;
	size_t size, off = CW_WIRE_MAGIC_LEN;
	uint64_t idx = 0;
	uint32_t len;

	spool_seg_path(sp, s->id, path, sizeof(path));
	m = spool_seg_map(path, s->bytes, &size);
	if (m == MAP_FAILED || !m)
		return;
	while (off < size) {
		if (!cw_wire_frame_ok(m, size, off, &len)) {
			off = cw_wire_frame_find(m, size, off + 1, &len);
			continue;
		}
		fn(off, idx++, arg);
		off += CW_WIRE_FRAME_HDR + len;
	}
	munmap((void *)m, size);
}

struct find_ctx {
	uint64_t off, idx; /* idx: UINT64_MAX until off is found */
};

static void find_frame(uint64_t off, uint64_t idx, void *arg)
{
	struct find_ctx *f = arg;

	if (off == f->off)
		f->idx = idx;
}

struct keep_ctx {
	struct cw_spool *sp;
	uint64_t seg;
	size_t i, kept; /* acked[i..] still to match; acked[0..kept) kept */
};

static void keep_acked(uint64_t off, uint64_t idx, void *arg)
{
	struct keep_ctx *k = arg;
	struct cw_spool *sp = k->sp;

	(void)idx;
	while (k->i < sp->nacked && sp->acked[k->i].seg == k->seg &&
	       sp->acked[k->i].off < off)
		k->i++; /* names no frame: dropped */
	if (k->i < sp->nacked && sp->acked[k->i].seg == k->seg &&
	    sp->acked[k->i].off == off)
		sp->acked[k->kept++] = sp->acked[k->i++];
}

/* Keep only confirmations that name a good frame of a segment we have:
 * a damaged cursor must not make records vanish from the counts. */
static void acked_validate(struct cw_spool *sp)
{
	struct keep_ctx k = {.sp = sp};
	size_t s;

	for (s = 0; s < sp->nsegs && k.i < sp->nacked; s++) {
		while (k.i < sp->nacked && sp->acked[k.i].seg < sp->segs[s].id)
			k.i++;
		k.seg = sp->segs[s].id;
		seg_walk(sp, &sp->segs[s], keep_acked, &k);
		while (k.i < sp->nacked && sp->acked[k.i].seg == k.seg)
			k.i++;
	}
	sp->nacked = k.kept;
}

/* Segments the cursor says are used up (a crash came before their
 * deletion) go now; then its prefix, if it names a frame (its index is
 * counted, not believed). */
static void cursor_apply(struct cw_spool *sp, uint64_t id, uint64_t off,
			 uint64_t idx)
{
	struct find_ctx f = {.off = off, .idx = UINT64_MAX};
	char path[PATH_MAX];

	/* A valid cursor names a segment we have (or, with none left, the
	 * next id): anything else is not trusted to delete by. */
	if (!sp->nsegs || id > sp->segs[sp->nsegs - 1].id)
		return;
	while (sp->nsegs > 1 && sp->segs[0].id < id) {
		spool_seg_path(sp, sp->segs[0].id, path, sizeof(path));
		unlink(path);
		spool_seg_pop(sp);
	}
	if (!sp->nsegs || id != sp->segs[0].id || off > sp->segs[0].bytes ||
	    off < CW_WIRE_MAGIC_LEN)
		return;
	if (off == sp->segs[0].bytes)
		f.idx = sp->segs[0].records;
	else
		seg_walk(sp, &sp->segs[0], find_frame, &f);
	if (f.idx == UINT64_MAX || f.idx != idx)
		return;
	sp->done_off = sp->rd_off = off;
	sp->done_idx = sp->rd_idx = f.idx;
}

static void cursor_load(struct cw_spool *sp)
{
	char path[PATH_MAX], *buf = malloc(CURSOR_MAX + 1), *p, *end;
	uint64_t id, off, idx;
	ssize_t n;
	int used;

	cursor_path(sp, path, sizeof(path));
	n = buf ? cw_read_file(path, buf, CURSOR_MAX + 1) : -1;
	if (n > 0 && !strncmp(buf, SLOT_MAGIC, SLOT_MAGIC_N)) {
		/* Ours, rewritten in place from now on if of our size. */
		sp->cursor_kept = n == CURSOR_BYTES;
		n = cursor_slots(sp, buf, n);
	}
	if (n <= 0 || n > CURSOR_MAX ||
	    sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 "%n", &id, &off,
		   &idx, &used) != 3) {
		free(buf);
		return;
	}
	/* Segment ids are never reused, also after the last was deleted. */
	if (!sp->nsegs && id > sp->next_id && id < UINT64_MAX / 2)
		sp->next_id = id;
	cursor_apply(sp, id, off, idx);
	if (!sp->nsegs) {
		free(buf);
		return;
	}
	end = buf + n;
	for (p = buf + used; p < end; p += used) {
		if (sscanf(p, "%" SCNu64 " %" SCNu64 "%n", &id, &off, &used) !=
			    2 ||
		    !used)
			break;
		if (spool_tok_cmp(id, off, sp->segs[0].id, sp->done_off) > 0)
			spool_acked_add(sp, id, off);
	}
	free(buf);
	acked_validate(sp);
	spool_advance(sp);
	sp->dirty = false;
}

static int id_cmp(const void *a, const void *b)
{
	const struct spool_seg *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int spool_scan(struct cw_spool *sp)
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
		    n == (int)strlen(de->d_name) && spool_seg_push(sp, id)) {
			r = -1;
			break;
		}
	}
	closedir(d);
	if (r)
		return r;
	qsort(sp->segs, sp->nsegs, sizeof(*sp->segs), id_cmp);
	for (i = 0; i < sp->nsegs; i++) {
		r = seg_check(sp, &sp->segs[i], i + 1 == sp->nsegs);
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
