// SPDX-License-Identifier: MIT
/*
 * The agent's /proc parsers, from buffers: a command line becomes one
 * clean line cut between characters at the record's 255 bytes; the start
 * time is found past a comm holding ") "; a cgroup file gives the
 * container of its first line that names one.
 */
#include <string.h>

#include "agent/agent.h"
#include "check.h"

static void check_cmdline(void)
{
	char out[CW_CMDLINE_MAX], argv[600];
	const char simple[] = "nginx: worker\0-g\0daemon off;\0";
	const char hostile[] = "a\0\x1b[31m\0q\"\\\0b\xff\0\xe2\x80\xae";
	size_t n, i;

	n = cw_proc_parse_cmdline(simple, sizeof(simple) - 1, out, sizeof(out));
	CHECK(!strcmp(out, "nginx: worker -g daemon off;") && n == strlen(out));
	cw_proc_parse_cmdline(hostile, sizeof(hostile) - 1, out, sizeof(out));
	CHECK(!strcmp(out, "a ?[31m q\"\\ b\xef\xbf\xbd ?"));
	/* 2 bytes, then 3-byte characters: byte 255 falls inside one. */
	memcpy(argv, "x\0", 2);
	for (i = 2; i + 3 <= sizeof(argv); i += 3)
		memcpy(argv + i, "\xe4\xb8\xad", 3);
	n = cw_proc_parse_cmdline(argv, i, out, sizeof(out));
	CHECK(n == 254 && n == strlen(out));
	CHECK(!memcmp(out + n - 3, "\xe4\xb8\xad", 3));
	CHECK(cw_proc_parse_cmdline("", 0, out, sizeof(out)) == 0 && !out[0]);
}

static void check_stat(void)
{
	const char stat[] = "77 (a) b) 1 2) S 1 77 77 0 -1 4194560 1 0 0 0 "
			    "3 4 0 0 20 0 1 0 123456 9 9";
	const char maxed[] = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
			     "18446744073709551615 1";
	const char over[] = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
			    "18446744073709551616 1";
	uint64_t t = 5;

	CHECK(!cw_proc_parse_stat_start(stat, sizeof(stat) - 1, &t) &&
	      t == 123456);
	CHECK(!cw_proc_parse_stat_start(maxed, sizeof(maxed) - 1, &t) &&
	      t == UINT64_MAX);
	t = 5;
	CHECK(cw_proc_parse_stat_start(over, sizeof(over) - 1, &t) && t == 5);
	CHECK(cw_proc_parse_stat_start("1 (x) S 1", 9, &t) && t == 5);
	CHECK(cw_proc_parse_stat_start("no paren", 8, &t) && t == 5);
}

#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "5d3c1f0e-8a7b-4c6d-9e8f-0a1b2c3d4e5f"

static void check_cgroup(void)
{
	const char hybrid[] = "12:memory:/kubepods/burstable/pod" UID "/" ID
			      "\n1:name=systemd:/\n0::/\n";
	const char none[] = "2:cpu:/\n0::/user.slice\n";
	char container[CW_CONTAINER_MAX], pod[CW_POD_MAX];

	cw_proc_parse_cgroup(hybrid, sizeof(hybrid) - 1, container,
			     sizeof(container), pod, sizeof(pod));
	CHECK(!strcmp(container, ID) && !strcmp(pod, UID));
	cw_proc_parse_cgroup(none, sizeof(none) - 1, container,
			     sizeof(container), pod, sizeof(pod));
	CHECK(!container[0] && !pod[0]);
}

int main(void)
{
	check_cmdline();
	check_stat();
	check_cgroup();
	return failures ? 1 : 0;
}
