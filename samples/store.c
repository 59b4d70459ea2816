// SPDX-License-Identifier: MIT
/*
 * The sample-run store: one run file per run (format in common/sample_run.c),
 * written atomically into a folder and pruned by age and total size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "samples/samples.h"
#include "common/log.h"
#include "common/util.h"

const char *cw_sample_store_dir(const char *override)
{
	const char *env = getenv("CAUSEWAY_SAMPLES_DIR");

	if (override && *override)
		return override;
	if (env && *env)
		return env;
	return CW_SAMPLE_DEFAULT_DIR;
}

static bool is_run_name(const char *name)
{
	size_t n = strlen(name), e = strlen(CW_SAMPLE_FILE_EXT);

	return n > e && !strcmp(name + n - e, CW_SAMPLE_FILE_EXT) &&
	       name[0] != '.';
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cw_sample_entry *x = a, *y = b;

	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

int cw_sample_store_list(const char *dir, struct cw_sample_entry **out,
			 size_t *n)
{
	struct cw_sample_entry *v = NULL;
	size_t cnt = 0, cap = 0;
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return cw_error("unable to open store '%s': %s", dir,
				strerror(errno));
	}
	while ((de = readdir(d))) {
		if (!is_run_name(de->d_name) ||
		    strlen(de->d_name) >= CW_SAMPLE_NAME_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (CW_GROW(v, cap, cnt + 1, 64)) {
			free(v);
			closedir(d);
			return cw_error("out of memory for the store's runs");
		}
		strcpy(v[cnt].name, de->d_name);
		v[cnt].size = st.st_size;
		v[cnt].mtime_ns = (uint64_t)st.st_mtim.tv_sec * NSEC_PER_SEC +
				  st.st_mtim.tv_nsec;
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), entry_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

int cw_sample_store_prune(const char *dir,
			  const struct cw_sample_store_limits *lim,
			  const char *keep_name)
{
	uint64_t keep =
		lim && lim->keep_ns ? lim->keep_ns : CW_SAMPLE_DEFAULT_KEEP;
	uint64_t cap =
		lim && lim->max_bytes ? lim->max_bytes : CW_SAMPLE_DEFAULT_CAP;
	uint64_t now = cw_now_real_ns(), total = 0;
	struct cw_sample_entry *v;
	char path[PATH_MAX];
	size_t n, i;
	int removed = 0;

	if (cw_sample_store_list(dir, &v, &n))
		return -1;
	for (i = 0; i < n; i++)
		total += v[i].size;
	for (i = 0; i < n; i++) {
		bool old = now > v[i].mtime_ns && now - v[i].mtime_ns > keep;

		if (keep_name && !strcmp(v[i].name, keep_name))
			continue;
		if (!old && total <= cap)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
		if (unlink(path) && errno != ENOENT) {
			cw_warn("unable to remove '%s': %s", path,
				strerror(errno));
			continue;
		}
		total -= v[i].size;
		removed++;
	}
	free(v);
	return removed;
}

static void run_name(const struct cw_sample_run *run, char *name, size_t len,
		     int attempt)
{
	time_t secs = run->start_real_ns / NSEC_PER_SEC;
	char stamp[32], ibuf[32];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	cw_fmt_duration(run->interval_ns, ibuf, sizeof(ibuf));
	if (attempt)
		snprintf(name, len, "%s.%03uZ-%s-%d%s", stamp,
			 (unsigned int)(run->start_real_ns % NSEC_PER_SEC /
					NSEC_PER_MSEC),
			 ibuf, attempt, CW_SAMPLE_FILE_EXT);
	else
		snprintf(name, len, "%s.%03uZ-%s%s", stamp,
			 (unsigned int)(run->start_real_ns % NSEC_PER_SEC /
					NSEC_PER_MSEC),
			 ibuf, CW_SAMPLE_FILE_EXT);
}

int cw_sample_store_write(const char *dir, const struct cw_sample_run *run,
			  const struct cw_sample_store_limits *lim, char *name,
			  size_t namelen)
{
	char fname[CW_SAMPLE_NAME_MAX], path[PATH_MAX];
	struct cw_outfile of;
	uint8_t *buf = NULL;
	size_t len;
	int attempt, err;

	err = cw_mkdir_p(dir);
	if (err)
		return err;
	for (attempt = 0; attempt < 100; attempt++) {
		run_name(run, fname, sizeof(fname), attempt);
		snprintf(path, sizeof(path), "%s/%s", dir, fname);
		if (access(path, F_OK))
			break;
	}
	err = cw_sample_run_encode(run, &buf, &len);
	if (err)
		return err;
	err = cw_outfile_open(&of, path);
	if (err)
		goto cleanup;
	if (fwrite(buf, 1, len, of.fp) != len) {
		cw_outfile_abort(&of);
		err = cw_error("unable to write '%s': %s", path,
			       strerror(errno));
		goto cleanup;
	}
	err = cw_outfile_commit(&of);
	if (err)
		goto cleanup;
	if (name)
		snprintf(name, namelen, "%s", fname);
	if (cw_sample_store_prune(dir, lim, fname) < 0)
		cw_warn("unable to prune store '%s'", dir);
cleanup:
	free(buf);
	return err;
}

int cw_sample_store_resolve(const char *dir, const char *run, char *path,
			    size_t len)
{
	struct cw_sample_entry *v;
	size_t n;

	if (strchr(run, '/') || !access(run, F_OK)) {
		if (access(run, F_OK))
			return cw_error("no run file '%s': %s", run,
					strerror(errno));
		snprintf(path, len, "%s", run);
		return 0;
	}
	if (!strcmp(run, "latest")) {
		if (cw_sample_store_list(dir, &v, &n))
			return -1;
		if (!n) {
			free(v);
			return cw_error("no runs in '%s'", dir);
		}
		snprintf(path, len, "%s/%s", dir, v[n - 1].name);
		free(v);
		return 0;
	}
	snprintf(path, len, "%s/%s", dir, run);
	if (!access(path, F_OK))
		return 0;
	snprintf(path, len, "%s/%s%s", dir, run, CW_SAMPLE_FILE_EXT);
	if (!access(path, F_OK))
		return 0;
	return cw_error("no run '%s' in '%s'", run, dir);
}

int cw_sample_run_read(const char *path, struct cw_sample_run **out)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[128];
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > CW_SAMPLE_FILE_MAX) {
		err = cw_error("run file '%s' is not a regular file of at "
			       "most 64 MiB",
			       path);
		goto cleanup;
	}
	buf = malloc(st.st_size ?: 1);
	if (!buf) {
		err = cw_error("out of memory");
		goto cleanup;
	}
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	if (cw_sample_run_decode(buf, len, out, why, sizeof(why)))
		err = cw_error("run file '%s' is bad: %s", path, why);
cleanup:
	free(buf);
	close(fd);
	return err;
}
