// SPDX-License-Identifier: MIT
/*
 * Loader for bpf/sampler.bpf.c: open -> set rodata and map sizes -> load ->
 * fill the region trie -> attach on clsact -> start -> detach -> merge.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "agent/sampler.h"
#include "bpf/sampler.h"
#include "common/log.h"
#include "common/util.h"
#include "sampler.skel.h"

/* Our filters on clsact: a handle and priority of our own. */
#define CW_TC_HANDLE   0xc5a
#define CW_TC_PRIORITY 0xc5a
#define CW_DEF_FLOWS   16384

/* docs/samples.md gives the memory formula with this size. */
_Static_assert(sizeof(struct cw_sampler_bin) == 368, "bin size changed");

const uint64_t cw_sampler_schedule[3] = {
	10 * NSEC_PER_MSEC,
	1 * NSEC_PER_MSEC,
	100 * NSEC_PER_USEC,
};

struct cw_sampler_dev {
	char name[IF_NAMESIZE];
	int ifindex;
	bool hook_created; /* we made the clsact qdisc: we remove it */
	bool in_attached, out_attached;
};

struct cw_sampler {
	struct sampler_bpf *skel;
	struct cw_sampler_dev devs[CW_SAMPLER_MAX_DEVS];
	size_t n_devs;
	uint64_t interval_ns;
	uint32_t samples;
	uint64_t link_speed_bps;
	uint64_t start_mono_ns;
	bool regions;
};

static int add_dev(struct cw_sampler *s, const char *name)
{
	struct cw_sampler_dev *d;
	size_t i;

	for (i = 0; i < s->n_devs; i++)
		if (!strcmp(s->devs[i].name, name))
			return 0;
	if (s->n_devs == CW_SAMPLER_MAX_DEVS)
		return cw_error("too many interfaces (at most %d)",
				CW_SAMPLER_MAX_DEVS);
	if (strlen(name) >= IF_NAMESIZE)
		return cw_error("unknown interface '%s'", name);
	d = &s->devs[s->n_devs];
	d->ifindex = if_nametoindex(name);
	if (!d->ifindex)
		return cw_error("unknown interface '%s'", name);
	strcpy(d->name, name);
	s->n_devs++;
	return 0;
}

/* Every interface that is up, except loopback. */
static int add_all_devs(struct cw_sampler *s)
{
	char path[PATH_MAX], buf[32];
	struct dirent *de;
	unsigned long flags;
	DIR *dir;
	int err = 0;

	dir = opendir("/sys/class/net");
	if (!dir)
		return cw_error("unable to list '/sys/class/net': %s",
				strerror(errno));
	while (!err && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/flags",
			 de->d_name);
		if (cw_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		flags = strtoul(buf, NULL, 16);
		if (!(flags & IFF_UP) || (flags & IFF_LOOPBACK))
			continue;
		err = add_dev(s, de->d_name);
	}
	closedir(dir);
	if (!err && !s->n_devs)
		err = cw_error("no interface is up besides loopback");
	return err;
}

/* Sum of the interfaces' speeds, or 0 if any does not report one. */
static uint64_t link_speed(const struct cw_sampler *s)
{
	char path[PATH_MAX], buf[32];
	uint64_t sum = 0;
	long mbps;
	size_t i;

	for (i = 0; i < s->n_devs; i++) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/speed",
			 s->devs[i].name);
		if (cw_read_file(path, buf, sizeof(buf)) <= 0)
			return 0;
		mbps = strtol(buf, NULL, 10);
		if (mbps <= 0)
			return 0;
		sum += (uint64_t)mbps * 1000000;
	}
	return sum;
}

static int parse_prefix(const char *s, struct cw_region_key *k)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t len;
	int max;

	memset(k, 0, sizeof(*k));
	if (n >= sizeof(addr))
		return -1;
	memcpy(addr, s, n);
	addr[n] = 0;
	if (inet_pton(AF_INET, addr, &k->addr[12]) == 1) {
		k->addr[10] = k->addr[11] = 0xff;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, k->addr) == 1) {
		max = 128;
	} else {
		return -1;
	}
	len = max;
	if (slash && cw_parse_u64(slash + 1, 0, max, &len))
		return -1;
	k->prefixlen = len + 128 - max;
	return 0;
}

static int fill_regions(struct cw_sampler *s, const struct cw_sampler_opts *o)
{
	int fd = bpf_map__fd(s->skel->maps.regions);
	struct cw_region_key k;
	__u8 one = 1;
	size_t i;

	for (i = 0; i < o->n_in_region; i++) {
		if (parse_prefix(o->in_region[i], &k))
			return cw_error("bad in-region prefix '%s'",
					o->in_region[i]);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return cw_error("unable to add prefix '%s': %s",
					o->in_region[i], strerror(errno));
	}
	return 0;
}

static int check_opts(const struct cw_sampler_opts *o, struct cw_sampler *s)
{
	struct cw_region_key k;
	size_t i;

	s->interval_ns = o->interval_ns ?: CW_SAMPLER_DEF_INTERVAL_NS;
	s->samples = o->samples ?: CW_SAMPLER_DEF_SAMPLES;
	if (s->interval_ns < CW_SAMPLER_MIN_INTERVAL_NS ||
	    s->interval_ns > CW_SAMPLER_MAX_INTERVAL_NS)
		return cw_error("interval %" PRIu64 "ns is out of range "
				"(10us to 1s)",
				s->interval_ns);
	if (s->samples > CW_SAMPLER_MAX_SAMPLES)
		return cw_error("sample count %u is out of range (1 to %d)",
				s->samples, CW_SAMPLER_MAX_SAMPLES);
	if (o->n_in_region > CW_SAMPLER_MAX_PREFIXES)
		return cw_error("too many in-region prefixes (at most %d)",
				CW_SAMPLER_MAX_PREFIXES);
	for (i = 0; i < o->n_in_region; i++)
		if (parse_prefix(o->in_region[i], &k))
			return cw_error("bad in-region prefix '%s'",
					o->in_region[i]);
	s->regions = o->n_in_region > 0;
	return 0;
}

int cw_sampler_open(const struct cw_sampler_opts *o, struct cw_sampler **out)
{
	struct cw_sampler *s;
	bool loud = true;
	size_t i;
	int err;

	*out = NULL;
	if (!o || o->sz < sizeof(*o))
		return cw_error("sampler options of unknown size");
	s = calloc(1, sizeof(*s));
	if (!s)
		return cw_error("out of memory");
	err = check_opts(o, s);
	if (err)
		goto cleanup;
	for (i = 0; !err && i < o->n_devs; i++)
		err = add_dev(s, o->devs[i]);
	if (!err && !o->n_devs)
		err = add_all_devs(s);
	if (err)
		goto cleanup;
	s->link_speed_bps = o->link_speed_bps ?: link_speed(s);

	/* Every failure below is reported with its reason: libbpf's own
	 * warnings would only repeat it. */
	loud = cw_libbpf_logging(false);
	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = cw_error("unable to open the sampler BPF object: %s",
			       strerror(errno));
		goto cleanup;
	}
	s->skel->rodata->interval_ns = s->interval_ns;
	s->skel->rodata->nbins = s->samples;
	s->skel->rodata->has_regions = s->regions;
	err = bpf_map__set_max_entries(s->skel->maps.bins, s->samples);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.seq_end,
					       o->flow_entries ?: CW_DEF_FLOWS);
	if (err) {
		err = cw_error("unable to size the sampler maps: %s",
			       strerror(-err));
		goto cleanup;
	}
	err = sampler_bpf__load(s->skel);
	cw_libbpf_logging(loud);
	if (err) {
		err = cw_error("unable to load the sampler BPF programs: %s",
			       strerror(-err));
		goto cleanup;
	}
	err = fill_regions(s, o);
	if (err)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	cw_libbpf_logging(loud);
	cw_sampler_free(s);
	return err;
}

int cw_sampler_prog_fd(const struct cw_sampler *s, bool ingress)
{
	return bpf_program__fd(ingress ? s->skel->progs.cw_sampler_ingress
				       : s->skel->progs.cw_sampler_egress);
}

static int attach_one(struct cw_sampler *s, struct cw_sampler_dev *d,
		      bool ingress)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = d->ifindex,
		    .attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = CW_TC_HANDLE,
		    .priority = CW_TC_PRIORITY,
		    .prog_fd = cw_sampler_prog_fd(s, ingress));
	int err;

	err = bpf_tc_attach(&hook, &opts);
	if (err)
		return cw_error("unable to attach the sampler to '%s' %s: %s",
				d->name, ingress ? "ingress" : "egress",
				strerror(-err));
	if (ingress)
		d->in_attached = true;
	else
		d->out_attached = true;
	return 0;
}

int cw_sampler_attach(struct cw_sampler *s)
{
	bool loud;
	size_t i;
	int err = 0;

	for (i = 0; !err && i < s->n_devs; i++) {
		struct cw_sampler_dev *d = &s->devs[i];
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = d->ifindex,
			    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);

		/* clsact may be there already (EEXIST): not worth a warning. */
		loud = cw_libbpf_logging(false);
		err = bpf_tc_hook_create(&hook);
		cw_libbpf_logging(loud);
		if (err && err != -EEXIST) {
			err = cw_error("unable to add clsact to '%s': %s",
				       d->name, strerror(-err));
			break;
		}
		d->hook_created = !err;
		err = attach_one(s, d, true);
		if (!err)
			err = attach_one(s, d, false);
	}
	if (err)
		cw_sampler_detach(s);
	return err;
}

void cw_sampler_detach(struct cw_sampler *s)
{
	size_t i;

	if (s->skel)
		s->skel->bss->start_ns = 0;
	for (i = 0; i < s->n_devs; i++) {
		struct cw_sampler_dev *d = &s->devs[i];
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = d->ifindex);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = CW_TC_HANDLE,
			    .priority = CW_TC_PRIORITY);

		if (d->in_attached) {
			hook.attach_point = BPF_TC_INGRESS;
			bpf_tc_detach(&hook, &opts);
			d->in_attached = false;
		}
		if (d->out_attached) {
			hook.attach_point = BPF_TC_EGRESS;
			bpf_tc_detach(&hook, &opts);
			d->out_attached = false;
		}
		if (d->hook_created) {
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
			d->hook_created = false;
		}
	}
}

uint64_t cw_sampler_start(struct cw_sampler *s)
{
	s->start_mono_ns = cw_now_mono_ns();
	s->skel->bss->start_ns = s->start_mono_ns;
	return s->start_mono_ns;
}

uint32_t cw_sketch_estimate(const uint64_t bits[2], bool *saturated)
{
	unsigned int zeros = CW_SKETCH_BITS - __builtin_popcountll(bits[0]) -
			     __builtin_popcountll(bits[1]);

	*saturated = zeros == 0;
	if (!zeros)
		zeros = 1;
	return (uint32_t)lround(-(double)CW_SKETCH_BITS *
				log((double)zeros / CW_SKETCH_BITS));
}

/* Distinct flows over every CPU's sketch: exact while the lists hold. */
static uint32_t merge_flows(const struct cw_flow_sketch *const *cpu, int n,
			    bool *saturated)
{
	uint32_t ids[CW_SKETCH_EXACT], n_ids = 0, i, j, est;
	uint64_t bits[2] = {0, 0};
	bool exact = true;
	int c;

	for (c = 0; c < n; c++) {
		const struct cw_flow_sketch *s = cpu[c];

		bits[0] |= s->bits[0];
		bits[1] |= s->bits[1];
		if (s->n_exact > CW_SKETCH_EXACT)
			exact = false;
		for (i = 0; exact && i < s->n_exact; i++) {
			for (j = 0; j < n_ids; j++)
				if (ids[j] == s->exact[i])
					break;
			if (j < n_ids)
				continue;
			if (n_ids == CW_SKETCH_EXACT)
				exact = false;
			else
				ids[n_ids++] = s->exact[i];
		}
	}
	*saturated = false;
	if (exact)
		return n_ids;
	est = cw_sketch_estimate(bits, saturated);
	return est > CW_SKETCH_EXACT ? est : CW_SKETCH_EXACT + 1;
}

static void merge_bin(struct cw_sample_bin *out,
		      const struct cw_sampler_bin *vals, int ncpus)
{
	const struct cw_flow_sketch *sk[4][ncpus];
	bool sat;
	int c, r, f;

	memset(out, 0, sizeof(*out));
	for (c = 0; c < ncpus; c++) {
		const struct cw_sampler_bin *b = &vals[c];

		for (r = 0; r < CW_REGIONS; r++) {
			out->v[CW_SF_BYTES_IN + r] += b->bytes_in[r];
			out->v[CW_SF_BYTES_OUT + r] += b->bytes_out[r];
			out->v[CW_SF_ECN_IN + r] += b->ecn_in[r];
			out->v[CW_SF_RETRANS_IN + r] += b->retrans_in[r];
			out->v[CW_SF_RETRANS_OUT + r] += b->retrans_out[r];
			sk[r][c] = &b->flows_in[r];
			sk[2 + r][c] = &b->flows_out[r];
		}
	}
	for (f = 0; f < 4; f++) {
		out->v[CW_SF_FLOWS_FIRST + f] = merge_flows(sk[f], ncpus, &sat);
		if (sat)
			out->saturated |= 1 << f;
	}
}

static uint64_t stat_sum(struct cw_sampler *s, __u32 idx, uint64_t *vals)
{
	int fd = bpf_map__fd(s->skel->maps.stats), c, n;
	uint64_t sum = 0;

	n = libbpf_num_possible_cpus();
	if (bpf_map_lookup_elem(fd, &idx, vals))
		return 0;
	for (c = 0; c < n; c++)
		sum += vals[c];
	return sum;
}

static void run_describe(struct cw_sampler *s, struct cw_sample_run *run)
{
	size_t i, off = 0;

	if (gethostname(run->host, sizeof(run->host) - 1))
		strcpy(run->host, "unknown");
	for (i = 0; i < s->n_devs && off < sizeof(run->dev); i++)
		off += snprintf(run->dev + off, sizeof(run->dev) - off, "%s%s",
				i ? "," : "", s->devs[i].name);
	run->start_real_ns = s->start_mono_ns + cw_mono_to_real_offset();
	run->interval_ns = s->interval_ns;
	run->link_speed_bps = s->link_speed_bps;
	run->samples = s->samples;
	if (s->regions)
		run->flags |= CW_RUN_REGIONS;
}

int cw_sampler_collect(struct cw_sampler *s, uint32_t nbins,
		       struct cw_sample_run **out)
{
	int fd = bpf_map__fd(s->skel->maps.bins), ncpus, err = 0;
	struct cw_sampler_bin *vals = NULL;
	struct cw_sample_run *run = NULL;
	__u32 i;

	*out = NULL;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return cw_error("unable to count CPUs: %s", strerror(-ncpus));
	if (!nbins || nbins > s->samples)
		nbins = s->samples;
	vals = calloc(ncpus, sizeof(*vals));
	run = cw_sample_run_new(nbins);
	if (!vals || !run) {
		err = cw_error("out of memory");
		goto cleanup;
	}
	for (i = 0; i < nbins; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals)) {
			err = cw_error("unable to read sampler bin %u: %s", i,
				       strerror(errno));
			goto cleanup;
		}
		merge_bin(&run->bins[i], vals, ncpus);
	}
	run_describe(s, run);
	run->ncpus = ncpus;
	if (nbins < s->samples)
		run->flags |= CW_RUN_INTERRUPTED;
	run->past_end = stat_sum(s, CW_SSTAT_PAST_END, (uint64_t *)vals);
	run->seq_map_full = stat_sum(s, CW_SSTAT_SEQ_FULL, (uint64_t *)vals);
	*out = run;
	run = NULL;
cleanup:
	cw_sample_run_free(run);
	free(vals);
	return err;
}

int cw_sampler_reset(struct cw_sampler *s)
{
	int fd = bpf_map__fd(s->skel->maps.bins), ncpus, err = 0;
	struct cw_seq_key key, next;
	void *zero;
	__u32 i;

	s->skel->bss->start_ns = 0;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return cw_error("unable to count CPUs: %s", strerror(-ncpus));
	zero = calloc(ncpus, sizeof(struct cw_sampler_bin));
	if (!zero)
		return cw_error("out of memory");
	for (i = 0; !err && i < s->samples; i++)
		if (bpf_map_update_elem(fd, &i, zero, BPF_ANY))
			err = cw_error("unable to clear sampler bin %u: %s", i,
				       strerror(errno));
	fd = bpf_map__fd(s->skel->maps.stats);
	for (i = 0; !err && i < CW_SSTAT_MAX; i++)
		bpf_map_update_elem(fd, &i, zero, BPF_ANY);
	fd = bpf_map__fd(s->skel->maps.seq_end);
	while (!err && !bpf_map_get_next_key(fd, NULL, &key)) {
		next = key;
		bpf_map_delete_elem(fd, &next);
	}
	free(zero);
	return err;
}

void cw_sampler_free(struct cw_sampler *s)
{
	if (!s)
		return;
	cw_sampler_detach(s);
	sampler_bpf__destroy(s->skel);
	free(s);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = ns / NSEC_PER_SEC,
			      .tv_nsec = ns % NSEC_PER_SEC};

	nanosleep(&ts, NULL);
}

int cw_sampler_record(const struct cw_sampler_opts *opts,
		      struct cw_sample_run **out)
{
	struct cw_sampler *s = NULL;
	uint64_t start, end, now, nbins;
	char ibuf[32];
	int err;

	*out = NULL;
	err = cw_sampler_open(opts, &s);
	if (err)
		goto cleanup;
	err = cw_sampler_attach(s);
	if (err)
		goto cleanup;
	start = cw_sampler_start(s);
	end = start + s->samples * s->interval_ns;
	cw_info("recording %u bins of %s on %s", s->samples,
		cw_fmt_duration(s->interval_ns, ibuf, sizeof(ibuf)),
		s->n_devs == 1 ? s->devs[0].name : "several interfaces");
	while (!cw_stop && (now = cw_now_mono_ns()) < end)
		sleep_ns(end - now < 50 * NSEC_PER_MSEC ? end - now
							: 50 * NSEC_PER_MSEC);
	now = cw_now_mono_ns();
	cw_sampler_detach(s);
	nbins = now >= end
			? s->samples
			: (now - start + s->interval_ns - 1) / s->interval_ns;
	err = cw_sampler_collect(s, nbins ?: 1, out);
cleanup:
	cw_sampler_free(s);
	return err;
}
