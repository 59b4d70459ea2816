// SPDX-License-Identifier: MIT
/*
 * The commands' option parser (common/opts.h): every kind converts and
 * range-checks its value, bad ones give exit status 2 and the one error
 * format, --help gives 0, defaults stand when an option is not given, and
 * the operands are left at optind.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/opts.h"
#include "common/util.h"

#include "tests/unit/check.h"

struct vals {
	bool flag;
	const char *str, *host;
	uint64_t n, dur, size, when;
	double share;
	int fmt;
};

static const char *const fmts[] = {"table", "json", NULL};

/* Parse the words of line (argv[0] "test") into v; the status. */
static int parse(struct vals *v, const char *line)
{
	const struct cw_opt t[] = {
		CW_OPT_FLAG("flag", 'f', &v->flag),
		CW_OPT_STR("str", 's', &v->str),
		{.name = "host", .kind = CW_OPT_KSTR, .to = &v->host, .max = 4},
		CW_OPT_U64("n", 0, &v->n, 1, 10),
		{.name = "dur", .kind = CW_OPT_KDUR, .to = &v->dur,
		 .min = NSEC_PER_MSEC, .max = NSEC_PER_SEC,
		 .flags = CW_OPT_ZERO_OFF},
		{.name = "size", .kind = CW_OPT_KSIZE, .to = &v->size, .min = 1,
		 .max = UINT64_MAX},
		CW_OPT_REAL("share", 0, &v->share, 0, 1),
		CW_OPT_ENUM("fmt", 0, &v->fmt, fmts),
		CW_OPT_TIME("when", 0, &v->when),
		{0}};
	char buf[256], *argv[32];
	int argc = 0;

	snprintf(buf, sizeof(buf), "test %s", line);
	for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	memset(v, 0, sizeof(*v));
	v->n = 5; /* a default */
	v->fmt = -1;
	return cw_opts_parse("test", t, argc, argv, "help text\n");
}

int main(void)
{
	struct vals v;

	CHECK(parse(&v, "") == -1 && v.n == 5 && v.fmt == -1 && !v.flag);
	CHECK(parse(&v, "-f -s x --n 7 --dur 500ms --size 2Ki op1 op2") ==
		      -1 &&
	      v.flag && !strcmp(v.str, "x") && v.n == 7 &&
	      v.dur == 500 * NSEC_PER_MSEC && v.size == 2048 &&
	      optind == 10);
	CHECK(parse(&v, "--dur 0") == -1 && v.dur == 0); /* 0: off */
	CHECK(parse(&v, "--share 0.25 --fmt json") == -1 &&
	      v.share == 0.25 && v.fmt == 1);
	CHECK(parse(&v, "--when @100") == -1 && v.when == 100 * NSEC_PER_SEC);
	CHECK(parse(&v, "--host abcd") == -1 && !strcmp(v.host, "abcd"));
	CHECK(parse(&v, "--help") == 0);
	fprintf(stderr, "(help text and refusals follow)\n");
	CHECK(parse(&v, "--n 11") == 2);    /* past the range */
	CHECK(parse(&v, "--n 0") == 2);
	CHECK(parse(&v, "--dur 2s") == 2);  /* over the max */
	CHECK(parse(&v, "--dur 10x") == 2); /* no such unit */
	CHECK(parse(&v, "--size 0") == 2);
	CHECK(parse(&v, "--share 1.5") == 2);
	CHECK(parse(&v, "--share 0.5x") == 2);
	CHECK(parse(&v, "--fmt xml") == 2);
	CHECK(parse(&v, "--when yesterday") == 2);
	CHECK(parse(&v, "--host abcde") == 2); /* too long */
	CHECK(parse(&v, "--bogus") == 2);
	CHECK(parse(&v, "-z") == 2);
	CHECK(parse(&v, "--str") == 2); /* a value missing */
	return failures ? 1 : 0;
}
