/* SPDX-License-Identifier: MIT */
/*
 * `causeway traces` past its options: read the messages (a capture file,
 * a wire stream file, the timing topic, or a span truth), link calls to
 * requests (traces/traces.h), score them against the truth and its links,
 * write OTLP or Jaeger JSON, POST to an OTLP endpoint, and draw one
 * trace's waterfall.  What was read and linked is said on stderr.
 *
 *	struct cw_traces_cmd a = {.input = "cap.csv", .format = "otlp"};
 *	struct cw_traces t;
 *
 *	cw_traces_opts_default(&a.o);
 *	cw_traces_init(&t);
 *	rc = cw_traces_cmd_run(&t, &a);		// 0, or -1 after a message
 *	cw_traces_release(&t);
 */
#ifndef CW_TRACES_CMD_H
#define CW_TRACES_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/kafka.h"
#include "traces/traces.h"

struct cw_traces_cmd {
	struct cw_traces_opts o;
	const char *input, *truth, *links, *output, *otlp, *trace, *format;
	bool waterfall;
	bool fold_replicas; /* --truth: services by pod, replica suffix cut */
	/* --kafka: MsgWindow records from the timing topic. */
	struct cw_kafka_conf kc;
	uint64_t idle_ns;
};

int cw_traces_cmd_run(struct cw_traces *t, const struct cw_traces_cmd *a);

#endif
