// SPDX-License-Identifier: MIT
/*
 * The small CSV tables 'causeway place' reads: hosts with capacities and
 * units with resources.  Outside data: every field is checked, errors go
 * to the caller's buffer as "line N: why".
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "place/place.h"

#define MAX_FIELD 512

static const char *const col_names[] = {
	[CW_PCOL_NAME] = "unit",
	[CW_PCOL_CPU] = "cpu",
	[CW_PCOL_MEMORY] = "memory",
	[CW_PCOL_HOST] = "host",
	[CW_PCOL_POD] = "pod",
	[CW_PCOL_WORKLOAD] = "workload",
	[CW_PCOL_NAMESPACE] = "namespace",
	[CW_PCOL_KIND] = "kind",
};

static int fail(char *err, size_t len, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t len, size_t line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, len, "line %zu: ", line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int cw_place_parse_cpu(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -1;
	if (*end == 'm')
		v /= 1000, end++;
	if (*end || v > 1e6)
		return -1;
	*out = v;
	return 0;
}

int cw_place_parse_memory(const char *s, double *out)
{
	static const char *const sfx[] = {"",	"k",  "M",  "G", "T",
					  "Ki", "Mi", "Gi", "Ti"};
	static const double mul[] = {1,		1e3,	      1e6,
				     1e9,	1e12,	      1024.0,
				     1048576.0, 1073741824.0, 1099511627776.0};
	char *end;
	double v;
	size_t i;

	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -1;
	for (i = 0; i < CW_ARRAY_SIZE(sfx); i++)
		if (!strcmp(end, sfx[i])) {
			v *= mul[i];
			if (v > 1e18)
				return -1;
			*out = v;
			return 0;
		}
	return -1;
}

/* Split one line at commas into fields (trimmed, copied); count or -1. */
static int split(const char *line, size_t len, char f[][MAX_FIELD], int max)
{
	int n = 0;
	size_t i = 0, j, a, b;

	for (;;) {
		for (j = i; j < len && line[j] != ','; j++)
			;
		for (a = i; a < j && isspace((unsigned char)line[a]); a++)
			;
		for (b = j; b > a && isspace((unsigned char)line[b - 1]); b--)
			;
		if (n == max || b - a >= MAX_FIELD)
			return -1;
		memcpy(f[n], line + a, b - a);
		f[n++][b - a] = '\0';
		if (j >= len)
			return n;
		i = j + 1;
	}
}

/* Map header columns to CW_PCOL_*; 0 or -1. */
static int header(char f[][MAX_FIELD], int n, bool units, int *col, char *err,
		  size_t errlen, size_t line)
{
	int i, c;

	for (i = 0; i < n; i++) {
		col[i] = -1;
		for (c = 0; c < (int)CW_ARRAY_SIZE(col_names); c++)
			if (!strcmp(f[i], col_names[c]) ||
			    (c == CW_PCOL_NAME && !units &&
			     !strcmp(f[i], "host"))) {
				col[i] = c;
				break;
			}
		if (!units && col[i] > CW_PCOL_MEMORY)
			col[i] = -1;
		if (col[i] < 0)
			return fail(err, errlen, line, "unknown column '%.64s'",
				    f[i]);
		for (c = 0; c < i; c++)
			if (col[c] == col[i])
				return fail(err, errlen, line,
					    "column '%.64s' twice", f[i]);
	}
	for (c = 0; c <= CW_PCOL_MEMORY; c++) {
		for (i = 0; i < n && col[i] != c; i++)
			;
		if (i == n)
			return fail(err, errlen, line,
				    "no '%s' column (want %s,cpu,memory)",
				    c	    ? col_names[c]
				    : units ? "unit"
					    : "host",
				    units ? "unit" : "host");
	}
	return 0;
}

static int add_row(struct cw_place_table *t, char f[][MAX_FIELD], int n,
		   const int *col, char *err, size_t errlen, size_t line)
{
	struct cw_place_row *r;
	int i;

	if (CW_GROW(t->rows, t->cap, t->nrows + 1, 16))
		return fail(err, errlen, line, "out of memory");
	r = &t->rows[t->nrows];
	memset(r, 0, sizeof(*r));
	t->nrows++; /* released with the table even when half filled */
	for (i = 0; i < n; i++) {
		if (!f[i][0])
			continue;
		r->f[col[i]] = strdup(f[i]);
		if (!r->f[col[i]])
			return fail(err, errlen, line, "out of memory");
	}
	if (!r->f[CW_PCOL_NAME])
		return fail(err, errlen, line, "empty name");
	if (!r->f[CW_PCOL_CPU] || !r->f[CW_PCOL_MEMORY])
		return fail(err, errlen, line, "'%.64s': cpu and memory needed",
			    r->f[CW_PCOL_NAME]);
	return 0;
}

static int parse_numbers(struct cw_place_table *t, const size_t *lines,
			 char *err, size_t errlen)
{
	size_t i;

	t->cpu = calloc(t->nrows + 1, sizeof(double));
	t->memory = calloc(t->nrows + 1, sizeof(double));
	if (!t->cpu || !t->memory)
		return fail(err, errlen, 0, "out of memory");
	for (i = 0; i < t->nrows; i++) {
		const struct cw_place_row *r = &t->rows[i];

		if (cw_place_parse_cpu(r->f[CW_PCOL_CPU], &t->cpu[i]))
			return fail(err, errlen, lines[i],
				    "'%.64s': bad cpu '%.32s' (want cores "
				    "such as 1.5 or millicores such as 500m)",
				    r->f[CW_PCOL_NAME], r->f[CW_PCOL_CPU]);
		if (cw_place_parse_memory(r->f[CW_PCOL_MEMORY], &t->memory[i]))
			return fail(
				err, errlen, lines[i],
				"'%.64s': bad memory '%.32s' (want bytes, "
				"optionally with k, M, G, T, Ki, Mi, Gi, Ti)",
				r->f[CW_PCOL_NAME], r->f[CW_PCOL_MEMORY]);
	}
	return 0;
}

static const struct cw_place_table *dup_t;

static int name_cmp(const void *x, const void *y)
{
	return strcmp(dup_t->rows[*(const size_t *)x].f[CW_PCOL_NAME],
		      dup_t->rows[*(const size_t *)y].f[CW_PCOL_NAME]);
}

/* Every name once. */
static int check_dups(const struct cw_place_table *t, const size_t *lines,
		      char *err, size_t errlen)
{
	size_t *ix = malloc((t->nrows + 1) * sizeof(*ix)), i;
	int ret = 0;

	if (!ix)
		return fail(err, errlen, 0, "out of memory");
	for (i = 0; i < t->nrows; i++)
		ix[i] = i;
	dup_t = t;
	qsort(ix, t->nrows, sizeof(*ix), name_cmp);
	for (i = 1; i < t->nrows && !ret; i++)
		if (!name_cmp(&ix[i - 1], &ix[i]))
			ret = fail(err, errlen,
				   lines[ix[i] > ix[i - 1] ? ix[i] : ix[i - 1]],
				   "'%.64s' named twice",
				   t->rows[ix[i]].f[CW_PCOL_NAME]);
	free(ix);
	return ret;
}

int cw_place_table_parse(struct cw_place_table *t, const char *text, size_t len,
			 bool units, char *err, size_t errlen)
{
	char(*f)[MAX_FIELD] = malloc(8 * MAX_FIELD);
	size_t pos = 0, line = 0, *lines = NULL, cap = 0;
	int col[8], ncol = 0, n, ret = -1;

	memset(t, 0, sizeof(*t));
	if (!f)
		return fail(err, errlen, 0, "out of memory");
	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;

		pos += l + 1;
		line++;
		if (l && s[l - 1] == '\r')
			l--;
		if (memchr(s, '\0', l)) {
			fail(err, errlen, line, "a NUL byte");
			goto out;
		}
		while (l && isspace((unsigned char)*s))
			s++, l--;
		if (!l || *s == '#')
			continue;
		n = split(s, l, f, 8);
		if (n < 0 || (ncol && n != ncol)) {
			fail(err, errlen, line,
			     "want %d comma-separated fields", ncol ? ncol : 3);
			goto out;
		}
		if (!ncol) {
			if (header(f, n, units, col, err, errlen, line))
				goto out;
			ncol = n;
			continue;
		}
		if (CW_GROW(lines, cap, t->nrows + 1, 16)) {
			fail(err, errlen, line, "out of memory");
			goto out;
		}
		lines[t->nrows] = line;
		if (add_row(t, f, n, col, err, errlen, line))
			goto out;
	}
	if (!t->nrows) {
		fail(err, errlen, line, "no %s listed",
		     units ? "units" : "hosts");
		goto out;
	}
	if (!parse_numbers(t, lines, err, errlen) &&
	    !check_dups(t, lines, err, errlen))
		ret = 0;
out:
	free(f);
	free(lines);
	if (ret)
		cw_place_table_release(t);
	return ret;
}

void cw_place_table_release(struct cw_place_table *t)
{
	size_t i;
	int j;

	for (i = 0; i < t->nrows; i++)
		for (j = 0; j < 8; j++)
			free(t->rows[i].f[j]);
	free(t->rows);
	free(t->cpu);
	free(t->memory);
	memset(t, 0, sizeof(*t));
}
