/* SPDX-License-Identifier: MIT */
/*
 * The spool: a bounded, crash-safe queue of wire records on local disk, where
 * the agent puts what Kafka could not take and from where it replays them,
 * oldest first, when brokers return.
 *
 * A spool is a directory of append-only segment files "seg-<16 digits>.cww",
 * each a wire stream file (common/wire.h: magic, then length-prefixed
 * CRC-checked frames), so `causeway dump DIR/seg-*.cww` reads them.  When
 * the spool would grow past its byte bound, or the disk is full, whole
 * oldest segments are evicted and counted; a segment is an eighth of the
 * smaller of the bound and the room the disk has for the spool, so one
 * eviction frees an eighth.  A full disk is warned about once an episode
 * (until the spool is empty again), then only counted.  A damaged stretch
 * inside a segment is stepped over to the next frame whose CRC holds and
 * counted; a torn tail of the last segment (a crash inside write()) is cut
 * at open.
 *
 * A replayed record leaves the spool only when its delivery is confirmed:
 * replay hands out each record with a token (its segment and offset), the
 * caller passes the token back with cw_spool_done() once the record is
 * delivered (or given up), or cw_spool_retry() when it must be sent again.
 * cw_spool_sync() makes the confirmed position survive a crash (the
 * "cursor" file, fsync'ed) and only then deletes used-up segments, so a
 * SIGKILL at any moment loses no record and resends only those whose
 * confirmation had not been synced.  The cursor file is written whole at
 * open and then rewritten in place, so saving it takes no new space: a
 * full disk still learns what was delivered and gets its segments back.
 *
 *	struct cw_spool *sp;
 *	cw_spool_open(&sp, "/var/lib/causeway/spool", 64 << 20);
 *	cw_spool_append(sp, buf, len);
 *	cw_spool_replay(sp, resend, ctx);	// resend keeps each token ...
 *	cw_spool_done(sp, &tok);		// ... until it is delivered
 *	cw_spool_sync(sp);
 *	cw_spool_close(sp);
 *
 * Not thread-safe: one owner calls it.
 */
#ifndef CW_SPOOL_H
#define CW_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cw_spool;

struct cw_spool_stats {
	uint64_t records;	  /* in the spool now, not yet delivered */
	uint64_t bytes;		  /* on disk now, all segments */
	uint64_t segments;	  /* segment files now */
	uint64_t appended;	  /* records appended since open */
	uint64_t replayed;	  /* records handed to a replay callback */
	uint64_t in_flight;	  /* handed out, neither done nor retried */
	uint64_t retried;	  /* handed out again after cw_spool_retry() */
	uint64_t evicted_records; /* dropped, oldest first: bound or disk */
	uint64_t evicted_bytes;
	uint64_t evicted_full;	/* of them, for a full disk */
	uint64_t disk_full;	/* writes that failed for space */
	uint64_t full_episodes; /* times the disk filled (one warning each) */
	uint64_t lost_full;	/* appends lost: nothing left to evict */
	uint64_t torn_records; /* torn tails cut off at open */
	uint64_t torn_bytes;
	uint64_t corrupt_records; /* damaged stretches stepped over */
	uint64_t corrupt_bytes;	  /* their bytes */
};

/* Where a record lies: what replay hands out and done/retry take back. */
struct cw_spool_token {
	uint64_t seg; /* segment id */
	uint64_t off; /* frame offset in it */
};

/*
 * Open (creating if needed) the spool in `dir`, bounded to `max_bytes` on
 * disk (at least 64 KiB).  Existing segments are checked and kept; records
 * confirmed before a restart (the cursor) are not replayed again.  The
 * cursor file is written here (64 KiB, the room it keeps), so a folder
 * that cannot be written to is refused now, not at the first outage; on
 * a full disk, oldest segments are evicted to make it.
 * 0, or -1 with a message.
 */
int cw_spool_open(struct cw_spool **sp, const char *dir, uint64_t max_bytes);

/*
 * Append one record (at most CW_WIRE_FRAME_MAX bytes), evicting the oldest
 * segments first if the bound requires, and when the disk is full (ENOSPC,
 * EDQUOT, EFBIG) evicting oldest segments and retrying.  0; 1 when the disk
 * has no room even with nothing left to evict (counted in lost_full, no
 * message: the episode's one warning covers it); or -1 with a message.
 */
int cw_spool_append(struct cw_spool *sp, const void *buf, size_t len);

/*
 * Called once per record handed out, oldest first.  Return 0 when the
 * record is taken (it is then in flight until cw_spool_done() or
 * cw_spool_retry() with *tok), CW_SPOOL_DROP when it is done with at once
 * (unreadable: it never comes back), 1 to stop before it, < 0 to stop
 * with an error.
 */
#define CW_SPOOL_DROP 2
typedef int (*cw_spool_replay_fn)(const uint8_t *buf, size_t len,
				  const struct cw_spool_token *tok, void *arg);

/*
 * Hand records not yet handed out to `fn` in order until there are none or
 * `fn` stops.  After a cw_spool_retry(), nothing more is handed out until
 * no record is in flight; then replay starts again at the oldest record
 * not done (skipping those done since).  Returns the number taken, or -1
 * if `fn` failed or the spool could not be read (with a message).
 */
long cw_spool_replay(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg);

/* The record is delivered or given up: it never comes back.  A token the
 * spool no longer holds (its segment was evicted) is ignored. */
void cw_spool_done(struct cw_spool *sp, const struct cw_spool_token *tok);
/* The record's delivery failed: it stays, and is handed out again. */
void cw_spool_retry(struct cw_spool *sp, const struct cw_spool_token *tok);

/*
 * Make what was appended and confirmed survive a crash: fdatasync the
 * segment appended to, rewrite the cursor in place (fdatasync'ed), then
 * delete used-up segments.  Cheap when nothing changed.  If open found no
 * room for the cursor file and there is still none, the old cursor goes
 * and the used-up segments are deleted anyway (warned once): a restart
 * then resends the rest of the spool, but the disk gets its room back.
 * 0, or -1 with a message.
 */
int cw_spool_sync(struct cw_spool *sp);

/* No record waits for delivery (none stored, none in flight). */
bool cw_spool_empty(const struct cw_spool *sp);
/* Records wait to be handed out (replay has something to do). */
bool cw_spool_has_unsent(const struct cw_spool *sp);
void cw_spool_get_stats(const struct cw_spool *sp, struct cw_spool_stats *st);
/* Sync and close; the segments stay on disk for the next open. */
void cw_spool_close(struct cw_spool *sp);

#endif
