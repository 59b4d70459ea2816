// SPDX-License-Identifier: MIT
/*
 * causeway broker: the embedded Kafka broker (librdkafka's mock cluster) in
 * a process of its own, for one machine without a Kafka installation, and
 * for outage drills: SIGUSR1 takes every broker down, SIGUSR2 brings them
 * back.
 */
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

#define MAX_TOPICS 16

struct broker_args {
	uint64_t n;	   /* brokers */
	uint64_t duration; /* ns; 0: until a signal */
	struct {
		char name[250]; /* Kafka's longest name, 249, and a NUL */
		uint64_t partitions;
	} topic[MAX_TOPICS];
	size_t ntopics;
};

/* "NAME:N" into the next topic: a legal Kafka name, 1 to 1024; 0 or -1. */
static int topic_opt(const struct cli_opt *o, const char *arg)
{
	struct broker_args *a = o->to;
	const char *colon = strrchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0, i;

	if (a->ntopics == MAX_TOPICS)
		return cw_error("--topic '%s': at most %d topics", arg,
				MAX_TOPICS);
	if (!colon || !n)
		return cw_error("--topic '%s': want NAME:PARTITIONS", arg);
	if (n >= sizeof(a->topic[0].name) ||
	    (n <= 2 && arg[0] == '.' && arg[n - 1] == '.'))
		return cw_error("--topic '%s': not a Kafka topic name (1 to "
				"249 characters, not . or ..)",
				arg);
	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-",
			    arg[i]))
			return cw_error("--topic '%s': '%c' is not allowed in "
					"a topic name (letters, digits, . _ -)",
					arg, arg[i]);
	if (cw_parse_u64(colon + 1, 1, 1024, &a->topic[a->ntopics].partitions))
		return cw_error("--topic '%s': want 1 to 1024 partitions", arg);
	for (i = 0; i < a->ntopics; i++)
		if (strlen(a->topic[i].name) == n &&
		    !memcmp(a->topic[i].name, arg, n))
			return cw_error("--topic '%s': topic given twice", arg);
	memcpy(a->topic[a->ntopics].name, arg, n);
	a->topic[a->ntopics].name[n] = 0;
	a->ntopics++;
	return 0;
}

int cmd_broker(int argc, char **argv)
{
	struct broker_args a = {.n = 1};
	const struct cli_opt t[] = {
		CLI_U64("brokers", 'b', &a.n, 1, 9),
		CLI_DUR("duration", 'd', &a.duration, NSEC_PER_MSEC,
			365 * 86400 * NSEC_PER_SEC),
		CLI_CALL("topic", 't', &a, topic_opt),
		{0}};
	struct sigaction sa = {.sa_handler = on_usr};
	char bootstrap[256];
	uint64_t start;
	size_t i;
	int rc;

	rc = cli_parse("broker", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (cli_one_operand(argc, argv, NULL))
		return 2;
	cw_catch_signals();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (cw_kafka_mock_start((int)a.n, bootstrap, sizeof(bootstrap)))
		return 1;
	/* Before the address is out: no client can have made them first. */
	for (i = 0; i < a.ntopics; i++)
		if (cw_kafka_mock_topic_create(a.topic[i].name,
					       (int)a.topic[i].partitions)) {
			cw_kafka_mock_stop();
			return 1;
		}
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
