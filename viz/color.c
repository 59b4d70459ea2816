// SPDX-License-Identifier: MIT
/* The colours of commands, shared by every drawing. */
#include <string.h>

#include "common/htab.h"
#include "common/util.h"
#include "viz/viz.h"

const char *cw_viz_color(const char *comm)
{
	/* Distinguishable on white; picked by hash so a command keeps its
	 * colour across runs and views. */
	static const char *palette[] = {
		"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
		"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
	};

	return palette[cw_hash_bytes(comm, strlen(comm)) %
		       CW_ARRAY_SIZE(palette)];
}
