// SPDX-License-Identifier: MIT
/* Placeholder until the 'agent' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_agent(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'agent' is not built yet");
	return 2;
}
