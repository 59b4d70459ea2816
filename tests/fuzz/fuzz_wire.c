// clang-format off
// fuzz-sources: common/log.c common/util.c common/record.c common/jsonw.c common/wire.c build/common/wire.pb-c.c
// clang-format on
// SPDX-License-Identifier: MIT
/*
 * The wire decoder and the frame reader on arbitrary bytes: never a crash,
 * only a kind or a distinct error; whatever decodes re-encodes to a record
 * that decodes the same; a conn record always has a key.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

static void check_msg(const struct cw_wire_msg *m)
{
	static struct cw_wire_msg again;
	char key[CW_WIRE_KEY_MAX];
	uint8_t *buf;
	size_t len;

	if (cw_wire_encode(m, &buf, &len))
		abort();
	if (cw_wire_decode(buf, len, &again, NULL, 0) != m->kind)
		abort();
	free(buf);
	switch (m->kind) {
	case CW_WIRE_CONN:
		if (memcmp(&again.conn, &m->conn, sizeof(m->conn)))
			abort();
		if (cw_wire_conn_key(&m->conn, key, sizeof(key)) < 0)
			abort();
		break;
	case CW_WIRE_HOST:
		if (memcmp(&again.host, &m->host, sizeof(m->host)))
			abort();
		break;
	case CW_WIRE_PROC:
		if (memcmp(&again.proc, &m->proc, sizeof(m->proc)))
			abort();
		break;
	}
}

static void fuzz_frames(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m;
	struct cw_wire_reader rd;
	const uint8_t *p;
	char err[128];
	size_t n;
	FILE *fp;
	int r, i;

	fp = fmemopen((void *)data, size, "r");
	if (!fp)
		return;
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err)) == 0) {
		for (i = 0; i < 64; i++) {
			r = cw_wire_reader_next(&rd, &p, &n);
			if (r == 1 && cw_wire_decode(p, n, &m, NULL, 0) > 0)
				check_msg(&m);
			if (r != 1 && r != CW_WIRE_RCRC)
				break;
		}
	}
	cw_wire_reader_release(&rd);
	fclose(fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cw_wire_msg m;
	char err[256];
	int r;

	r = cw_wire_decode(data, size, &m, err, sizeof(err));
	if (r > 0)
		check_msg(&m);
	else if (r != CW_WIRE_EMALFORMED && r != CW_WIRE_EVERSION &&
		 r != CW_WIRE_EKIND)
		abort();
	else if (!err[0])
		abort(); /* every error says why */
	if (size >= CW_WIRE_MAGIC_LEN &&
	    !memcmp(data, CW_WIRE_MAGIC, CW_WIRE_MAGIC_LEN))
		fuzz_frames(data, size);
	return 0;
}
