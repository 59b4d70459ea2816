/* SPDX-License-Identifier: MIT */
/*
 * `causeway paths` past its options: read the messages (or the span
 * truth), infer the causal paths by each method asked for (paths/paths.h)
 * and print them, or their scores against the truth, as text or JSON.
 *
 *	struct cw_paths_cmd a = {.input = "x.csv", .methods = CW_PATHS_CONV};
 *
 *	cw_paths_opts_default(&a.o);
 *	return cw_paths_cmd_run(&a) ? 1 : 0;
 */
#ifndef CW_PATHS_CMD_H
#define CW_PATHS_CMD_H

#include <stdbool.h>

#include "paths/paths.h"

enum { CW_PATHS_CONV = 1, CW_PATHS_NEST = 2 };

struct cw_paths_cmd {
	struct cw_paths_opts o;
	const char *root, *truth, *input, *synthetic;
	int methods; /* CW_PATHS_CONV | CW_PATHS_NEST */
	bool json;
};

/* 0, or -1 after a message. */
int cw_paths_cmd_run(struct cw_paths_cmd *a);

#endif
