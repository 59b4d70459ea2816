// SPDX-License-Identifier: MIT
/* Placeholder until the 'paths' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_paths(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'paths' is not built yet");
	return 2;
}
