/* SPDX-License-Identifier: MIT */
/*
 * One logging and error convention for all of causeway.
 *
 * Messages go to stderr as "causeway: <message>", lowercase, no full stop,
 * the subject in quotes: "unable to open 'x.csv': No such file or directory".
 * cw_error() returns -1 so a caller can write `return cw_error(...)`.
 *
 * The error contract of every library function in causeway:
 *  - it returns 0 (or a count, or a pointer) on success, and -1 (or NULL)
 *    after printing exactly one message that names what failed and why;
 *  - a function whose header says "no message" instead returns -1 with the
 *    reason in the caller's err buffer or in errno: the decoders and parsers
 *    of outside data, whose callers count and skip bad input;
 *  - negative errno codes (libbpf, librdkafka) are converted where they are
 *    received and never passed up;
 *  - nothing in a library exits the process: commands decide exit codes.
 */
#ifndef CW_LOG_H
#define CW_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum cw_log_level { CW_LOG_ERROR, CW_LOG_WARN, CW_LOG_INFO, CW_LOG_DEBUG };

/* Messages above this level are dropped; default CW_LOG_INFO. */
extern enum cw_log_level cw_log_level;

void cw_log(enum cw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * For the "no message" functions: the reason into the caller's buffer err
 * of len bytes (none if err is NULL or len 0); returns -1, so a parser
 * can write `return cw_err_buf(err, len, "...", ...)`.
 */
int cw_err_buf(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define cw_warn(...)  cw_log(CW_LOG_WARN, __VA_ARGS__)
#define cw_info(...)  cw_log(CW_LOG_INFO, __VA_ARGS__)
#define cw_debug(...) cw_log(CW_LOG_DEBUG, __VA_ARGS__)

#endif
