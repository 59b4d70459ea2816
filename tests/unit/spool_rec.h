/* SPDX-License-Identifier: MIT */
/*
 * The records the spool tests write: "rec <n>" padded to 100 bytes, so a
 * replay can tell order, gaps and repeats from the bytes alone.
 */
#ifndef CW_TEST_SPOOL_REC_H
#define CW_TEST_SPOOL_REC_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SPOOL_REC_LEN 100

static inline void make_rec(char *buf, uint64_t n)
{
	memset(buf, '.', SPOOL_REC_LEN);
	snprintf(buf, SPOOL_REC_LEN, "rec %" PRIu64, n);
}

/* The record's number, or UINT64_MAX if it is not one of ours. */
static inline uint64_t rec_num(const uint8_t *buf, size_t len)
{
	uint64_t n;

	if (len != SPOOL_REC_LEN ||
	    sscanf((const char *)buf, "rec %" SCNu64, &n) != 1)
		return UINT64_MAX;
	return n;
}

#endif
