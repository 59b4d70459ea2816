// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/wire.c common/wire_key.c common/wire_json.c common/wire_file.c build/common/wire.pb-c.c common/sample_run.c
// fuzz-sources: common/wire_decode.c common/wire_fast.c common/wire_put.c common/wire_dns.c common/hist.c common/health.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * The DnsName decoder (common/wire_dns.c) on arbitrary bytes: never a
 * crash, a kind or a distinct error; a DnsName that decodes has a 4 or
 * 16 byte address and a name and host of printable ASCII within their
 * bounds, has its host as key, re-encodes to a record that decodes to the
 * same, and prints as JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (!n || n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static void check(const struct cw_wire_msg *m)
{
	const struct cw_wire_dns *d = &m->dns;
	char key[CW_WIRE_ANYKEY_MAX], err[256];
	struct cw_wire_msg back;
	struct cw_jsonw w;
	uint8_t *buf;
	size_t len;
	FILE *fp;

	if ((d->addr.family != 4 && d->addr.family != 6) ||
	    !printable(d->name, sizeof(d->name)) ||
	    !printable(d->host, sizeof(d->host)) ||
	    strnlen(d->boot_id, sizeof(d->boot_id)) == sizeof(d->boot_id))
		abort();
	if (cw_wire_key(m, key, sizeof(key)) <= 0 || strcmp(key, d->host))
		abort();
	if (cw_wire_encode(m, &buf, &len))
		abort();
	if (cw_wire_decode(buf, len, &back, err, sizeof(err)) != CW_WIRE_DNS ||
	    memcmp(&back.dns, d, sizeof(*d)))
		abort();
	free(buf);
	fp = fopen("/dev/null", "w");
	if (!fp)
		return;
	cw_jsonw_init(&w, fp);
	cw_wire_msg_json(&w, m);
	fclose(fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_wire_msg m;
	char err[256];
	int kind;

	memset(&m, 0, sizeof(m));
	kind = cw_wire_decode(data, size, &m, err, sizeof(err));
	if (kind == 0 || kind < -5)
		abort();
	if (kind == CW_WIRE_DNS)
		check(&m);
	cw_wire_msg_release(&m);
	return 0;
}
