// SPDX-License-Identifier: MIT
/* Placeholder until the 'dump' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_dump(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'dump' is not built yet");
	return 2;
}
