// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hist.h"
#include "common/record.h"

const char *cw_addr_str(const struct cw_addr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->family == 6 ? AF_INET6 : AF_INET, a->bytes, buf,
		       (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int cw_addr_parse(struct cw_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->bytes) == 1) {
		a->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->bytes) == 1) {
		cw_addr_from_raw(a, AF_INET6, a->bytes);
		return 0;
	}
	return -1;
}

void cw_addr_from_raw(struct cw_addr *a, int af, const uint8_t raw[16])
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0,    0,
					     0, 0, 0, 0, 0xff, 0xff};
	uint8_t tmp[16];

	memcpy(tmp, raw, 16);
	memset(a, 0, sizeof(*a));
	if (af == AF_INET6 && !memcmp(tmp, v4mapped, 12)) {
		a->family = 4;
		memcpy(a->bytes, tmp + 12, 4);
	} else if (af == AF_INET6) {
		a->family = 6;
		memcpy(a->bytes, tmp, 16);
	} else {
		a->family = 4;
		memcpy(a->bytes, tmp, 4);
	}
}

bool cw_addr_is_local(const struct cw_addr *a)
{
	static const uint8_t loop6[16] = {[15] = 1};

	if (a->family == 4)
		return a->bytes[0] == 127 ||
		       (a->bytes[0] == 169 && a->bytes[1] == 254);
	if (a->family == 6)
		return !memcmp(a->bytes, loop6, sizeof(loop6)) ||
		       (a->bytes[0] == 0xfe && (a->bytes[1] & 0xc0) == 0x80);
	return false;
}

int cw_addr_cmp(const struct cw_addr *a, const struct cw_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->bytes, b->bytes, a->family == 6 ? 16 : 4);
}

const char *cw_role_name(int role)
{
	switch (role) {
	case CW_REC_ROLE_CLIENT:
		return "client";
	case CW_REC_ROLE_SERVER:
		return "server";
	default:
		return "unknown";
	}
}

const char *cw_proto_name(int protocol)
{
	return protocol == 6 ? "tcp" : protocol == 17 ? "udp" : "other";
}

/* Workload identity only where the agent found it: older readers and
 * outputs of processes outside containers stay as they were. */
static void process_identity_json(struct cw_jsonw *w,
				  const struct cw_process *p)
{
	static const struct {
		const char *key;
		size_t off;
	} ids[] = {
		{"container_name", offsetof(struct cw_process, container_name)},
		{"pod_name", offsetof(struct cw_process, pod_name)},
		{"namespace", offsetof(struct cw_process, pod_ns)},
		{"workload_kind", offsetof(struct cw_process, workload_kind)},
		{"workload", offsetof(struct cw_process, workload)},
	};
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *v = (const char *)p + ids[i].off;

		if (*v)
			cw_jsonw_str(w, ids[i].key, v);
	}
}

void cw_process_json(struct cw_jsonw *w, uint32_t flags,
		     const struct cw_process *p)
{
	cw_jsonw_obj_open(w, "process");
	if (flags & CW_REC_NO_OWNER) {
		cw_jsonw_null(w, "pid");
	} else {
		cw_jsonw_u64(w, "pid", p->tgid);
		cw_jsonw_u64(w, "start_ns", p->start_ns);
		cw_jsonw_str(w, "comm", p->comm);
		cw_jsonw_str(w, "cmdline", p->cmdline);
		cw_jsonw_u64(w, "cgroup_id", p->cgroup_id);
		cw_jsonw_str(w, "container", p->container);
		cw_jsonw_str(w, "pod", p->pod);
		process_identity_json(w, p);
	}
	cw_jsonw_obj_close(w);
}

const char *cw_rec_fail_name(int fail)
{
	switch (fail) {
	case CW_REC_FAIL_NONE:
		return "none";
	case CW_REC_FAIL_REFUSED:
		return "refused";
	case CW_REC_FAIL_TIMEOUT:
		return "timeout";
	}
	return "failed";
}

void cw_hist_quantiles_json(struct cw_jsonw *w, const char *name,
			    const struct cw_hist *h)
{
	static const struct {
		const char *sfx;
		double q;
	} qs[] = {{"p50_ns", 0.5}, {"p90_ns", 0.9}, {"p99_ns", 0.99}};
	char key[64];
	size_t i;

	snprintf(key, sizeof(key), "%s_count", name);
	cw_jsonw_u64(w, key, h->count);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		snprintf(key, sizeof(key), "%s_%s", name, qs[i].sfx);
		cw_jsonw_u64(w, key, cw_hist_quantile(h, qs[i].q));
	}
}

void cw_rec_hist_json(struct cw_jsonw *w, const char *key,
		      const struct cw_rec_hist *r)
{
	struct cw_hist h = CW_HIST_INIT;
	size_t i;

	/* A malformed one (never from the codec) shows as empty. */
	if (cw_rec_hist_get(r, &h))
		cw_hist_reset(&h);
	cw_jsonw_obj_open(w, key);
	cw_jsonw_u64(w, "count", h.count);
	cw_jsonw_u64(w, "p50_ns", cw_hist_quantile(&h, 0.5));
	cw_jsonw_u64(w, "p90_ns", cw_hist_quantile(&h, 0.9));
	cw_jsonw_u64(w, "p99_ns", cw_hist_quantile(&h, 0.99));
	cw_jsonw_arr_open(w, "bins");
	for (i = 0; i < h.n; i++) {
		cw_jsonw_arr_open(w, NULL);
		cw_jsonw_u64(w, NULL, cw_hist_lower(h.bin[i].idx));
		cw_jsonw_u64(w, NULL, h.bin[i].count);
		cw_jsonw_arr_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	cw_hist_release(&h);
}

bool cw_rec_has_health(const struct cw_conn_record *r)
{
	return r->connect_us || r->fail || r->resets_in || r->resets_out ||
	       r->xchg_pipelined || r->rtt.len || r->xchg.len ||
	       r->xchg_first.len;
}

/* The health block: only when there is one, so older outputs stay. */
static void health_json(struct cw_jsonw *w, const struct cw_conn_record *r)
{
	if (!cw_rec_has_health(r))
		return;
	cw_jsonw_u64(w, "connect_us", r->connect_us);
	cw_jsonw_str(w, "fail", cw_rec_fail_name(r->fail));
	cw_jsonw_u64(w, "resets_in", r->resets_in);
	cw_jsonw_u64(w, "resets_out", r->resets_out);
	cw_jsonw_u64(w, "xchg_pipelined", r->xchg_pipelined);
	cw_rec_hist_json(w, "rtt", &r->rtt);
	cw_rec_hist_json(w, "xchg", &r->xchg);
	cw_rec_hist_json(w, "xchg_first", &r->xchg_first);
}

void cw_conn_record_json(struct cw_jsonw *w, const struct cw_conn_record *r)
{
	char buf[64];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "host", r->host);
	/* Absent when unknown: older outputs stay as they were. */
	if (r->boot_id[0])
		cw_jsonw_str(w, "boot_id", r->boot_id);
	cw_jsonw_u64(w, "netns", r->netns);
	cw_jsonw_u64(w, "cookie", r->cookie);
	cw_jsonw_u64(w, "seq", r->seq);
	cw_jsonw_str(w, "proto", cw_proto_name(r->protocol));
	cw_jsonw_str(w, "role", cw_role_name(r->role));
	cw_jsonw_str(w, "laddr", cw_addr_str(&r->laddr, buf, sizeof(buf)));
	cw_jsonw_u64(w, "lport", r->lport);
	cw_jsonw_str(w, "raddr", cw_addr_str(&r->raddr, buf, sizeof(buf)));
	cw_jsonw_u64(w, "rport", r->rport);
	cw_jsonw_u64(w, "bytes_out", r->bytes_out);
	cw_jsonw_u64(w, "bytes_in", r->bytes_in);
	cw_jsonw_u64(w, "calls_out", r->calls_out);
	cw_jsonw_u64(w, "calls_in", r->calls_in);
	cw_jsonw_u64(w, "msgs_out", r->msgs_out);
	cw_jsonw_u64(w, "msgs_in", r->msgs_in);
	cw_jsonw_u64(w, "first_ns", r->first_ns);
	cw_jsonw_u64(w, "last_ns", r->last_ns);
	cw_jsonw_u64(w, "retrans", r->retrans);
	cw_jsonw_u64(w, "srtt_us", r->srtt_us);
	cw_jsonw_bool(w, "closed", !!(r->flags & CW_REC_CLOSED));
	cw_jsonw_bool(w, "preexisting", !!(r->flags & CW_REC_PREEXISTING));
	cw_jsonw_bool(w, "nat", !!(r->flags & CW_REC_NAT));
	/* Only from agents that count in windows: older outputs unchanged.
	 * Any field of the block writes it all, so that what the reader
	 * took (common/record_read.c) is written back. */
	if (r->sampled_ppm || r->sampled_msgs_out || r->sampled_msgs_in ||
	    (r->flags & CW_REC_MSGS_EST)) {
		cw_jsonw_bool(w, "msgs_estimated",
			      !!(r->flags & CW_REC_MSGS_EST));
		cw_jsonw_u64(w, "sampled_msgs_out", r->sampled_msgs_out);
		cw_jsonw_u64(w, "sampled_msgs_in", r->sampled_msgs_in);
		cw_jsonw_u64(w, "sampled_ppm", r->sampled_ppm);
	}
	health_json(w, r);
	cw_process_json(w, r->flags, &r->proc);
	cw_jsonw_obj_close(w);
}

static void timing_msgs_json(struct cw_jsonw *w,
			     const struct cw_timing_record *t);

void cw_timing_record_json(struct cw_jsonw *w, const struct cw_timing_record *t)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "host", t->host);
	cw_jsonw_u64(w, "cookie", t->cookie);
	cw_jsonw_u64(w, "window_start_ns", t->window_start_ns);
	cw_jsonw_u64(w, "window_ns", t->window_ns);
	timing_msgs_json(w, t);
	cw_jsonw_obj_close(w);
}

static void timing_msgs_json(struct cw_jsonw *w,
			     const struct cw_timing_record *t)
{
	size_t i;

	cw_jsonw_arr_open(w, "msgs");
	for (i = 0; i < t->n; i++) {
		cw_jsonw_arr_open(w, NULL);
		cw_jsonw_u64(w, NULL, t->msgs[i].ts_ns);
		cw_jsonw_str(w, NULL,
			     t->msgs[i].dir == CW_OBS_OUT ? "out" : "in");
		cw_jsonw_u64(w, NULL, t->msgs[i].bytes);
		cw_jsonw_arr_close(w);
	}
	cw_jsonw_arr_close(w);
}

void cw_timing_window_json(struct cw_jsonw *w, const struct cw_timing_record *t)
{
	char buf[64];

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "timing");
	cw_jsonw_str(w, "host", t->host);
	if (t->boot_id[0])
		cw_jsonw_str(w, "boot_id", t->boot_id);
	cw_jsonw_u64(w, "netns", t->netns);
	cw_jsonw_u64(w, "cookie", t->cookie);
	cw_jsonw_u64(w, "seq", t->seq);
	cw_jsonw_u64(w, "slot_ns", t->slot_ns);
	cw_jsonw_u64(w, "window_start_ns", t->window_start_ns);
	cw_jsonw_u64(w, "window_end_ns", t->window_start_ns + t->window_ns);
	if (t->has_conn) {
		cw_jsonw_str(w, "proto", cw_proto_name(t->protocol));
		cw_jsonw_str(w, "role", cw_role_name(t->role));
		cw_jsonw_str(w, "laddr",
			     cw_addr_str(&t->laddr, buf, sizeof(buf)));
		cw_jsonw_u64(w, "lport", t->lport);
		cw_jsonw_str(w, "raddr",
			     cw_addr_str(&t->raddr, buf, sizeof(buf)));
		cw_jsonw_u64(w, "rport", t->rport);
		cw_jsonw_bool(w, "nat", !!(t->flags & CW_REC_NAT));
		cw_process_json(w, t->flags, &t->proc);
	}
	timing_msgs_json(w, t);
	cw_jsonw_obj_close(w);
}

void cw_timing_record_set_conn(struct cw_timing_record *t,
			       const struct cw_conn_record *r)
{
	t->has_conn = true;
	memcpy(t->boot_id, r->boot_id, sizeof(t->boot_id));
	t->netns = r->netns;
	t->protocol = r->protocol;
	t->role = r->role;
	t->flags = r->flags;
	t->laddr = r->laddr;
	t->raddr = r->raddr;
	t->lport = r->lport;
	t->rport = r->rport;
	t->proc = r->proc;
}
