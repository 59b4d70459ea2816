// fuzz-sources: common/log.c common/util.c common/htab.c agent/enrich.c agent/workload.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the agent's /proc/PID/cmdline parser, fed what a
 * process can put in its argv (any bytes, NUL-separated) and any output
 * size up to a record's.  The line is NUL-terminated inside its buffer,
 * clean (valid UTF-8, no control character, common/utf8.h), holds no NUL
 * from the input, and is the same whatever lies past what the reader
 * reads.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[CW_CMDLINE_MAX + 8], again[CW_CMDLINE_MAX + 8];
	size_t cap = size ? (size_t)data[0] % (CW_CMDLINE_MAX + 1) : 0, n, m;
	char *copy;

	if (size)
		data++, size--;
	memset(out, 'x', sizeof(out));
	n = cw_proc_parse_cmdline((const char *)data, size, out, cap);
	if (!cap) {
		if (n || out[0] != 'x')
			abort();
		return 0;
	}
	if (n >= cap || out[n] || strlen(out) != n || !cw_utf8_is_clean(out, n))
		abort();
	/* Bytes past what the reader reads change nothing. */
	copy = malloc(size + 64);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	memset(copy + size, 'y', 64);
	if (size >= CW_PROC_CMDLINE_READ) {
		m = cw_proc_parse_cmdline(copy, size + 64, again, cap);
		if (m != n || memcmp(out, again, n + 1))
			abort();
	}
	free(copy);
	return 0;
}
