// SPDX-License-Identifier: MIT
/* CSV lines and headers for the readers of paths/ and traces/. */
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/log.h"
#include "paths/csv.h"

#define BOM "\xef\xbb\xbf"

void cw_skip_bom(FILE *fp)
{
	int c = fgetc(fp);
	unsigned char m[2];
	size_t n;

	if (c != 0xef) {
		if (c != EOF)
			ungetc(c, fp);
		return;
	}
	n = fread(m, 1, 2, fp);
	if (n == 2 && m[0] == 0xbb && m[1] == 0xbf)
		return;
	/* 0xef and no mark (no text input begins so): back to the start of
	 * a file; a pipe gets the bytes pushed back as far as stdio can. */
	if (fseek(fp, -(long)n - 1, SEEK_CUR)) {
		while (n > 0)
			ungetc(m[--n], fp);
		ungetc(c, fp);
	}
}

void cw_csv_open(struct cw_csv *c, FILE *fp, const char *what)
{
	memset(c, 0, sizeof(*c));
	c->fp = fp;
	c->what = what;
}

int cw_csv_next(struct cw_csv *c)
{
	ssize_t len = getline(&c->buf, &c->cap, c->fp);

	if (len < 0)
		return 0;
	c->line++;
	if ((size_t)len != strlen(c->buf))
		return cw_error("'%s' line %zu: NUL byte in text", c->what,
				c->line);
	c->buf[strcspn(c->buf, "\r\n")] = '\0';
	if (c->line == 1 && !memcmp(c->buf, BOM, 3))
		memmove(c->buf, c->buf + 3, strlen(c->buf + 3) + 1);
	return 1;
}

int cw_csv_open_header(struct cw_csv *c, FILE *fp, const char *what)
{
	int r;

	cw_csv_open(c, fp, what);
	r = cw_csv_next(c);
	if (r > 0)
		return 0;
	cw_csv_close(c);
	return r < 0 ? -1 : cw_error("%s: empty input", what);
}

void cw_csv_close(struct cw_csv *c)
{
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

int cw_csv_split(char *line, char **f, int max, bool trim_fields)
{
	int n = 0;

	for (;;) {
		char *c = strchr(line, ',');

		if (n == max)
			return max + 1;
		if (c)
			*c = '\0';
		f[n++] = trim_fields ? trim(line) : line;
		if (!c)
			return n;
		line = c + 1;
	}
}

int cw_csv_columns(char *const *hdr, int nf, const char *const *names, int n,
		   int *at, const char *what)
{
	int i, j;

	for (i = 0; i < nf; i++)
		for (j = 0; j < i; j++)
			if (*hdr[i] && !strcmp(hdr[i], hdr[j]))
				return cw_error("'%s' line 1: the header names "
						"column '%s' twice",
						what, hdr[i]);
	for (j = 0; j < n; j++)
		for (at[j] = -1, i = 0; i < nf; i++)
			if (!strcmp(hdr[i], names[j]))
				at[j] = i;
	return 0;
}
