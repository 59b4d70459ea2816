// SPDX-License-Identifier: MIT
/* Placeholder until the 'run' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'run' is not built yet");
	return 2;
}
