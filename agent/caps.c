// SPDX-License-Identifier: MIT
#include <sys/capability.h>

#include "agent/agent.h"
#include "common/log.h"

int cw_drop_caps(const int *keep, int n)
{
	cap_value_t vals[16];
	cap_t caps = cap_init();
	int i, err = 0;

	if (!caps || n > 16)
		return cw_error("unable to build capability set");
	for (i = 0; i < n; i++)
		vals[i] = keep[i];
	if (cap_set_flag(caps, CAP_PERMITTED, n, vals, CAP_SET) ||
	    cap_set_flag(caps, CAP_EFFECTIVE, n, vals, CAP_SET) ||
	    cap_set_proc(caps))
		err = cw_error("unable to drop capabilities: %m");
	cap_free(caps);
	return err;
}
