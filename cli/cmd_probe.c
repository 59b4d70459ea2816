// SPDX-License-Identifier: MIT
/*
 * causeway probe: what this kernel lets the agent attach, from the tiny
 * programs agent/probe.c loads, and which variant --attach auto picks.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/jsonw.h"
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

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void print_json(const struct cw_kernel_caps *c)
{
	struct cw_jsonw w;

	cw_jsonw_init(&w, stdout);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_bool(&w, "btf", c->btf);
	cw_jsonw_bool(&w, "fentry", c->fentry_loads);
	cw_jsonw_str(&w, "fentry_error", c->fentry_err);
	cw_jsonw_bool(&w, "kprobe_attach", c->kprobe_pmu);
	cw_jsonw_bool(&w, "kprobe_load", c->kprobe_loads);
	cw_jsonw_str(&w, "kprobe_error", c->kprobe_err);
	cw_jsonw_bool(&w, "tracepoints", c->tracepoints);
	cw_jsonw_bool(&w, "tp_btf", c->tp_btf_loads);
	cw_jsonw_bool(&w, "task_file_iter", c->task_file_iter);
	cw_jsonw_str(&w, "cgroup2", c->cgroup2 ? c->cgroup2_path : NULL);
	cw_jsonw_str(&w, "auto", cw_attach_name(c->auto_pick));
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
}

static void print_text(const struct cw_kernel_caps *c)
{
	printf("BTF (/sys/kernel/btf/vmlinux)      %s\n", yes_no(c->btf));
	printf("fentry/fexit programs load         %s%s%s%s\n",
	       yes_no(c->fentry_loads), c->fentry_err[0] ? " (" : "",
	       c->fentry_err, c->fentry_err[0] ? ")" : "");
	printf("kprobe programs load               %s\n",
	       yes_no(c->kprobe_loads));
	printf("kprobes can attach                 %s%s%s%s\n",
	       yes_no(c->kprobe_pmu), c->kprobe_err[0] ? " (" : "",
	       c->kprobe_err, c->kprobe_err[0] ? ")" : "");
	printf("sock_send/recv_length tracepoints  %s\n",
	       yes_no(c->tracepoints));
	printf("tp_btf programs load               %s\n",
	       yes_no(c->tp_btf_loads));
	printf("iter/task_file (open connections)  %s\n",
	       yes_no(c->task_file_iter));
	printf("cgroup v2 (UDP per peer)           %s%s%s\n",
	       yes_no(c->cgroup2), c->cgroup2 ? " at " : "",
	       c->cgroup2 ? c->cgroup2_path : "");
	if (c->auto_pick == CW_ATTACH_AUTO)
		printf("--attach auto picks                nothing: no variant "
		       "works here\n");
	else
		printf("--attach auto picks                %s\n",
		       cw_attach_name(c->auto_pick));
	printf("--hooks (agent default: sampled; run default: always)\n%s%s",
	       cw_hooks_describe(CW_HOOKS_SAMPLED, c),
	       cw_hooks_describe(CW_HOOKS_ALWAYS, c));
}

/* --load V: 0 if every program of V loads, 1 if the kernel refuses. */
static int load_variant(enum cw_attach v)
{
	char why[160];

	if (cw_variant_load_check(v, why, sizeof(why))) {
		printf("%s: refused (%s)\n", cw_attach_name(v), why);
		return 1;
	}
	printf("%s: every program loads\n", cw_attach_name(v));
	return 0;
}

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
	const struct cli_opt t[] = {CLI_FLAG("json", 'j', &a.json),
				    CLI_ENUM("load", 'l', &load, variants),
				    {0}};
	struct cw_kernel_caps c;
	int rc;

	rc = cli_parse("probe", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (cli_one_operand(argc, argv, NULL))
		return 2;
	a.load = load < 0 ? CW_ATTACH_AUTO : CW_ATTACH_FENTRY + load;
	if (a.load != CW_ATTACH_AUTO)
		return load_variant(a.load);
	if (cw_probe_kernel(&c))
		return 1;
	if (a.json) {
		print_json(&c);
		return 0;
	}
	print_text(&c);
	return c.auto_pick == CW_ATTACH_AUTO ? 1 : 0;
}
