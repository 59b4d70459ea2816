// SPDX-License-Identifier: MIT
/* DNS answers into names (agent/dns.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/dns.h"
#include "common/dns.h"
#include "common/log.h"
#include "common/util.h"
#include "bpf/dns.h"
#include "dns.skel.h"

struct cw_dns {
	struct dns_bpf *skel;
	struct bpf_link *link, *egress;
	struct ring_buffer *rb;
	int cgroup_fd;
	struct cw_dns_cache cache;
	char host[CW_HOST_LEN];
	char boot_id[CW_BOOT_ID_LEN];
	uint64_t seq;
	struct cw_dns_stats st; /* the user-space counters */
	/* During a poll: where the news goes. */
	cw_dns_name_fn fn;
	void *ctx;
	int err;
};

int cw_cgroup2_find(char *buf, size_t len)
{
	char dev[64], dir[256], type[32];
	FILE *fp = fopen("/proc/self/mounts", "r");
	int ret = -1;

	if (!fp)
		return -1;
	while (ret &&
	       fscanf(fp, "%63s %255s %31s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2"))
			ret = snprintf(buf, len, "%s", dir) < (int)len ? 0 : -1;
	fclose(fp);
	return ret;
}

/* One answer of a message: into the cache, and out when it is news. */
static void on_answer(const char *name, const struct cw_dns_answer *a,
		      void *arg)
{
	struct cw_dns *d = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_DNS};
	struct cw_wire_dns *n = &m.dns;
	int news;

	d->st.answers++;
	news = cw_dns_cache_learn(&d->cache, name, a, cw_now_mono_ns());
	if (news <= 0 || d->err)
		return;
	snprintf(n->host, sizeof(n->host), "%s", d->host);
	snprintf(n->boot_id, sizeof(n->boot_id), "%s", d->boot_id);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->addr.family = a->family == AF_INET6 ? 6 : 4;
	memcpy(n->addr.bytes, a->addr, a->family == AF_INET6 ? 16 : 4);
	n->ttl_s = a->ttl;
	n->time_ns = cw_now_real_ns();
	n->seq = ++d->seq;
	d->st.names++;
	if (d->fn && d->fn(n, d->ctx))
		d->err = -1;
}

static int on_datagram(void *ctx, void *data, size_t len)
{
	struct cw_dns *d = ctx;
	const struct cw_dns_ev *ev = data;
	int n;

	if (len < sizeof(*ev) || ev->len > CW_DNS_CAP)
		return 0;
	if (ev->full > ev->len) {
		d->st.cut++;
		n = cw_dns_parse_cut(ev->data, ev->len, on_answer, d);
	} else {
		n = cw_dns_parse(ev->data, ev->len, on_answer, d);
	}
	if (n < 0)
		d->st.malformed++;
	return 0;
}

static int attach(struct cw_dns *d, const char *cgroup2)
{
	char path[256];

	if (!cgroup2) {
		if (cw_cgroup2_find(path, sizeof(path)))
			return cw_error("--dns: no cgroup v2 mount to attach "
					"the DNS capture to");
		cgroup2 = path;
	}
	d->cgroup_fd = open(cgroup2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->cgroup_fd < 0)
		return cw_error("unable to open cgroup '%s': %m", cgroup2);
	d->skel = dns_bpf__open_and_load();
	if (!d->skel)
		return cw_error("unable to load the DNS capture: %s",
				strerror(errno));
	/* Queries first: an answer counts only if its query was seen. */
	d->egress = bpf_program__attach_cgroup(d->skel->progs.cw_dns_egress,
					       d->cgroup_fd);
	d->link = d->egress
			  ? bpf_program__attach_cgroup(
				    d->skel->progs.cw_dns_ingress, d->cgroup_fd)
			  : NULL;
	if (!d->link)
		return cw_error("unable to attach the DNS capture to '%s': %s",
				cgroup2, strerror(errno));
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.dns_ring),
				 on_datagram, d, NULL);
	if (!d->rb)
		return cw_error("unable to open the DNS ring: %s",
				strerror(errno));
	return 0;
}

int cw_dns_open(struct cw_dns **out, const struct cw_dns_opts *o)
{
	struct cw_dns *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return cw_error("out of memory");
	d->cgroup_fd = -1;
	cw_dns_cache_init(&d->cache,
			  o->cache_max ? o->cache_max : CW_DNS_CACHE_MAX,
			  CW_DNS_MIN_TTL, CW_DNS_MAX_TTL);
	snprintf(d->host, sizeof(d->host), "%s",
		 o->host ? o->host : cw_host_id());
	cw_boot_id_read(d->boot_id, sizeof(d->boot_id));
	if (attach(d, o->cgroup2)) {
		cw_dns_close(d);
		return -1;
	}
	*out = d;
	return 0;
}

int cw_dns_poll(struct cw_dns *d, cw_dns_name_fn fn, void *ctx)
{
	d->fn = fn;
	d->ctx = ctx;
	d->err = 0;
	ring_buffer__consume(d->rb);
	d->fn = NULL;
	return d->err;
}

void cw_dns_stats(const struct cw_dns *d, struct cw_dns_stats *st)
{
	int ncpu = libbpf_num_possible_cpus(), fd, i;
	uint64_t *v;
	uint32_t k;

	*st = d->st;
	st->evicted = d->cache.evicted;
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	fd = bpf_map__fd(d->skel->maps.dns_stats);
	for (k = 0; k < CW_DNS_STAT_MAX; k++) {
		uint64_t sum = 0;

		if (bpf_map_lookup_elem(fd, &k, v))
			continue;
		for (i = 0; i < ncpu; i++)
			sum += v[i];
		if (k == CW_DNS_STAT_SEEN)
			st->datagrams = sum;
		else if (k == CW_DNS_STAT_LOST)
			st->lost = sum;
		else if (k == CW_DNS_STAT_BAD)
			st->bad = sum;
		else if (k == CW_DNS_STAT_QUERIES)
			st->queries = sum;
		else
			st->unsolicited = sum;
	}
	free(v);
}

void cw_dns_report(const struct cw_dns *d)
{
	struct cw_dns_stats st;

	if (!d)
		return;
	cw_dns_stats(d, &st);
	cw_info("dns: %" PRIu64 " queries, %" PRIu64
		" datagrams from port 53 (%" PRIu64 " unsolicited, %" PRIu64
		" lost, %" PRIu64 " unreadable, %" PRIu64 " cut at 512 "
		"bytes), %" PRIu64 " malformed; %" PRIu64
		" answers learned, %" PRIu64 " names published, %" PRIu64
		" evicted",
		st.queries, st.datagrams, st.unsolicited, st.lost, st.bad,
		st.cut, st.malformed, st.answers, st.names, st.evicted);
}

void cw_dns_close(struct cw_dns *d)
{
	if (!d)
		return;
	ring_buffer__free(d->rb);
	bpf_link__destroy(d->link);
	bpf_link__destroy(d->egress);
	dns_bpf__destroy(d->skel);
	if (d->cgroup_fd >= 0)
		close(d->cgroup_fd);
	cw_dns_cache_release(&d->cache);
	free(d);
}
