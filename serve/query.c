// SPDX-License-Identifier: MIT
/* Query strings of API requests: outside data, so strict and bounded. */
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "serve/serve.h"

#define NS 1000000000ULL

static const char *const by_names[CW_SERVE_BY_N] = {
	"process", "cmdline", "container", "host", "pod", "workload"};

const char *cw_serve_by_name(enum cw_serve_by by)
{
	return (unsigned)by < CW_SERVE_BY_N ? by_names[by] : "?";
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode s[0..n) into out (room for CW_SERVE_VALUE_MAX); 0 or -1. */
static int decode(const char *s, size_t n, char *out, const char **why)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (n - i < 3) {
				*why = "a '%' escape is cut short";
				return -1;
			}
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0) {
				*why = "a '%' escape is not two hex digits";
				return -1;
			}
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0') {
			*why = "it holds a NUL byte";
			return -1;
		}
		if (o + 1 >= CW_SERVE_VALUE_MAX) {
			*why = "it is too long";
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* A point in time in the time grammar of cw_parse_time(). */
static int parse_time(const char *key, const char *s, uint64_t now,
		      uint64_t *out, char *err, size_t len)
{
	/* A number too large for the clock is a time out of range. */
	if (cw_parse_time(s, now, out) && *s >= '0' && *s <= '9' &&
	    !s[strspn(s, "0123456789.")])
		*out = UINT64_MAX;
	else if (cw_parse_time(s, now, out))
		return cw_err_buf(err, len,
				  "'%s': want seconds since the epoch, 'now', "
				  "-DURATION (-5m, -2h, -1d) or a time such as "
				  "2026-11-23T14:00:00Z",
				  key);
	if (*out < CW_SERVE_TIME_FLOOR || *out > now + 86400 * NS)
		return cw_err_buf(
			err, len,
			"'%s': the time is before 2000 or more than a day "
			"from now",
			key);
	return 0;
}

static int parse_share(const char *s, double *out, char *err, size_t len)
{
	char *end;
	double v;

	if (!((*s >= '0' && *s <= '9') || *s == '.'))
		return cw_err_buf(err, len,
				  "'min_share': want a number from 0 to 1");
	v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v < 0 || v > 1)
		return cw_err_buf(err, len,
				  "'min_share': want a number from 0 to 1");
	*out = v;
	return 0;
}

/* A trace id as OTLP writes it: 32 hex digits, not all zero. */
static int parse_trace(const char *s, char out[33], char *err, size_t len)
{
	bool zero = true;
	size_t i;

	for (i = 0; i < 32 && hexval(s[i]) >= 0; i++)
		zero = zero && s[i] == '0';
	if (i < 32 || s[32])
		return cw_err_buf(err, len,
				  "'trace': want a trace id, 32 hex digits");
	if (zero)
		return cw_err_buf(err, len,
				  "'trace': the all-zero id is no trace's");
	for (i = 0; i < 32; i++)
		out[i] = "0123456789abcdef"[hexval(s[i])];
	out[32] = '\0';
	return 0;
}

static int parse_limit(const char *s, unsigned *out, char *err, size_t len)
{
	unsigned long v;
	char *end;

	v = *s >= '1' && *s <= '9' ? strtoul(s, &end, 10) : 0;
	if (!v || *end || v > CW_SERVE_LIMIT_MAX)
		return cw_err_buf(err, len,
				  "'limit': want a whole number from 1 to %d",
				  CW_SERVE_LIMIT_MAX);
	*out = (unsigned)v;
	return 0;
}

enum { K_BY, K_SINCE, K_UNTIL, K_SHARE, K_NODE, K_RUN, K_TRACE, K_LIMIT, K_N };
static const char *const keys[K_N] = {"by",   "since", "until", "min_share",
				      "node", "run",   "trace", "limit"};

static int apply(struct cw_serve_query *q, int k, const char *v, uint64_t now,
		 char *err, size_t len)
{
	size_t i;

	switch (k) {
	case K_BY:
		for (i = 0; i < CW_SERVE_BY_N; i++)
			if (!strcmp(v, by_names[i]))
				break;
		if (i == CW_SERVE_BY_N)
			return cw_err_buf(
				err, len,
				"'by': unknown projection; want process, "
				"cmdline, container, host, pod or "
				"workload");
		q->by = (enum cw_serve_by)i;
		q->has_by = true;
		return 0;
	case K_SINCE:
		q->has_since = true;
		return parse_time("since", v, now, &q->since_ns, err, len);
	case K_UNTIL:
		q->has_until = true;
		return parse_time("until", v, now, &q->until_ns, err, len);
	case K_SHARE:
		return parse_share(v, &q->min_share, err, len);
	case K_NODE:
	case K_RUN:
		if (!*v)
			return cw_err_buf(err, len, "'%s': empty", keys[k]);
		snprintf(k == K_NODE ? q->node : q->run, CW_SERVE_VALUE_MAX,
			 "%s", v);
		return 0;
	case K_TRACE:
		return parse_trace(v, q->trace, err, len);
	case K_LIMIT:
		q->has_limit = true;
		return parse_limit(v, &q->limit, err, len);
	}
	return cw_err_buf(err, len, "internal: key %d", k);
}

/* since and until together: in order, and not too far apart. */
static int check_range(struct cw_serve_query *q, uint64_t now, char *err,
		       size_t len)
{
	if (!q->has_since && !q->has_until)
		return 0;
	if (!q->has_until)
		q->until_ns = now > q->since_ns ? now : q->since_ns + 1;
	if (!q->has_since)
		return cw_err_buf(err, len, "'until' without 'since'");
	if (q->since_ns >= q->until_ns)
		return cw_err_buf(err, len, "'since' is not before 'until'");
	if (q->until_ns - q->since_ns > CW_SERVE_RANGE_MAX)
		return cw_err_buf(err, len, "the range is longer than 31 days");
	q->has_until = true;
	return 0;
}

int cw_serve_query_parse(const char *qs, uint64_t now_ns,
			 struct cw_serve_query *q, char *err, size_t errlen)
{
	char key[CW_SERVE_VALUE_MAX], val[CW_SERVE_VALUE_MAX];
	const char *p = qs, *amp, *eq, *why = "";
	unsigned seen = 0;
	size_t n;
	int k;

	memset(q, 0, sizeof(*q));
	if (!qs)
		return 0;
	if (strlen(qs) > CW_SERVE_QUERY_MAX)
		return cw_err_buf(err, errlen,
				  "the query string is longer than %d",
				  CW_SERVE_QUERY_MAX);
	for (; *p; p = *amp ? amp + 1 : amp) {
		amp = strchr(p, '&');
		if (!amp)
			amp = p + strlen(p);
		if (amp == p)
			continue;
		eq = memchr(p, '=', (size_t)(amp - p));
		n = (size_t)((eq ? eq : amp) - p);
		if (decode(p, n, key, &why))
			return cw_err_buf(err, errlen, "a key: %s", why);
		for (k = 0; k < K_N && strcmp(key, keys[k]); k++)
			;
		if (k == K_N)
			return cw_err_buf(err, errlen,
					  "unknown parameter '%.64s' (want by, "
					  "since, until, min_share, node, run, "
					  "trace or limit)",
					  key);
		if (seen & (1u << k))
			return cw_err_buf(err, errlen, "'%s' given twice",
					  keys[k]);
		seen |= 1u << k;
		if (!eq)
			return cw_err_buf(err, errlen, "'%s' has no value",
					  keys[k]);
		if (decode(eq + 1, (size_t)(amp - eq - 1), val, &why))
			return cw_err_buf(err, errlen, "'%s': %s", keys[k],
					  why);
		if (apply(q, k, val, now_ns, err, errlen))
			return -1;
	}
	return check_range(q, now_ns, err, errlen);
}
