// SPDX-License-Identifier: MIT
/*
 * causeway broker: the embedded Kafka broker (librdkafka's mock cluster) in
 * a process of its own, for one machine without a Kafka installation, and
 * for outage drills: SIGUSR1 takes every broker down, SIGUSR2 brings them
 * back.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"

static volatile sig_atomic_t want_down, want_up;

static void on_usr(int sig)
{
	if (sig == SIGUSR1)
		want_down = 1;
	else
		want_up = 1;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway broker [--brokers N] [--duration D]\n\n"
		"Run an embedded Kafka broker (librdkafka's mock cluster, in\n"
		"memory, no persistence) and print its bootstrap address on\n"
		"stdout.  Agents and correlators use it like any broker.\n"
		"SIGUSR1 takes all brokers down, SIGUSR2 brings them back;\n"
		"SIGINT/SIGTERM stop it.\n\n"
		"  -b, --brokers N    brokers in the cluster (1 to 9, default "
		"1)\n"
		"  -d, --duration D   stop after D (default: at a signal)\n\n"
		"Examples:\n"
		"  causeway broker > /tmp/bootstrap &\n"
		"  causeway agent --kafka $(cat /tmp/bootstrap)\n");
}

static void set_all(int n, bool up)
{
	int i;

	for (i = 1; i <= n; i++)
		if (up ? cw_kafka_mock_broker_up(i)
		       : cw_kafka_mock_broker_down(i))
			cw_warn("broker %d: unable to set %s", i,
				up ? "up" : "down");
	cw_info("brokers %s", up ? "up" : "down");
}

struct broker_args {
	uint64_t n;	   /* brokers */
	uint64_t duration; /* ns; 0: until a signal */
};

static int broker_opt(void *ctx, int c, const char *arg)
{
	struct broker_args *a = ctx;

	switch (c) {
	case 'b':
		if (cw_parse_u64(arg, 1, 9, &a->n))
			return cw_error("--brokers '%s': want 1 to 9", arg);
		return 0;
	case 'd':
		return cli_duration("--duration", arg, NSEC_PER_MSEC,
				    365 * 86400 * NSEC_PER_SEC, &a->duration);
	}
	return -1;
}

int cmd_broker(int argc, char **argv)
{
	static const struct option opts[] = {{"brokers", 1, 0, 'b'},
					     {"duration", 1, 0, 'd'},
					     {"help", 0, 0, 'h'},
					     {0}};
	struct broker_args a = {.n = 1};
	struct sigaction sa = {.sa_handler = on_usr};
	char bootstrap[256];
	uint64_t start;
	int rc;

	rc = cli_getopt("broker", argc, argv, "b:d:h", opts, broker_opt, &a,
			usage);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (cli_one_operand(argc, argv, NULL))
		return 2;
	cw_catch_signals();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (cw_kafka_mock_start((int)a.n, bootstrap, sizeof(bootstrap)))
		return 1;
	printf("%s\n", bootstrap);
	fflush(stdout);
	start = cw_now_mono_ns();
	while (!cw_stop &&
	       (!a.duration || cw_now_mono_ns() < start + a.duration)) {
		if (want_down) {
			want_down = 0;
			set_all((int)a.n, false);
		}
		if (want_up) {
			want_up = 0;
			set_all((int)a.n, true);
		}
		usleep(20000);
	}
	cw_kafka_mock_stop();
	return 0;
}
