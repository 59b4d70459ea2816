// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"

enum cw_log_level cw_log_level = CW_LOG_INFO;

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "causeway: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cw_log(enum cw_log_level level, const char *fmt, ...)
{
	static const char *prefix[] = {"error: ", "warning: ", "", "debug: "};
	va_list ap;

	if (level > cw_log_level)
		return;
	va_start(ap, fmt);
	vlog(prefix[level], fmt, ap);
	va_end(ap);
}

int cw_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

int cw_err_buf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}
