// SPDX-License-Identifier: MIT
/*
 * What this kernel lets us attach.  Each capability is checked by doing it:
 * a one-program load of conn.bpf.c, so the answer is the verifier's, not a
 * guess from the version number.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/dns.h"
#include "agent/variant.h"
#include "common/log.h"
#include "common/util.h"

#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe/type"

const struct cw_prog_spec cw_prog_specs[] = {
	{"cw_tp_set_state", CW_ATTACH_TRACEPOINT, CW_PROG_STATE},
	{"cw_tp_send", CW_ATTACH_TRACEPOINT, CW_PROG_IO},
	{"cw_tp_recv", CW_ATTACH_TRACEPOINT, CW_PROG_IO},
	{"cw_tp_retransmit", CW_ATTACH_TRACEPOINT, CW_PROG_RETRANS},
	{"cw_tp_destroy", CW_ATTACH_TRACEPOINT, CW_PROG_STATE},
	{"cw_fentry_connect", CW_ATTACH_FENTRY, CW_PROG_STATE},
	{"cw_fexit_accept", CW_ATTACH_FENTRY, CW_PROG_STATE},
	{"cw_fexit_accept_old", CW_ATTACH_FENTRY, CW_PROG_STATE},
	{"cw_fentry_set_state", CW_ATTACH_FENTRY, CW_PROG_STATE},
	{"cw_fexit_sendmsg", CW_ATTACH_FENTRY, CW_PROG_IO},
	{"cw_fexit_recvmsg", CW_ATTACH_FENTRY, CW_PROG_IO},
	{"cw_kp_connect", CW_ATTACH_KPROBE, CW_PROG_STATE},
	{"cw_krp_accept", CW_ATTACH_KPROBE, CW_PROG_STATE},
	{"cw_kp_set_state", CW_ATTACH_KPROBE, CW_PROG_STATE},
	{"cw_kp_retransmit", CW_ATTACH_KPROBE, CW_PROG_RETRANS},
	{"cw_kp_sendmsg", CW_ATTACH_KPROBE, CW_PROG_IO},
	{"cw_krp_sendmsg", CW_ATTACH_KPROBE, CW_PROG_IO},
	{"cw_kp_recvmsg", CW_ATTACH_KPROBE, CW_PROG_IO},
	{"cw_krp_recvmsg", CW_ATTACH_KPROBE, CW_PROG_IO},
};
const int cw_prog_spec_count = CW_ARRAY_SIZE(cw_prog_specs);

bool cw_accept_has_new_abi(void)
{
	const struct btf_type *t;
	struct btf *btf = btf__load_vmlinux_btf();
	bool newer = true;
	int id;

	if (!btf)
		return true;
	id = btf__find_by_name_kind(btf, "inet_csk_accept", BTF_KIND_FUNC);
	if (id > 0) {
		t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
		newer = btf_vlen(t) == 2;
	}
	btf__free(btf);
	return newer;
}

static bool prog_wanted(const struct cw_prog_spec *s, enum cw_attach variant,
			enum cw_agent_mode mode)
{
	if (s->variant != variant)
		return false;
	if (mode == CW_MODE_CONN_ONLY && s->role == CW_PROG_IO)
		return false;
	if (!strcmp(s->name, "cw_fexit_accept"))
		return cw_accept_has_new_abi();
	if (!strcmp(s->name, "cw_fexit_accept_old"))
		return !cw_accept_has_new_abi();
	return true;
}

int cw_variant_prepare(struct conn_bpf *skel, enum cw_attach variant,
		       enum cw_agent_mode mode, bool udp, bool iters)
{
	struct bpf_program *prog;
	int i;

	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	for (i = 0; i < cw_prog_spec_count; i++) {
		if (!prog_wanted(&cw_prog_specs[i], variant, mode))
			continue;
		prog = bpf_object__find_program_by_name(skel->obj,
							cw_prog_specs[i].name);
		if (!prog)
			return cw_error("program '%s' missing from conn.bpf.o",
					cw_prog_specs[i].name);
		bpf_program__set_autoload(prog, true);
	}
	/*
	 * The fentry variant counts retransmits and takes drained ends'
	 * final readings with the shared tp_btf hooks.
	 */
	if (variant == CW_ATTACH_FENTRY) {
		bpf_program__set_autoload(skel->progs.cw_tp_retransmit, true);
		bpf_program__set_autoload(skel->progs.cw_tp_destroy, true);
	}
	bpf_program__set_autoload(skel->progs.cw_udp_egress, udp);
	bpf_program__set_autoload(skel->progs.cw_udp_ingress, udp);
	bpf_program__set_autoload(skel->progs.cw_scan_files, iters);
	bpf_program__set_autoload(skel->progs.cw_collect,
				  iters && variant != CW_ATTACH_KPROBE);
	skel->rodata->use_sk_hash = variant == CW_ATTACH_KPROBE;
	skel->rodata->per_event = mode == CW_MODE_PER_EVENT;
	if (mode != CW_MODE_PER_EVENT)
		bpf_map__set_max_entries(skel->maps.events, getpagesize());
	if (mode != CW_MODE_AGGREGATE)
		bpf_map__set_max_entries(skel->maps.timing, getpagesize());
	return 0;
}

/* Load exactly one program (plus nothing else); 0 or -errno. */
static int try_load(const char *prog_name, enum cw_attach variant, char *why,
		    size_t whylen)
{
	struct bpf_program *prog;
	struct conn_bpf *skel;
	int err;

	skel = conn_bpf__open();
	if (!skel) {
		err = -errno;
		snprintf(why, whylen, "open: %s", strerror(-err));
		return err;
	}
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	prog = bpf_object__find_program_by_name(skel->obj, prog_name);
	bpf_program__set_autoload(prog, true);
	skel->rodata->use_sk_hash = variant == CW_ATTACH_KPROBE;
	bpf_map__set_max_entries(skel->maps.events, getpagesize());
	err = conn_bpf__load(skel);
	if (err)
		snprintf(why, whylen, "load refused: %s", strerror(-err));
	conn_bpf__destroy(skel);
	return err;
}

int cw_variant_load_check(enum cw_attach variant, char *why, size_t len)
{
	struct conn_bpf *skel;
	int err;

	cw_libbpf_logging(false);
	skel = conn_bpf__open();
	if (!skel) {
		err = -errno;
		snprintf(why, len, "open: %s", strerror(errno));
		return err;
	}
	err = cw_variant_prepare(skel, variant, CW_MODE_AGGREGATE, true,
				 variant != CW_ATTACH_KPROBE);
	if (!err)
		err = conn_bpf__load(skel);
	if (err)
		snprintf(why, len, "the kernel refused the %s programs: %s",
			 cw_attach_name(variant), strerror(-err));
	conn_bpf__destroy(skel);
	cw_libbpf_logging(true);
	return err;
}

static void find_cgroup2(struct cw_kernel_caps *caps)
{
	caps->cgroup2 = !cw_cgroup2_find(caps->cgroup2_path,
					 sizeof(caps->cgroup2_path));
}

static int probe_kernel(struct cw_kernel_caps *caps)
{
	struct btf *btf;
	char why[128];

	memset(caps, 0, sizeof(*caps));
	caps->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	if (!caps->btf)
		return cw_error("the running kernel has no BTF "
				"(/sys/kernel/btf/vmlinux): CO-RE programs "
				"cannot load");
	btf = btf__load_vmlinux_btf();
	if (btf) {
		caps->tracepoints =
			btf__find_by_name_kind(btf,
					       "btf_trace_sock_send_length",
					       BTF_KIND_TYPEDEF) > 0 &&
			btf__find_by_name_kind(btf,
					       "btf_trace_sock_recv_length",
					       BTF_KIND_TYPEDEF) > 0;
		btf__free(btf);
	}
	caps->kprobe_pmu = access(KPROBE_PMU, R_OK) == 0;
	if (!caps->kprobe_pmu)
		snprintf(caps->kprobe_err, sizeof(caps->kprobe_err),
			 "this kernel has no kprobes (no %s)", KPROBE_PMU);
	if (try_load("cw_tp_send", CW_ATTACH_TRACEPOINT, why, sizeof(why)) ==
	    -EPERM)
		return cw_error("not enough privilege to load BPF programs "
				"(run as root, or with CAP_BPF, CAP_PERFMON "
				"and CAP_NET_ADMIN)");
	caps->tp_btf_loads =
		caps->tracepoints &&
		!try_load("cw_tp_send", CW_ATTACH_TRACEPOINT, why, sizeof(why));
	caps->fentry_loads =
		!try_load("cw_fentry_set_state", CW_ATTACH_FENTRY,
			  caps->fentry_err, sizeof(caps->fentry_err));
	caps->kprobe_loads = !try_load("cw_kp_set_state", CW_ATTACH_KPROBE, why,
				       sizeof(why));
	if (!caps->kprobe_loads && caps->kprobe_pmu)
		snprintf(caps->kprobe_err, sizeof(caps->kprobe_err), "%s", why);
	caps->task_file_iter = !try_load("cw_scan_files", CW_ATTACH_TRACEPOINT,
					 why, sizeof(why));
	find_cgroup2(caps);

	if (caps->fentry_loads)
		caps->auto_pick = CW_ATTACH_FENTRY;
	else if (caps->kprobe_pmu && caps->kprobe_loads)
		caps->auto_pick = CW_ATTACH_KPROBE;
	else if (caps->tp_btf_loads)
		caps->auto_pick = CW_ATTACH_TRACEPOINT;
	else
		caps->auto_pick = CW_ATTACH_AUTO; /* nothing works */
	return 0;
}

/*
 * The trial loads fail by design on kernels that lack a variant: libbpf's
 * messages about them are kept quiet, and its logging is given back as it
 * was on every return.
 */
int cw_probe_kernel(struct cw_kernel_caps *caps)
{
	bool loud = cw_libbpf_logging(false);
	int err = probe_kernel(caps);

	cw_libbpf_logging(loud);
	return err;
}

/*
 * Figures from bench/RESULTS.md (this machine kind, CPU per send+recv
 * pair): an attached empty tp_btf program costs ~77 ns a call.
 */
const char *cw_hooks_describe(enum cw_hooks h, const struct cw_kernel_caps *c)
{
	if (c->auto_pick == CW_ATTACH_KPROBE)
		return "  the kprobe variant sums bytes per call: its per-call "
		       "programs stay\n"
		       "  attached in both modes (exact calls and messages)\n";
	if (h == CW_HOOKS_ALWAYS)
		return "  always: a program on every send and recv, exact "
		       "calls and messages\n"
		       "  everywhere; ~77 ns a call for being attached plus "
		       "its own work\n"
		       "  (bench/RESULTS.md); bytes from the kernel's TCP "
		       "counters\n";
	return "  sampled: bytes from the kernel's TCP counters with no "
	       "per-call program;\n"
	       "  calls and messages counted exactly inside timing windows "
	       "only (the\n"
	       "  per-call programs are attached for the window, detached "
	       "after): nothing\n"
	       "  per call outside windows; UDP still costs a cgroup_skb run "
	       "per packet\n";
}

static const char *attach_names[] = {
	[CW_ATTACH_AUTO] = "auto",
	[CW_ATTACH_FENTRY] = "fentry",
	[CW_ATTACH_KPROBE] = "kprobe",
	[CW_ATTACH_TRACEPOINT] = "tracepoint",
};

const char *cw_attach_name(enum cw_attach a)
{
	return attach_names[a];
}

int cw_attach_parse(const char *s, enum cw_attach *out)
{
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(attach_names); i++) {
		if (!strcmp(s, attach_names[i])) {
			*out = (enum cw_attach)i;
			return 0;
		}
	}
	return -1;
}
