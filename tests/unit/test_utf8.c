// SPDX-License-Identifier: MIT
/*
 * Cleaning names: control bytes and terminal tricks become '?', ill-formed
 * UTF-8 becomes U+FFFD per maximal part, a character cut by whoever
 * truncated the text is dropped, and no output ends inside a character.
 */
#include <string.h>

#include "check.h"
#include "common/utf8.h"

#define FFFD "\xef\xbf\xbd"

static int clean_is(const char *in, size_t len, size_t size, const char *want)
{
	char out[512];
	size_t n = cw_utf8_clean(out, size, in, len);

	if (n != strlen(out) || strcmp(out, want)) {
		fprintf(stderr,
			"clean(%zu bytes, size %zu): got '%s', want '%s'\n",
			len, size, out, want);
		return 0;
	}
	return cw_utf8_is_clean(out, n);
}

#define CLEAN(in, size, want) CHECK(clean_is(in, sizeof(in) - 1, size, want))

static void check_clean(void)
{
	/* Plain text and good multibyte text stay as they are. */
	CLEAN("nginx: worker", 64, "nginx: worker");
	CLEAN("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", 64,
	      "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80");
	/* Quotes, backslashes and <&> are not ours to change here. */
	CLEAN("a\"b'c\\d<e>&f", 64, "a\"b'c\\d<e>&f");
	/* Escape sequences, newlines, tabs, DEL and C1 controls. */
	CLEAN("\x1b[31mred\x1b]0;t\x07\n\t\x7f\xc2\x9b", 64,
	      "?[31mred?]0;t?????");
	/* Bidirectional overrides and line separators. */
	CLEAN("a\xe2\x80\xae"
	      "b\xe2\x80\xa8"
	      "c\xe2\x81\xa6",
	      64, "a?b?c?");
	/* Ill-formed: stray continuation, bad leads, overlong, surrogate,
	 * past U+10FFFF, and a lead whose continuation is missing. */
	CLEAN("\x80x\xffy\xc0\xafz", 64, FFFD "x" FFFD "y" FFFD FFFD "z");
	CLEAN("\xed\xa0\x80", 64, FFFD FFFD FFFD);
	CLEAN("\xf4\x90\x80\x80", 64, FFFD FFFD FFFD FFFD);
	CLEAN("\xe2\x82"
	      "A",
	      64, FFFD "A");
	CLEAN("\xe0\x80\x80", 64, FFFD FFFD FFFD);
	/* The input ends inside a character: that was a cut, dropped. */
	CLEAN("ab\xe4\xb8", 64, "ab");
	CLEAN("ab\xf0\x9f\x98", 64, "ab");
	/* A NUL ends the input, also inside a sequence. */
	CHECK(clean_is("ab\xe4\0cd", 6, 64, "ab" FFFD));
	/* The output is cut between characters, never inside one. */
	CLEAN("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad", 8,
	      "\xe4\xb8\xad\xe4\xb8\xad");
	CLEAN("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad", 7,
	      "\xe4\xb8\xad\xe4\xb8\xad");
	CLEAN("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad", 6, "\xe4\xb8\xad");
	CLEAN("\xff\xff\xff\xff\xff\xff", 16, FFFD FFFD FFFD FFFD FFFD);
	CLEAN("abc", 1, "");
	CHECK(cw_utf8_clean(NULL, 0, "abc", 3) == 0);
}

static void check_cut(void)
{
	const char *s = "ab\xe4\xb8\xad\xf0\x9f\x98\x80";

	CHECK(cw_utf8_cut(s, 100) == strlen(s));
	CHECK(cw_utf8_cut(s, 9) == 9);
	CHECK(cw_utf8_cut(s, 8) == 5);
	CHECK(cw_utf8_cut(s, 5) == 5);
	CHECK(cw_utf8_cut(s, 4) == 2);
	CHECK(cw_utf8_cut(s, 3) == 2);
	CHECK(cw_utf8_cut(s, 0) == 0);
}

static void check_is_clean(void)
{
	CHECK(cw_utf8_is_clean("caf\xc3\xa9", 5));
	CHECK(!cw_utf8_is_clean("caf\xc3", 4));
	CHECK(!cw_utf8_is_clean("a\nb", 3));
	CHECK(!cw_utf8_is_clean("a\0b", 3));
	CHECK(cw_utf8_is_clean("", 0));
}

static void check_next(void)
{
	CHECK(cw_utf8_next("a", 1) == 1);
	CHECK(cw_utf8_next("\n", 1) == 1);
	CHECK(cw_utf8_next("\xc3\xa9x", 3) == 2);
	CHECK(cw_utf8_next("\xf0\x9f\x98\x80", 4) == 4);
	CHECK(cw_utf8_next("\xf0\x9f\x98", 3) == 0);
	CHECK(cw_utf8_next("\xc0\xaf", 2) == 0);
	CHECK(cw_utf8_next("\xe4\0\xad", 3) == 0);
	CHECK(cw_utf8_next("a", 0) == 0);
}

int main(void)
{
	check_next();
	check_clean();
	check_cut();
	check_is_clean();
	return failures ? 1 : 0;
}
