/* SPDX-License-Identifier: MIT */
/* Internal to agent/: which programs of conn.bpf.c make up each variant. */
#ifndef CW_AGENT_VARIANT_H
#define CW_AGENT_VARIANT_H

#include <stdbool.h>

#include "agent/agent.h"
#include <linux/types.h>

#include "bpf/conn.h"
#include "conn.skel.h"

enum cw_prog_role {
	CW_PROG_STATE,	 /* connection lifecycle */
	CW_PROG_IO,	 /* send/recv: the aggregation itself */
	CW_PROG_RETRANS, /* retransmit counting */
};

struct cw_prog_spec {
	const char *name; /* program name in conn.bpf.c */
	enum cw_attach variant;
	enum cw_prog_role role;
};

extern const struct cw_prog_spec cw_prog_specs[];
extern const int cw_prog_spec_count;

/* cw_variant_prepare(), what a variant switches on, is in agent/agent.h. */
/* inet_csk_accept takes 2 arguments since v6.10, 4 before. */
bool cw_accept_has_new_abi(void);

#endif
