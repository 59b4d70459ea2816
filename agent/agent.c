// SPDX-License-Identifier: MIT
/*
 * Loader and collector for bpf/conn.bpf.c: open -> set rodata -> choose
 * programs -> load -> attach; then, every interval, copy out what changed.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "agent/nat.h"
#include "agent/variant.h"
#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"

#include "agent/agent_impl.h"

static int attach_prog(struct cw_agent *a, struct bpf_program *prog)
{
	struct bpf_link *link;

	if (a->nlinks == MAX_LINKS)
		return cw_error("too many links");
	link = bpf_program__attach(prog);
	if (!link)
		return cw_error("unable to attach '%s': %s",
				bpf_program__name(prog), strerror(errno));
	a->links[a->nlinks++] = link;
	return 0;
}

/* One of the programs that run on every send or recv. */
static bool is_io_prog(const struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);
	int i;

	for (i = 0; i < cw_prog_spec_count; i++)
		if (cw_prog_specs[i].role == CW_PROG_IO &&
		    !strcmp(cw_prog_specs[i].name, name))
			return true;
	return false;
}

static void hooks_detach(struct cw_agent *a);

static int hooks_attach(struct cw_agent *a)
{
	int i;

	if (a->io_attached)
		return 0;
	for (i = 0; i < a->nio; i++) {
		a->io_links[i] = bpf_program__attach(a->io_progs[i]);
		if (!a->io_links[i]) {
			const char *name = bpf_program__name(a->io_progs[i]);
			int err = errno;

			hooks_detach(a);
			return cw_error("unable to attach '%s': %s", name,
					strerror(err));
		}
	}
	a->io_attached = true;
	return 0;
}

/* Detached, not gated: a gated program would still cost its call. */
static void hooks_detach(struct cw_agent *a)
{
	int i;

	for (i = 0; i < a->nio; i++) {
		bpf_link__destroy(a->io_links[i]);
		a->io_links[i] = NULL;
	}
	a->io_attached = false;
}

bool cw_agent_hooks_attached(const struct cw_agent *a)
{
	return a->io_attached;
}

int cw_hooks_parse(const char *s, enum cw_hooks *out)
{
	if (!strcmp(s, "sampled"))
		*out = CW_HOOKS_SAMPLED;
	else if (!strcmp(s, "always"))
		*out = CW_HOOKS_ALWAYS;
	else
		return -1;
	return 0;
}

const char *cw_hooks_name(enum cw_hooks h)
{
	return h == CW_HOOKS_ALWAYS ? "always" : "sampled";
}

static int attach_udp(struct cw_agent *a, const char *cgroup2)
{
	struct bpf_program *progs[] = {a->skel->progs.cw_udp_egress,
				       a->skel->progs.cw_udp_ingress};
	struct bpf_link *link;
	size_t i;

	a->cgroup_fd = open(cgroup2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->cgroup_fd < 0)
		return cw_error("unable to open cgroup '%s': %s", cgroup2,
				strerror(errno));
	for (i = 0; i < CW_ARRAY_SIZE(progs); i++) {
		link = bpf_program__attach_cgroup(progs[i], a->cgroup_fd);
		if (!link)
			return cw_error(
				"unable to attach UDP counter to '%s': %s",
				cgroup2, strerror(errno));
		a->links[a->nlinks++] = link;
	}
	return 0;
}

static int on_closed(void *ctx, void *data, size_t len)
{
	struct cw_agent *a = ctx;
	const struct cw_conn *c = data;
	struct cw_conn *slot;

	if (len < sizeof(*c))
		return 0;
	/*
	 * The earliest this end may be seen (it opened and closed between two
	 * collections): its conntrack entry is still there (TIME_WAIT, CLOSE).
	 */
	agent_nat_resolve_closed(a, c);
	slot = cw_htab_upsert(&a->pending, &c->cookie, NULL);
	if (slot)
		*slot = *c;
	return 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct cw_agent *a = ctx;
	const struct cw_io_event *e = data;
	uint64_t *sum;

	if (len < sizeof(*e))
		return 0;
	sum = cw_htab_upsert(&a->event_sums, &e->cookie, NULL);
	if (sum)
		*sum += e->bytes;
	a->event_bytes += e->bytes;
	a->st.events++;
	return 0;
}

struct msg_list {
	struct cw_msg_event *ev;
	size_t n, cap;
};

static int on_msg(void *ctx, void *data, size_t len)
{
	struct cw_agent *a = ctx;
	const struct cw_msg_event *e = data;
	struct msg_list *l;

	if (len < sizeof(*e))
		return 0;
	l = cw_htab_upsert(&a->timing, &e->cookie, NULL);
	if (!l)
		return 0;
	if (CW_GROW(l->ev, l->cap, l->n + 1, 64))
		return 0;
	l->ev[l->n++] = *e;
	cw_xchg_note_msg(&a->xchg, e);
	return 0;
}

static int attach_all(struct cw_agent *a, const struct cw_kernel_caps *caps,
		      bool udp)
{
	bool use_hash = a->skel->rodata->use_sk_hash;
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, a->skel->obj)
	{
		if (!bpf_program__autoload(prog) ||
		    prog == a->skel->progs.cw_udp_egress ||
		    prog == a->skel->progs.cw_udp_ingress ||
		    prog == a->skel->progs.cw_scan_files ||
		    prog == a->skel->progs.cw_collect)
			continue;
		if (is_io_prog(prog) && a->nio < MAX_IO_LINKS) {
			a->io_progs[a->nio++] = prog;
			continue;
		}
		err = attach_prog(a, prog);
		if (err)
			return err;
	}
	/*
	 * Only the aggregate mode on socket storage can do without them: the
	 * kprobe variant sums bytes per call, per-event mode is per call.
	 */
	if (a->hooks == CW_HOOKS_ALWAYS || a->mode != CW_MODE_AGGREGATE ||
	    use_hash) {
		err = hooks_attach(a);
		if (err)
			return err;
	}
	if (udp) {
		err = attach_udp(a, caps->cgroup2_path);
		if (err)
			return err;
	}
	if (bpf_program__autoload(a->skel->progs.cw_collect)) {
		DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
		union bpf_iter_link_info info = {};

		info.map.map_fd = bpf_map__fd(a->skel->maps.conns);
		opts.link_info = &info;
		opts.link_info_len = sizeof(info);
		a->collect_link = bpf_program__attach_iter(
			a->skel->progs.cw_collect, &opts);
		if (!a->collect_link)
			return cw_error(
				"unable to attach collection iterator: %s",
				strerror(errno));
	}
	if (bpf_program__autoload(a->skel->progs.cw_scan_files)) {
		a->scan_link = bpf_program__attach_iter(
			a->skel->progs.cw_scan_files, NULL);
		if (!a->scan_link)
			return cw_error("unable to attach file scan: %s",
					strerror(errno));
	}
	if (a->mode == CW_MODE_PER_EVENT)
		a->rb = ring_buffer__new(bpf_map__fd(a->skel->maps.events),
					 on_event, a, NULL);
	else
		a->rb = ring_buffer__new(bpf_map__fd(a->skel->maps.closed),
					 on_closed, a, NULL);
	if (!a->rb)
		return cw_error("unable to open ring buffer: %s",
				strerror(errno));
	if (a->mode == CW_MODE_AGGREGATE) {
		a->timing_rb = ring_buffer__new(
			bpf_map__fd(a->skel->maps.timing), on_msg, a, NULL);
		if (!a->timing_rb)
			return cw_error("unable to open timing ring: %s",
					strerror(errno));
	}
	return 0;
}

static void detach_all(struct cw_agent *a)
{
	int i;

	ring_buffer__free(a->rb);
	ring_buffer__free(a->timing_rb);
	a->rb = a->timing_rb = NULL;
	bpf_link__destroy(a->collect_link);
	bpf_link__destroy(a->scan_link);
	a->collect_link = a->scan_link = NULL;
	hooks_detach(a);
	a->nio = 0;
	for (i = a->nlinks - 1; i >= 0; i--)
		bpf_link__destroy(a->links[i]);
	a->nlinks = 0;
	if (a->cgroup_fd >= 0)
		close(a->cgroup_fd);
	a->cgroup_fd = -1;
	conn_bpf__destroy(a->skel);
	a->skel = NULL;
}

/* Run an iterator to the end; each record of `size` goes to fn. */
int agent_run_iter(struct bpf_link *link, size_t size,
		   void (*fn)(struct cw_agent *, const void *),
		   struct cw_agent *a)
{
	char buf[64 * 1024];
	size_t have = 0, off;
	ssize_t n;
	int fd = bpf_iter_create(bpf_link__fd(link));

	if (fd < 0)
		return cw_error("unable to start iterator: %s",
				strerror(errno));
	for (;;) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			close(fd);
			return cw_error("iterator read failed: %s",
					strerror(err));
		}
		if (n == 0)
			break;
		have += (size_t)n;
		for (off = 0; fn && off + size <= have; off += size)
			fn(a, buf + off);
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	close(fd);
	return 0;
}

int agent_scan_files(struct cw_agent *a)
{
	int rc;

	if (!a->scan_link)
		return 0;
	a->need_scan = false;
	rc = agent_run_iter(a->scan_link, 1, NULL, a);
	/* From now on an unknown established end was born unseen. */
	a->skel->bss->scan_late = true;
	return rc;
}

static const char *pinned_maps[] = {"conns", "conn_hash", "closed", "udp_flows",
				    "stats"};

/* The folder must be on bpffs; mount it at /sys/fs/bpf if that is bare. */
static int prepare_pin_dir(const char *dir)
{
	struct statfs fs;

	if (statfs("/sys/fs/bpf", &fs) == 0 && fs.f_type != BPF_FS_MAGIC &&
	    !strncmp(dir, "/sys/fs/bpf/", 12) &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL))
		return cw_error("unable to mount bpffs on /sys/fs/bpf: %s",
				strerror(errno));
	if (cw_mkdir_p(dir))
		return -1;
	if (statfs(dir, &fs) || fs.f_type != BPF_FS_MAGIC)
		return cw_error("--pin '%s': not on a bpf filesystem", dir);
	return 0;
}

static int set_pins(struct conn_bpf *skel, const char *dir)
{
	char path[512];
	struct bpf_map *m;
	size_t i;

	for (i = 0; i < CW_ARRAY_SIZE(pinned_maps); i++) {
		m = bpf_object__find_map_by_name(skel->obj, pinned_maps[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, pinned_maps[i]);
		if (!m || bpf_map__set_pin_path(m, path))
			return cw_error("unable to pin '%s'", path);
	}
	return 0;
}

/* NAT is undone unless turned off (by callers whose opts know no_nat). */
static bool want_nat(const struct cw_agent_opts *o)
{
	if (o->mode != CW_MODE_AGGREGATE)
		return false;
	return o->sz < offsetof(struct cw_agent_opts, no_nat) +
			       sizeof(o->no_nat) ||
	       !o->no_nat;
}

/* The variants to try, cheapest first: how many, or -1 after a message. */
static int variant_order(enum cw_attach want, const struct cw_kernel_caps *caps,
			 enum cw_attach order[3])
{
	int n = 0;

	if (want == CW_ATTACH_KPROBE && !caps->kprobe_pmu)
		return cw_error("--attach kprobe: %s", caps->kprobe_err);
	if (want == CW_ATTACH_FENTRY && !caps->fentry_loads)
		return cw_error("--attach fentry: the kernel refuses fentry "
				"programs (%s)",
				caps->fentry_err);
	if (want == CW_ATTACH_TRACEPOINT && !caps->tp_btf_loads)
		return cw_error("--attach tracepoint: the kernel lacks "
				"sock:sock_send_length (needs >= 6.5)");
	if (want == CW_ATTACH_AUTO) {
		if (caps->fentry_loads)
			order[n++] = CW_ATTACH_FENTRY;
		if (caps->kprobe_pmu && caps->kprobe_loads)
			order[n++] = CW_ATTACH_KPROBE;
		if (caps->tp_btf_loads)
			order[n++] = CW_ATTACH_TRACEPOINT;
		if (!n)
			return cw_error("this kernel allows none of fentry, "
					"kprobe or tp_btf programs");
	} else {
		order[n++] = want;
	}
	return n;
}

/*
 * Configure, load and attach the opened skeleton as variant v: 0, or -1
 * after a message or with libbpf's error code in *kerr, converted where it
 * is received (its -EPERM would read as our "already reported" -1).
 */
static int load_variant(struct cw_agent *a, const struct cw_agent_opts *opts,
			const struct cw_kernel_caps *caps, enum cw_attach v,
			bool udp, int *kerr)
{
	int err;

	*kerr = 0;
	a->skel->rodata->target_netns = opts->netns;
	a->skel->rodata->msg_gap_ns = opts->msg_gap_ns;
	a->skel->rodata->self_tgid = (__u32)getpid();
	a->skel->rodata->count_sampled =
		a->hooks == CW_HOOKS_SAMPLED && opts->mode == CW_MODE_AGGREGATE;
	/* kprobe variant: socket ids count up from now (conn.bpf.c). */
	a->skel->rodata->sk_id_base = cw_now_real_ns();
	err = cw_variant_prepare(a->skel, v, opts->mode, udp,
				 opts->mode == CW_MODE_AGGREGATE &&
					 caps->task_file_iter);
	/* RSTs sent (connection health): a tp_btf hook, in both variants
	 * that have tp_btf; per RST, never per call. */
	if (!err)
		bpf_program__set_autoload(a->skel->progs.cw_tp_send_reset,
					  v == CW_ATTACH_TRACEPOINT ||
						  v == CW_ATTACH_FENTRY);
	if (!err && opts->pin_dir)
		err = set_pins(a->skel, opts->pin_dir);
	if (!err) {
		*kerr = -conn_bpf__load(a->skel);
		err = *kerr ? -1 : 0;
	}
	if (!err)
		err = attach_all(a, caps, udp);
	return err;
}

/*
 * Load and attach the first variant of order[n] that works: 0, or -1 after
 * a message, with the kernel's refusal (an errno) in *kerr when that is why.
 */
static int load_first(struct cw_agent *a, const struct cw_agent_opts *opts,
		      const struct cw_kernel_caps *caps,
		      const enum cw_attach *order, int n, bool udp, int *kerr)
{
	int i, err = -1;

	for (i = 0; i < n; i++) {
		a->skel = conn_bpf__open();
		if (!a->skel)
			return cw_error("unable to open BPF object: %s",
					strerror(errno));
		err = load_variant(a, opts, caps, order[i], udp, kerr);
		if (!err) {
			a->attach = order[i];
			return 0;
		}
		cw_debug("variant '%s' failed: %s", cw_attach_name(order[i]),
			 *kerr ? strerror(*kerr) : "see messages above");
		detach_all(a);
	}
	return cw_error("unable to load and attach the '%s' programs: %s",
			cw_attach_name(order[n - 1]),
			*kerr ? strerror(*kerr) : "see messages above");
}

/* *kerr: the kernel's refusal (an errno), if that is why it failed. */
static int agent_open(struct cw_agent **out, const struct cw_agent_opts *opts,
		      int *kerr)
{
	static const int keep[] = {CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN};
	enum cw_attach order[3];
	struct cw_kernel_caps caps;
	struct cw_agent *a;
	int n;
	bool udp;

	if (cw_probe_kernel(&caps))
		return -1;
	n = variant_order(opts->attach, &caps, order);
	if (n < 0)
		return -1;

	a = calloc(1, sizeof(*a));
	if (!a)
		return cw_error("out of memory");
	a->cgroup_fd = -1;
	a->mode = opts->mode;
	if (opts->sz >=
	    offsetof(struct cw_agent_opts, hooks) + sizeof(opts->hooks))
		a->hooks = opts->hooks == CW_HOOKS_ALWAYS ? CW_HOOKS_ALWAYS
							  : CW_HOOKS_SAMPLED;
	cw_htab_init(&a->pending, sizeof(uint64_t), sizeof(struct cw_conn));
	cw_htab_init(&a->event_sums, sizeof(uint64_t), sizeof(uint64_t));
	cw_htab_init(&a->timing, sizeof(uint64_t), sizeof(struct msg_list));
	cw_htab_init(&a->est_ends, sizeof(uint64_t), sizeof(struct est_end));
	cw_htab_init(&a->est_svcs, sizeof(struct svc_key),
		     sizeof(struct est_ratio));
	cw_htab_init(&a->rtt_ends, sizeof(uint64_t), sizeof(struct rtt_end));
	snprintf(a->host, sizeof(a->host), "%s",
		 opts->host ? opts->host : cw_host_id());
	if (cw_boot_id_read(a->boot_id, sizeof(a->boot_id)))
		cw_warn("records carry no boot id");
	udp = !opts->no_udp && caps.cgroup2 && opts->mode == CW_MODE_AGGREGATE;
	if (!opts->no_udp && !caps.cgroup2)
		cw_warn("no cgroup v2 mount: UDP traffic is not counted");
	if (opts->pin_dir && prepare_pin_dir(opts->pin_dir))
		goto fail;
	if (load_first(a, opts, &caps, order, n, udp, kerr))
		goto fail;
	a->mono_to_real = cw_mono_to_real_offset();
	a->since_mono = 0;
	/* The kprobe variant's per-call programs never leave: exact. */
	a->estimating =
		a->skel->rodata->count_sampled && !a->skel->rodata->use_sk_hash;
	/* Without the window's reset of the direction, starts are exact. */
	cw_xchg_init(&a->xchg, !a->skel->rodata->count_sampled);
	if (agent_scan_files(a))
		cw_warn("connections open before the agent are not counted");
	/* Entering the watched namespace needs CAP_SYS_ADMIN: before the drop.
	 */
	if (want_nat(opts) && cw_nat_open(&a->nat, opts->netns)) {
		detach_all(a);
		goto fail;
	}
	if (!opts->keep_caps && cw_drop_caps(keep, (int)CW_ARRAY_SIZE(keep)))
		cw_warn("unable to drop capabilities");
	*out = a;
	return 0;
fail:
	cw_htab_release(&a->timing);
	cw_htab_release(&a->est_ends);
	cw_htab_release(&a->est_svcs);
	agent_health_release(a);
	cw_htab_release(&a->pending);
	cw_htab_release(&a->event_sums);
	free(a);
	return -1;
}

int cw_agent_open(struct cw_agent **out, const struct cw_agent_opts *opts)
{
	int kerr = 0;

	if (!agent_open(out, opts, &kerr))
		return 0;
	errno = kerr;
	return -1;
}

enum cw_attach cw_agent_attach(const struct cw_agent *a)
{
	return a->attach;
}

const char *cw_agent_host(const struct cw_agent *a)
{
	return a->host;
}

uint64_t cw_agent_event_bytes(const struct cw_agent *a)
{
	return a->event_bytes;
}

int cw_agent_poll(struct cw_agent *a, int timeout_ms)
{
	int n = ring_buffer__poll(a->rb, timeout_ms);

	if (n < 0 && n != -EINTR)
		return cw_error("ring buffer poll failed: %s", strerror(-n));
	if (a->timing_rb && a->window_ns)
		ring_buffer__consume(a->timing_rb);
	return 0;
}

uint64_t cw_window_next(uint64_t now_real, uint64_t period)
{
	return (now_real / period + 1) * period;
}

int cw_agent_window_open(struct cw_agent *a, uint64_t duration_ns)
{
	uint64_t now;

	if (!a->timing_rb)
		return cw_error("timing windows need the aggregate mode");
	/* Attached before the window's clock starts: it sees all of it. */
	if (hooks_attach(a))
		return -1;
	now = cw_now_mono_ns();
	a->window_start_real = cw_now_real_ns();
	a->window_ns = duration_ns;
	a->window_end_mono = now + duration_ns;
	a->skel->bss->window_end_ns = a->window_end_mono;
	cw_xchg_window_open(&a->xchg, a->window_end_mono);
	return 0;
}

bool cw_agent_window_done(const struct cw_agent *a)
{
	return a->window_ns && cw_now_mono_ns() >= a->window_end_mono;
}

static void free_timing(struct cw_agent *a)
{
	size_t i;

	for (i = 0; i < a->timing.len; i++)
		free(((struct msg_list *)cw_htab_val(&a->timing, i))->ev);
	cw_htab_release(&a->timing);
}

static int cmp_event(const void *x, const void *y)
{
	const struct cw_msg_event *a = x, *b = y;

	return a->ts_ns < b->ts_ns ? -1 : a->ts_ns > b->ts_ns;
}

/* Sizes: the next start in the same direction minus this one's. */
static void fill_sizes(const struct msg_list *l, struct cw_msg_obs *out,
		       int64_t to_real)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		out[i].ts_ns = (uint64_t)((int64_t)l->ev[i].ts_ns + to_real);
		out[i].dir = (uint8_t)l->ev[i].dir;
		out[i].bytes = 0;
		for (j = i + 1; j < l->n; j++) {
			if (l->ev[j].dir == l->ev[i].dir) {
				out[i].bytes =
					(uint32_t)(l->ev[j].bytes_before -
						   l->ev[i].bytes_before);
				break;
			}
		}
	}
}

int cw_agent_window_collect(struct cw_agent *a, cw_timing_fn fn, void *ctx)
{
	struct cw_timing_record t;
	struct msg_list *l;
	size_t i;
	int err = 0;

	if (!a->window_ns)
		return 0;
	a->skel->bss->window_end_ns = 0;
	if (a->hooks == CW_HOOKS_SAMPLED && a->mode == CW_MODE_AGGREGATE &&
	    !a->skel->rodata->use_sk_hash)
		hooks_detach(a);
	ring_buffer__consume(a->timing_rb);
	for (i = 0; i < a->timing.len && !err; i++) {
		l = cw_htab_val(&a->timing, i);
		memset(&t, 0, sizeof(t));
		snprintf(t.host, sizeof(t.host), "%s", a->host);
		memcpy(t.boot_id, a->boot_id, sizeof(t.boot_id));
		t.cookie = *(uint64_t *)cw_htab_key(&a->timing, i);
		t.window_start_ns = a->window_start_real;
		t.window_ns = a->window_ns;
		qsort(l->ev, l->n, sizeof(*l->ev), cmp_event);
		t.msgs = calloc(l->n ? l->n : 1, sizeof(*t.msgs));
		if (!t.msgs) {
			err = cw_error("out of memory");
			break;
		}
		fill_sizes(l, t.msgs, a->mono_to_real);
		t.n = l->n;
		err = fn(&t, ctx);
		free(t.msgs);
	}
	free_timing(a);
	cw_htab_init(&a->timing, sizeof(uint64_t), sizeof(struct msg_list));
	cw_xchg_window_close(&a->xchg);
	a->window_ns = 0;
	a->st.windows++;
	return err;
}

void cw_agent_stats(const struct cw_agent *a, struct cw_agent_stats *st)
{
	struct cw_nat_stats ns;

	*st = a->st;
	cw_nat_stats(a->nat, &ns);
	st->nat_lookups = ns.lookups;
	st->nat_undone = ns.undone;
	st->nat_snat = ns.snat;
	st->nat_errors = ns.errors;
}

void cw_agent_close(struct cw_agent *a)
{
	if (!a)
		return;
	detach_all(a);
	cw_nat_free(a->nat);
	cw_htab_release(&a->est_ends);
	cw_htab_release(&a->est_svcs);
	agent_health_release(a);
	cw_htab_release(&a->pending);
	cw_htab_release(&a->event_sums);
	free_timing(a);
	cw_xchg_release(&a->xchg);
	free(a);
}
