/* SPDX-License-Identifier: MIT */
/*
 * What `causeway probe` prints of the kernel's capabilities (agent/agent.h
 * cw_probe_kernel()): a table for people or one JSON object, and whether
 * every program of one attach variant loads.
 */
#ifndef CW_AGENT_PROBE_REPORT_H
#define CW_AGENT_PROBE_REPORT_H

#include "agent/agent.h"

void cw_probe_print_text(const struct cw_kernel_caps *c);
void cw_probe_print_json(const struct cw_kernel_caps *c);
/* 0 if every program of v loads, 1 if the kernel refuses (said on
 * stdout). */
int cw_probe_load_variant(enum cw_attach v);

#endif
