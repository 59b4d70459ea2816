// SPDX-License-Identifier: MIT
/* The commands' option parser (common/opts.h). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/opts.h"
#include "common/log.h"
#include "common/util.h"

#define MAX_OPTS 64
/* getopt values of options with no short letter: 256 + table index. */
#define LONG_ONLY 256

int cw_opts_bad(const char *opt, const char *val, const char *fmt, ...)
{
	char want[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	cw_error("%s '%s': want %s", opt, val, want);
	return 2;
}

/* "a, b or c" of a NULL-terminated list. */
static const char *name_list(const char *const *names, char *buf, size_t len)
{
	size_t i, n = 0, at = 0;

	while (names[n])
		n++;
	buf[0] = '\0';
	for (i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       i == 0 ? "" : i + 1 == n ? " or " : ", ",
				       names[i]);
	return buf;
}

/* What the kind wants, for the error line. */
static const char *want_of(const struct cw_opt *o, char *buf, size_t len)
{
	char lo[32], hi[32];

	if (o->want)
		return o->want;
	switch (o->kind) {
	case CW_OPT_KSTR:
		snprintf(buf, len, "1 to %" PRIu64 " characters", o->max);
		break;
	case CW_OPT_KU64:
		if (o->max == UINT64_MAX)
			snprintf(buf, len, "a number of at least %" PRIu64,
				 o->min);
		else
			snprintf(buf, len,
				 "a number from %" PRIu64 " to %" PRIu64,
				 o->min, o->max);
		break;
	case CW_OPT_KDUR:
		cw_fmt_duration(o->min, lo, sizeof(lo));
		if (o->max == UINT64_MAX)
			snprintf(buf, len, "a duration of at least %s (e.g. "
				 "500ms, 10s, 2m)", lo);
		else
			snprintf(buf, len, "a duration from %s to %s (e.g. "
				 "500ms, 10s, 2m)%s", lo,
				 cw_fmt_duration(o->max, hi, sizeof(hi)),
				 o->flags & CW_OPT_ZERO_OFF ? ", or 0: off" : "");
		break;
	case CW_OPT_KSIZE:
		snprintf(buf, len, "a size such as 512Mi or 2G, at least %" PRIu64
			 " byte%s", o->min, o->min == 1 ? "" : "s");
		break;
	case CW_OPT_KREAL:
		snprintf(buf, len, "a number from %g to %g%s", o->lo, o->hi,
			 o->flags & CW_OPT_OPEN ? ", neither included" : "");
		break;
	case CW_OPT_KENUM:
		name_list(o->names, buf, len);
		break;
	default:
		snprintf(buf, len, "a value");
	}
	return buf;
}

static int take_real(const struct cw_opt *o, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || end == arg || !(v >= o->lo && v <= o->hi) ||
	    ((o->flags & CW_OPT_OPEN) && (v == o->lo || v == o->hi)))
		return -1;
	*(double *)o->to = v;
	return 0;
}

static int take_enum(const struct cw_opt *o, const char *arg)
{
	int i;

	for (i = 0; o->names[i]; i++)
		if (!strcmp(arg, o->names[i])) {
			*(int *)o->to = i;
			return 0;
		}
	return -1;
}

/* One value into its target: 0, -1 (the kind's error to print), or -2
 * (a handler printed its own). */
static int take(const struct cw_opt *o, const char *arg)
{
	uint64_t *u = o->to, v;
	char opt[80];

	switch (o->kind) {
	case CW_OPT_KFLAG:
		*(bool *)o->to = true;
		return 0;
	case CW_OPT_KSTR:
		if (o->max && (!*arg || strlen(arg) > o->max))
			return -1;
		*(const char **)o->to = arg;
		return 0;
	case CW_OPT_KU64:
		return cw_parse_u64(arg, o->min, o->max, u);
	case CW_OPT_KDUR:
		if ((o->flags & CW_OPT_ZERO_OFF) && !strcmp(arg, "0"))
			return *u = 0;
		if (cw_parse_duration(arg, o->unit ? o->unit : NSEC_PER_SEC,
				      &v) ||
		    v < o->min || v > o->max)
			return -1;
		return *u = v, 0;
	case CW_OPT_KSIZE:
		return cw_parse_size(arg, o->min, o->max, u);
	case CW_OPT_KREAL:
		return take_real(o, arg);
	case CW_OPT_KENUM:
		return take_enum(o, arg);
	case CW_OPT_KTIME:
		snprintf(opt, sizeof(opt), "--%s", o->name);
		return cw_time_opt(opt, arg, cw_now_real_ns(), u) ? -2 : 0;
	case CW_OPT_KCALL:
		return o->call(o, arg) ? -2 : 0;
	}
	return -1;
}

/* getopt gave c: '?' an unknown option, ':' one whose value is missing
 * (the short options start with ':').  One line; 2. */
static int bad_option(const char *cmd, char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		cw_error("option '%s' needs a value (see 'causeway %s --help')",
			 arg, cmd);
	else if (!optopt) /* an unknown long option */
		cw_error("unknown option '%s' (see 'causeway %s --help')", arg,
			 cmd);
	else
		cw_error("unknown option '-%c' (see 'causeway %s --help')",
			 optopt, cmd);
	return 2;
}

/* getopt_long's tables of t, with -h/--help; the count of t, or -1. */
static int build(const struct cw_opt *t, struct option *lo, char *so)
{
	int n, s = 0;

	so[s++] = ':'; /* a missing value is ':', not '?' */
	for (n = 0; t[n].name; n++) {
		if (n == MAX_OPTS)
			return cw_error("too many options in one table");
		lo[n] = (struct option){t[n].name,
					t[n].kind == CW_OPT_KFLAG ? no_argument
							       : required_argument,
					NULL, t[n].key ? t[n].key : LONG_ONLY + n};
		if (!t[n].key)
			continue;
		so[s++] = (char)t[n].key;
		if (t[n].kind != CW_OPT_KFLAG)
			so[s++] = ':';
	}
	lo[n] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n + 1] = (struct option){0};
	so[s++] = 'h';
	so[s] = '\0';
	return n;
}

int cw_opts_parse(const char *cmd, const struct cw_opt *t, int argc, char **argv,
	      const char *help)
{
	struct option lo[MAX_OPTS + 2];
	char so[3 * MAX_OPTS + 2], want[512], opt[80];
	const struct cw_opt *o;
	int c, i, n = build(t, lo, so), r;

	if (n < 0)
		return 2;
	optind = 0; /* glibc: start afresh, forgetting a previous parse */
	opterr = 0;
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (c == 'h') {
			fputs(help, stdout);
			return 0;
		}
		if (c == '?' || c == ':')
			return bad_option(cmd, argv, c);
		for (i = 0, o = NULL; i < n && !o; i++)
			if (c == (t[i].key ? t[i].key : LONG_ONLY + i))
				o = &t[i];
		r = take(o, optarg);
		if (r == -2)
			return 2;
		if (r) {
			snprintf(opt, sizeof(opt), "--%s", o->name);
			return cw_opts_bad(opt, optarg, "%s",
				       want_of(o, want, sizeof(want)));
		}
	}
	return -1;
}

int cw_opts_one_operand(int argc, char **argv, const char **input)
{
	if (input && optind < argc)
		*input = argv[optind++];
	if (optind < argc)
		return cw_error("unexpected argument '%s'", argv[optind]);
	return 0;
}
