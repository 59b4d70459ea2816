/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer: the one way causeway prints JSON.
 *
 *	struct cw_jsonw w;
 *	cw_jsonw_init(&w, stdout);
 *	cw_jsonw_obj_open(&w);
 *	cw_jsonw_str(&w, "comm", "nginx");
 *	cw_jsonw_u64(&w, "bytes", 42);
 *	cw_jsonw_obj_close(&w);
 *	cw_jsonw_end_line(&w);		// JSON lines: one value per line
 *
 * Keys are ignored inside arrays (pass NULL).  Nesting depth is bounded.
 */
#ifndef CW_JSONW_H
#define CW_JSONW_H

#include <stdint.h>
#include <stdio.h>

#define CW_JSONW_DEPTH 32

struct cw_jsonw {
	FILE *fp;
	int depth;
	int count[CW_JSONW_DEPTH]; /* members written at each level */
};

void cw_jsonw_init(struct cw_jsonw *w, FILE *fp);
void cw_jsonw_obj_open(struct cw_jsonw *w, const char *key);
void cw_jsonw_obj_close(struct cw_jsonw *w);
void cw_jsonw_arr_open(struct cw_jsonw *w, const char *key);
void cw_jsonw_arr_close(struct cw_jsonw *w);
void cw_jsonw_str(struct cw_jsonw *w, const char *key, const char *val);
void cw_jsonw_u64(struct cw_jsonw *w, const char *key, uint64_t val);
void cw_jsonw_i64(struct cw_jsonw *w, const char *key, int64_t val);
void cw_jsonw_double(struct cw_jsonw *w, const char *key, double val);
void cw_jsonw_bool(struct cw_jsonw *w, const char *key, int val);
void cw_jsonw_null(struct cw_jsonw *w, const char *key);
/* Ends the current top-level value with a newline. */
void cw_jsonw_end_line(struct cw_jsonw *w);

#endif
