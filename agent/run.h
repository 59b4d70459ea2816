/* SPDX-License-Identifier: MIT */
/*
 * `causeway agent` as a whole, past its options: the agent attached, the
 * privileges dropped, the outputs opened (Kafka with its spool, or a file
 * of JSON lines), --metrics served, the daemon (agent/agent.h) run until
 * its duration or a signal, and what it did said on stderr.
 *
 *	struct cw_agent_run r;
 *
 *	cw_agent_run_defaults(&r, "0.1.0");
 *	r.kc.brokers = "kafka1:9092";	// the command's options
 *	if (cw_agent_run_check(&r))
 *		return 2;		// told
 *	return cw_agent_run(&r) ? 1 : 0;
 */
#ifndef CW_AGENT_RUN_H
#define CW_AGENT_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "common/kafka.h"

#define CW_AGENT_SPOOL_DIR "/var/lib/causeway/spool"
#define CW_AGENT_SPOOL_MAX (1ULL << 30)

struct cw_agent_run {
	struct cw_agent_opts ao;
	uint64_t interval_ns; /* collection period */
	uint64_t duration_ns; /* 0: until a signal */
	struct cw_daemon_opts d;
	struct cw_kafka_conf kc; /* brokers "embedded": a broker in here */
	const char *out;	 /* JSON lines appended here; NULL: stdout */
	const char *spool_dir;
	uint64_t spool_max;
	const char *user;    /* become this user after attaching */
	const char *metrics; /* serve the counters at ADDR:PORT, or NULL */
	bool traces;	     /* messages in windows, published */
	bool dns;	     /* names from DNS answers, published */
	bool embedded;	     /* (set by the run) the broker is in here */
};

/* The defaults of every field; version goes in host metadata. */
void cw_agent_run_defaults(struct cw_agent_run *r, const char *version);
/* Options that each make sense but not together refused (-1 after a
 * message), and the default windows of a fleet agent set; 0. */
int cw_agent_run_check(struct cw_agent_run *r);
/* The whole run: 0, or -1 after a message. */
int cw_agent_run(struct cw_agent_run *r);
/*
 * cw_agent_open() and, when the kernel refused for lack of privilege, a
 * hint naming what is needed; 0 or -1 (the failure already printed).
 */
int cw_agent_open_hinted(struct cw_agent **a, const struct cw_agent_opts *ao);

#endif
