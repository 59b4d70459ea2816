// fuzz-sources: common/log.c common/util.c common/htab.c agent/enrich.c agent/workload.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the /proc parsers of the agent that take a buffer:
 * the cgroup path of a process (container id and pod uid out of docker,
 * containerd, cri-o and kubepods layouts).  Any path gives a
 * NUL-terminated container id and pod uid that fit their buffers.
 *
 * The readers of /proc/PID/stat, cmdline and cgroup themselves are static
 * in agent/enrich.c and open fixed /proc paths, so they cannot be reached
 * from here (reported to their owner: split each into a parser of a
 * buffer, as cw_parse_cgroup_path() is); mountinfo is not read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1), container[80], pod[48];

	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = 0;
	memset(container, 'x', sizeof(container));
	memset(pod, 'x', sizeof(pod));
	cw_parse_cgroup_path(path, container, sizeof(container), pod,
			     sizeof(pod));
	if (!memchr(container, 0, sizeof(container)) ||
	    !memchr(pod, 0, sizeof(pod)))
		abort();
	free(path);
	return 0;
}
