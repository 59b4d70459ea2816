// SPDX-License-Identifier: MIT
/*
 * The correlator service without Kafka: paths.jsonl is idempotent per
 * slot.  A member restarted before its commit infers a window again; the
 * slots paths.jsonl has a line for are known at open and not appended
 * twice, and a line torn by a crash is cut off.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "correlator/correlator.h"
#include "tests/unit/check.h"

static const char lines[] =
	"{\"slot_ns\":1767225600000000000,\"window_start_ns\":1}\n"
	"{\"slot_ns\":1767225660000000000,\"window_start_ns\":2}\n";

static void write_file(const char *path, const char *s)
{
	FILE *fp = fopen(path, "w");

	CHECK(fp && fputs(s, fp) >= 0 && !fclose(fp));
}

static long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? -1 : (long)sb.st_size;
}

int main(void)
{
	char dir[] = "/tmp/cw-test-service.XXXXXX", path[256], torn[512];
	struct cw_correlator_opts o = {.paths = true, .grace_ns = 1};
	struct cw_correlator c;

	CHECK(mkdtemp(dir));
	o.out = dir;
	cw_paths_opts_default(&o.po);
	snprintf(path, sizeof(path), "%s/paths.jsonl", dir);
	/* No file yet: nothing written. */
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(c.nwritten == 0 && c.jsonl);
	CHECK(!cw_correlator_close(&c));
	/* Two whole lines and a torn third. */
	snprintf(torn, sizeof(torn), "%s{\"slot_ns\":1767225720000000000,\"wi",
		 lines);
	write_file(path, torn);
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(c.nwritten == 2);
	CHECK(cw_correlator_written(&c, 1767225600000000000ULL));
	CHECK(cw_correlator_written(&c, 1767225660000000000ULL));
	CHECK(!cw_correlator_written(&c, 1767225720000000000ULL));
	CHECK(!cw_correlator_written(&c, 1));
	CHECK(!cw_correlator_close(&c));
	/* The torn line is gone; the whole ones stay. */
	CHECK(file_size(path) == (long)strlen(lines));
	/* Without paths, the file is not touched. */
	o.paths = false;
	write_file(path, torn);
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(c.nwritten == 0 && !c.jsonl);
	CHECK(!cw_correlator_close(&c));
	CHECK(file_size(path) == (long)strlen(torn));
	unlink(path);
	rmdir(dir);
	if (!failures)
		printf("test_correlator_service: all checks passed\n");
	return failures ? 1 : 0;
}
