/* SPDX-License-Identifier: MIT */
/*
 * The one option parser of the commands: each describes its options in a
 * table, and cw_opts_parse() builds getopt_long's tables from it, converts
 * and range-checks each value, and says what is wrong in one format:
 *
 *	causeway: error: --OPT 'VALUE': want WHAT
 *
 *	uint64_t every = 10 * NSEC_PER_SEC;
 *	const struct cw_opt t[] = {
 *		CW_OPT_DUR("snapshot-every", 0, &every, NSEC_PER_SEC,
 *			   86400 * NSEC_PER_SEC),
 *		CW_OPT_FLAG("json", 'j', &json),
 *		{0}};
 *	int rc = cw_opts_parse("correlate", t, argc, argv, help);
 *	if (rc >= 0)
 *		return rc;	// 0 after --help, 2 after an error line
 *	// argv[optind..] are the operands
 *
 * -h/--help prints help on stdout; an unknown option or a missing value is
 * one line naming it (see 'causeway CMD --help').  Defaults are what the
 * targets hold before the call.
 */
#ifndef CW_OPTS_H
#define CW_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

enum cw_opt_kind {
	CW_OPT_KFLAG, /* bool *: set */
	CW_OPT_KSTR,  /* const char **: the text; max > 0: 1 to max bytes */
	CW_OPT_KU64,  /* uint64_t * in [min, max], k/M/G suffixes */
	CW_OPT_KDUR,  /* uint64_t * ns in [min, max]; a bare number in unit */
	CW_OPT_KSIZE, /* uint64_t * bytes in [min, max], the size grammar */
	CW_OPT_KREAL, /* double * in [lo, hi] */
	CW_OPT_KENUM, /* int * (or an enum): the index of the name in names */
	CW_OPT_KTIME, /* uint64_t * ns since the epoch (the time grammar) */
	CW_OPT_KCALL, /* call(o, arg): 0, or -1 after its own line */
};

/* CW_OPT_KDUR: "0" is taken (0: off) whatever the range. */
#define CW_OPT_ZERO_OFF 1u
/* CW_OPT_KREAL: the bounds themselves are refused. */
#define CW_OPT_OPEN 2u

struct cw_opt {
	const char *name; /* the long name, without "--" */
	int key;	  /* a short letter, or 0 */
	enum cw_opt_kind kind;
	void *to;
	uint64_t min, max, unit;
	double lo, hi;
	const char *const *names; /* CW_OPT_KENUM: NULL-terminated */
	const char *want;	  /* the error's "want ...", if not the kind's */
	int (*call)(const struct cw_opt *o, const char *arg);
	unsigned flags;
};

#define CW_OPT_FLAG(n, k, p) {.name = n, .key = k, .kind = CW_OPT_KFLAG, .to = p}
#define CW_OPT_STR(n, k, p)  {.name = n, .key = k, .kind = CW_OPT_KSTR, .to = p}
#define CW_OPT_U64(n, k, p, lo_, hi_)                                          \
	{.name = n, .key = k, .kind = CW_OPT_KU64, .to = p, .min = lo_, .max = hi_}
#define CW_OPT_DUR(n, k, p, lo_, hi_)                                          \
	{.name = n, .key = k, .kind = CW_OPT_KDUR, .to = p, .min = lo_, .max = hi_}
#define CW_OPT_REAL(n, k, p, lo_, hi_)                                         \
	{.name = n, .key = k, .kind = CW_OPT_KREAL, .to = p, .lo = lo_, .hi = hi_}
#define CW_OPT_ENUM(n, k, p, nm)                                               \
	{.name = n, .key = k, .kind = CW_OPT_KENUM, .to = p, .names = nm}
#define CW_OPT_TIME(n, k, p) {.name = n, .key = k, .kind = CW_OPT_KTIME, .to = p}
#define CW_OPT_CALL(n, k, p, fn)                                               \
	{.name = n, .key = k, .kind = CW_OPT_KCALL, .to = p, .call = fn}

/*
 * Parse argv[1..] by table t (ended by {0}): -1 when every option was
 * taken (optind at the first operand), else the exit status: 0 after
 * --help, 2 after one error line.
 */
int cw_opts_parse(const char *cmd, const struct cw_opt *t, int argc, char **argv,
	      const char *help);
/* One error line in the format above, for checks after cw_opts_parse(): 2. */
int cw_opts_bad(const char *opt, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * At most one operand after the options, into *input (input NULL: none
 * allowed); -1 (one line printed) on one too many.
 */
int cw_opts_one_operand(int argc, char **argv, const char **input);

#endif
