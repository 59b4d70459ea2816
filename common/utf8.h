/* SPDX-License-Identifier: MIT */
/*
 * Names from outside (a process's comm and command line, a host name) made
 * safe to show: valid UTF-8 with no control characters, cut only between
 * characters.  The agent cleans every name as it enters a record, and the
 * central side cleans again what it decodes, so an output only has its own
 * syntax to escape (quotes for JSON, <&> for XML, backslashes for DOT).
 *
 *	char comm[CW_COMM_MAX];
 *
 *	cw_utf8_clean(comm, sizeof(comm), task_comm, 16);
 *	n = cw_utf8_cut(label, 40);		// at most 40 bytes, whole chars
 *
 * What cleaning does, byte by byte of the input:
 *   - a well-formed character (RFC 3629: no overlong forms, no surrogates,
 *     nothing above U+10FFFF) is kept, unless it is a control character
 *     (U+0000-U+001F, U+007F-U+009F) or one that reorders or breaks text
 *     on a terminal (bidirectional overrides and isolates U+202A-U+202E,
 *     U+2066-U+2069; line and paragraph separators U+2028, U+2029): each
 *     of those becomes '?';
 *   - an ill-formed sequence becomes one U+FFFD per maximal ill-formed
 *     part (as Unicode recommends: "\xe2\x82" then 'A' is U+FFFD 'A');
 *   - an incomplete character at the very end of the input is taken as
 *     a cut made by whoever truncated the text (the kernel keeps 15 bytes
 *     of comm) and dropped;
 *   - a NUL ends the input.
 */
#ifndef CW_COMMON_UTF8_H
#define CW_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Clean the first len bytes of src (up to a NUL) into dst, which holds
 * size bytes: at most size - 1 bytes of whole characters, then a NUL.
 * dst and src must not overlap.  Returns the length written (without the
 * NUL); 0 when size is 0 (nothing written).
 */
size_t cw_utf8_clean(char *dst, size_t size, const char *src, size_t len);

/*
 * The length of the longest prefix of the NUL-terminated s that is at
 * most max bytes and does not end inside a character (a cut of valid
 * UTF-8 stays valid).  Returns strlen(s) when that fits.
 */
size_t cw_utf8_cut(const char *s, size_t max);

/*
 * The length (1 to 4) of the well-formed character at s, of the n > 0
 * bytes there, control characters included; 0 when the bytes are
 * ill-formed or end inside a character.  For writers that escape
 * controls their own way (JSON's \u0007) but must not pass on bad bytes.
 */
size_t cw_utf8_next(const char *s, size_t n);

/* True when the n bytes at s are what cw_utf8_clean() would leave as is. */
bool cw_utf8_is_clean(const char *s, size_t n);

#endif
