// SPDX-License-Identifier: MIT
/*
 * The spool's positions, oldest first: the *done prefix* (every record
 * before it is delivered or given up; what the cursor file keeps), records
 * handed out and in flight (or failed, waiting for a rewind), records done
 * out of order (kept in `acked` so a rewind or restart skips them), and the
 * *read position* (the next record to hand out).  Segments wholly before
 * the prefix are deleted once the cursor saying so is on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spool.h"
#include "common/spool_impl.h"
#include "common/util.h"
#include "common/wire.h"

/* A directory's entries (renames, creations) made durable. */
int spool_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

void spool_seg_path(const struct cw_spool *sp, uint64_t id, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s/seg-%016" PRIu64 ".cww", sp->dir, id);
}

int spool_seg_push(struct cw_spool *sp, uint64_t id)
{
	if (CW_GROW(sp->segs, sp->cap, sp->nsegs + 1, 16))
		return cw_error("out of memory for spool segments");
	sp->segs[sp->nsegs++] = (struct spool_seg){.id = id};
	return 0;
}

int spool_tok_cmp(uint64_t seg, uint64_t off, uint64_t seg2, uint64_t off2)
{
	if (seg != seg2)
		return seg < seg2 ? -1 : 1;
	return off < off2 ? -1 : off > off2;
}

/* First index of v[0, n) (sorted tokens) not before (seg, off). */
static size_t acked_lower(const struct cw_spool *sp, uint64_t seg, uint64_t off)
{
	size_t lo = 0, hi = sp->nacked, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (spool_tok_cmp(sp->acked[mid].seg, sp->acked[mid].off, seg,
				  off) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool acked_has(const struct cw_spool *sp, uint64_t seg, uint64_t off)
{
	size_t i = acked_lower(sp, seg, off);

	return i < sp->nacked && sp->acked[i].seg == seg &&
	       sp->acked[i].off == off;
}

int spool_acked_add(struct cw_spool *sp, uint64_t seg, uint64_t off)
{
	size_t i = acked_lower(sp, seg, off);

	if (i < sp->nacked && sp->acked[i].seg == seg &&
	    sp->acked[i].off == off)
		return 0;
	if (CW_GROW(sp->acked, sp->cap_acked, sp->nacked + 1, 64))
		return cw_error("out of memory for spool acknowledgements");
	memmove(sp->acked + i + 1, sp->acked + i,
		(sp->nacked - i) * sizeof(*sp->acked));
	sp->acked[i] = (struct cw_spool_token){seg, off};
	sp->nacked++;
	return 0;
}

/* Forget acknowledgements before (seg, off): the prefix covers them. */
static void acked_prune(struct cw_spool *sp, uint64_t seg, uint64_t off)
{
	size_t i = acked_lower(sp, seg, off);

	memmove(sp->acked, sp->acked + i,
		(sp->nacked - i) * sizeof(*sp->acked));
	sp->nacked -= i;
}

static bool rd_at_end(const struct cw_spool *sp)
{
	return sp->rd_off >= sp->segs[sp->rd_seg].bytes;
}

/* A read position at the end of a segment that is not the last moves on. */
static void rd_normalize(struct cw_spool *sp)
{
	while (sp->rd_seg + 1 < sp->nsegs && rd_at_end(sp)) {
		sp->rd_seg++;
		sp->rd_off = CW_WIRE_MAGIC_LEN;
		sp->rd_idx = 0;
	}
}

/* Remove segs[0] from the array (the file stays). */
void spool_seg_pop(struct cw_spool *sp)
{
	memmove(sp->segs, sp->segs + 1, --sp->nsegs * sizeof(*sp->segs));
	if (sp->rd_seg)
		sp->rd_seg--;
	else
		sp->rd_off = CW_WIRE_MAGIC_LEN, sp->rd_idx = 0;
	sp->done_off = CW_WIRE_MAGIC_LEN;
	sp->done_idx = 0;
}

/*
 * Move the done prefix to the first record not done: the oldest handed
 * out, else the read position.  Segments wholly before it are used up.
 */
void spool_advance(struct cw_spool *sp)
{
	uint64_t seg, off, idx;

	if (!sp->nsegs)
		return;
	if (!sp->nout)
		rd_normalize(sp);
	if (sp->nout) {
		seg = sp->out[0].seg, off = sp->out[0].off;
		idx = sp->out[0].idx;
	} else {
		seg = sp->segs[sp->rd_seg].id, off = sp->rd_off;
		idx = sp->rd_idx;
	}
	while (sp->nsegs > 1 && sp->segs[0].id < seg) {
		if (!CW_GROW(sp->doomed, sp->cap_doomed, sp->ndoomed + 1, 16))
			sp->doomed[sp->ndoomed++] = sp->segs[0].id;
		spool_seg_pop(sp);
		sp->dirty = true;
	}
	if (sp->done_off != off || sp->done_idx != idx)
		sp->dirty = true;
	sp->done_off = off;
	sp->done_idx = idx;
	acked_prune(sp, seg, off);
}

static bool out_of_room(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EFBIG;
}

/* The disk is full: warned once an episode (until the spool is empty
 * again), counted always. */
static void note_full(struct cw_spool *sp, int err)
{
	sp->st.disk_full++;
	if (sp->full)
		return;
	sp->full = true;
	sp->st.full_episodes++;
	cw_warn("spool '%s': %s: evicting the oldest records to make room "
		"(counted, not logged, until the spool is empty again)",
		sp->dir, strerror(err));
}

static void evict_head(struct cw_spool *sp);
static void spool_free(struct cw_spool *sp);

/* The cursor file, made now: an unwritable folder is found at start, and
 * its room is taken before the disk can fill up. */
static int open_cursor(struct cw_spool *sp)
{
	uint64_t before = sp->st.evicted_records;
	int err;

	while ((err = spool_cursor_reserve(sp)) && out_of_room(err) &&
	       sp->nsegs > 1) {
		note_full(sp, err);
		evict_head(sp);
	}
	sp->st.evicted_full += sp->st.evicted_records - before;
	if (!err)
		return 0;
	if (!out_of_room(err))
		return cw_error("spool '%s' is not writable: %s", sp->dir,
				strerror(err));
	note_full(sp, err);
	return 0; /* cw_spool_sync() tries again */
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
	sp->fd = sp->cursor_fd = -1;
	sp->max_bytes = max_bytes;
	sp->done_off = sp->rd_off = CW_WIRE_MAGIC_LEN;
	if (spool_scan(sp) || open_cursor(sp)) {
		spool_free(sp);
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

/*
 * What a new segment may grow to: an eighth of the room the spool has, the
 * smaller of its bound and what the disk holds for it (free space and the
 * spool's own), so that eviction frees an eighth at a time also on a disk
 * smaller than the bound.
 */
static uint64_t seg_target(const struct cw_spool *sp)
{
	uint64_t room = sp->max_bytes, disk;
	struct statvfs vfs;

	if (!statvfs(sp->dir, &vfs)) {
		disk = (uint64_t)vfs.f_bavail * vfs.f_frsize + total_bytes(sp);
		if (disk < room)
			room = disk;
	}
	room /= 8;
	if (room < SEG_MIN_BYTES)
		return SEG_MIN_BYTES;
	return room < SEG_MAX_BYTES ? room : SEG_MAX_BYTES;
}

/* Start a new last segment, its directory entry made durable; on failure
 * the one before stays open to append to.  0 or -errno. */
static int seg_roll(struct cw_spool *sp)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, err;

	spool_seg_path(sp, sp->next_id, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return -errno;
	n = write(fd, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN);
	err = n < 0 ? errno : n != CW_WIRE_MAGIC_LEN ? ENOSPC : 0;
	if (!err && spool_seg_push(sp, sp->next_id))
		err = ENOMEM;
	if (err) {
		close(fd);
		unlink(path);
		return -err;
	}
	if (sp->fd >= 0) {
		fdatasync(sp->fd);
		close(sp->fd);
	}
	spool_fsync_dir(sp->dir);
	sp->seg_bytes = seg_target(sp);
	sp->next_id++;
	sp->segs[sp->nsegs - 1].bytes = CW_WIRE_MAGIC_LEN;
	sp->fd = fd;
	rd_normalize(sp);
	return 0;
}

/* Reopen the last segment found at open to append to it. */
static int seg_reopen_last(struct cw_spool *sp)
{
	char path[PATH_MAX];

	spool_seg_path(sp, sp->segs[sp->nsegs - 1].id, path, sizeof(path));
	sp->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (sp->fd < 0)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	return 0;
}

/* Drop segs[0] with its undelivered records, counted; the last one only
 * once it is closed. */
static void evict_head(struct cw_spool *sp)
{
	struct spool_seg *s = &sp->segs[0];
	char path[PATH_MAX];
	size_t i, k = 0, acked = acked_lower(sp, s->id + 1, 0);

	sp->st.evicted_records += s->records - sp->done_idx - acked;
	sp->st.evicted_bytes += s->bytes - sp->done_off;
	for (i = 0; i < sp->nout; i++)
		if (sp->out[i].seg != s->id)
			sp->out[k++] = sp->out[i];
		else if (!sp->out[i].failed)
			sp->st.in_flight--;
	sp->nout = k;
	acked_prune(sp, s->id + 1, 0);
	spool_seg_path(sp, s->id, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		cw_warn("unable to remove spool segment '%s': %s", path,
			strerror(errno));
	spool_seg_pop(sp);
	sp->dirty = true;
	spool_advance(sp);
}

/* One frame at the end of the last segment: 0, or an errno. */
static int write_frame(struct cw_spool *sp, const void *buf, size_t len)
{
	struct spool_seg *last = &sp->segs[sp->nsegs - 1];
	uint8_t hdr[CW_WIRE_FRAME_HDR];
	struct iovec iov[2];
	ssize_t n;
	int err;

	cw_wire_frame_header(hdr, buf, (uint32_t)len);
	iov[0] = (struct iovec){hdr, sizeof(hdr)};
	iov[1] = (struct iovec){(void *)buf, len};
	n = writev(sp->fd, iov, 2);
	if (n == (ssize_t)(sizeof(hdr) + len)) {
		last->bytes += n;
		last->records++;
		return 0;
	}
	err = n < 0 ? errno : ENOSPC; /* a short write: out of room */
	/* Leave no torn frame behind for the next open to find. */
	if (n > 0 && ftruncate(sp->fd, (off_t)last->bytes))
		cw_warn("unable to cut a short spool write: %s",
			strerror(errno));
	return err;
}

/*
 * The disk (or the file size limit) is full: evict the oldest segment if
 * another holds the newest records, else start a new segment if this one
 * holds any (and if even that finds no room, drop this one, the oldest,
 * and start afresh).  0 when something changed (retry), else an errno.
 */
static int make_room(struct cw_spool *sp, int err)
{
	uint64_t before = sp->st.evicted_records;
	int r = 0;

	note_full(sp, err);
	if (sp->nsegs > 1) {
		evict_head(sp);
	} else if (!sp->nsegs || !sp->segs[0].records) {
		return err;
	} else {
		r = -seg_roll(sp);
		if (out_of_room(r)) {
			close(sp->fd);
			sp->fd = -1;
			evict_head(sp);
			r = -seg_roll(sp);
		}
	}
	sp->st.evicted_full += sp->st.evicted_records - before;
	return r;
}

int cw_spool_append(struct cw_spool *sp, const void *buf, size_t len)
{
	uint64_t need = CW_WIRE_FRAME_HDR + len;
	struct spool_seg *last;
	int err = 0;

	if (len > CW_WIRE_FRAME_MAX || need + CW_WIRE_MAGIC_LEN > sp->max_bytes)
		return cw_error("spool record of %zu bytes is too large", len);
	if (sp->nsegs && sp->fd < 0 && seg_reopen_last(sp))
		return -1;
	if (!sp->seg_bytes)
		sp->seg_bytes = seg_target(sp);
	last = sp->nsegs ? &sp->segs[sp->nsegs - 1] : NULL;
	if (!last || (last->records && last->bytes + need > sp->seg_bytes))
		err = -seg_roll(sp);
	while (!err && sp->nsegs > 1 && total_bytes(sp) + need > sp->max_bytes)
		evict_head(sp);
	/* Each round evicts a segment or starts one: it ends. */
	for (;;) {
		if (!err)
			err = write_frame(sp, buf, len);
		if (!out_of_room(err))
			break;
		err = make_room(sp, err);
		if (err && !out_of_room(err))
			break;
		if (err) {
			sp->st.lost_full++;
			return 1;
		}
	}
	if (err)
		return cw_error("unable to append to spool '%s': %s", sp->dir,
				strerror(err));
	sp->st.appended++;
	sp->appends = true;
	return 0;
}

/* Step the read position over a damaged stretch; counted once, if it came
 * after the check at open. */
static void skip_damage(struct cw_spool *sp, struct spool_seg *s,
			const uint8_t *m, size_t size, const char *path)
{
	uint32_t len;
	size_t next = cw_wire_frame_find(m, size, sp->rd_off + 1, &len);

	if (sp->rd_off >= s->counted) {
		sp->st.corrupt_records++;
		sp->st.corrupt_bytes += next - sp->rd_off;
		cw_warn("spool segment '%s': %zu damaged bytes at offset "
			"%" PRIu64 ": skipped to the next good record",
			path, next - sp->rd_off, sp->rd_off);
		s->counted = next;
	}
	sp->rd_off = next;
}

/*
 * Hand out records of segs[rd_seg] from the read position.  Returns 1 at
 * the segment's end, 0 when `fn` stopped, -1 on error.
 */
static int replay_seg(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg,
		      long *taken)
{
	struct spool_seg *s = &sp->segs[sp->rd_seg];
	char path[PATH_MAX];
	struct cw_spool_token tok = {.seg = s->id};
	const uint8_t *m;
	size_t size;
	uint32_t len;
	int r = 1;

	spool_seg_path(sp, s->id, path, sizeof(path));
	m = spool_seg_map(path, s->bytes, &size);
	if (m == MAP_FAILED)
		return -1;
	while (sp->rd_off < size) {
		if (!cw_wire_frame_ok(m, size, sp->rd_off, &len)) {
			skip_damage(sp, s, m, size, path);
			continue;
		}
		tok.off = sp->rd_off;
		if (!acked_has(sp, tok.seg, tok.off)) {
			int f = fn(m + tok.off + CW_WIRE_FRAME_HDR, len, &tok,
				   arg);

			if (f == CW_SPOOL_DROP) {
				if (spool_acked_add(sp, tok.seg, tok.off)) {
					r = -1;
					break;
				}
				sp->dirty = true;
				goto next;
			}
			if (f) {
				r = f > 0 ? 0 : -1;
				break;
			}
			if (CW_GROW(sp->out, sp->cap_out, sp->nout + 1, 64)) {
				r = cw_error("out of memory for the spool");
				break;
			}
			sp->out[sp->nout++] = (struct pend){.seg = tok.seg,
							    .off = tok.off,
							    .idx = sp->rd_idx};
			sp->st.in_flight++;
			sp->st.replayed++;
			(*taken)++;
		}
	next:
		sp->rd_off += CW_WIRE_FRAME_HDR + len;
		sp->rd_idx++;
	}
	if (size)
		munmap((void *)m, size);
	if (r == 1 && sp->rd_off < s->bytes) /* gone short under us */
		sp->rd_off = s->bytes;
	/* Frames damaged since open are no longer records. */
	if (r == 1 && sp->rd_idx < s->records)
		s->records = sp->rd_idx;
	return r;
}

/* After a retry, once nothing is in flight: hand out from the prefix. */
static void rewind_to_prefix(struct cw_spool *sp)
{
	sp->st.retried += sp->nout;
	sp->nout = 0;
	sp->rd_seg = 0;
	sp->rd_off = sp->done_off;
	sp->rd_idx = sp->done_idx;
	sp->rewind = false;
}

long cw_spool_replay(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg)
{
	long taken = 0;
	int r;

	if (sp->rewind && !sp->st.in_flight)
		rewind_to_prefix(sp);
	if (sp->rewind)
		return 0;
	while (sp->nsegs) {
		rd_normalize(sp);
		r = replay_seg(sp, fn, arg, &taken);
		if (r < 0)
			return -1;
		if (r == 0 || sp->rd_seg + 1 >= sp->nsegs)
			break;
	}
	spool_advance(sp);
	return taken;
}

/* Index of the handed-out record at tok, or nout. */
static size_t out_find(const struct cw_spool *sp,
		       const struct cw_spool_token *tok)
{
	size_t lo = 0, hi = sp->nout, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = spool_tok_cmp(sp->out[mid].seg, sp->out[mid].off, tok->seg,
				  tok->off);
		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return sp->nout;
}

void cw_spool_done(struct cw_spool *sp, const struct cw_spool_token *tok)
{
	size_t i = out_find(sp, tok);

	if (i == sp->nout)
		return;
	if (!sp->out[i].failed)
		sp->st.in_flight--;
	memmove(sp->out + i, sp->out + i + 1,
		(--sp->nout - i) * sizeof(*sp->out));
	spool_acked_add(sp, tok->seg, tok->off);
	sp->dirty = true;
	spool_advance(sp);
}

void cw_spool_retry(struct cw_spool *sp, const struct cw_spool_token *tok)
{
	size_t i = out_find(sp, tok);

	if (i == sp->nout || sp->out[i].failed)
		return;
	sp->out[i].failed = true;
	sp->st.in_flight--;
	sp->rewind = true;
}

static uint64_t remaining(const struct cw_spool *sp);

/* Everything delivered: the last segment goes too (the next append starts
 * a new one), so an outage leaves no file behind. */
static void drop_used_up(struct cw_spool *sp)
{
	if (sp->nsegs != 1 || sp->nout || remaining(sp) ||
	    sp->segs[0].records == 0)
		return;
	if (sp->fd >= 0) {
		close(sp->fd);
		sp->fd = -1;
	}
	if (!CW_GROW(sp->doomed, sp->cap_doomed, sp->ndoomed + 1, 16))
		sp->doomed[sp->ndoomed++] = sp->segs[0].id;
	sp->nsegs = 0;
	sp->rd_seg = 0;
	sp->rd_off = sp->done_off = CW_WIRE_MAGIC_LEN;
	sp->rd_idx = sp->done_idx = 0;
	sp->nacked = 0;
	sp->dirty = true; /* the cursor names the next id: never reused */
}

/*
 * No room for the cursor file since open: the old cursor goes (it would
 * name segments about to go) and then the used-up segments, so the disk
 * gets its room back; a restart resends what remains, confirmed or not.
 * 0, or -1 if the old cursor could not be removed (nothing deleted).
 */
static int cursor_forgo(struct cw_spool *sp, int err)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/cursor", sp->dir);
	if (unlink(path) && errno != ENOENT)
		return -1;
	if (!sp->cursor_warned) {
		sp->cursor_warned = true;
		cw_warn("spool '%s': no room for its cursor (%s): used-up "
			"segments are deleted without it, and a restart would "
			"send the rest of the spool again",
			sp->dir, strerror(err));
	}
	return 0;
}

/* The spool is empty after a full disk: the episode's tally. */
static void full_over(struct cw_spool *sp)
{
	if (!sp->full || sp->nsegs)
		return;
	sp->full = false;
	cw_info("spool '%s' is empty again: %" PRIu64 " records evicted and "
		"%" PRIu64 " refused for a full disk since start",
		sp->dir, sp->st.evicted_full, sp->st.lost_full);
}

int cw_spool_sync(struct cw_spool *sp)
{
	char path[PATH_MAX];
	size_t i;
	int err;

	if (sp->appends && sp->fd >= 0 && fdatasync(sp->fd))
		return cw_error("unable to sync spool '%s': %s", sp->dir,
				strerror(errno));
	sp->appends = false;
	drop_used_up(sp);
	if (sp->dirty) {
		err = spool_cursor_save(sp);
		if (err && (sp->cursor_fd >= 0 || !out_of_room(err) ||
			    cursor_forgo(sp, err)))
			return cw_error("unable to save the spool cursor "
					"'%s/cursor': %s",
					sp->dir, strerror(err));
		sp->dirty = err != 0;
	}
	/* Only now that the cursor says they are used up. */
	for (i = 0; i < sp->ndoomed; i++) {
		spool_seg_path(sp, sp->doomed[i], path, sizeof(path));
		if (unlink(path) && errno != ENOENT)
			cw_warn("unable to remove spool segment '%s': %s", path,
				strerror(errno));
	}
	sp->ndoomed = 0;
	full_over(sp);
	return 0;
}

static uint64_t remaining(const struct cw_spool *sp)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < sp->nsegs; i++)
		n += sp->segs[i].records;
	/* Held at 0: the counts must never wrap, whatever is on disk. */
	if (!sp->nsegs || n < sp->done_idx + sp->nacked)
		return 0;
	return n - sp->done_idx - sp->nacked;
}

bool cw_spool_empty(const struct cw_spool *sp)
{
	return remaining(sp) == 0;
}

bool cw_spool_has_unsent(const struct cw_spool *sp)
{
	if (!sp->nsegs || (sp->rewind && sp->st.in_flight))
		return false;
	return sp->rewind || sp->rd_seg + 1 < sp->nsegs || !rd_at_end(sp);
}

void cw_spool_get_stats(const struct cw_spool *sp, struct cw_spool_stats *st)
{
	*st = sp->st;
	st->records = remaining(sp);
	st->bytes = total_bytes(sp);
	st->segments = sp->nsegs;
}

/* Everything released, nothing synced. */
static void spool_free(struct cw_spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	if (sp->cursor_fd >= 0)
		close(sp->cursor_fd);
	free(sp->segs);
	free(sp->out);
	free(sp->acked);
	free(sp->doomed);
	free(sp->dir);
	free(sp);
}

void cw_spool_close(struct cw_spool *sp)
{
	if (!sp)
		return;
	cw_spool_sync(sp);
	spool_free(sp);
}
