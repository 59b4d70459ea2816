// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/record_read.c
// fuzz-sources: common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c
// fuzz-sources: common/hist.c common/health.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the reader of whole input files, JSON lines or a
 * wire stream, with its metadata path on: host and process records
 * ("kind": "host" / "process", HostMeta / ProcessMeta) go to the callback
 * with NUL-terminated strings and a known kind, connection records to
 * theirs, and the reader either reads to the end or stops with a message
 * (skip_bad: it never stops for a bad line).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/record_read.h"
#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_records(const struct cw_conn_record *r, size_t n, void *arg)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!memchr(r[i].host, 0, sizeof(r[i].host)))
			abort();
	return 0;
}

static int on_meta(const struct cw_wire_msg *m, void *arg)
{
	const struct cw_process *p = &m->proc.proc;

	if (m->kind == CW_WIRE_HOST)
		return memchr(m->host.host, 0, sizeof(m->host.host))
			       ? 0
			       : (abort(), 0);
	if (m->kind == CW_WIRE_DNS)
		return cw_wire_dns_name_ok(m->dns.name) &&
				       (m->dns.addr.family == 4 ||
					m->dns.addr.family == 6)
			       ? 0
			       : (abort(), 0);
	if (m->kind != CW_WIRE_PROC || m->proc.source > CW_USAGE_CGROUP ||
	    !memchr(p->pod_name, 0, sizeof(p->pod_name)) ||
	    !memchr(p->pod_ns, 0, sizeof(p->pod_ns)) ||
	    !memchr(p->workload_kind, 0, sizeof(p->workload_kind)) ||
	    !memchr(p->workload, 0, sizeof(p->workload)) ||
	    !memchr(p->container_name, 0, sizeof(p->container_name)))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct cw_record_read_stats st;
	char *paths[1] = {path};
	FILE *fp;

	cw_log_level = CW_LOG_ERROR; /* the skipped lines: no warnings */
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/cw-fuzz-meta.%d",
			 (int)getpid());
	fp = fopen(path, "wb");
	if (!fp)
		return 0;
	fwrite(data, 1, size, fp);
	fclose(fp);
	cw_record_read_files_meta(paths, 1, true, on_records, on_meta, NULL,
				  &st);
	cw_record_read_files_meta(paths, 1, false, on_records, on_meta, NULL,
				  &st);
	unlink(path);
	return 0;
}
