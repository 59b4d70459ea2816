// SPDX-License-Identifier: MIT
/* The shared growth helper: doubling, the minimum, overflow refused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "common/util.h"

int main(void)
{
	int *v = NULL;
	size_t cap = 0, i;
	char *big = NULL;
	size_t bigcap = 0;

	CHECK(!CW_GROW(v, cap, 1, 16) && cap == 16);
	CHECK(!CW_GROW(v, cap, 16, 16) && cap == 16);
	CHECK(!CW_GROW(v, cap, 17, 16) && cap == 32);
	CHECK(!CW_GROW(v, cap, 1000, 16) && cap == 1024);
	for (i = 0; i < 1000; i++)
		v[i] = (int)i;
	CHECK(v[999] == 999);
	/* n * size would wrap: refused, nothing changed */
	errno = 0;
	CHECK(CW_GROW(v, cap, SIZE_MAX / 2, 16) == -1 && errno == ENOMEM);
	CHECK(cap == 1024 && v[999] == 999);
	CHECK(CW_GROW(big, bigcap, SIZE_MAX, 1) == -1 && bigcap == 0 && !big);
	free(v);
	return failures ? 1 : 0;
}
