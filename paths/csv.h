/* SPDX-License-Identifier: MIT */
/*
 * The CSV reading every CSV input of paths/ and traces/ shares (message
 * observations, span traces, truth links): lines with their numbers, a
 * UTF-8 byte order mark at the start of the input dropped, NUL bytes
 * refused, fields split in place, and the header's columns found by name
 * with a column named twice refused.
 *
 *	struct cw_csv c;
 *	cw_csv_open(&c, fp, "trace.csv");
 *	while ((rc = cw_csv_next(&c)) > 0)
 *		n = cw_csv_split(c.buf, f, 32, false);	// c.line: its number
 *	cw_csv_close(&c);
 *
 * Functions returning int give -1 after one "causeway: error: ..." line
 * naming the input and the line.
 */
#ifndef CW_PATHS_CSV_H
#define CW_PATHS_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cw_csv {
	FILE *fp;
	const char *what; /* the input, in errors */
	size_t line;	  /* of the line in buf, from 1 */
	char *buf;	  /* that line, its end of line cut */
	size_t cap;
};

void cw_csv_open(struct cw_csv *c, FILE *fp, const char *what);
/* The next line into c->buf: 1, 0 at the end of the input, -1 (said) on a
 * NUL byte or out of memory. */
int cw_csv_next(struct cw_csv *c);
void cw_csv_close(struct cw_csv *c);
/* cw_csv_open() and the header line into c->buf: 0, or -1 (said, closed)
 * on an empty input. */
int cw_csv_open_header(struct cw_csv *c, FILE *fp, const char *what);
/* Split line in place at commas into f[]: the field count, or max + 1 when
 * there are more.  trim: spaces and tabs around each field dropped. */
int cw_csv_split(char *line, char **f, int max, bool trim);
/*
 * The column of each of names[0..n) in the header hdr[0..nf) into at[]
 * (-1: absent).  -1 (said) when the header names a column twice.
 */
int cw_csv_columns(char *const *hdr, int nf, const char *const *names, int n,
		   int *at, const char *what);
/* Drop a UTF-8 byte order mark at the start of fp (before any read),
 * for a reader that looks at the first bytes itself. */
void cw_skip_bom(FILE *fp);

#endif
