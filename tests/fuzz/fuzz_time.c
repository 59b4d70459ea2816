// fuzz-sources: common/util.c common/log.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the one time and duration grammar (common/util.h),
 * which reads --since/--until and the API's since=/until=: any bytes are
 * parsed or refused, never crash; a time that parses as -DURATION is
 * never after now, and a duration printed back parses to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t now = 1764000000ULL * NSEC_PER_SEC;
	char buf[128], out[32];
	uint64_t t, d, again;

	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (!cw_parse_time(buf, now, &t) && buf[0] == '-' && t > now)
		abort();
	if (!cw_parse_duration(buf, NSEC_PER_SEC, &d)) {
		cw_fmt_duration(d, out, sizeof(out));
		if (d && (cw_parse_duration(out, 1, &again) || again != d))
			abort();
	}
	return 0;
}
