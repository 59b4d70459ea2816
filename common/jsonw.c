// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/utf8.h"

void cw_jsonw_init(struct cw_jsonw *w, FILE *fp)
{
	memset(w, 0, sizeof(*w));
	w->fp = fp;
}

static void put_escaped(FILE *fp, const char *s, size_t len)
{
	size_t i, ch;

	fputc('"', fp);
	for (i = 0; i < len && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"':
			fputs("\\\"", fp);
			break;
		case '\\':
			fputs("\\\\", fp);
			break;
		case '\n':
			fputs("\\n", fp);
			break;
		case '\t':
			fputs("\\t", fp);
			break;
		case '\r':
			fputs("\\r", fp);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(fp, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, fp);
			} else if ((ch = cw_utf8_next(s + i, len - i))) {
				fwrite(s + i, 1, ch, fp);
				i += ch - 1;
			} else {
				/* JSON is UTF-8: a bad byte is shown, not
				 * passed on for a reader to refuse. */
				fputs("\\ufffd", fp);
			}
		}
	}
	fputc('"', fp);
}

/* Comma and key before a member, depending on where we are. */
static void member(struct cw_jsonw *w, const char *key)
{
	if (w->depth > 0 && w->count[w->depth - 1]++)
		fputc(',', w->fp);
	if (key && w->depth > 0) {
		put_escaped(w->fp, key, strlen(key));
		fputc(':', w->fp);
	}
}

static void open_level(struct cw_jsonw *w, const char *key, char c)
{
	member(w, key);
	fputc(c, w->fp);
	if (w->depth < CW_JSONW_DEPTH)
		w->count[w->depth] = 0;
	w->depth++;
}

void cw_jsonw_obj_open(struct cw_jsonw *w, const char *key)
{
	open_level(w, key, '{');
}

void cw_jsonw_obj_close(struct cw_jsonw *w)
{
	fputc('}', w->fp);
	w->depth--;
}

void cw_jsonw_arr_open(struct cw_jsonw *w, const char *key)
{
	open_level(w, key, '[');
}

void cw_jsonw_arr_close(struct cw_jsonw *w)
{
	fputc(']', w->fp);
	w->depth--;
}

void cw_jsonw_str(struct cw_jsonw *w, const char *key, const char *val)
{
	member(w, key);
	if (val)
		put_escaped(w->fp, val, strlen(val));
	else
		fputs("null", w->fp);
}

void cw_jsonw_u64(struct cw_jsonw *w, const char *key, uint64_t val)
{
	member(w, key);
	fprintf(w->fp, "%" PRIu64, val);
}

void cw_jsonw_i64(struct cw_jsonw *w, const char *key, int64_t val)
{
	member(w, key);
	fprintf(w->fp, "%" PRId64, val);
}

void cw_jsonw_double(struct cw_jsonw *w, const char *key, double val)
{
	member(w, key);
	if (isfinite(val))
		fprintf(w->fp, "%.6g", val);
	else
		fputs("null", w->fp);
}

void cw_jsonw_bool(struct cw_jsonw *w, const char *key, int val)
{
	member(w, key);
	fputs(val ? "true" : "false", w->fp);
}

void cw_jsonw_null(struct cw_jsonw *w, const char *key)
{
	member(w, key);
	fputs("null", w->fp);
}

void cw_jsonw_end_line(struct cw_jsonw *w)
{
	fputc('\n', w->fp);
}
