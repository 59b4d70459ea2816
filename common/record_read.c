// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "common/hist.h"
#include "common/log.h"
#include "common/record_read.h"
#include "common/utf8.h"
#include "common/wire.h"

struct parse_ctx {
	struct json_object *obj;
	char *err;
	size_t errlen;
};

static int bad(struct parse_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct parse_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The member, NULL when absent (required: an error). */
static struct json_object *member(struct parse_ctx *c, struct json_object *o,
				  const char *key, bool required, int *err)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, key, &v) && v)
		return v;
	if (required)
		*err = bad(c, "missing field '%s'", key);
	return NULL;
}

static int get_u64(struct parse_ctx *c, struct json_object *o, const char *key,
		   bool required, uint64_t max, uint64_t *out)
{
	int err = 0;
	struct json_object *v = member(c, o, key, required, &err);

	*out = 0;
	if (!v)
		return err;
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0 || json_object_get_uint64(v) > max)
		return bad(c, "field '%s': want an integer 0..%llu", key,
			   (unsigned long long)max);
	*out = json_object_get_uint64(v);
	return 0;
}

static int get_u32(struct parse_ctx *c, struct json_object *o, const char *key,
		   bool required, uint64_t max, uint32_t *out)
{
	uint64_t v;
	int err = get_u64(c, o, key, required, max, &v);

	*out = (uint32_t)v;
	return err;
}

static int get_str(struct parse_ctx *c, struct json_object *o, const char *key,
		   bool required, char *buf, size_t size)
{
	int err = 0;
	struct json_object *v = member(c, o, key, required, &err);
	size_t len;

	buf[0] = '\0';
	if (!v)
		return err;
	if (!json_object_is_type(v, json_type_string))
		return bad(c, "field '%s': want a string", key);
	len = (size_t)json_object_get_string_len(v);
	if (len >= size || memchr(json_object_get_string(v), 0, len))
		return bad(c, "field '%s': want a string of at most %zu bytes",
			   key, size - 1);
	/* Names from any file: shown later, so clean (common/utf8.h). */
	cw_utf8_clean(buf, size, json_object_get_string(v), len);
	return 0;
}

static int get_flag(struct parse_ctx *c, struct json_object *o, const char *key,
		    uint32_t flag, uint32_t *flags)
{
	int err = 0;
	struct json_object *v = member(c, o, key, false, &err);

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return bad(c, "field '%s': want true or false", key);
	if (json_object_get_boolean(v))
		*flags |= flag;
	return 0;
}

static int get_addr(struct parse_ctx *c, struct json_object *o, const char *key,
		    struct cw_addr *a)
{
	char buf[64];

	if (get_str(c, o, key, true, buf, sizeof(buf)))
		return -1;
	if (cw_addr_parse(a, buf))
		return bad(c, "field '%s': '%s' is not an IPv4 or IPv6 address",
			   key, buf);
	return 0;
}

static int get_enum(struct parse_ctx *c, struct json_object *o, const char *key,
		    bool required, const char *const *names,
		    const uint8_t *values, size_t n, uint8_t *out)
{
	char buf[16];
	size_t i;

	*out = 0;
	if (get_str(c, o, key, required, buf, sizeof(buf)))
		return -1;
	if (!buf[0] && !required)
		return 0;
	for (i = 0; i < n; i++) {
		if (!strcmp(buf, names[i])) {
			*out = values[i];
			return 0;
		}
	}
	return bad(c, "field '%s': unknown value '%s'", key, buf);
}

/* A histogram as cw_rec_hist_json() writes it: its "bins" are read. */
static int get_hist(struct parse_ctx *c, struct json_object *o, const char *key,
		    struct cw_rec_hist *r)
{
	struct cw_hist h = CW_HIST_INIT;
	struct json_object *v, *bins, *pair, *x, *n;
	int err = 0;
	size_t i, len;

	r->len = 0;
	v = member(c, o, key, false, &err);
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_object_get_ex(v, "bins", &bins) ||
	    !json_object_is_type(bins, json_type_array))
		return bad(c, "field '%s': want an object with \"bins\"", key);
	len = json_object_array_length(bins);
	for (i = 0; i < len; i++) {
		pair = json_object_array_get_idx(bins, i);
		if (!json_object_is_type(pair, json_type_array) ||
		    json_object_array_length(pair) != 2)
			goto bad_bin;
		x = json_object_array_get_idx(pair, 0);
		n = json_object_array_get_idx(pair, 1);
		if (!json_object_is_type(x, json_type_int) ||
		    !json_object_is_type(n, json_type_int) ||
		    json_object_get_int64(x) < 0 ||
		    json_object_get_int64(n) < 0)
			goto bad_bin;
		if (cw_hist_add(&h, json_object_get_uint64(x),
				json_object_get_uint64(n)))
			goto oom;
	}
	if (cw_rec_hist_set(r, &h))
		goto oom;
	cw_hist_release(&h);
	return 0;
bad_bin:
	cw_hist_release(&h);
	return bad(c, "field '%s': bin %zu is not [value, count]", key, i);
oom:
	cw_hist_release(&h);
	return bad(c, "field '%s': out of memory", key);
}

/* The edge-health block (cw_conn_record_json's, all optional). */
static int get_health(struct parse_ctx *c, struct json_object *o,
		      struct cw_conn_record *r)
{
	static const char *const fails[] = {"none", "refused", "timeout",
					     "failed"};
	static const uint8_t fail_vals[] = {
		CW_REC_FAIL_NONE, CW_REC_FAIL_REFUSED, CW_REC_FAIL_TIMEOUT,
		UINT8_MAX};

	if (get_u32(c, o, "connect_us", false, UINT32_MAX, &r->connect_us) ||
	    get_enum(c, o, "fail", false, fails, fail_vals, 4, &r->fail) ||
	    get_u32(c, o, "resets_in", false, UINT32_MAX, &r->resets_in) ||
	    get_u32(c, o, "resets_out", false, UINT32_MAX, &r->resets_out) ||
	    get_u64(c, o, "xchg_pipelined", false, UINT64_MAX,
		    &r->xchg_pipelined) ||
	    get_hist(c, o, "rtt", &r->rtt) || get_hist(c, o, "xchg", &r->xchg) ||
	    get_hist(c, o, "xchg_first", &r->xchg_first))
		return -1;
	return 0;
}

/* The members of a "process" object that names its owner. */
static int process_fields(struct parse_ctx *c, struct json_object *v,
			  struct cw_process *p)
{
	if (get_u32(c, v, "pid", true, UINT32_MAX, &p->tgid) ||
	    get_u64(c, v, "start_ns", false, UINT64_MAX, &p->start_ns) ||
	    get_u64(c, v, "cgroup_id", false, UINT64_MAX, &p->cgroup_id) ||
	    get_str(c, v, "comm", false, p->comm, sizeof(p->comm)) ||
	    get_str(c, v, "cmdline", false, p->cmdline, sizeof(p->cmdline)) ||
	    get_str(c, v, "container", false, p->container,
		    sizeof(p->container)) ||
	    get_str(c, v, "pod", false, p->pod, sizeof(p->pod)) ||
	    get_str(c, v, "container_name", false, p->container_name,
		    sizeof(p->container_name)) ||
	    get_str(c, v, "pod_name", false, p->pod_name,
		    sizeof(p->pod_name)) ||
	    get_str(c, v, "namespace", false, p->pod_ns, sizeof(p->pod_ns)) ||
	    get_str(c, v, "workload_kind", false, p->workload_kind,
		    sizeof(p->workload_kind)) ||
	    get_str(c, v, "workload", false, p->workload, sizeof(p->workload)))
		return -1;
	return 0;
}

static int get_process(struct parse_ctx *c, struct json_object *o,
		       struct cw_conn_record *r)
{
	struct cw_process *p = &r->proc;
	struct json_object *v, *pid;
	int err = 0;

	v = member(c, o, "process", false, &err);
	if (v && !json_object_is_type(v, json_type_object))
		return bad(c, "field 'process': want an object");
	/* The writer says "pid": null when the owner is unknown. */
	if (!v || !json_object_object_get_ex(v, "pid", &pid) || !pid) {
		r->flags |= CW_REC_NO_OWNER;
		return 0;
	}
	return process_fields(c, v, p);
}

static int fill(struct parse_ctx *c, struct cw_conn_record *r)
{
	static const char *const protos[] = {"tcp", "udp", "other"};
	static const uint8_t proto_vals[] = {6, 17, 0};
	static const char *const roles[] = {"client", "server", "unknown"};
	static const uint8_t role_vals[] = {
		CW_REC_ROLE_CLIENT, CW_REC_ROLE_SERVER, CW_REC_ROLE_UNKNOWN};
	struct json_object *o = c->obj;
	uint32_t port;

	if (get_str(c, o, "host", true, r->host, sizeof(r->host)) ||
	    get_str(c, o, "boot_id", false, r->boot_id, sizeof(r->boot_id)) ||
	    get_u32(c, o, "netns", false, UINT32_MAX, &r->netns) ||
	    get_u64(c, o, "cookie", true, UINT64_MAX, &r->cookie) ||
	    get_u64(c, o, "seq", false, UINT64_MAX, &r->seq) ||
	    get_enum(c, o, "proto", true, protos, proto_vals, 3,
		     &r->protocol) ||
	    get_enum(c, o, "role", false, roles, role_vals, 3, &r->role) ||
	    get_addr(c, o, "laddr", &r->laddr) ||
	    get_u32(c, o, "lport", true, 65535, &port))
		return -1;
	r->lport = (uint16_t)port;
	if (get_addr(c, o, "raddr", &r->raddr) ||
	    get_u32(c, o, "rport", true, 65535, &port))
		return -1;
	r->rport = (uint16_t)port;
	if (get_u64(c, o, "bytes_out", true, UINT64_MAX, &r->bytes_out) ||
	    get_u64(c, o, "bytes_in", true, UINT64_MAX, &r->bytes_in) ||
	    get_u64(c, o, "calls_out", false, UINT64_MAX, &r->calls_out) ||
	    get_u64(c, o, "calls_in", false, UINT64_MAX, &r->calls_in) ||
	    get_u64(c, o, "msgs_out", false, UINT64_MAX, &r->msgs_out) ||
	    get_u64(c, o, "msgs_in", false, UINT64_MAX, &r->msgs_in) ||
	    get_u64(c, o, "first_ns", false, UINT64_MAX, &r->first_ns) ||
	    get_u64(c, o, "last_ns", false, UINT64_MAX, &r->last_ns) ||
	    get_u32(c, o, "retrans", false, UINT32_MAX, &r->retrans) ||
	    get_u32(c, o, "srtt_us", false, UINT32_MAX, &r->srtt_us) ||
	    get_flag(c, o, "closed", CW_REC_CLOSED, &r->flags) ||
	    get_flag(c, o, "preexisting", CW_REC_PREEXISTING, &r->flags) ||
	    get_flag(c, o, "nat", CW_REC_NAT, &r->flags) ||
	    get_flag(c, o, "msgs_estimated", CW_REC_MSGS_EST, &r->flags) ||
	    get_u64(c, o, "sampled_msgs_out", false, UINT64_MAX,
		    &r->sampled_msgs_out) ||
	    get_u64(c, o, "sampled_msgs_in", false, UINT64_MAX,
		    &r->sampled_msgs_in) ||
	    get_u32(c, o, "sampled_ppm", false, CW_PPM, &r->sampled_ppm))
		return -1;
	if (r->last_ns < r->first_ns)
		return bad(c, "last_ns is before first_ns");
	if (get_health(c, o, r))
		return -1;
	return get_process(c, o, r);
}

/* {"kind":"host", ...} as cw_wire_msg_json() writes it. */
static int fill_host(struct parse_ctx *c, struct cw_host_meta *h)
{
	struct json_object *o = c->obj;

	memset(h, 0, sizeof(*h));
	if (get_str(c, o, "host", true, h->host, sizeof(h->host)) ||
	    get_str(c, o, "hostname", false, h->hostname,
		    sizeof(h->hostname)) ||
	    get_str(c, o, "kernel", false, h->kernel, sizeof(h->kernel)) ||
	    get_str(c, o, "agent_version", false, h->agent_version,
		    sizeof(h->agent_version)) ||
	    get_u32(c, o, "cpus", false, UINT32_MAX, &h->cpus) ||
	    get_u64(c, o, "mem_bytes", false, UINT64_MAX, &h->mem_bytes) ||
	    get_u64(c, o, "time_ns", false, UINT64_MAX, &h->time_ns) ||
	    get_u64(c, o, "seq", false, UINT64_MAX, &h->seq))
		return -1;
	return 0;
}

/* {"kind":"process", ...}: a process's usage at time_ns. */
static int fill_proc(struct parse_ctx *c, struct cw_proc_meta *m)
{
	static const char *const sources[] = {"proc", "cgroup"};
	static const uint8_t source_vals[] = {CW_USAGE_PROC, CW_USAGE_CGROUP};
	struct json_object *o = c->obj, *v;
	int err = 0;

	memset(m, 0, sizeof(*m));
	if (get_str(c, o, "host", true, m->host, sizeof(m->host)) ||
	    get_u64(c, o, "seq", false, UINT64_MAX, &m->seq) ||
	    get_u64(c, o, "rss_bytes", false, UINT64_MAX, &m->rss_bytes) ||
	    get_u64(c, o, "cpu_ns", false, UINT64_MAX, &m->cpu_ns) ||
	    get_u64(c, o, "time_ns", true, UINT64_MAX, &m->time_ns) ||
	    get_u64(c, o, "rss_hwm_bytes", false, UINT64_MAX,
		    &m->rss_hwm_bytes) ||
	    get_enum(c, o, "source", false, sources, source_vals, 2,
		     &m->source))
		return -1;
	v = member(c, o, "process", true, &err);
	if (!v)
		return -1;
	if (!json_object_is_type(v, json_type_object))
		return bad(c, "field 'process': want an object");
	return process_fields(c, v, &m->proc);
}

/* {"kind":"dns", ...}: a name an agent learned (common/wire_dns.c). */
static int fill_dns(struct parse_ctx *c, struct cw_wire_dns *d)
{
	struct json_object *o = c->obj;

	memset(d, 0, sizeof(*d));
	if (get_str(c, o, "host", true, d->host, sizeof(d->host)) ||
	    get_str(c, o, "boot_id", false, d->boot_id, sizeof(d->boot_id)) ||
	    get_addr(c, o, "addr", &d->addr) ||
	    get_str(c, o, "name", true, d->name, sizeof(d->name)) ||
	    get_u32(c, o, "ttl_s", false, UINT32_MAX, &d->ttl_s) ||
	    get_u64(c, o, "time_ns", true, UINT64_MAX, &d->time_ns) ||
	    get_u64(c, o, "seq", false, UINT64_MAX, &d->seq))
		return -1;
	if (!cw_wire_dns_name_ok(d->name) || !cw_wire_dns_name_ok(d->host))
		return bad(c, "field 'name' or 'host': want printable ASCII");
	return 0;
}

/*
 * A line's record: 0 a connection end (into r), 1 metadata (into m), 2 a
 * kind that is not for the graph (timing windows, sample runs), -1 bad.
 */
static int fill_any(struct parse_ctx *c, struct cw_conn_record *r,
		    struct cw_wire_msg *m)
{
	char kind[16];

	if (get_str(c, c->obj, "kind", false, kind, sizeof(kind)))
		return -1;
	if (!kind[0] || !strcmp(kind, "conn"))
		return fill(c, r);
	if (!m)
		return 2;
	memset(m, 0, sizeof(*m));
	m->version = CW_WIRE_VERSION;
	if (!strcmp(kind, "host")) {
		m->kind = CW_WIRE_HOST;
		return fill_host(c, &m->host) ? -1 : 1;
	}
	if (!strcmp(kind, "process")) {
		m->kind = CW_WIRE_PROC;
		return fill_proc(c, &m->proc) ? -1 : 1;
	}
	if (!strcmp(kind, "dns")) {
		m->kind = CW_WIRE_DNS;
		return fill_dns(c, &m->dns) ? -1 : 1;
	}
	return 2;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int parse_with(struct json_tokener *tok, const char *text, size_t len,
		      struct cw_conn_record *r, struct cw_wire_msg *m,
		      char *err, size_t errlen)
{
	struct parse_ctx c = {.err = err, .errlen = errlen};
	size_t end;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	if (len > INT32_MAX)
		return bad(&c, "line too long");
	json_tokener_reset(tok);
	c.obj = json_tokener_parse_ex(tok, text, (int)len);
	if (!c.obj) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		return bad(&c, "bad JSON: %s",
			   je == json_tokener_continue
				   ? "unexpected end of line"
				   : json_tokener_error_desc(je));
	}
	for (end = json_tokener_get_parse_end(tok); end < len; end++) {
		if (!is_space(text[end])) {
			bad(&c, "bad JSON: trailing data after the object");
			goto out;
		}
	}
	if (!json_object_is_type(c.obj, json_type_object)) {
		bad(&c, "want a JSON object");
		goto out;
	}
	ret = m ? fill_any(&c, r, m) : fill(&c, r);
out:
	json_object_put(c.obj);
	return ret;
}

static struct json_tokener *tokener_new(void)
{
	struct json_tokener *tok = json_tokener_new();

	if (tok)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	return tok;
}

int cw_record_parse(const char *text, size_t len, struct cw_conn_record *r,
		    char *err, size_t errlen)
{
	struct json_tokener *tok = tokener_new();
	int ret;

	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ret = parse_with(tok, text, len, r, NULL, err, errlen);
	json_tokener_free(tok);
	return ret;
}

/* Read a wire stream instead of JSON lines: after its first byte. */
static int open_wire(struct cw_record_reader *rd)
{
	char err[160];

	rd->wire = calloc(1, sizeof(*rd->wire));
	if (!rd->wire)
		return cw_error("out of memory");
	if (cw_wire_reader_init(rd->wire, rd->fp, err, sizeof(err))) {
		free(rd->wire);
		rd->wire = NULL;
		return cw_error("'%s': %s", rd->name, err);
	}
	return 0;
}

int cw_record_reader_open(struct cw_record_reader *rd, const char *path,
			  bool skip_bad)
{
	struct stat st;
	int c;

	memset(rd, 0, sizeof(*rd));
	rd->skip_bad = skip_bad;
	rd->name = strdup(path);
	rd->tok = tokener_new();
	rd->rec = malloc(sizeof(*rd->rec));
	rd->msg = calloc(1, sizeof(*rd->msg));
	if (!rd->name || !rd->tok || !rd->rec || !rd->msg) {
		cw_record_reader_close(rd);
		return cw_error("out of memory");
	}
	rd->fp = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!rd->fp) {
		int err = errno;

		cw_record_reader_close(rd);
		return cw_error("unable to open '%s': %s", path, strerror(err));
	}
	/* fopen() takes a folder; reading it fails with EISDIR, said as
	 * "Input/output error" by the time it surfaces. */
	if (!fstat(fileno(rd->fp), &st) && S_ISDIR(st.st_mode)) {
		cw_record_reader_close(rd);
		return cw_error("'%s' is a folder: want a record file (JSON "
				"lines or a wire stream; of a run folder, its "
				"conns.jsonl)",
				path);
	}
	/* A JSON line starts with '{' or a blank, a wire stream with 'C'. */
	c = getc(rd->fp);
	if (c != EOF)
		ungetc(c, rd->fp);
	if (c == CW_WIRE_MAGIC[0] && open_wire(rd)) {
		cw_record_reader_close(rd);
		return -1;
	}
	return 0;
}

static bool blank(const char *s, size_t n)
{
	while (n && is_space(s[n - 1]))
		n--;
	return n == 0;
}

/* A bad line or frame: an error, or counted and skipped; 0 or -1. */
static int bad_record(struct cw_record_reader *rd, const char *unit,
		      uint64_t where, const char *why)
{
	if (!rd->skip_bad)
		return cw_error("'%s' %s %llu: %s", rd->name, unit,
				(unsigned long long)where, why);
	if (!rd->bad)
		cw_warn("'%s' %s %llu: %s (skipped)", rd->name, unit,
			(unsigned long long)where, why);
	rd->bad++;
	return 0;
}

static int wire_next(struct cw_record_reader *rd,
		     const struct cw_conn_record **r)
{
	char why[200];
	const uint8_t *p;
	uint64_t off;
	size_t n;
	int k;

	for (;;) {
		off = rd->wire->offset;
		errno = 0;
		k = cw_wire_reader_next(rd->wire, &p, &n);
		if (k == 0)
			return 0;
		if (k == 1) {
			rd->line++;
			k = cw_wire_decode(p, n, rd->msg, why, sizeof(why));
			if (k == CW_WIRE_CONN) {
				rd->records++;
				*r = &rd->msg->conn;
				return 1;
			}
			if ((k == CW_WIRE_HOST || k == CW_WIRE_PROC ||
			     k == CW_WIRE_DNS) &&
			    rd->on_meta && rd->on_meta(rd->msg, rd->meta_arg))
				return -1;
			if (k > 0) { /* timing, samples: not for the graph */
				cw_wire_msg_release(rd->msg);
				continue;
			}
		} else if (k == CW_WIRE_RCRC) {
			rd->line++;
			snprintf(why, sizeof(why),
				 "record fails its CRC check");
		} else if (k == CW_WIRE_RTORN) {
			snprintf(why, sizeof(why),
				 "file ends inside a record (torn write)");
		} else if (k == CW_WIRE_RBADLEN) {
			return cw_error("'%s' offset %llu: impossible record "
					"length: the rest is unreadable",
					rd->name, (unsigned long long)off);
		} else {
			return cw_error("unable to read '%s': %s", rd->name,
					strerror(errno ? errno : EIO));
		}
		if (bad_record(rd, "offset", off, why))
			return -1;
		if (k == CW_WIRE_RTORN)
			return 0;
	}
}

int cw_record_reader_next_ref(struct cw_record_reader *rd,
			      const struct cw_conn_record **r)
{
	char err[160];
	const char *text;
	ssize_t n;
	int k;

	if (rd->wire)
		return wire_next(rd, r);
	for (;;) {
		errno = 0;
		n = getline(&rd->buf, &rd->cap, rd->fp);
		if (n < 0) {
			if (ferror(rd->fp))
				return cw_error("unable to read '%s': %s",
						rd->name,
						strerror(errno ? errno : EIO));
			return 0;
		}
		rd->line++;
		/* A UTF-8 byte order mark, as some editors write: not JSON,
		 * but no reason to refuse the file. */
		text = rd->buf;
		if (rd->line == 1 && n >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
			text += 3;
			n -= 3;
		}
		if (blank(text, (size_t)n))
			continue;
		k = parse_with(rd->tok, text, (size_t)n, rd->rec, rd->msg, err,
			       sizeof(err));
		if (!k) {
			rd->records++;
			*r = rd->rec;
			return 1;
		}
		if (k == 1 && rd->on_meta && rd->on_meta(rd->msg, rd->meta_arg))
			return -1;
		if (k > 0)
			continue;
		if (bad_record(rd, "line", rd->line, err))
			return -1;
	}
}

void cw_record_reader_close(struct cw_record_reader *rd)
{
	if (rd->wire)
		cw_wire_reader_release(rd->wire);
	if (rd->msg)
		cw_wire_msg_release(rd->msg);
	if (rd->fp && rd->fp != stdin)
		fclose(rd->fp);
	if (rd->tok)
		json_tokener_free(rd->tok);
	free(rd->wire);
	free(rd->msg);
	free(rd->rec);
	free(rd->buf);
	free(rd->name);
	memset(rd, 0, sizeof(*rd));
}

int cw_record_read_files(char *const *paths, size_t npaths, bool skip_bad,
			 cw_record_fn fn, void *arg,
			 struct cw_record_read_stats *st)
{
	const struct cw_conn_record *r;
	struct cw_record_reader rd;
	size_t i;
	int ret;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < npaths; i++) {
		if (cw_record_reader_open(&rd, paths[i], skip_bad))
			return -1;
		while ((ret = cw_record_reader_next_ref(&rd, &r)) > 0) {
			if (fn(r, arg)) {
				ret = -1;
				break;
			}
		}
		st->files++;
		st->lines += rd.line;
		st->records += rd.records;
		st->bad += rd.bad;
		if (rd.bad > 1)
			cw_warn("'%s': %llu bad %s skipped", rd.name,
				(unsigned long long)rd.bad,
				rd.wire ? "records" : "lines");
		cw_record_reader_close(&rd);
		if (ret < 0)
			return -1;
	}
	return 0;
}

uint64_t cw_record_file_guess(const char *path)
{
	struct stat st;
	FILE *fp;
	int c;

	if (!strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	c = getc(fp);
	fclose(fp);
	/* A wire record takes ~200 bytes, a JSON line ~500 (simulate). */
	return (uint64_t)st.st_size / (c == CW_WIRE_MAGIC[0] ? 200 : 500);
}

#define READ_BATCH 64

int cw_record_read_files_many(char *const *paths, size_t npaths, bool skip_bad,
			      cw_records_fn fn, void *arg,
			      struct cw_record_read_stats *st)
{
	return cw_record_read_files_meta(paths, npaths, skip_bad, fn, NULL, arg,
					 st);
}

int cw_record_read_files_meta(char *const *paths, size_t npaths, bool skip_bad,
			      cw_records_fn fn, cw_meta_fn meta, void *arg,
			      struct cw_record_read_stats *st)
{
	struct cw_conn_record *batch = malloc(READ_BATCH * sizeof(*batch));
	const struct cw_conn_record *r;
	struct cw_record_reader rd;
	size_t i, n = 0;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	if (!batch)
		return cw_error("out of memory");
	for (i = 0; i < npaths && !ret; i++) {
		if (cw_record_reader_open(&rd, paths[i], skip_bad)) {
			ret = -1;
			break;
		}
		rd.on_meta = meta;
		rd.meta_arg = arg;
		while ((ret = cw_record_reader_next_ref(&rd, &r)) > 0) {
			batch[n++] = *r;
			if (n == READ_BATCH) {
				ret = fn(batch, n, arg) ? -2 : 0;
				n = 0;
				if (ret)
					break;
			}
		}
		/* What was read before a bad record is handed on too. */
		if (ret == -1 && n) {
			if (fn(batch, n, arg))
				ret = -2;
			n = 0;
		}
		st->files++;
		st->lines += rd.line;
		st->records += rd.records;
		st->bad += rd.bad;
		if (rd.bad > 1)
			cw_warn("'%s': %llu bad %s skipped", rd.name,
				(unsigned long long)rd.bad,
				rd.wire ? "records" : "lines");
		cw_record_reader_close(&rd);
	}
	if (!ret && n)
		ret = fn(batch, n, arg) ? -1 : 0;
	free(batch);
	return ret < 0 ? -1 : 0;
}
