// SPDX-License-Identifier: MIT
/*
 * Unit tests for the input readers paths/ and traces/ share: a UTF-8 byte
 * order mark at the start is taken, a header naming a column twice is
 * refused, both read span CSV and Jaeger JSON, and node names have no cap
 * (more than 65,536 of them).
 */
#include <stdlib.h>
#include <string.h>

#include "paths/paths.h"
#include "tests/unit/check.h"
#include "traces/traces.h"

#define BOM "\xef\xbb\xbf"

static const char msgtrace_csv[] = "ts_ns,node,peer,dir\n"
				   "1,a,b,out\n2,b,a,in\n3,b,a,out\n4,a,b,in\n";
static const char traces_csv[] = "start_ns,node,peer,conn,dir,role\n"
				 "1,a,b,7,out,connected\n"
				 "2,b,a,7,in,accepted\n"
				 "3,b,a,7,out,accepted\n"
				 "4,a,b,7,in,connected\n";
static const char spans_csv[] =
	"TraceID,SpanID,ParentID,PodName,StartTimeUnixNano,EndTimeUnixNano\n"
	"t1,s1,root,web-0,100,900\n"
	"t1,s2,s1,db-0,200,300\n";
static const char jaeger[] =
	"{\"data\":[{\"traceID\":\"t1\","
	"\"processes\":{\"p1\":{\"serviceName\":\"web\"}},"
	"\"spans\":[{\"spanID\":\"s1\",\"processID\":\"p1\","
	"\"startTime\":1,\"duration\":5}]}]}";

enum reader { MSGTRACE, TRACES, SPANS_PATHS, SPANS_TRACES };

/* Read text with one reader: its return code, and how many names. */
static int read_with(enum reader r, const char *text, size_t *names)
{
	FILE *fp = fmemopen((void *)text, strlen(text), "r");
	struct cw_msgtrace m;
	struct cw_traces t;
	int rc;

	CHECK(fp);
	if (!fp)
		return -1;
	cw_msgtrace_init(&m);
	cw_traces_init(&t);
	if (r == MSGTRACE)
		rc = cw_msgtrace_read_csv(&m, fp, "mem");
	else if (r == SPANS_PATHS)
		rc = cw_spans_read(&m, NULL, fp, "mem");
	else if (r == TRACES)
		rc = cw_traces_read_csv(&t, fp, "mem");
	else
		rc = cw_traces_read_spans(&t, fp, "mem");
	*names = r == MSGTRACE || r == SPANS_PATHS ? m.n_names : t.n_names;
	fclose(fp);
	cw_msgtrace_release(&m);
	cw_traces_release(&t);
	return rc;
}

/* text read plain and after a byte order mark gives the same names. */
static void test_bom(enum reader r, const char *text)
{
	char *with = malloc(strlen(text) + 4);
	size_t plain = 0, marked = 0;

	CHECK(with);
	if (!with)
		return;
	strcpy(with, BOM);
	strcat(with, text);
	CHECK(!read_with(r, text, &plain));
	CHECK(!read_with(r, with, &marked));
	CHECK(plain && plain == marked);
	free(with);
}

/* The header with its first column named again at the end: refused. */
static void test_twice(enum reader r, const char *text)
{
	size_t hdr = strcspn(text, "\n"), first = strcspn(text, ",");
	char *dup = malloc(strlen(text) + first + 2);
	size_t names;

	CHECK(dup);
	if (!dup)
		return;
	memcpy(dup, text, hdr);
	dup[hdr] = ',';
	memcpy(dup + hdr + 1, text, first);
	strcpy(dup + hdr + 1 + first, text + hdr);
	CHECK(read_with(r, dup, &names) == -1);
	free(dup);
}

/* n connections, each between two names of its own: 2n + 0 names. */
static char *many_names(size_t n)
{
	size_t cap = n * 160 + 64, len, i;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "start_ns,node,peer,conn,dir,role\n");
	for (i = 1; i <= n; i++)
		len += (size_t)snprintf(
			s + len, cap - len,
			"%zu,c%zu,s%zu,%zu,out,connected\n"
			"%zu,s%zu,c%zu,%zu,in,accepted\n"
			"%zu,s%zu,c%zu,%zu,out,accepted\n"
			"%zu,c%zu,s%zu,%zu,in,connected\n",
			4 * i, i, i, i, 4 * i + 1, i, i, i, 4 * i + 2, i, i, i,
			4 * i + 3, i, i, i);
	return s;
}

static void test_many_names(void)
{
	char *text = many_names(35000);
	size_t names = 0;

	CHECK(text);
	if (!text)
		return;
	/* 70,000 names: past the old cap of 65,536 ("bad peer"). */
	CHECK(!read_with(TRACES, text, &names));
	CHECK(names == 70000);
	free(text);
}

/* Renamed in place and indexed again: found by the new name only. */
static void test_rename(void)
{
	struct cw_names nm = {0};
	char *z = strdup("z");

	CHECK(cw_names_id(&nm, "a") == 0 && cw_names_id(&nm, "b") == 1);
	CHECK(cw_names_id(&nm, "a") == 0 && z);
	free(nm.names[1]);
	nm.names[1] = z;
	cw_names_reindex(&nm);
	CHECK(cw_names_find(&nm, "z") == 1 && cw_names_find(&nm, "b") == -1);
	CHECK(cw_names_id(&nm, "b") == 2 && nm.n_names == 3);
	cw_names_release(&nm);
}

int main(void)
{
	size_t n;

	test_bom(MSGTRACE, msgtrace_csv);
	test_bom(TRACES, traces_csv);
	test_bom(SPANS_PATHS, spans_csv);
	test_bom(SPANS_PATHS, jaeger);
	test_bom(SPANS_TRACES, spans_csv);
	test_bom(SPANS_TRACES, jaeger); /* one span reader: Jaeger too */
	test_twice(MSGTRACE, msgtrace_csv);
	test_twice(TRACES, traces_csv);
	test_twice(SPANS_PATHS, spans_csv);
	test_twice(SPANS_TRACES, spans_csv);
	/* A mark anywhere but the start is text, not skipped. */
	CHECK(read_with(MSGTRACE, "ts_ns,node,peer,dir\n" BOM "1,a,b,out\n",
			&n) == -1);
	test_many_names();
	test_rename();
	return failures ? 1 : 0;
}
