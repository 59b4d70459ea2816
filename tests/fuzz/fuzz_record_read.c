// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/record_read.c
// fuzz-sources: common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: common/hist.c common/health.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the JSON-lines record reader: any line is refused
 * with a reason or read; what is read writes back (cw_conn_record_json)
 * and reads again to the same record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_conn_record r, again;
	struct cw_jsonw w;
	char err[160], *buf = NULL;
	size_t len = 0;
	FILE *fp;

	err[0] = '\0';
	if (cw_record_parse((const char *)data, size, &r, err, sizeof(err))) {
		if (!err[0] || !memchr(err, '\0', sizeof(err)))
			abort(); /* every refusal says why */
		return 0;
	}
	fp = open_memstream(&buf, &len);
	if (!fp)
		return 0;
	cw_jsonw_init(&w, fp);
	cw_conn_record_json(&w, &r);
	fclose(fp);
	if (cw_record_parse(buf, len, &again, err, sizeof(err)) ||
	    memcmp(&r, &again, sizeof(r)))
		abort();
	free(buf);
	return 0;
}
