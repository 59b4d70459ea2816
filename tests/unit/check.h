/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' one check: on failure print file, line and condition,
 * count it, and go on, so one run reports every broken check.  A test's
 * main() returns failures ? 1 : 0.
 */
#ifndef CW_TEST_CHECK_H
#define CW_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			failures++;                                            \
		}                                                              \
	} while (0)

#endif
