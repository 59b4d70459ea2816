// SPDX-License-Identifier: MIT
/* Wire stream files: the magic, then frames of [length][CRC-32][Envelope].
 * Spool segments, `simulate --format wire` and `dump` use them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/log.h"
#include "common/wire.h"

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v, p[1] = v >> 8, p[2] = v >> 16, p[3] = v >> 24;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

void cw_wire_frame_header(uint8_t hdr[CW_WIRE_FRAME_HDR], const void *payload,
			  uint32_t len)
{
	put_le32(hdr, len);
	put_le32(hdr + 4, (uint32_t)crc32(0L, payload, len));
}

bool cw_wire_frame_ok(const uint8_t *buf, size_t size, size_t off,
		      uint32_t *len)
{
	uint32_t n;

	if (off > size || size - off < CW_WIRE_FRAME_HDR)
		return false;
	n = get_le32(buf + off);
	/* No writer makes an empty frame; zeroed disk blocks would pass. */
	if (!n || n > CW_WIRE_FRAME_MAX || size - off - CW_WIRE_FRAME_HDR < n)
		return false;
	if ((uint32_t)crc32(0L, buf + off + CW_WIRE_FRAME_HDR, n) !=
	    get_le32(buf + off + 4))
		return false;
	*len = n;
	return true;
}

size_t cw_wire_frame_find(const uint8_t *buf, size_t size, size_t off,
			  uint32_t *len)
{
	uint64_t work = 0;
	uint32_t n;

	for (; off + CW_WIRE_FRAME_HDR <= size; off++) {
		n = get_le32(buf + off);
		if (!n || n > CW_WIRE_FRAME_MAX ||
		    size - off - CW_WIRE_FRAME_HDR < n)
			continue;
		/* Bounded: crafted lengths could make every offset a 1 MiB
		 * CRC; past the budget the rest counts as unreadable. */
		work += n;
		if (work > CW_WIRE_FIND_WORK)
			break;
		if (cw_wire_frame_ok(buf, size, off, len))
			return off;
	}
	return size;
}

int cw_wire_reader_init(struct cw_wire_reader *rd, FILE *fp, char *err,
			size_t errlen)
{
	char magic[CW_WIRE_MAGIC_LEN];
	size_t n;

	memset(rd, 0, sizeof(*rd));
	rd->fp = fp;
	n = fread(magic, 1, sizeof(magic), fp);
	if (n == 0 && ferror(fp)) {
		snprintf(err, errlen, "read error: %s", strerror(errno));
		return -1;
	}
	if (n < sizeof(magic) || memcmp(magic, CW_WIRE_MAGIC, sizeof(magic))) {
		snprintf(err, errlen, "%s (no '%s' magic at its start)",
			 n ? "not a causeway wire file" : "empty file",
			 "CWWIRE1");
		return -1;
	}
	rd->offset = sizeof(magic);
	return 0;
}

int cw_wire_reader_next(struct cw_wire_reader *rd, const uint8_t **payload,
			size_t *len)
{
	uint8_t hdr[CW_WIRE_FRAME_HDR];
	uint32_t n;
	size_t got;

	got = fread(hdr, 1, sizeof(hdr), rd->fp);
	if (got < sizeof(hdr)) {
		if (ferror(rd->fp))
			return CW_WIRE_RIO;
		return got == 0 ? 0 : CW_WIRE_RTORN;
	}
	n = get_le32(hdr);
	if (n > CW_WIRE_FRAME_MAX)
		return CW_WIRE_RBADLEN;
	if (n > rd->cap) {
		uint8_t *p = realloc(rd->buf, n);

		if (!p) {
			errno = ENOMEM;
			return CW_WIRE_RIO;
		}
		rd->buf = p;
		rd->cap = n;
	}
	got = n ? fread(rd->buf, 1, n, rd->fp) : 0;
	if (got < n)
		return ferror(rd->fp) ? CW_WIRE_RIO : CW_WIRE_RTORN;
	rd->offset += sizeof(hdr) + n;
	if ((uint32_t)crc32(0L, rd->buf, n) != get_le32(hdr + 4))
		return CW_WIRE_RCRC;
	*payload = rd->buf;
	*len = n;
	return 1;
}

void cw_wire_reader_release(struct cw_wire_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->cap = 0;
}

int cw_wire_write_magic(FILE *fp)
{
	return fwrite(CW_WIRE_MAGIC, 1, CW_WIRE_MAGIC_LEN, fp) ==
			       CW_WIRE_MAGIC_LEN
		       ? 0
		       : -1;
}

int cw_wire_write_frame(FILE *fp, const void *payload, size_t len)
{
	uint8_t hdr[CW_WIRE_FRAME_HDR];

	if (len > CW_WIRE_FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	cw_wire_frame_header(hdr, payload, (uint32_t)len);
	if (fwrite(hdr, 1, sizeof(hdr), fp) != sizeof(hdr) ||
	    (len && fwrite(payload, 1, len, fp) != len))
		return -1;
	return 0;
}
