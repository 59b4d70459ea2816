// SPDX-License-Identifier: MIT
/*
 * The JSON-lines record reader: every field written by cw_conn_record_json
 * reads back the same, and bad lines give one error naming file and line,
 * or are counted and skipped when asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/record_read.h"

#include "tests/unit/check.h"

static void fill(struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "host-a.example");
	r->netns = 4026531992U;
	r->cookie = 0x1122334455667788ULL;
	r->protocol = 17;
	r->role = CW_REC_ROLE_SERVER;
	r->flags = CW_REC_CLOSED | CW_REC_NAT | CW_REC_PREEXISTING;
	cw_addr_parse(&r->laddr, "10.77.0.1");
	cw_addr_parse(&r->raddr, "fd77::2");
	r->lport = 65535;
	r->rport = 443;
	r->bytes_out = UINT64_MAX;
	r->bytes_in = 1;
	r->calls_out = 3;
	r->calls_in = 4;
	r->msgs_out = 5;
	r->msgs_in = 6;
	r->first_ns = 1700000000123456789ULL;
	r->last_ns = 1700000001123456789ULL;
	r->retrans = 7;
	r->srtt_us = UINT32_MAX;
	r->seq = 99;
	r->proc.tgid = 4242;
	r->proc.start_ns = 123456789;
	r->proc.cgroup_id = UINT64_MAX - 1;
	strcpy(r->proc.comm, "curl-long-name!");
	memset(r->proc.cmdline, 'x', sizeof(r->proc.cmdline) - 1);
	r->proc.cmdline[3] = '"';
	r->proc.cmdline[4] = '\\';
	memset(r->proc.container, 'c', sizeof(r->proc.container) - 1);
	strcpy(r->proc.pod, "pod-uid-1 \xc3\xa9");
}

static char *to_json(const struct cw_conn_record *r)
{
	struct cw_jsonw w;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	cw_jsonw_init(&w, fp);
	cw_conn_record_json(&w, r);
	fclose(fp);
	return buf;
}

static void test_round_trip(void)
{
	struct cw_conn_record r, back;
	char err[160];
	char *json;

	fill(&r);
	json = to_json(&r);
	CHECK(!cw_record_parse(json, strlen(json), &back, err, sizeof(err)));
	CHECK(!memcmp(&r, &back, sizeof(r)));
	free(json);

	/* No owner: the process is written as {"pid": null}. */
	fill(&r);
	r.flags = CW_REC_NO_OWNER;
	r.protocol = 6;
	r.role = CW_REC_ROLE_CLIENT;
	memset(&r.proc, 0, sizeof(r.proc));
	json = to_json(&r);
	CHECK(!cw_record_parse(json, strlen(json), &back, err, sizeof(err)));
	CHECK(!memcmp(&r, &back, sizeof(r)));
	free(json);

	/* Estimated messages: the block is written and read back. */
	fill(&r);
	r.flags |= CW_REC_MSGS_EST;
	r.sampled_msgs_out = 12;
	r.sampled_msgs_in = 11;
	r.sampled_ppm = 101019;
	json = to_json(&r);
	CHECK(strstr(json, "\"msgs_estimated\":true") != NULL);
	CHECK(!cw_record_parse(json, strlen(json), &back, err, sizeof(err)));
	CHECK(!memcmp(&r, &back, sizeof(r)));
	free(json);
}

static const struct bad_case {
	const char *line, *why;
} bad_cases[] = {
	{"{\"host\":", "bad JSON"},
	{"[1,2]", "want a JSON object"},
	{"{} {}", "bad JSON"},
	{"{}", "missing field 'host'"},
	{"{\"host\":\"h\",\"cookie\":-1}", "field 'cookie'"},
	{"{\"host\":\"h\",\"cookie\":1.5}", "field 'cookie'"},
	{"{\"host\":\"h\",\"cookie\":\"1\"}", "field 'cookie'"},
	{"{\"host\":7}", "field 'host': want a string"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"sctp\"}",
	 "unknown value 'sctp'"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3\"}",
	 "not an IPv4 or IPv6 address"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3.4\","
	 "\"lport\":65536}",
	 "field 'lport': want an integer 0..65535"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3.4\","
	 "\"lport\":1,\"raddr\":\"::1\",\"rport\":2,\"bytes_out\":1,"
	 "\"bytes_in\":1,\"closed\":1}",
	 "field 'closed': want true or false"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3.4\","
	 "\"lport\":1,\"raddr\":\"::1\",\"rport\":2,\"bytes_out\":1,"
	 "\"bytes_in\":1,\"process\":{\"pid\":1,\"comm\":"
	 "\"0123456789abcdefg\"}}",
	 "field 'comm': want a string of at most 15 bytes"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3.4\","
	 "\"lport\":1,\"raddr\":\"::1\",\"rport\":2,\"bytes_out\":1,"
	 "\"bytes_in\":1,\"first_ns\":5,\"last_ns\":4}",
	 "last_ns is before first_ns"},
	{"{\"host\":\"h\",\"cookie\":1,\"proto\":\"tcp\",\"laddr\":\"1.2.3.4\","
	 "\"lport\":1,\"raddr\":\"::1\",\"rport\":2,\"bytes_out\":1}",
	 "missing field 'bytes_in'"},
};

static void test_bad_lines(void)
{
	struct cw_conn_record r;
	char err[160];
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		err[0] = '\0';
		CHECK(cw_record_parse(c->line, strlen(c->line), &r, err,
				      sizeof(err)) == -1);
		if (!strstr(err, c->why)) {
			fprintf(stderr, "'%s': got '%s', want '%s'\n", c->line,
				err, c->why);
			failures++;
		}
	}
	/* The smallest good line, unknown fields allowed. */
	const char *ok = "{\"host\":\"h\",\"cookie\":1,\"proto\":\"udp\","
			 "\"laddr\":\"1.2.3.4\",\"lport\":1,\"raddr\":\"::1\","
			 "\"rport\":2,\"bytes_out\":1,\"bytes_in\":2,"
			 "\"future\":[1,{}]}\n";
	CHECK(!cw_record_parse(ok, strlen(ok), &r, err, sizeof(err)));
	CHECK(r.protocol == 17 && r.bytes_in == 2 && r.raddr.family == 6);
	CHECK(r.flags & CW_REC_NO_OWNER);
}

static int count(const struct cw_conn_record *r, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* Run the reader over `text` in a file; stderr captured into msg. */
static int read_text(const char *text, bool skip_bad, int *n,
		     struct cw_record_read_stats *st, char *msg, size_t len)
{
	char path[] = "/tmp/cw-test-read-XXXXXX",
	     errpath[] = "/tmp/cw-test-err-XXXXXX";
	int fd = mkstemp(path), efd = mkstemp(errpath), saved, ret;
	char *paths[] = {path};
	ssize_t got;

	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		failures++;
	close(fd);
	fflush(stderr);
	saved = dup(2);
	dup2(efd, 2);
	*n = 0;
	ret = cw_record_read_files(paths, 1, skip_bad, count, n, st);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	got = pread(efd, msg, len - 1, 0);
	msg[got > 0 ? got : 0] = '\0';
	close(efd);
	unlink(errpath);
	snprintf(msg + strlen(msg), len - strlen(msg), "|%s", path);
	unlink(path);
	return ret;
}

static void test_reader(void)
{
	struct cw_record_read_stats st;
	struct cw_conn_record r;
	char msg[512], want[128], line[1024], *json, *text, *p;
	int n;

	fill(&r);
	json = to_json(&r);
	snprintf(line, sizeof(line), "%s\n", json);
	free(json);
	/* good, blank, bad, good */
	if (asprintf(&text, "%s\n%s{\"host\":\"h\"\n%s", line, line, line) < 0)
		return;
	CHECK(read_text(text, false, &n, &st, msg, sizeof(msg)) == -1);
	CHECK(n == 2);
	p = strrchr(msg, '|');
	if (p) {
		*p = '\0';
		snprintf(want, sizeof(want),
			 "causeway: error: '%s' line 4: bad JSON", p + 1);
		if (strncmp(msg, want, strlen(want)) ||
		    strchr(msg, '\n') != msg + strlen(msg) - 1) {
			fprintf(stderr, "got '%s', want one line '%s...'\n",
				msg, want);
			failures++;
		}
	}
	CHECK(read_text(text, true, &n, &st, msg, sizeof(msg)) == 0);
	CHECK(n == 3 && st.records == 3 && st.bad == 1 && st.lines == 5);
	CHECK(strstr(msg, "line 4") && strstr(msg, "skipped"));
	free(text);

	CHECK(read_text("", false, &n, &st, msg, sizeof(msg)) == 0 && n == 0);
	{
		char *paths[] = {"/nonexistent/x.jsonl"};

		fflush(stderr);
		CHECK(cw_record_read_files(paths, 1, false, count, &n, &st) ==
		      -1);
	}
}

int main(void)
{
	test_round_trip();
	test_bad_lines();
	test_reader();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_graph_record_read: all checks passed\n");
	return 0;
}
