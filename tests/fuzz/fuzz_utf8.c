// fuzz-sources:
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the name cleaner: any bytes, any output size.  The
 * output is NUL-terminated inside its buffer, valid UTF-8 by a decoder
 * written here apart from the one under test (Python's strict rules), free
 * of control characters, and cleaning it again changes nothing; a cut of
 * it at any length is again clean.  (common/utf8.c is linked into every
 * harness by the Makefile, so the sources line is empty.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict UTF-8 by the table of RFC 3629, section 4; no C0/C1 controls. */
static int valid(const unsigned char *s, size_t n)
{
	size_t i = 0, k, len;
	unsigned long cp;

	while (i < n) {
		unsigned char c = s[i];

		len = c < 0x80	 ? 1
		      : c < 0xc2 ? 0
		      : c < 0xe0 ? 2
		      : c < 0xf0 ? 3
		      : c < 0xf5 ? 4
				 : 0;
		if (!len || i + len > n)
			return 0;
		cp = len == 1 ? c : c & (0x7f >> len);
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			return 0;
		i += len;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap = size ? data[0] : 0, n, again, cut;
	char *out, *twice;

	if (size)
		data++, size--;
	out = malloc(cap + 1);
	twice = malloc(cap + 1);
	if (!out || !twice)
		abort();
	memset(out, 'x', cap + 1);
	n = cw_utf8_clean(out, cap, (const char *)data, size);
	if (cap && (n >= cap || out[n] || strlen(out) != n))
		abort();
	if (cap &&
	    (!valid((unsigned char *)out, n) || !cw_utf8_is_clean(out, n)))
		abort();
	if (!cap && (n || out[0] != 'x'))
		abort();
	if (cap) {
		again = cw_utf8_clean(twice, cap, out, n);
		if (again != n || memcmp(out, twice, n))
			abort();
		cut = cw_utf8_cut(out, size % (cap + 1));
		if (cut > n || !valid((unsigned char *)out, cut))
			abort();
	}
	free(out);
	free(twice);
	return 0;
}
