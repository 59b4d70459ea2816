// SPDX-License-Identifier: MIT
/* Placeholder until the 'samples' command lands; replaced by its owner. */
#include "cli/commands.h"
#include "common/log.h"

int cmd_samples(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_error("'samples' is not built yet");
	return 2;
}
