/* SPDX-License-Identifier: MIT */
/*
 * `causeway place` past its options: which inputs (one graph, record
 * files, or Kafka), then the plan chosen and written (place/place.h).
 *
 *	if (cw_place_inputs(&in, n, paths))
 *		return 2;			// told
 *	return cw_place_run(&in, &res, CW_PLACE_FMT_JSON, NULL) ? 1 : 0;
 */
#ifndef CW_PLACE_CMD_H
#define CW_PLACE_CMD_H

#include "place/place.h"

/* The INPUT operands into in: one graph, record files, or none with
 * --kafka; a range out of order refused.  0, or -1 after a message. */
int cw_place_inputs(struct cw_place_input *in, int n, char **paths);
/* Load, choose and write the plan to out (NULL: stdout; whole or not at
 * all); 0, or -1 after a message. */
int cw_place_run(struct cw_place_input *in, struct cw_place_result *res,
		 enum cw_place_format format, const char *out);

#endif
