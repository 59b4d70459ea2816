// SPDX-License-Identifier: MIT
/*
 * causeway probe: what this kernel lets the agent attach, from the tiny
 * programs agent/probe.c loads, and which variant --attach auto picks.
 */
#include <stdio.h>

#include "agent/agent.h"
#include "agent/probe_report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"

static const char help[] =
	"usage: causeway probe [--json] [--load VARIANT]\n"
	"\n"
	"Load one tiny program of each attach variant and print what\n"
	"this kernel allows, and which variant '--attach auto' picks.\n"
	"\n"
	"  -j, --json        print a JSON object\n"
	"  -l, --load V      load every program of variant V (fentry,\n"
	"                    kprobe, tracepoint) without attaching; exit 0\n"
	"                    if the verifier accepts them, 1 if refused\n"
	"\n"
	"Examples:\n"
	"  causeway probe\n"
	"  causeway probe --json\n"
	"  causeway probe --load kprobe\n";

struct probe_args {
	enum cw_attach load; /* CW_ATTACH_AUTO: probe, do not load one */
	bool json;
};

static const char *const variants[] = {"fentry", "kprobe", "tracepoint",
				       NULL};

int cmd_probe(int argc, char **argv)
{
	struct probe_args a = {0};
	int load = -1;
	const struct cw_opt t[] = {CW_OPT_FLAG("json", 'j', &a.json),
				    CW_OPT_ENUM("load", 'l', &load, variants),
				    {0}};
	struct cw_kernel_caps c;
	int rc;

	rc = cw_opts_parse("probe", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (cw_opts_one_operand(argc, argv, NULL))
		return 2;
	a.load = load < 0 ? CW_ATTACH_AUTO : CW_ATTACH_FENTRY + load;
	if (a.load != CW_ATTACH_AUTO)
		return cw_probe_load_variant(a.load);
	if (cw_probe_kernel(&c))
		return 1;
	if (a.json) {
		cw_probe_print_json(&c);
		return 0;
	}
	cw_probe_print_text(&c);
	return c.auto_pick == CW_ATTACH_AUTO ? 1 : 0;
}
