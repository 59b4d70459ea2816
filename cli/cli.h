/* SPDX-License-Identifier: MIT */
/*
 * The commands' one option parser: each command describes its options in
 * a table, and cli_parse() builds getopt_long's tables from it, converts
 * and range-checks each value, and says what is wrong in one format:
 *
 *	causeway: error: --OPT 'VALUE': want WHAT
 *
 *	uint64_t every = 10 * NSEC_PER_SEC;
 *	const struct cli_opt t[] = {
 *		CLI_DUR("snapshot-every", 0, &every, 100 * NSEC_PER_MSEC,
 *			86400 * NSEC_PER_SEC),
 *		CLI_FLAG("json", 'j', &json),
 *		{0}};
 *	int rc = cli_parse("correlate", t, argc, argv, help);
 *	if (rc >= 0)
 *		return rc;	// 0 after --help, 2 after an error line
 *	// argv[optind..] are the operands
 *
 * -h/--help prints help on stdout; an unknown option or a missing value is
 * one line naming it (see 'causeway CMD --help').  Defaults are what the
 * targets hold before the call.
 */
#ifndef CW_CLI_H
#define CW_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/agent.h"
#include "common/kafka.h"
#include "common/util.h"

enum cli_kind {
	CLI_KFLAG,  /* bool *: set */
	CLI_KSTR,   /* const char **: the text; max > 0: 1 to max bytes */
	CLI_KU64,   /* uint64_t * in [min, max], k/M/G suffixes */
	CLI_KDUR,   /* uint64_t * ns in [min, max]; a bare number in unit */
	CLI_KSIZE,  /* uint64_t * bytes in [min, max], the size grammar */
	CLI_KREAL,  /* double * in [lo, hi] */
	CLI_KENUM,  /* int * (or an enum): the index of the name in names */
	CLI_KTIME,  /* uint64_t * ns since the epoch (the time grammar) */
	CLI_KCALL,  /* call(o, arg): 0, or -1 after its own line */
};

/* CLI_KDUR: "0" is taken (0: off) whatever the range. */
#define CLI_ZERO_OFF 1u
/* CLI_KREAL: the bounds themselves are refused. */
#define CLI_OPEN 2u

struct cli_opt {
	const char *name; /* the long name, without "--" */
	int key;	  /* a short letter, or 0 */
	enum cli_kind kind;
	void *to;
	uint64_t min, max, unit;
	double lo, hi;
	const char *const *names; /* CLI_KENUM: NULL-terminated */
	const char *want;	  /* the error's "want ...", if not the kind's */
	int (*call)(const struct cli_opt *o, const char *arg);
	unsigned flags;
};

#define CLI_FLAG(n, k, p) {.name = n, .key = k, .kind = CLI_KFLAG, .to = p}
#define CLI_STR(n, k, p)  {.name = n, .key = k, .kind = CLI_KSTR, .to = p}
#define CLI_U64(n, k, p, lo_, hi_)                                             \
	{.name = n, .key = k, .kind = CLI_KU64, .to = p, .min = lo_, .max = hi_}
#define CLI_DUR(n, k, p, lo_, hi_)                                             \
	{.name = n, .key = k, .kind = CLI_KDUR, .to = p, .min = lo_, .max = hi_}
#define CLI_REAL(n, k, p, lo_, hi_)                                            \
	{.name = n, .key = k, .kind = CLI_KREAL, .to = p, .lo = lo_, .hi = hi_}
#define CLI_ENUM(n, k, p, nm)                                                  \
	{.name = n, .key = k, .kind = CLI_KENUM, .to = p, .names = nm}
#define CLI_TIME(n, k, p) {.name = n, .key = k, .kind = CLI_KTIME, .to = p}
#define CLI_CALL(n, k, p, fn)                                                  \
	{.name = n, .key = k, .kind = CLI_KCALL, .to = p, .call = fn}

/* The Kafka options that every reader and writer of the topics has. */
#define CLI_KAFKA(kc)                                                          \
	CLI_STR("kafka", 'k', &(kc)->brokers),                                 \
		CLI_STR("kafka-config", 0, &(kc)->properties),                 \
		CLI_STR("topic-prefix", 0, &(kc)->topic_prefix)

/* The options of the agent that run and agent share. */
struct cli_watch {
	struct cw_agent_opts ao;
	uint64_t interval_ns; /* collection period */
	uint64_t duration_ns; /* 0: until a signal */
};

#define CLI_WATCH(w)                                                           \
	CLI_DUR("interval", 'i', &(w)->interval_ns, 10 * NSEC_PER_MSEC,        \
		3600 * NSEC_PER_SEC),                                          \
		CLI_DUR("duration", 'd', &(w)->duration_ns, NSEC_PER_MSEC,     \
			365 * 86400 * NSEC_PER_SEC),                           \
		CLI_CALL("attach", 'a', &(w)->ao.attach, cli_attach),          \
		CLI_CALL("netns", 'n', &(w)->ao.netns, cli_netns),             \
		CLI_DUR("msg-gap", 0, &(w)->ao.msg_gap_ns, NSEC_PER_USEC,      \
			3600 * NSEC_PER_SEC),                                  \
		CLI_FLAG("no-udp", 0, &(w)->ao.no_udp),                        \
		CLI_FLAG("no-nat", 0, &(w)->ao.no_nat),                        \
		CLI_CALL("hooks", 0, &(w)->ao.hooks, cli_hooks)

/*
 * Parse argv[1..] by table t (ended by {0}): -1 when every option was
 * taken (optind at the first operand), else the exit status: 0 after
 * --help, 2 after one error line.
 */
int cli_parse(const char *cmd, const struct cli_opt *t, int argc, char **argv,
	      const char *help);
/* One error line in the format above, for checks after cli_parse(): 2. */
int cli_bad(const char *opt, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* CLI_KCALL handlers the commands share. */
int cli_attach(const struct cli_opt *o, const char *arg);
int cli_netns(const struct cli_opt *o, const char *arg);
int cli_hooks(const struct cli_opt *o, const char *arg);
/* --by: an enum cw_group_by (graph/graph.h); CLI_BY_UNSET: not given. */
int cli_group_by(const struct cli_opt *o, const char *arg);
#define CLI_BY_UNSET 0x7f
/* --otlp: an OTLP/HTTP endpoint, http:// only. */
int cli_otlp_url(const struct cli_opt *o, const char *arg);

/*
 * At most one operand after the options, into *input (input NULL: none
 * allowed); -1 (one line printed) on one too many.
 */
int cli_one_operand(int argc, char **argv, const char **input);

#endif
