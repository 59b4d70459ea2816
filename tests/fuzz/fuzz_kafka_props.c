// clang-format off
// fuzz-sources: common/log.c common/util.c common/kafka.c common/kafka_consume.c common/kafka_topic.c common/spool.c common/spool_recover.c common/record.c common/jsonw.c
// fuzz-sources: common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: common/hist.c common/health.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the librdkafka properties file (--kafka-config,
 * --properties): any file is taken line by line into a configuration or
 * refused naming its line; never a crash or a leak.  Long lines, NUL
 * bytes, '=' at odd places and unknown keys included.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "common/kafka.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	FILE *fp;

	if (!path[0])
		snprintf(path, sizeof(path), "/dev/shm/cw-fuzz-%d.properties",
			 (int)getpid());
	fp = fopen(path, "w");
	if (!fp)
		return 0;
	fwrite(data, 1, size, fp);
	fclose(fp);
	cw_kafka_properties_check(path);
	unlink(path);
	return 0;
}
