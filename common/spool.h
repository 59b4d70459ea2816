/* SPDX-License-Identifier: MIT */
/*
 * The spool: a bounded, crash-safe queue of wire records on local disk, where
 * the agent puts what Kafka could not take and from where it replays them,
 * oldest first, when brokers return.
 *
 * A spool is a directory of append-only segment files "seg-<16 digits>.cww",
 * each a wire stream file (common/wire.h: magic, then length-prefixed
 * CRC-checked frames), so `causeway dump DIR/seg-*.cww` reads them.  When
 * the spool would grow past its byte bound, whole oldest segments are
 * evicted and counted.  A torn last frame (a crash inside write()) is found
 * by its length and CRC when the spool is opened, cut off and counted.
 *
 *	struct cw_spool *sp;
 *	cw_spool_open(&sp, "/var/lib/causeway/spool", 64 << 20);
 *	cw_spool_append(sp, buf, len);
 *	cw_spool_replay(sp, resend, ctx);	// in order; resend may stop it
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
	uint64_t records;	  /* in the spool now, not yet replayed */
	uint64_t bytes;		  /* on disk now, all segments */
	uint64_t segments;	  /* segment files now */
	uint64_t appended;	  /* records appended since open */
	uint64_t replayed;	  /* records handed to a replay callback */
	uint64_t evicted_records; /* dropped, oldest first, for the bound */
	uint64_t evicted_bytes;
	uint64_t torn_records; /* torn tails cut off at open */
	uint64_t torn_bytes;
	uint64_t corrupt_records; /* frames with a bad CRC, skipped */
};

/*
 * Open (creating if needed) the spool in `dir`, bounded to `max_bytes` on
 * disk (at least 64 KiB).  Existing segments are checked and kept.
 * 0, or -1 with a message.
 */
int cw_spool_open(struct cw_spool **sp, const char *dir, uint64_t max_bytes);

/*
 * Append one record (at most CW_WIRE_FRAME_MAX bytes), evicting the oldest
 * segments first if the bound requires.  0, or -1 with a message.
 */
int cw_spool_append(struct cw_spool *sp, const void *buf, size_t len);

/*
 * Called once per record, oldest first.  Return 0 when the record is taken
 * (it leaves the spool), > 0 to stop before it (it stays, and the next
 * replay starts with it), < 0 to stop with an error.
 */
typedef int (*cw_spool_replay_fn)(const uint8_t *buf, size_t len, void *arg);

/*
 * Hand records to `fn` in order until the spool is empty or `fn` stops.
 * Returns the number of records taken, or -1 if `fn` failed or the spool
 * could not be read (with a message).
 */
long cw_spool_replay(struct cw_spool *sp, cw_spool_replay_fn fn, void *arg);

bool cw_spool_empty(const struct cw_spool *sp);
void cw_spool_get_stats(const struct cw_spool *sp, struct cw_spool_stats *st);
/* Sync and close; the segments stay on disk for the next open. */
void cw_spool_close(struct cw_spool *sp);

#endif
