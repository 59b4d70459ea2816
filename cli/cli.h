/* SPDX-License-Identifier: MIT */
/*
 * What the commands share beside the option parser (common/opts.h): the
 * Kafka and watch options as table fragments, and the handlers of the
 * values that need the agent's or the graph's words.
 */
#ifndef CW_CLI_H
#define CW_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/agent.h"
#include "common/kafka.h"
#include "common/opts.h"
#include "common/util.h"

/* The Kafka options that every reader and writer of the topics has. */
#define CLI_KAFKA(kc)                                                          \
	CW_OPT_STR("kafka", 'k', &(kc)->brokers),                              \
		CW_OPT_STR("kafka-config", 0, &(kc)->properties),              \
		CW_OPT_STR("topic-prefix", 0, &(kc)->topic_prefix)

/* The options of the agent that run and agent share. */
struct cli_watch {
	struct cw_agent_opts ao;
	uint64_t interval_ns; /* collection period */
	uint64_t duration_ns; /* 0: until a signal */
};

#define CLI_WATCH(w)                                                           \
	CW_OPT_DUR("interval", 'i', &(w)->interval_ns, 10 * NSEC_PER_MSEC,     \
		3600 * NSEC_PER_SEC),                                          \
		CW_OPT_DUR("duration", 'd', &(w)->duration_ns, NSEC_PER_MSEC,  \
			365 * 86400 * NSEC_PER_SEC),                           \
		CW_OPT_CALL("attach", 'a', &(w)->ao.attach, cli_attach),       \
		CW_OPT_CALL("netns", 'n', &(w)->ao.netns, cli_netns),          \
		CW_OPT_DUR("msg-gap", 0, &(w)->ao.msg_gap_ns, NSEC_PER_USEC,   \
			3600 * NSEC_PER_SEC),                                  \
		CW_OPT_FLAG("no-udp", 0, &(w)->ao.no_udp),                     \
		CW_OPT_FLAG("no-nat", 0, &(w)->ao.no_nat),                     \
		CW_OPT_CALL("hooks", 0, &(w)->ao.hooks, cli_hooks)

/* Handlers the commands share. */
int cli_attach(const struct cw_opt *o, const char *arg);
int cli_netns(const struct cw_opt *o, const char *arg);
int cli_hooks(const struct cw_opt *o, const char *arg);
/* --by: an enum cw_group_by (graph/graph.h); CLI_BY_UNSET: not given. */
int cli_group_by(const struct cw_opt *o, const char *arg);
#define CLI_BY_UNSET 0x7f
/* --otlp: an OTLP/HTTP endpoint, http:// only. */
int cli_otlp_url(const struct cw_opt *o, const char *arg);

#endif
