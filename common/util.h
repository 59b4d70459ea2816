/* SPDX-License-Identifier: MIT */
/*
 * Small helpers every component shares: clocks, number and duration parsing
 * with range checks, and output files that appear whole or not at all.
 */
#ifndef CW_UTIL_H
#define CW_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC	 1000000000ULL
#define NSEC_PER_MSEC	 1000000ULL
#define NSEC_PER_USEC	 1000ULL

/*
 * Make room for `need` elements of `size` bytes in the array *arrp (a T **
 * passed as void *), whose room is *cap: doubles, starting at `min`, and
 * checks every multiplication for overflow.  Returns 0, or -1 with errno
 * ENOMEM and nothing printed; on failure *arrp and *cap are unchanged.
 *
 *	if (CW_GROW(v->items, v->cap, v->n + 1, 64))
 *		return cw_error("out of memory for items");
 *	v->items[v->n++] = x;
 */
int cw_grow(void *arrp, size_t *cap, size_t need, size_t size, size_t min);
#define CW_GROW(arr, cap, need, min)                                           \
	cw_grow(&(arr), &(cap), (need), sizeof(*(arr)), (min))

/* CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads. */
uint64_t cw_now_mono_ns(void);
/* CLOCK_REALTIME in ns. */
uint64_t cw_now_real_ns(void);
/* CLOCK_BOOTTIME in ns: the clock of task->start_boottime. */
uint64_t cw_now_boot_ns(void);
/* Realtime minus monotonic, to stamp kernel times with wall-clock time. */
int64_t cw_mono_to_real_offset(void);

/*
 * Parse a duration, the one duration grammar of causeway: a whole or
 * decimal number and a unit, ns, us, ms, s, m, h or d ("10s", "250ms",
 * "1.5s", "2h"); a bare number is taken in `bare_unit_ns`.  Refuses
 * negatives, overflow, a fraction finer than a nanosecond and trailing
 * junk.  Returns 0 or -1 (with no message: the caller names the option).
 */
int cw_parse_duration(const char *s, uint64_t bare_unit_ns, uint64_t *out_ns);
/*
 * Parse a point in time into ns since the epoch, the one time grammar of
 * causeway (--since, --until, the API's since= and until=):
 *   now
 *   -DURATION, DURATION   that long before now_ns ("-90", "-90m", "1h",
 *                         "1.5d"; without '-' the unit is needed)
 *   SECONDS, @SECONDS     since the epoch ("1700000000", "@1700000000.5")
 *   YYYY-MM-DD HH:MM[:SS[.frac]]  with ' ' or 'T', UTC unless it ends
 *                         with Z, +hh:mm or -hh:mm (RFC 3339)
 * Returns 0 or -1 (no message: the caller names the option and its
 * bounds).
 */
int cw_parse_time(const char *s, uint64_t now_ns, uint64_t *ns);
/* The same for an option: 0, or -1 after "OPT 'VAL': want a time: ...". */
int cw_time_opt(const char *opt, const char *val, uint64_t now_ns,
		uint64_t *ns);
/* Parse an unsigned integer in [min, max]; optional k/M/G (x1000) suffix. */
int cw_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * Parse a byte count in [min, max], the one size grammar of causeway: a
 * whole number with an optional unit, decimal k/K, M, G, T (10^3 ... 10^12,
 * as disks are sold) or binary Ki, Mi, Gi, Ti (2^10 ... 2^40), either
 * optionally followed by "B": "1M" is 1000000, "1Mi" and "1MiB" 1048576.
 * Returns 0 or -1 (with no message: the caller names the option).
 */
int cw_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Format ns as the shortest exact unit: "1s", "250ms", "100us". */
const char *cw_fmt_duration(uint64_t ns, char *buf, size_t len);
/* Format a byte count for people: "1.5 MiB". */
const char *cw_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/*
 * An output file written to a fresh "<path>.tmp.<pid>.XXXXXX" and renamed over
 * `path` on commit, so readers never see half a file and a failure leaves
 * nothing.  Safe in folders that others can write to, since causeway runs
 * as root: the temporary is created with O_EXCL (a planted file or symlink
 * is never opened or followed), mode 0640, and a folder that others may
 * write to without the sticky bit (where they could swap names under us)
 * is refused.  A symlink at `path` itself is replaced, not followed.
 * A character device or FIFO (/dev/null, /dev/stdout, a pipe) is written
 * in place instead, never replaced; a folder or block device is refused.
 */
struct cw_outfile {
	FILE *fp;
	char *path;
	char *tmp;
};

int cw_outfile_open(struct cw_outfile *of, const char *path);
/* Flush, fsync and rename; closes the file either way.  0 or -1. */
int cw_outfile_commit(struct cw_outfile *of);
/* Close and remove the temporary file. */
void cw_outfile_abort(struct cw_outfile *of);

/* Create a directory and its parents (mode 0755); 0 or -1 with a message. */
int cw_mkdir_p(const char *path);
/* Check that `dir` is a directory we can write into; 0 or -1 with message. */
int cw_check_writable_dir(const char *dir);

/* Read a whole small file (procfs, sysfs) into buf, NUL-terminated. */
ssize_t cw_read_file(const char *path, char *buf, size_t len);

/* Set by the signal handlers installed with cw_catch_signals(). */
extern volatile int cw_stop;
/* SIGINT and SIGTERM set cw_stop; SIGPIPE is ignored. */
void cw_catch_signals(void);

#endif
