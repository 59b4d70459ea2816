/* SPDX-License-Identifier: MIT */
/*
 * `causeway dump`'s reading: wire records from stream files (what the
 * agent writes, spool segments) or a Kafka topic, printed as JSON lines on
 * stdout; a record that does not decode is counted, a damaged frame
 * skipped (past an impossible length, to the next frame whose CRC holds).
 *
 *	struct cw_dump d = {.count = 10};
 *
 *	cw_dump_start(&d);
 *	cw_dump_file(&d, "spool/00000001.cww");
 *	return cw_dump_finish(&d);	// the exit status
 */
#ifndef CW_WIRE_DUMP_H
#define CW_WIRE_DUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "common/kafka.h"
#include "common/wire.h"

struct cw_dump {
	struct cw_jsonw w;
	struct cw_wire_errors errs;
	uint64_t printed;
	uint64_t frame_errors; /* torn or CRC-damaged frames */
	uint64_t resyncs;      /* impossible lengths read past */
	uint64_t skipped;      /* bytes skipped by those */
	uint64_t count;	       /* stop after this many; 0: no limit */
	bool stdout_failed;
};

/* The JSON writer on stdout; count is the caller's. */
void cw_dump_start(struct cw_dump *d);
/* Enough printed, stdout failed, or a signal came (cw_stop). */
bool cw_dump_done(const struct cw_dump *d);
/* One file ("-": stdin): 0 when read to its end, -1 when it could not be. */
int cw_dump_file(struct cw_dump *d, const char *path);
/*
 * The topics, as a consumer of conf's group, until count, a signal, or
 * timeout_ns (0: none) with partitions held and no record; 0 or -1.
 */
int cw_dump_kafka(struct cw_dump *d, const struct cw_kafka_conf *conf,
		  const char *const *topics, int ntopics, uint64_t timeout_ns);
/*
 * Flush stdout (a closed pipe is no error) and say what was skipped: the
 * exit status, 1 if anything failed (ret non-zero, a write, a bad or
 * damaged record), else 0.
 */
int cw_dump_finish(struct cw_dump *d, int ret);

#endif
