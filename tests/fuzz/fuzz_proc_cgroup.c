// fuzz-sources: common/log.c common/util.c common/htab.c agent/enrich.c agent/workload.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the agent's /proc/PID/cgroup parser (whole files:
 * v1 and v2 lines, "id:controllers:path").  Whatever the file, the
 * container id is "" or 64 hex digits and the pod uid "" or 36 characters
 * of a uid, each NUL-terminated inside buffers of the record's sizes and
 * of any smaller size.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex_or_empty(const char *s, size_t want)
{
	size_t n = strlen(s), i;

	if (!n)
		return 1;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return n == want;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char container[CW_CONTAINER_MAX + 8], pod[CW_POD_MAX + 8];
	size_t clen = CW_CONTAINER_MAX, plen = CW_POD_MAX;

	if (size && data[0] & 1) /* small buffers: nothing may overflow */
		clen = data[0] % (CW_CONTAINER_MAX + 1),
		plen = data[0] % (CW_POD_MAX + 1);
	memset(container, 'x', sizeof(container));
	memset(pod, 'x', sizeof(pod));
	cw_proc_parse_cgroup((const char *)data, size, container, clen, pod,
			     plen);
	if (clen &&
	    (!memchr(container, 0, clen) || !hex_or_empty(container, 64)))
		abort();
	if (plen && (!memchr(pod, 0, plen) || !hex_or_empty(pod, 36)))
		abort();
	if (container[clen] != 'x' || pod[plen] != 'x')
		abort();
	return 0;
}
