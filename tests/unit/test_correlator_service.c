// SPDX-License-Identifier: MIT
/*
 * The correlator service without Kafka: paths.jsonl and traces.jsonl are
 * idempotent per slot.  A member restarted before its commit infers a
 * window again; the slots each file has a line for are known at open and
 * not appended twice (nor a window's traces posted again), and a line
 * torn by a crash is cut off.  A POST to an endpoint that refuses is
 * counted and the window done all the same.  With the pending set full, a
 * record of a pending slot joins its window, one the set refuses all the
 * same closes none, and one of a new slot first completes the oldest,
 * storing no offset of its own before it is in a window.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "common/wire.h"
#include "correlator/correlator.h"
#include "tests/unit/check.h"

#define SLOT1 1767225600000000000ULL
#define SLOT2 1767225603000000000ULL
#define MS    1000000ULL

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

static size_t count_in(const char *path, const char *what)
{
	char line[8192];
	size_t n = 0;
	FILE *fp = fopen(path, "r");

	while (fp && fgets(line, sizeof(line), fp))
		n += strstr(line, what) != NULL;
	if (fp)
		fclose(fp);
	return n;
}

/* A loopback URL nothing listens on: a port bound, then let go. */
static void closed_url(char *url, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sl) &&
	      !getsockname(fd, (struct sockaddr *)&sa, &sl));
	close(fd);
	snprintf(url, len, "http://127.0.0.1:%u/v1/traces",
		 (unsigned)ntohs(sa.sin_port));
}

/*
 * One MsgWindow record of slot into c's windows, then every window done:
 * host "front" serves a request from 10.0.0.9 (one span).
 */
static void window_of_messages(struct cw_correlator *c, uint64_t slot,
			       int64_t offset)
{
	struct cw_wire_msgs r = {.slot_ns = slot,
				 .start_ns = slot,
				 .end_ns = slot + 3000 * MS,
				 .n = 2,
				 .nsocks = 1,
				 .last = true};
	uint8_t raw[16] = {10, 0, 0, 1};

	snprintf(r.host, sizeof(r.host), "front");
	r.socks = calloc(1, sizeof(*r.socks));
	r.msgs = calloc(2, sizeof(*r.msgs));
	CHECK(r.socks && r.msgs);
	if (!r.socks || !r.msgs)
		return;
	r.socks[0].cookie = 1;
	cw_addr_from_raw(&r.socks[0].laddr, AF_INET, raw);
	raw[3] = 9;
	cw_addr_from_raw(&r.socks[0].raddr, AF_INET, raw);
	r.socks[0].lport = 80, r.socks[0].rport = 40000;
	r.socks[0].role = CW_REC_ROLE_SERVER, r.socks[0].role_seen = true;
	r.msgs[0] = (struct cw_wire_mmsg){
		.start_ns = slot + MS, .end_ns = slot + MS, .bytes = 100};
	r.msgs[1] = (struct cw_wire_mmsg){.start_ns = slot + 2 * MS,
					  .end_ns = slot + 2 * MS,
					  .bytes = 100,
					  .out = true};
	CHECK(!cw_timing_seen(&c->timing, 0, offset));
	CHECK(!cw_timing_add_msgs(&c->timing, &r, 0, offset, cw_now_mono_ns(),
				  slot));
	CHECK(!cw_correlator_windows_step(c, cw_now_mono_ns(), true));
}

/* traces.jsonl: a line per window naming its slot, never two. */
static void test_traces(void)
{
	char dir[] = "/tmp/cw-test-service.XXXXXX", path[256], url[64];
	char attr[128];
	struct cw_correlator_opts o = {.paths = true, .grace_ns = 1};
	struct cw_correlator c;
	long one;
	FILE *fp;

	CHECK(mkdtemp(dir));
	o.out = dir;
	closed_url(url, sizeof(url));
	o.otlp = url;
	cw_paths_opts_default(&o.po);
	snprintf(path, sizeof(path), "%s/traces.jsonl", dir);
	snprintf(attr, sizeof(attr),
		 "{\"key\":\"causeway.window.slot_ns\",\"value\":{"
		 "\"intValue\":\"%llu\"}}",
		 SLOT1);
	/* The POST is refused: tried, counted, and the line written. */
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	window_of_messages(&c, SLOT1, 0);
	CHECK(c.trace_windows == 1 && c.trace_spans == 1);
	CHECK(c.traces_posted == 0 && c.traces_post_failed == 1);
	CHECK(c.traced.n == 1 && c.timing.nwins == 0);
	CHECK(!cw_correlator_close(&c));
	CHECK(count_in(path, "\n") == 1 && count_in(path, attr) == 1);
	one = file_size(path);
	/* A torn line after it: cut off; the slot is known, so the same
	 * window again is neither written nor posted. */
	fp = fopen(path, "a");
	CHECK(fp && fputs("{\"resourceSpans\":[{\"reso", fp) >= 0 &&
	      !fclose(fp));
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(file_size(path) == one && c.traced.n == 1);
	window_of_messages(&c, SLOT1, 1);
	CHECK(c.trace_windows == 0 && c.traces_post_failed == 0);
	CHECK(c.timing.nwins == 0);
	CHECK(!cw_correlator_close(&c));
	CHECK(file_size(path) == one);
	/* --otlp alone: nothing on disk, the POST still tried. */
	o.out = NULL;
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	window_of_messages(&c, SLOT2, 2);
	CHECK(!c.traces && c.trace_windows == 1 && c.traces_post_failed == 1);
	CHECK(!cw_correlator_close(&c));
	CHECK(file_size(path) == one);
	unlink(path);
	snprintf(path, sizeof(path), "%s/paths.jsonl", dir);
	unlink(path);
	rmdir(dir);
}

/* An empty MsgWindow record of slot from host, applied as read from
 * partition part at offset off of the timing topic. */
static void apply_msgs(struct cw_correlator *c, uint64_t slot,
		       const char *host, int32_t part, int64_t off)
{
	static struct cw_wire_msg m; /* large: off the stack */
	struct cw_kafka_msg km;
	uint8_t *buf = NULL;
	size_t len = 0;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_MSGS;
	m.msgs.slot_ns = m.msgs.start_ns = slot;
	m.msgs.end_ns = slot + 3 * NSEC_PER_SEC;
	m.msgs.last = true;
	snprintf(m.msgs.host, sizeof(m.msgs.host), "%s", host);
	CHECK(!cw_wire_encode(&m, &buf, &len));
	memset(&km, 0, sizeof(km));
	km.topic = "causeway.timing";
	km.partition = part, km.offset = off;
	km.value = buf, km.len = len;
	cw_correlator_apply(c, &km);
	free(buf);
}

/* The next offset stored for partition, or -1. */
static int64_t stored_of(const struct cw_correlator *c, int32_t partition)
{
	size_t i;

	for (i = 0; i < c->timing.nparts; i++)
		if (c->timing.parts[i].partition == partition)
			return c->timing.parts[i].stored;
	return -1;
}

/*
 * The pending set full (9 windows: the oldest held by partition 0, which
 * is behind, the others from partition 1).  A record of the oldest slot
 * joins it: nothing inferred, nothing late.  A record of a new slot from
 * partition 2 makes the bound infer the oldest first; the offsets stored
 * then stop short of that record, which is pending in its own window.
 */
static void test_full_set(void)
{
	const uint64_t step = 3 * NSEC_PER_SEC;
	char dir[] = "/tmp/cw-test-service.XXXXXX", path[256];
	struct cw_correlator_opts o = {.paths = true,
				       .grace_ns = 3600 * NSEC_PER_SEC};
	struct cw_correlator c;
	uint64_t base;
	int i;

	CHECK(mkdtemp(dir));
	o.out = dir;
	cw_paths_opts_default(&o.po);
	base = cw_now_real_ns() / step * step - 60 * NSEC_PER_SEC;
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(!cw_timing_behind(&c.timing, 0, true));
	apply_msgs(&c, base, "a", 0, 0);
	for (i = 1; i <= CW_TIMING_MAX_PENDING; i++)
		apply_msgs(&c, base + (uint64_t)i * step, "b", 1, i - 1);
	CHECK(c.timing.nwins == CW_TIMING_MAX_PENDING + 1);
	/* Records the set would refuse all the same (a slot an hour ahead
	 * of the clock, one older than every pending window) infer nothing;
	 * the old one is counted late, as if room had been made for it. */
	apply_msgs(&c, base + 3600 * NSEC_PER_SEC, "skewed", 3, 0);
	apply_msgs(&c, base - step, "old", 3, 1);
	CHECK(c.timing.nwins == CW_TIMING_MAX_PENDING + 1);
	CHECK(c.timing.wins[0].slot == base && c.timing.refused == 1);
	CHECK(c.timing.late == 1);
	apply_msgs(&c, base, "a2", 0, 1);
	CHECK(c.timing.nwins == CW_TIMING_MAX_PENDING + 1);
	CHECK(c.timing.late == 1 && c.timing.wins[0].slot == base);
	CHECK(c.timing.wins[0].noffs == 2);
	apply_msgs(&c, base + 9 * step, "c", 2, 5);
	CHECK(c.timing.nwins == CW_TIMING_MAX_PENDING + 1);
	CHECK(c.timing.wins[0].slot == base + step && c.timing.late == 1);
	CHECK(c.timing.wins[CW_TIMING_MAX_PENDING].slot == base + 9 * step);
	CHECK(stored_of(&c, 0) == 2);
	CHECK(stored_of(&c, 2) <= 5);
	CHECK(!cw_correlator_close(&c));
	snprintf(path, sizeof(path), "%s/paths.jsonl", dir);
	unlink(path);
	rmdir(dir);
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
	CHECK(c.written.n == 0 && c.jsonl);
	CHECK(!cw_correlator_close(&c));
	/* Two whole lines and a torn third. */
	snprintf(torn, sizeof(torn), "%s{\"slot_ns\":1767225720000000000,\"wi",
		 lines);
	write_file(path, torn);
	CHECK(!cw_correlator_open(&c, &o, NULL, "causeway.timing"));
	CHECK(c.written.n == 2);
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
	CHECK(c.written.n == 0 && !c.jsonl);
	CHECK(!cw_correlator_close(&c));
	CHECK(file_size(path) == (long)strlen(torn));
	unlink(path);
	snprintf(path, sizeof(path), "%s/traces.jsonl", dir);
	unlink(path);
	rmdir(dir);
	test_traces();
	test_full_set();
	if (!failures)
		printf("test_correlator_service: all checks passed\n");
	return failures ? 1 : 0;
}
