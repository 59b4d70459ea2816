// fuzz-sources: common/dns.c common/htab.c common/util.c common/log.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the DNS answer parser: any bytes give -1 (EINVAL)
 * or a count equal to the answers reported; every name reported is
 * printable ASCII that fits its buffer, every answer an A or AAAA; and
 * each answer goes into a small cache and comes back out under its name,
 * news the first time it is learned.  Read as a cut capture, the same
 * bytes give the same answers when they parse whole, and never more.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	int n;
	struct cw_dns_cache cache;
};

static void seen(const char *name, const struct cw_dns_answer *a, void *arg)
{
	struct ctx *c = arg;
	size_t len = strlen(name);
	const char *back;

	if (!len || len >= CW_DNS_NAME_MAX)
		abort();
	for (size_t i = 0; i < len; i++)
		if (name[i] < 0x21 || name[i] > 0x7e)
			abort();
	if (a->family != AF_INET && a->family != AF_INET6)
		abort();
	if (cw_dns_cache_learn(&c->cache, name, a, 1) < 0)
		abort();
	back = cw_dns_cache_get(&c->cache, a->family, a->addr, 2);
	if (!back || strcmp(back, name))
		abort();
	c->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = {0};
	int n, cut;

	cw_dns_cache_init(&c.cache, 3, 5, 60);
	n = cw_dns_parse(data, size, seen, &c);
	if (n == -1 ? errno != EINVAL : n < 0)
		abort();
	if (n >= 0 && n != c.n)
		abort();
	cw_dns_cache_release(&c.cache);
	memset(&c, 0, sizeof(c));
	cw_dns_cache_init(&c.cache, 3, 5, 60);
	cut = cw_dns_parse_cut(data, size, seen, &c);
	if (cut == -1 ? errno != EINVAL || n != -1 : cut != c.n)
		abort();
	if (n >= 0 && cut != n)
		abort();
	cw_dns_cache_release(&c.cache);
	return 0;
}
