/* SPDX-License-Identifier: MIT */
/* Option parsing that several subcommands share. */
#ifndef CW_CLI_H
#define CW_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/agent.h"

/* --duration/--interval style value; on error prints one line, returns -1. */
int cli_duration(const char *opt, const char *val, uint64_t min_ns,
		 uint64_t max_ns, uint64_t *out);
/* --netns: an inode number, a name under /run/netns, or a path. */
int cli_netns(const char *val, uint32_t *out);
int cli_attach(const char *val, enum cw_attach *out);
/* --mode aggregate|conn-only|per-event */
int cli_mode(const char *val, enum cw_agent_mode *out);

/* getopt value of --hooks (long only: 'H' is the agent's --host). */
#define CLI_OPT_HOOKS 0x148
/* getopt value of --metrics ADDR:PORT (long only; agent and run). */
#define CLI_OPT_METRICS 0x149

/* The options of the agent that run and agent share. */
struct cli_watch {
	struct cw_agent_opts ao;
	uint64_t interval_ns; /* collection period */
	uint64_t duration_ns; /* 0: until a signal */
};

/*
 * Parse one of -i/--interval, -d/--duration, -a/--attach, -n/--netns,
 * --msg-gap ('g'), --no-udp ('U'),
 * --no-nat ('N'), --hooks sampled|always (CLI_OPT_HOOKS): 1 if opt was one of
 * them, 0 if not, -1 on a bad value (one line printed).
 */
int cli_watch_option(int opt, const char *arg, struct cli_watch *w);
/* --min-share: a fraction of all bytes, 0 to 1; 0 or -1 (line printed). */
int cli_share(const char *arg, double *out);
/* --otlp: an OTLP/HTTP endpoint, http:// only; 0 or -1 (line printed). */
int cli_otlp_url(const char *arg);

/*
 * getopt found an unknown option or a missing value (call with opterr = 0):
 * print one line naming it and return 2, the exit status for bad usage.
 */
int cli_bad_option(const char *cmd, char **argv);

/*
 * A subcommand's getopt loop over argv: -h/--help prints usage to stdout
 * and gives 1; an unknown option or a missing value prints one line and
 * gives 2; each other option goes to opt(ctx, c, optarg), and its -1 gives
 * 2.  0: every option taken, optind at the first operand.
 */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts,
	       int (*opt)(void *ctx, int c, const char *arg), void *ctx,
	       void (*usage)(FILE *fp));
/*
 * At most one operand after the options, into *input (input NULL: none
 * allowed); -1 (one line printed) on one too many.
 */
int cli_one_operand(int argc, char **argv, const char **input);

/*
 * cw_agent_open() and, when the kernel refused for lack of privilege, a
 * hint naming what is needed; 0 or -1 (the failure already printed).
 */
int cli_agent_open(struct cw_agent **a, const struct cw_agent_opts *ao);

#endif
