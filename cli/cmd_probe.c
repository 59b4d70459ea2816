// SPDX-License-Identifier: MIT
/* Placeholder until the 'probe' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_probe(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'probe' is not built yet");
	return 2;
}
