/* SPDX-License-Identifier: MIT */
/*
 * Reading connection records back from JSON lines: the objects that
 * cw_conn_record_json() writes (`causeway agent`, conns.jsonl of `causeway
 * run -o`).  Strict: every line is one object whose known fields have the
 * right type and range; a bad line is an error naming the file and line, or,
 * when asked, is counted and skipped.  Blank lines are ignored and unknown
 * fields are allowed, so newer writers stay readable; so is a UTF-8 byte
 * order mark at the start of the file.  A folder is refused by name.
 *
 * A file that starts with the wire magic ("CWWIRE1\n", common/wire.h) is
 * read as a wire stream instead: the connection records among its
 * Envelopes, the other kinds (metadata, timing windows) passed over.  A
 * frame that fails its CRC, a malformed Envelope, an unknown version or
 * kind, and a torn last frame are bad records ("'<file>' offset <n>:
 * <why>"), as bad lines are.
 *
 * Required: host, cookie, proto, laddr, lport, raddr, rport, bytes_out,
 * bytes_in.  Everything else defaults to zero / false / no owner.
 *
 * Lines and Envelopes of other kinds (a JSON "kind" other than "conn"):
 * host and process metadata ("kind": "host" / "process", as `causeway
 * dump` and the agent's JSON output write them) go to the reader's
 * on_meta callback when it has one; timing windows, sample runs and
 * metadata nobody asked for are passed over.
 */
#ifndef CW_RECORD_READ_H
#define CW_RECORD_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/record.h"

struct json_tokener;
struct cw_wire_msg;
struct cw_wire_reader;

/* A host or process metadata record or a DnsName (m->kind CW_WIRE_HOST,
 * CW_WIRE_PROC or CW_WIRE_DNS), valid during the call; non-zero stops
 * the read. */
typedef int (*cw_meta_fn)(const struct cw_wire_msg *m, void *arg);

/*
 * Parse one JSON object (not NUL-terminated; len bytes) into r.  0, or -1
 * with the reason in err ("field 'lport': want an integer 0..65535").
 */
int cw_record_parse(const char *text, size_t len, struct cw_conn_record *r,
		    char *err, size_t errlen);

struct cw_record_reader {
	FILE *fp;
	char *name;	  /* for messages: the path, or "-" for stdin */
	bool skip_bad;	  /* count and skip bad lines instead of failing */
	uint64_t line;	  /* number of the line (wire: frame) last read */
	uint64_t records; /* records returned */
	uint64_t bad;	  /* lines skipped (skip_bad) */
	char *buf;
	size_t cap;
	struct json_tokener *tok;
	/* a wire stream file: its reader and the decoded message */
	struct cw_wire_reader *wire;
	struct cw_wire_msg *msg;
	struct cw_conn_record *rec; /* JSON: the record last parsed */
	cw_meta_fn on_meta;	    /* NULL: metadata is passed over */
	void *meta_arg;
};

/* Open path ("-" is stdin); 0 or -1 with a message. */
int cw_record_reader_open(struct cw_record_reader *rd, const char *path,
			  bool skip_bad);
/*
 * The next record, without a copy (*r is valid until the next call): 1, 0
 * at end of file, -1 on an error (printed as "'<file>' line <n>: <why>",
 * or a read error).
 */
int cw_record_reader_next_ref(struct cw_record_reader *rd,
			      const struct cw_conn_record **r);
void cw_record_reader_close(struct cw_record_reader *rd);

typedef int (*cw_record_fn)(const struct cw_conn_record *r, void *arg);

struct cw_record_read_stats {
	uint64_t files, lines, records, bad;
};

/*
 * Read every record of every file in order and hand each to fn (which
 * stops the read by returning non-zero).  0, or -1 after a message.
 */
int cw_record_read_files(char *const *paths, size_t npaths, bool skip_bad,
			 cw_record_fn fn, void *arg,
			 struct cw_record_read_stats *st);

/*
 * About how many records the file at path holds, from its size (0 when it
 * is not a regular file): to size tables once.
 */
uint64_t cw_record_file_guess(const char *path);

/* The same, a few records at a time (r[0..n-1], valid during the call). */
typedef int (*cw_records_fn)(const struct cw_conn_record *r, size_t n,
			     void *arg);
int cw_record_read_files_many(char *const *paths, size_t npaths, bool skip_bad,
			      cw_records_fn fn, void *arg,
			      struct cw_record_read_stats *st);
/* The same, with host and process metadata handed to meta (may be NULL)
 * in file order between the batches of records. */
int cw_record_read_files_meta(char *const *paths, size_t npaths, bool skip_bad,
			      cw_records_fn fn, cw_meta_fn meta, void *arg,
			      struct cw_record_read_stats *st);

#endif
