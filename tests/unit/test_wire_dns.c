// SPDX-License-Identifier: MIT
/*
 * DnsName on the wire: a record comes back as it went, both families,
 * keyed by its host; what no agent writes (an address of another length,
 * an empty or unprintable name, a name over the bound) is malformed with
 * a reason; the JSON names every field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/wire.h"
#include "common/wire_pb.h"

#include "tests/unit/check.h"

static struct cw_wire_msg dns_msg(int family)
{
	struct cw_wire_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = CW_WIRE_DNS;
	strcpy(m.dns.host, "h1");
	strcpy(m.dns.boot_id, "b-1");
	strcpy(m.dns.name, "api.example.test");
	m.dns.addr.family = (uint8_t)family;
	m.dns.addr.bytes[0] = 10;
	m.dns.addr.bytes[3] = 7;
	m.dns.addr.bytes[15] = family == 6 ? 9 : 0;
	m.dns.ttl_s = 300;
	m.dns.time_ns = 1700000000123456789ULL;
	m.dns.seq = 42;
	return m;
}

static void test_roundtrip(void)
{
	for (int f = 4; f <= 6; f += 2) {
		struct cw_wire_msg in = dns_msg(f), out;
		char key[CW_WIRE_ANYKEY_MAX];
		uint8_t *buf;
		size_t len;

		CHECK(cw_wire_encode(&in, &buf, &len) == 0);
		memset(&out, 0xaa, sizeof(out));
		CHECK(cw_wire_decode(buf, len, &out, NULL, 0) == CW_WIRE_DNS);
		CHECK(!memcmp(&out.dns, &in.dns, sizeof(in.dns)));
		CHECK(cw_wire_key(&in, key, sizeof(key)) == 2);
		CHECK(!strcmp(key, "h1"));
		CHECK(!strcmp(cw_wire_kind_name(CW_WIRE_DNS), "dns"));
		free(buf);
	}
}

/* Encode a DnsName whose fields protobuf-c takes as given. */
static int decode_raw(const char *name, size_t alen, char *err, size_t n)
{
	static uint8_t addr[17];
	struct cw_wire_msg out;
	Causeway__Wire__Envelope env;
	Causeway__Wire__DnsName r;
	uint8_t buf[4096];
	size_t len;

	causeway__wire__envelope__init(&env);
	causeway__wire__dns_name__init(&r);
	env.version = CW_WIRE_VERSION;
	env.kind_case = CAUSEWAY__WIRE__ENVELOPE__KIND_DNS;
	env.dns = &r;
	r.host = "h1";
	r.name = (char *)name;
	r.addr.data = addr;
	r.addr.len = alen;
	len = protobuf_c_message_pack(&env.base, buf);
	return cw_wire_decode(buf, len, &out, err, n);
}

static void test_malformed(void)
{
	char err[160], big[1100];

	CHECK(decode_raw("a.test", 4, err, sizeof(err)) == CW_WIRE_DNS);
	CHECK(decode_raw("a.test", 16, err, sizeof(err)) == CW_WIRE_DNS);
	CHECK(decode_raw("a.test", 5, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "5 bytes") != NULL);
	CHECK(decode_raw("a.test", 0, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(decode_raw("", 4, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(decode_raw("a test", 4, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(decode_raw("a\xc3\xa9.test", 4, NULL, 0) == CW_WIRE_EMALFORMED);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(decode_raw(big, 4, err, sizeof(err)) == CW_WIRE_EMALFORMED);
	CHECK(strstr(err, "'name'") != NULL);
}

static void test_json(void)
{
	struct cw_wire_msg m = dns_msg(4);
	struct cw_jsonw w;
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	cw_jsonw_init(&w, fp);
	cw_wire_msg_json(&w, &m);
	fclose(fp);
	CHECK(text && !strcmp(text, "{\"kind\":\"dns\",\"host\":\"h1\","
				    "\"boot_id\":\"b-1\",\"seq\":42,"
				    "\"addr\":\"10.0.0.7\","
				    "\"name\":\"api.example.test\","
				    "\"ttl_s\":300,"
				    "\"time_ns\":1700000000123456789}"));
	if (text && failures)
		fprintf(stderr, "%s\n", text);
	free(text);
}

int main(void)
{
	test_roundtrip();
	test_malformed();
	test_json();
	return failures ? 1 : 0;
}
