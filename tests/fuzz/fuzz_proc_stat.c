// fuzz-sources: common/log.c common/util.c common/htab.c agent/enrich.c agent/workload.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the agent's /proc/PID/stat parser (the start time,
 * field 22, after a comm that may hold spaces and parentheses).  When it
 * answers, the answer is what a second reading written here differently
 * finds: split what follows the last ')' at single spaces, take piece 20.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Field 22 by counting separators, or -1. */
static int field22(const char *text, uint64_t *v)
{
	const char *close = NULL, *p;
	int piece = 0;

	for (p = text; *p; p++)
		if (*p == ')')
			close = p;
	if (!close)
		return -1;
	for (p = close + 1; *p && piece < 20; p++)
		if (*p == ' ')
			piece++;
	if (piece < 20 || *p < '0' || *p > '9')
		return -1;
	*v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (*v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(*p - '0');
	}
	return *p && *p != ' ' && *p != '\n' ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[CW_PROC_STAT_READ];
	uint64_t got = 7, want;
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	int rc, rc2;

	rc = cw_proc_parse_stat_start((const char *)data, size, &got);
	memcpy(text, data, n);
	text[n] = 0;
	rc2 = field22(text, &want);
	if (rc != rc2 || (!rc && got != want) || (rc && got != 7))
		abort();
	return 0;
}
