// SPDX-License-Identifier: MIT
#include <string.h>

#include "common/utf8.h"

enum seq { SEQ_OK, SEQ_BAD, SEQ_CUT };

/* Bounds of the second byte after each lead (RFC 3629's table), which
 * is where overlong forms, surrogates and values past U+10FFFF show. */
static bool second_ok(unsigned char lead, unsigned char b)
{
	if (lead == 0xe0)
		return b >= 0xa0 && b <= 0xbf;
	if (lead == 0xed)
		return b >= 0x80 && b <= 0x9f;
	if (lead == 0xf0)
		return b >= 0x90 && b <= 0xbf;
	if (lead == 0xf4)
		return b >= 0x80 && b <= 0x8f;
	return b >= 0x80 && b <= 0xbf;
}

/*
 * One sequence at s (n > 0 bytes): SEQ_OK with its code point, SEQ_BAD
 * with the length of the maximal ill-formed part, or SEQ_CUT when the
 * input ends inside an otherwise well-formed character.
 */
static enum seq decode(const unsigned char *s, size_t n, size_t *used,
		       unsigned int *cp)
{
	size_t want, i;

	*used = 1;
	*cp = s[0];
	if (s[0] < 0x80)
		return SEQ_OK;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		want = 2, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		want = 3, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		want = 4, *cp = s[0] & 0x07;
	else
		return SEQ_BAD;
	for (i = 1; i < want; i++) {
		if (i >= n)
			return SEQ_CUT;
		/* A NUL fails here too: it is no continuation byte. */
		if (i == 1 ? !second_ok(s[0], s[1]) : (s[i] & 0xc0) != 0x80) {
			*used = i;
			return SEQ_BAD;
		}
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	*used = want;
	return SEQ_OK;
}

/* Control characters, and those that reorder or break a terminal line. */
static bool unsafe(unsigned int cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t cw_utf8_clean(char *dst, size_t size, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t in = 0, out = 0, used, put;
	unsigned int cp;
	const char *what;

	if (!size)
		return 0;
	while (in < len && s[in]) {
		/* Most names are plain ASCII: copy a printable run at once. */
		for (used = 0; in + used < len && s[in + used] >= 0x20 &&
			       s[in + used] < 0x7f && used < size - 1 - out;
		     used++)
			;
		if (used) {
			memcpy(dst + out, src + in, used);
			out += used;
			in += used;
			continue;
		}
		switch (decode(s + in, len - in, &used, &cp)) {
		case SEQ_CUT:
			goto done;
		case SEQ_BAD:
			what = "\xef\xbf\xbd", put = 3;
			break;
		default:
			what = unsafe(cp) ? "?" : src + in;
			put = unsafe(cp) ? 1 : used;
		}
		if (put > size - 1 - out)
			break;
		memcpy(dst + out, what, put);
		out += put;
		in += used;
	}
done:
	dst[out] = 0;
	return out;
}

size_t cw_utf8_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return n;
	/* s[max] is the first byte left out: back up to a lead byte. */
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

size_t cw_utf8_next(const char *s, size_t n)
{
	size_t used;
	unsigned int cp;

	if (!n || decode((const unsigned char *)s, n, &used, &cp) != SEQ_OK)
		return 0;
	return used;
}

bool cw_utf8_is_clean(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, used;
	unsigned int cp;

	while (i < n) {
		if (!u[i] || decode(u + i, n - i, &used, &cp) != SEQ_OK ||
		    unsafe(cp))
			return false;
		i += used;
	}
	return true;
}
