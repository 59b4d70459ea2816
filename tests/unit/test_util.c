// SPDX-License-Identifier: MIT
/*
 * The shared growth helper: doubling, the minimum, overflow refused.  Output
 * files: a planted symlink is replaced, never followed; a folder others may
 * write to without the sticky bit is refused; the file is 0640.  A device
 * or FIFO (/dev/null, a pipe) is written in place, never replaced.  Sizes
 * take decimal and binary units ("1M" 10^6, "1Mi" 2^20), nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "common/util.h"

static int write_out(const char *path, const char *text)
{
	struct cw_outfile of;

	if (cw_outfile_open(&of, path))
		return -1;
	fputs(text, of.fp);
	return cw_outfile_commit(&of);
}

static void check_outfiles(void)
{
	char dir[] = "/tmp/cw-test-util.XXXXXX", path[400], victim[256];
	char open_dir[300], buf[16] = "";
	struct stat st;
	FILE *fp;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(path, sizeof(path), "%s/out.json", dir);
	fp = fopen(victim, "w");
	CHECK(fp && fputs("keep", fp) >= 0 && !fclose(fp));
	/* a symlink planted where the output goes: replaced, not followed */
	CHECK(!symlink(victim, path));
	CHECK(!write_out(path, "new"));
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode));
	CHECK((st.st_mode & 07777) == 0640);
	fp = fopen(victim, "r");
	CHECK(fp && fgets(buf, sizeof(buf), fp) && !strcmp(buf, "keep"));
	if (fp)
		fclose(fp);
	/* others may write here and it is not sticky: refused, nothing made */
	snprintf(open_dir, sizeof(open_dir), "%s/open", dir);
	CHECK(!mkdir(open_dir, 0700) && !chmod(open_dir, 0777));
	snprintf(path, sizeof(path), "%s/out.json", open_dir);
	CHECK(write_out(path, "x") == -1 && access(path, F_OK) == -1);
	/* the same folder made sticky, as /tmp is: allowed */
	CHECK(!chmod(open_dir, 01777));
	CHECK(!write_out(path, "x") && !access(path, F_OK));
	unlink(path);
	rmdir(open_dir);
	unlink(victim);
	snprintf(path, sizeof(path), "%s/out.json", dir);
	unlink(path);
	CHECK(!rmdir(dir));
}

/*
 * A character device (a twin of /dev/null made here, so a regression
 * cannot replace the machine's own) stays the device; a FIFO gets the
 * text; a folder is refused.
 */
static void check_special_outfiles(void)
{
	char dir[] = "/tmp/cw-test-util.XXXXXX", path[400], buf[16] = "";
	struct stat st;
	glob_t g;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/null", dir);
	if (!mknod(path, S_IFCHR | 0666, makedev(1, 3))) { /* root only */
		CHECK(!write_out(path, "gone"));
		CHECK(!lstat(path, &st) && S_ISCHR(st.st_mode));
		snprintf(path, sizeof(path), "%s/null.tmp.*", dir);
		CHECK(glob(path, 0, NULL, &g) == GLOB_NOMATCH);
		snprintf(path, sizeof(path), "%s/null", dir);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(!mkfifo(path, 0600));
	fd = open(path, O_RDONLY | O_NONBLOCK); /* a reader, so open works */
	CHECK(fd >= 0);
	CHECK(!write_out(path, "hello"));
	CHECK(read(fd, buf, sizeof(buf) - 1) == 5 && !strcmp(buf, "hello"));
	CHECK(!lstat(path, &st) && S_ISFIFO(st.st_mode));
	close(fd);
	unlink(path);
	CHECK(write_out(dir, "x") == -1);
	CHECK(!rmdir(dir));
}

static void check_sizes(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{"0", 0},
		{"4096", 4096},
		{"1k", 1000},
		{"1K", 1000},
		{"1Ki", 1024},
		{"1M", 1000000},
		{"1MB", 1000000},
		{"1Mi", 1048576},
		{"1MiB", 1048576},
		{"64Gi", 64ULL << 30},
		{"1G", 1000000000},
		{"2T", 2000000000000ULL},
		{"1Ti", 1ULL << 40},
	};
	static const char *const bad[] = {
		"",	"M",	"1m",	 "1 M",	  "1Mx",
		"1iM",	"1i",	"-1",	 "0x10",  "1.5G",
		"1MiBB", "99999999999999999999", "16777216Ti",
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(good); i++) {
		v = 7;
		CHECK(!cw_parse_size(good[i].s, 0, UINT64_MAX, &v) &&
		      v == good[i].v);
	}
	for (i = 0; i < CW_ARRAY_SIZE(bad); i++)
		CHECK(cw_parse_size(bad[i], 0, UINT64_MAX, &v) == -1);
	CHECK(cw_parse_size("1M", 1000001, UINT64_MAX, &v) == -1);
	CHECK(cw_parse_size("1Mi", 1, 1000000, &v) == -1);
}

int main(void)
{
	int *v = NULL;
	size_t cap = 0, i;
	char *big = NULL;
	size_t bigcap = 0;

	CHECK(!CW_GROW(v, cap, 1, 16) && cap == 16);
	CHECK(!CW_GROW(v, cap, 16, 16) && cap == 16);
	CHECK(!CW_GROW(v, cap, 17, 16) && cap == 32);
	CHECK(!CW_GROW(v, cap, 1000, 16) && cap == 1024);
	for (i = 0; i < 1000; i++)
		v[i] = (int)i;
	CHECK(v[999] == 999);
	/* n * size would wrap: refused, nothing changed */
	errno = 0;
	CHECK(CW_GROW(v, cap, SIZE_MAX / 2, 16) == -1 && errno == ENOMEM);
	CHECK(cap == 1024 && v[999] == 999);
	CHECK(CW_GROW(big, bigcap, SIZE_MAX, 1) == -1 && bigcap == 0 && !big);
	free(v);
	check_outfiles();
	check_special_outfiles();
	check_sizes();
	return failures ? 1 : 0;
}
