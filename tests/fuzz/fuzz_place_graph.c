// fuzz-sources: common/log.c common/util.c common/htab.c common/jsonw.c
// fuzz-sources: common/record.c common/record_read.c common/wire.c common/wire_key.c common/wire_json.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: common/wire_file.c common/sample_run.c common/kafka.c
// fuzz-sources: common/kafka_consume.c common/kafka_topic.c
// fuzz-sources: common/spool.c common/spool_recover.c common/pcap.c
// fuzz-sources: build/common/wire.pb-c.c
// fuzz-sources: correlator/*.c paths/*.c graph/*.c place/*.c traces/*.c
// fuzz-sources: common/hist.c common/health.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the graph side of causeway place: any text as the
 * graph JSON, with no units or hosts file, so the units and their CPU and
 * memory and the hosts and capacities all come from it, and once more
 * with a time range (the windows).  Loading gives an instance that checks
 * or one line of error, never a crash or a leak; a loaded instance has
 * every unit on a known host with finite, non-negative resources.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "place/place.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cw_place *p)
{
	size_t i;

	for (i = 0; i < p->nunits; i++)
		if (p->units[i].host >= p->nhosts ||
		    !isfinite(p->units[i].cpu) || p->units[i].cpu < 0 ||
		    !isfinite(p->units[i].memory) || p->units[i].memory < 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_place_input in;
	int range;

	for (range = 0; range < 2; range++) {
		cw_place_input_init(&in);
		in.graph_path = "fuzz";
		in.graph_text = malloc(size + 1);
		if (!in.graph_text)
			return 0;
		memcpy(in.graph_text, data, size);
		in.graph_text[size] = '\0';
		in.graph_len = size;
		in.since_ns = range ? 10000000000ull : 0;
		in.p.headroom = 0.1;
		if (cw_place_input_load(&in) == 0)
			check(&in.p);
		cw_place_input_release(&in);
	}
	return 0;
}
