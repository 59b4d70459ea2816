// SPDX-License-Identifier: MIT
/*
 * The one time grammar and the one duration grammar (common/util.h):
 * every form each accepts, exactly, and the near misses each refuses.
 */
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

#include "tests/unit/check.h"

#define NS NSEC_PER_SEC

static int dur(const char *s, uint64_t bare, uint64_t want)
{
	uint64_t v = 0;

	return !cw_parse_duration(s, bare, &v) && v == want;
}

static int at(const char *s, uint64_t now, uint64_t want)
{
	uint64_t v = 0;

	return !cw_parse_time(s, now, &v) && v == want;
}

static int bad_time(const char *s, uint64_t now)
{
	uint64_t v;

	return cw_parse_time(s, now, &v) == -1;
}

static void durations(void)
{
	uint64_t v;

	CHECK(dur("500ms", NS, 500 * NSEC_PER_MSEC));
	CHECK(dur("10s", NS, 10 * NS));
	CHECK(dur("2m", NS, 120 * NS));
	CHECK(dur("1d", NS, 86400 * NS));
	CHECK(dur("1500ns", NS, 1500));
	CHECK(dur("100us", NS, 100 * NSEC_PER_USEC));
	CHECK(dur("90", NS, 90 * NS));		   /* bare: the caller's unit */
	CHECK(dur("90", NSEC_PER_MSEC, 90 * NSEC_PER_MSEC));
	CHECK(dur("1.5s", NS, 1500 * NSEC_PER_MSEC)); /* fractions, exactly */
	CHECK(dur("0.25m", NS, 15 * NS));
	CHECK(dur("1.000000001s", NS, NS + 1));
	CHECK(dur("1.0000000010s", NS, NS + 1)); /* zeros past 1ns are fine */
	CHECK(dur("0.0000000001m", NS, 6));
	CHECK(dur("0", NS, 0));
	CHECK(dur("18446744073709551615ns", NS, UINT64_MAX));
	CHECK(cw_parse_duration("1.0000000001s", NS, &v) == -1); /* < 1ns */
	CHECK(cw_parse_duration("1.5ns", NS, &v) == -1);
	CHECK(cw_parse_duration("18446744073709551616ns", NS, &v) == -1);
	CHECK(cw_parse_duration("213503982335d", NS, &v) == -1); /* wraps */
	CHECK(cw_parse_duration("-1s", NS, &v) == -1);
	CHECK(cw_parse_duration("", NS, &v) == -1);
	CHECK(cw_parse_duration("s", NS, &v) == -1);
	CHECK(cw_parse_duration(".5s", NS, &v) == -1);
	CHECK(cw_parse_duration("1.s", NS, &v) == -1);
	CHECK(cw_parse_duration("1..5s", NS, &v) == -1);
	CHECK(cw_parse_duration("1 s", NS, &v) == -1);
	CHECK(cw_parse_duration("10x", NS, &v) == -1);
	CHECK(cw_parse_duration("10sec", NS, &v) == -1);
	CHECK(cw_parse_duration("1h30m", NS, &v) == -1);
	CHECK(cw_parse_duration("0x10s", NS, &v) == -1);
}

static void times(void)
{
	const uint64_t now = 1764000000ULL * NS; /* 2025-11-24 16:00:00 UTC */
	static const char *const bad[] = {
		"",
		"-",
		"@",
		"@1h", /* @ is seconds, no unit */
		"yesterday", /* words are not times */
		"NOW",
		"-now",
		"--1h",
		"1x",
		"1.2.3",
		"2000000000d", /* before the epoch */
		"-2000000000d",
		"2025-11-23", /* a date alone: no time */
		"2025-11-23 14",
		"2025-11-23 14:00 UTC",
		"2025-11-23T14:00:3",
		"2025-11-23T14:00:30.Z",
		"2025-11-23T14:00:30.0000000001Z",
		"2025-11-23T14:00:30+1:00",
		"2025-11-23T14:00:30+01",
		"2025-11-23T14:00:30+01:00x",
		"2025-13-23T14:00",
		"1969-12-31T23:59:59Z",
		"1970-01-01T00:00:00+00:01",
		"14:00",
	};
	size_t i;

	CHECK(at("now", now, now));
	CHECK(at("1h", now, now - 3600 * NS));
	CHECK(at("-1h", now, now - 3600 * NS));
	CHECK(at("-90", now, now - 90 * NS)); /* '-': bare seconds back */
	CHECK(at("-1.5d", now, now - 129600 * NS));
	CHECK(at("500ms", now, now - 500 * NSEC_PER_MSEC));
	CHECK(at("1700000000", now, 1700000000ULL * NS));
	CHECK(at("@1700000000", now, 1700000000ULL * NS));
	CHECK(at("1700000000.5", now, 1700000000ULL * NS + NS / 2));
	CHECK(at("@0", now, 0));
	CHECK(at("2025-11-23 14:00", now, 1763906400ULL * NS));
	CHECK(at("2025-11-23T14:00", now, 1763906400ULL * NS));
	CHECK(at("2025-11-23 14:00:30", now, 1763906430ULL * NS));
	CHECK(at("2025-11-23T14:00:30Z", now, 1763906430ULL * NS));
	CHECK(at("2025-11-23T14:00:30z", now, 1763906430ULL * NS));
	CHECK(at("2025-11-23T14:00:30.25Z", now, 1763906430ULL * NS + NS / 4));
	CHECK(at("2025-11-23T15:00:30+01:00", now, 1763906430ULL * NS));
	CHECK(at("2025-11-23T09:30:30-04:30", now, 1763906430ULL * NS));
	CHECK(at("1970-01-01T00:00:00Z", now, 0));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!bad_time(bad[i], now)) {
			fprintf(stderr, "taken: '%s'\n", bad[i]);
			failures++;
		}
}

int main(void)
{
	durations();
	times();
	return failures ? 1 : 0;
}
