// SPDX-License-Identifier: MIT
/*
 * causeway broker: the embedded Kafka broker (librdkafka's mock cluster) in
 * a process of its own, for one machine without a Kafka installation, and
 * for outage drills: SIGUSR1 takes every broker down, SIGUSR2 brings them
 * back.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/kafka_broker.h"
#include "common/log.h"
#include "common/util.h"

static const char help[] =
	"usage: causeway broker [--brokers N] [--duration D] [--topic NAME:N]...\n"
	"\n"
	"Run an embedded Kafka broker (librdkafka's mock cluster, in\n"
	"memory, no persistence) and print its bootstrap address on\n"
	"stdout.  Agents and correlators use it like any broker.\n"
	"SIGUSR1 takes all brokers down, SIGUSR2 brings them back;\n"
	"SIGINT/SIGTERM stop it.\n"
	"\n"
	"  -b, --brokers N    brokers in the cluster (1 to 9, default 1)\n"
	"  -d, --duration D   stop after D (default: at a signal)\n"
	"  -t, --topic NAME:N create topic NAME with N partitions (1 to 1024)\n"
	"                     before any client connects; others are\n"
	"                     made on first use with 4 (repeatable)\n"
	"\n"
	"Examples:\n"
	"  causeway broker > /tmp/bootstrap &\n"
	"  causeway broker -t causeway.conns:16 -t causeway.edges:16 > /tmp/bootstrap &\n"
	"  causeway agent --kafka $(cat /tmp/bootstrap)\n";

static int topic_opt(const struct cw_opt *o, const char *arg)
{
	return cw_broker_topic(o->to, arg);
}

int cmd_broker(int argc, char **argv)
{
	struct cw_broker a = {.n = 1};
	const struct cw_opt t[] = {
		CW_OPT_U64("brokers", 'b', &a.n, 1, 9),
		CW_OPT_DUR("duration", 'd', &a.duration, NSEC_PER_MSEC,
			365 * 86400 * NSEC_PER_SEC),
		CW_OPT_CALL("topic", 't', &a, topic_opt),
		{0}};
	int rc = cw_opts_parse("broker", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	if (cw_opts_one_operand(argc, argv, NULL))
		return 2;
	return cw_broker_run(&a) ? 1 : 0;
}
