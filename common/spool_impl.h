/* SPDX-License-Identifier: MIT */
/*
 * The spool's inside, shared by common/spool.c (appending, handing out,
 * delivery reports) and common/spool_recover.c (reading a spool folder
 * back after a restart or a crash).  Nothing else includes this.
 */
#ifndef CW_SPOOL_IMPL_H
#define CW_SPOOL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/spool.h"

#define SPOOL_MIN_BYTES (64ULL << 10)
#define SEG_MAX_BYTES	(64ULL << 20)
#define SEG_MIN_BYTES	(SPOOL_MIN_BYTES / 8)
#define CURSOR_MAX	(1u << 20) /* a bigger cursor file is not ours */
#define CURSOR_SLOT	(32u << 10)
#define CURSOR_BYTES	(2 * CURSOR_SLOT) /* the room the cursor keeps */

struct spool_seg {
	uint64_t id;
	uint64_t bytes;	  /* file size */
	uint64_t records; /* whole frames in it whose CRC holds */
	uint64_t counted; /* damage before this offset is counted */
};

struct pend {
	uint64_t seg, off, idx;
	bool failed; /* delivery failed: handed out again after a rewind */
};

struct cw_spool {
	char *dir;
	uint64_t max_bytes, seg_bytes;
	struct spool_seg *segs; /* oldest first; the last one is appended to */
	size_t nsegs, cap;
	int fd;	       /* of the last segment, or -1 */
	int cursor_fd; /* the cursor file, written whole, or -1 */
	unsigned int cursor_slot; /* the slot written last */
	uint64_t cursor_seq;	  /* its sequence number */
	bool cursor_kept;	  /* the file on disk has our size and form */
	bool full;		  /* in a full-disk episode: warned */
	bool cursor_warned;	  /* a cursor shortfall was warned about */
	uint64_t next_id;
	uint64_t done_off, done_idx; /* the done prefix, in segs[0] */
	size_t rd_seg;		     /* the read position: segs[rd_seg] ... */
	uint64_t rd_off, rd_idx;     /* ... at this frame, the rd_idx-th */
	struct pend *out;	     /* handed out, not done, in token order */
	size_t nout, cap_out;
	struct cw_spool_token *acked; /* done after the prefix, sorted */
	size_t nacked, cap_acked;
	uint64_t *doomed; /* used-up segments to delete after the cursor */
	size_t ndoomed, cap_doomed;
	bool rewind;  /* a retry asked to hand out again from the prefix */
	bool dirty;   /* the cursor moved since it was written */
	bool appends; /* appended since the last sync */
	struct cw_spool_stats st;
};

/* spool.c */
int spool_fsync_dir(const char *dir);
void spool_seg_path(const struct cw_spool *sp, uint64_t id, char *buf,
		    size_t len);
/* Append an (empty) segment entry; 0 or -1 (printed). */
int spool_seg_push(struct cw_spool *sp, uint64_t id);
/* Token order: -1, 0 or 1. */
int spool_tok_cmp(uint64_t seg, uint64_t off, uint64_t seg2, uint64_t off2);
/* Record a delivery after the done prefix; 0 or -1 (printed). */
int spool_acked_add(struct cw_spool *sp, uint64_t seg, uint64_t off);
void spool_seg_pop(struct cw_spool *sp);
/* Move the done prefix on as far as deliveries allow. */
void spool_advance(struct cw_spool *sp);

/* spool_recover.c */
/* The file mapped read-only (at most want bytes, 0: all); MAP_FAILED
 * (printed) or NULL with *size 0 when empty. */
const uint8_t *spool_seg_map(const char *path, uint64_t want, size_t *size);
/* Make the cursor file (whole, with the current cursor) if it is not
 * there yet; 0 or an errno (nothing printed). */
int spool_cursor_reserve(struct cw_spool *sp);
/* Rewrite the cursor in place, durably; 0 or an errno (nothing printed). */
int spool_cursor_save(struct cw_spool *sp);
/* Read the folder's segments and cursor into sp; 0 or -1 (printed). */
int spool_scan(struct cw_spool *sp);

#endif
