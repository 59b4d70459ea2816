// SPDX-License-Identifier: MIT
/* The embedded broker as a process of its own (common/kafka_broker.h). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/kafka.h"
#include "common/kafka_broker.h"
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

/* "NAME:N" into the next topic: a legal Kafka name, 1 to 1024; 0 or -1. */
int cw_broker_topic(struct cw_broker *a, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0, i;

	if (a->ntopics == CW_BROKER_MAX_TOPICS)
		return cw_error("--topic '%s': at most %d topics", arg,
				CW_BROKER_MAX_TOPICS);
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

int cw_broker_run(struct cw_broker *a)
{
	struct sigaction sa = {.sa_handler = on_usr};
	char bootstrap[256];
	uint64_t start;
	size_t i;

	cw_catch_signals();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (cw_kafka_mock_start((int)a->n, bootstrap, sizeof(bootstrap)))
		return -1;
	/* Before the address is out: no client can have made them first. */
	for (i = 0; i < a->ntopics; i++)
		if (cw_kafka_mock_topic_create(a->topic[i].name,
					       (int)a->topic[i].partitions)) {
			cw_kafka_mock_stop();
			return -1;
		}
	printf("%s\n", bootstrap);
	fflush(stdout);
	start = cw_now_mono_ns();
	while (!cw_stop &&
	       (!a->duration || cw_now_mono_ns() < start + a->duration)) {
		if (want_down) {
			want_down = 0;
			set_all((int)a->n, false);
		}
		if (want_up) {
			want_up = 0;
			set_all((int)a->n, true);
		}
		usleep(20000);
	}
	cw_kafka_mock_stop();
	return 0;
}
