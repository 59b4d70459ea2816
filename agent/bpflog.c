// SPDX-License-Identifier: MIT
/*
 * libbpf's messages, through one callback for the whole process: the
 * connection agent and the sampler load programs in the same process, and
 * libbpf keeps one print function, so each setting its own silenced the
 * other's warnings.
 */
#include <stdarg.h>
#include <stdio.h>

#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "common/log.h"

static bool libbpf_loud = true;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG && cw_log_level < CW_LOG_DEBUG)
		return 0;
	if (!libbpf_loud && cw_log_level < CW_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

bool cw_libbpf_logging(bool loud)
{
	bool was = libbpf_loud;

	libbpf_loud = loud;
	libbpf_set_print(libbpf_print);
	return was;
}
