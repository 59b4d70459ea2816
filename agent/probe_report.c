// SPDX-License-Identifier: MIT
/* What `causeway probe` prints (agent/probe_report.h). */
#include <stdbool.h>
#include <stdio.h>

#include "agent/agent.h"
#include "agent/probe_report.h"
#include "common/jsonw.h"

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

void cw_probe_print_json(const struct cw_kernel_caps *c)
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

void cw_probe_print_text(const struct cw_kernel_caps *c)
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
int cw_probe_load_variant(enum cw_attach v)
{
	char why[160];

	if (cw_variant_load_check(v, why, sizeof(why))) {
		printf("%s: refused (%s)\n", cw_attach_name(v), why);
		return 1;
	}
	printf("%s: every program loads\n", cw_attach_name(v));
	return 0;
}

