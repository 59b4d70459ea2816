// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

volatile int cw_stop;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t cw_now_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t cw_now_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t cw_now_boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

int64_t cw_mono_to_real_offset(void)
{
	/* Bracket the realtime read to keep the error near one syscall. */
	uint64_t a = cw_now_mono_ns();
	uint64_t r = cw_now_real_ns();
	uint64_t b = cw_now_mono_ns();

	return (int64_t)(r - (a + (b - a) / 2));
}

static const struct {
	const char *suffix;
	uint64_t ns;
} duration_units[] = {
	{"ns", 1},
	{"us", NSEC_PER_USEC},
	{"ms", NSEC_PER_MSEC},
	{"s", NSEC_PER_SEC},
	{"m", 60 * NSEC_PER_SEC},
	{"h", 3600 * NSEC_PER_SEC},
	{"d", 86400 * NSEC_PER_SEC},
};

/* The number s starts with (a digit, no sign): 0, or -1 on none or
 * overflow; *end after it. */
static int leading_number(const char *s, int base, unsigned long long *v,
			  char **end)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, end, base);
	return errno ? -1 : 0;
}

/* v * mult into *out if it does not wrap and lies in [min, max]. */
static int scaled(unsigned long long v, uint64_t mult, uint64_t min,
		  uint64_t max, uint64_t *out)
{
	if (v > UINT64_MAX / mult || v * mult < min || v * mult > max)
		return -1;
	*out = v * mult;
	return 0;
}

/* The decimal fraction at *s ('.' and digits) as a count of unit: the
 * digits past the unit's precision must be zeros.  0 or -1; *s past it. */
static int fraction(const char **s, uint64_t unit, uint64_t *out)
{
	uint64_t scale = unit, v = 0;
	const char *p = *s + 1;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (scale % 10) { /* finer than a nanosecond: zeros only */
			if (*p != '0')
				return -1;
			continue;
		}
		scale /= 10;
		v += (uint64_t)(*p - '0') * scale;
	}
	*s = p;
	*out = v;
	return 0;
}

int cw_parse_duration(const char *s, uint64_t bare_unit_ns, uint64_t *out_ns)
{
	unsigned long long v;
	uint64_t unit = bare_unit_ns, frac = 0;
	const char *frac_at = NULL;
	char *end;
	size_t i;

	if (leading_number(s, 10, &v, &end))
		return -1;
	if (*end == '.') {
		frac_at = end;
		while (isdigit((unsigned char)*++end))
			;
	}
	if (*end) {
		for (i = 0; i < CW_ARRAY_SIZE(duration_units); i++)
			if (!strcmp(end, duration_units[i].suffix))
				break;
		if (i == CW_ARRAY_SIZE(duration_units))
			return -1;
		unit = duration_units[i].ns;
	}
	if (frac_at && fraction(&frac_at, unit, &frac))
		return -1;
	if (scaled(v, unit, 0, UINT64_MAX - frac, out_ns))
		return -1;
	*out_ns += frac;
	return 0;
}

/* "YYYY-MM-DD HH:MM[:SS[.frac]]", with a 'T' too, and an optional zone
 * ("Z", "+hh:mm", "-hh:mm"; none is UTC).  0 or -1. */
static int parse_date(const char *s, uint64_t *ns)
{
	const char *end, *p;
	uint64_t frac = 0;
	int64_t secs, off = 0;
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!(end = strptime(s, "%Y-%m-%d %H:%M", &tm)) &&
	    !(end = strptime(s, "%Y-%m-%dT%H:%M", &tm)))
		return -1;
	if (*end == ':') {
		if (!isdigit((unsigned char)end[1]) ||
		    !isdigit((unsigned char)end[2]) ||
		    !(end = strptime(end, ":%S", &tm)))
			return -1;
		if (*end == '.' && fraction(&end, NSEC_PER_SEC, &frac))
			return -1;
	}
	if (*end == 'Z' || *end == 'z') {
		end++;
	} else if (*end == '+' || *end == '-') {
		p = end + 1;
		if (strlen(p) != 5 || !isdigit((unsigned char)p[0]) ||
		    !isdigit((unsigned char)p[1]) || p[2] != ':' ||
		    !isdigit((unsigned char)p[3]) ||
		    !isdigit((unsigned char)p[4]))
			return -1;
		off = ((p[0] - '0') * 10 + (p[1] - '0')) * 3600 +
		      ((p[3] - '0') * 10 + (p[4] - '0')) * 60;
		if (*end == '+')
			off = -off; /* 14:00+01:00 is 13:00 UTC */
		end += 6;
	}
	if (*end || tm.tm_year < 70 || tm.tm_year > 8000)
		return -1;
	secs = (int64_t)timegm(&tm) + off;
	if (secs < 0)
		return -1;
	*ns = (uint64_t)secs * NSEC_PER_SEC + frac;
	return 0;
}

int cw_parse_time(const char *s, uint64_t now_ns, uint64_t *ns)
{
	const char *num = s + (*s == '@');
	uint64_t d;

	if (!*s)
		return -1;
	if (!strcmp(s, "now")) {
		*ns = now_ns;
		return 0;
	}
	/* @SECONDS or SECONDS since the epoch, a fraction allowed */
	if (*s == '@' || (isdigit((unsigned char)*s) &&
			  !num[strspn(num, "0123456789.")]))
		return num[strspn(num, "0123456789.")]
			       ? -1
			       : cw_parse_duration(num, NSEC_PER_SEC, ns);
	if (isdigit((unsigned char)*s) && strpbrk(s, "-:"))
		return parse_date(s, ns);
	/* -DURATION or DURATION back from now; without the '-', the unit
	 * is needed (a bare number is seconds since the epoch) */
	if (*s == '-')
		s++;
	else if (!isalpha((unsigned char)s[strlen(s) - 1]))
		return -1;
	if (!isdigit((unsigned char)*s) ||
	    cw_parse_duration(s, NSEC_PER_SEC, &d) || d > now_ns)
		return -1;
	*ns = now_ns - d;
	return 0;
}

int cw_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (leading_number(s, 0, &v, &end))
		return -1;
	if (*end == 'k' || *end == 'K')
		mult = 1000, end++;
	else if (*end == 'M')
		mult = 1000000, end++;
	else if (*end == 'G')
		mult = 1000000000, end++;
	return *end ? -1 : scaled(v, mult, min, max, out);
}

static const struct {
	char unit;
	uint64_t dec, bin;
} size_units[] = {
	{'k', 1000ULL, 1ULL << 10},
	{'K', 1000ULL, 1ULL << 10},
	{'M', 1000000ULL, 1ULL << 20},
	{'G', 1000000000ULL, 1ULL << 30},
	{'T', 1000000000000ULL, 1ULL << 40},
};

int cw_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;
	size_t i;

	if (leading_number(s, 10, &v, &end))
		return -1;
	for (i = 0; *end && i < CW_ARRAY_SIZE(size_units); i++) {
		if (*end != size_units[i].unit)
			continue;
		end++;
		mult = size_units[i].dec;
		if (*end == 'i')
			mult = size_units[i].bin, end++;
		break;
	}
	if (*end == 'B')
		end++;
	return *end ? -1 : scaled(v, mult, min, max, out);
}

const char *cw_fmt_duration(uint64_t ns, char *buf, size_t len)
{
	size_t i = CW_ARRAY_SIZE(duration_units);

	while (i-- > 1)
		if (ns && ns % duration_units[i].ns == 0)
			break;
	snprintf(buf, len, "%" PRIu64 "%s", ns / duration_units[i].ns,
		 duration_units[i].suffix);
	return buf;
}

const char *cw_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t i = 0;

	while (v >= 1024 && i + 1 < CW_ARRAY_SIZE(units))
		v /= 1024, i++;
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[i]);
	return buf;
}

/* The folder of path may not be writable by others unless it is sticky. */
static int check_out_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		return cw_error("unable to create '%s': %s", path,
				strerror(ENAMETOOLONG));
	if (stat(dir, &st))
		return cw_error("unable to create '%s': %s", path,
				strerror(errno));
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		return cw_error("refusing to write '%s': its folder '%s' is "
				"writable by others and not sticky",
				path, dir);
	return 0;
}

/*
 * A character device or a FIFO at `path` (/dev/null, /dev/stdout, a
 * pipe) is written in place: a temporary renamed over it would replace
 * the device with a regular file (as root, in /dev), and whole-or-nothing
 * means nothing there.  A symlink is followed to one only when root or we
 * own it (/dev/stdout), never one that another user planted.  1 when
 * `path` is not such a file, else 0 or -1 with a message.
 */
static int open_in_place(struct cw_outfile *of, const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st))
		return 1;
	if (S_ISLNK(st.st_mode) &&
	    ((st.st_uid != 0 && st.st_uid != geteuid()) || stat(path, &st)))
		return 1;
	if (S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode))
		return cw_error("refusing to write '%s': it is a %s", path,
				S_ISDIR(st.st_mode) ? "folder"
						    : "block device");
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
		return 1;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || !(of->fp = fdopen(fd, "w")) ||
	    !(of->path = strdup(path))) {
		if (of->fp)
			fclose(of->fp);
		else if (fd >= 0)
			close(fd);
		memset(of, 0, sizeof(*of));
		return cw_error("unable to open '%s': %s", path,
				strerror(errno ? errno : ENOMEM));
	}
	return 0;
}

int cw_outfile_open(struct cw_outfile *of, const char *path)
{
	int fd = -1, err;

	memset(of, 0, sizeof(*of));
	err = open_in_place(of, path);
	if (err <= 0)
		return err;
	if (check_out_dir(path))
		return -1;
	/* The pid tells a temporary a dead writer left from a live one's. */
	if (asprintf(&of->tmp, "%s.tmp.%d.XXXXXX", path, (int)getpid()) < 0) {
		of->tmp = NULL;
		return cw_error("out of memory");
	}
	of->path = strdup(path);
	if (of->path)
		fd = mkostemp(of->tmp, O_CLOEXEC);
	if (fd >= 0 && fchmod(fd, 0640) == 0)
		of->fp = fdopen(fd, "w");
	if (!of->fp) {
		err = of->path ? errno : ENOMEM;
		if (fd >= 0) {
			close(fd);
			unlink(of->tmp);
		}
		free(of->tmp);
		free(of->path);
		memset(of, 0, sizeof(*of));
		return cw_error("unable to create '%s': %s", path,
				strerror(err));
	}
	return 0;
}

int cw_outfile_commit(struct cw_outfile *of)
{
	int err = 0;

	errno = 0;
	if (fflush(of->fp) || ferror(of->fp) ||
	    (of->tmp && fsync(fileno(of->fp))))
		err = errno ? errno : EIO;
	if (fclose(of->fp) && !err)
		err = errno;
	of->fp = NULL;
	if (!err && of->tmp && rename(of->tmp, of->path))
		err = errno;
	if (err) {
		if (of->tmp)
			unlink(of->tmp);
		cw_error("unable to write '%s': %s", of->path, strerror(err));
	}
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
	return err ? -1 : 0;
}

void cw_outfile_abort(struct cw_outfile *of)
{
	if (of->fp)
		fclose(of->fp);
	if (of->tmp)
		unlink(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
}

int cw_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	char *p;

	if (n == 0 || n >= sizeof(buf))
		return cw_error("bad directory name '%s'", path);
	memcpy(buf, path, n + 1);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return cw_error("unable to create '%s': %s", buf,
					strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return cw_error("unable to create '%s': %s", buf,
				strerror(errno));
	return 0;
}

int cw_check_writable_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st))
		return cw_error("output folder '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cw_error("output folder '%s' is not a directory", dir);
	if (access(dir, W_OK | X_OK))
		return cw_error("output folder '%s' is not writable: %s", dir,
				strerror(errno));
	return 0;
}

ssize_t cw_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)total + 1 < len) {
		n = read(fd, buf + total, len - 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = 0;
	return total;
}

static void on_signal(int sig)
{
	(void)sig;
	cw_stop = 1;
}

static void on_ignored(int sig)
{
	(void)sig;
}

void cw_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Caught, not ignored (exec'd children get the default back):
	 * SIGUSR1 asks for a timing window where one is set up, and kills
	 * no one where none is; SIGXFSZ must not kill a writer over a file
	 * size limit, whose write then fails with EFBIG. */
	sa.sa_handler = on_ignored;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGXFSZ, &sa, NULL);
}

int cw_grow(void *arrp, size_t *cap, size_t need, size_t size, size_t min)
{
	void **arr = arrp;
	size_t n = *cap ? *cap : (min ? min : 1);
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			goto nomem;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		goto nomem;
	p = realloc(*arr, n * size);
	if (!p)
		goto nomem;
	*arr = p;
	*cap = n;
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}

int cw_time_opt(const char *opt, const char *val, uint64_t now_ns,
		uint64_t *ns)
{
	if (!cw_parse_time(val, now_ns, ns))
		return 0;
	return cw_error("%s '%s': want a time: now, a duration back from "
			"now (1h, -1h), @SECONDS since the epoch, or "
			"'YYYY-MM-DD HH:MM[:SS]' (UTC, or RFC 3339 with a zone)",
			opt, val);
}
