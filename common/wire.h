/* SPDX-License-Identifier: MIT */
/*
 * The wire codec: the one way causeway records leave a host.  A record is a
 * protobuf Envelope (common/wire.proto) with a schema version and one record
 * kind, so any Kafka consumer in any language can read it.  docs/wire.md is
 * the reference.
 *
 *	uint8_t *buf;
 *	size_t len;
 *	char key[CW_WIRE_KEY_MAX];
 *
 *	cw_wire_encode_conn(&rec, &buf, &len);	   // value, malloc'ed
 *	cw_wire_conn_key(&rec, key, sizeof(key)); // partition key
 *	...
 *	free(buf);
 *
 *	struct cw_wire_msg m;
 *	int kind = cw_wire_decode(buf, len, &m, err, sizeof(err));
 *	if (kind < 0)
 *		cw_wire_errors_count(&errs, kind, err);	// skip, never crash
 *
 * Wire stream files (what `causeway dump` reads, and the spool's segments)
 * hold the same Envelopes in CRC-checked, length-prefixed frames:
 *
 *	file  := magic frame*
 *	magic := "CWWIRE1\n"			(8 bytes)
 *	frame := len:u32le crc:u32le payload	(crc = CRC-32 of payload, zlib)
 */
#ifndef CW_WIRE_H
#define CW_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/record.h"

/* The schema version this build writes and the only one it reads. */
#define CW_WIRE_VERSION 1

/* Record kinds: cw_wire_decode()'s positive returns. */
enum cw_wire_kind {
	CW_WIRE_CONN = 1,    /* connection aggregate: struct cw_conn_record */
	CW_WIRE_HOST = 2,    /* host metadata: struct cw_host_meta */
	CW_WIRE_PROC = 3,    /* process metadata: struct cw_proc_meta */
	CW_WIRE_TIMING = 4,  /* one end's timing window: cw_timing_record */
	CW_WIRE_SAMPLES = 5, /* a sample run: struct cw_wire_samples */
};
#define CW_WIRE_KIND_MAX CW_WIRE_SAMPLES

/*
 * Decode errors: distinct negative returns, so a consumer can count each and
 * keep going.  None of them is fatal.
 */
enum cw_wire_err {
	/* Not a valid Envelope, or a field out of range. */
	CW_WIRE_EMALFORMED = -1,
	/* A well-formed Envelope of a version this build does not read. */
	CW_WIRE_EVERSION = -2,
	/* A valid Envelope with no record kind this build knows. */
	CW_WIRE_EKIND = -3,
};
#define CW_WIRE_NERR 3

struct cw_host_meta {
	char host[CW_HOST_LEN];
	char hostname[CW_HOST_LEN];
	char kernel[CW_HOST_LEN];
	char agent_version[32];
	uint32_t cpus;
	uint64_t mem_bytes;
	uint64_t time_ns; /* CLOCK_REALTIME */
	uint64_t seq;
};

struct cw_proc_meta {
	char host[CW_HOST_LEN];
	struct cw_process proc;
	uint64_t rss_bytes;
	uint64_t cpu_ns; /* user + system, cumulative */
	uint64_t time_ns;
	uint64_t seq;
};

struct cw_sample_run; /* common/sample_run.h */

/* A sample run and its place in the agent's sequence. */
struct cw_wire_samples {
	uint64_t seq;
	struct cw_sample_run *run; /* decoded: owned by the message */
};

/*
 * Timing windows: a record holds at most this many messages (about 500 KB
 * at worst); an end with more is sent as several records (same host,
 * cookie and slot_ns, consecutive seq) that a consumer concatenates.  A
 * decoded record may hold up to CW_WIRE_TIMING_MAX.
 */
#define CW_WIRE_TIMING_CHUNK 32768
#define CW_WIRE_TIMING_MAX   (1U << 20)

/*
 * One decoded record; `kind` says which member is set.  Timing windows and
 * sample runs own memory: cw_wire_msg_release() frees it (and is a no-op
 * for the other kinds, so consumers may call it on every message).
 */
struct cw_wire_msg {
	int kind;
	uint32_t version;
	union {
		struct cw_conn_record conn;
		struct cw_host_meta host;
		struct cw_proc_meta proc;
		struct cw_timing_record timing; /* msgs malloc'ed */
		struct cw_wire_samples samples; /* run malloc'ed */
	};
};

void cw_wire_msg_release(struct cw_wire_msg *m);

/*
 * Encode one record into a new malloc'ed buffer the caller frees.
 * 0, or -1 (out of memory, or a kind we can't encode).
 */
int cw_wire_encode(const struct cw_wire_msg *m, uint8_t **buf, size_t *len);
int cw_wire_encode_conn(const struct cw_conn_record *r, uint8_t **buf,
			size_t *len);
/*
 * A timing window: msgs sorted by time, within [window_start_ns,
 * window_start_ns + window_ns], at most CW_WIRE_TIMING_MAX; -1 otherwise.
 */
int cw_wire_encode_timing(const struct cw_timing_record *t, uint8_t **buf,
			  size_t *len);
/* A sample run with the agent's sequence number. */
int cw_wire_encode_samples(const struct cw_sample_run *run, uint64_t seq,
			   uint8_t **buf, size_t *len);

/*
 * Decode one Envelope.  Returns its enum cw_wire_kind, or an enum
 * cw_wire_err with a one-line reason in `err` (may be NULL).  `out` is
 * fully written on success; strings are NUL-terminated.
 */
int cw_wire_decode(const uint8_t *buf, size_t len, struct cw_wire_msg *out,
		   char *err, size_t errlen);

/* "malformed", "unknown version", "unknown kind". */
const char *cw_wire_strerror(int err);
/* "conn", "host", "process", "timing", "samples". */
const char *cw_wire_kind_name(int kind);
/*
 * One decoded message as a JSON object with a "kind" key (what `causeway
 * dump` prints); no line end.
 */
void cw_wire_msg_json(struct cw_jsonw *w, const struct cw_wire_msg *m);

/*
 * The canonical Kafka key of a connection: both (addr, port) endpoints in
 * sorted order, then the protocol, e.g. "tcp:10.0.0.1:80-10.0.0.2:41234"
 * or "tcp:[fd00::1]:80-[fd00::2]:41234".  Both ends of one connection give
 * the same key, so they land in the same partition.  Returns the key's
 * length, or -1 if `len` is too small (CW_WIRE_KEY_MAX always fits).
 */
#define CW_WIRE_KEY_MAX 112
int cw_wire_conn_key(const struct cw_conn_record *r, char *buf, size_t len);
/*
 * The same for the end a timing window belongs to (its has_conn fields):
 * the two ends of one connection give the same string.
 */
int cw_wire_timing_conn_key(const struct cw_timing_record *t, char *buf,
			    size_t len);

/*
 * The Kafka key of any record: connections by 4-tuple (above); timing
 * windows by slot_ns in decimal, so a whole window of the fleet is in one
 * partition (path inference needs every connection through a node, which
 * 4-tuple keys would spread over partitions and correlators); sample runs
 * by "<host>/<device>".  Metadata has none: returns 0 with buf "".
 * Returns the length, or -1 if `len` is too small.
 */
#define CW_WIRE_ANYKEY_MAX (CW_HOST_LEN + 256 + 2)
int cw_wire_key(const struct cw_wire_msg *m, char *buf, size_t len);

/*
 * Decode errors seen by one consumer: counted per kind, each kind logged
 * once (with the first record's reason and where it was), never fatal.
 */
struct cw_wire_errors {
	uint64_t count[CW_WIRE_NERR + 1]; /* indexed by -err */
	bool logged[CW_WIRE_NERR + 1];
};

void cw_wire_errors_count(struct cw_wire_errors *e, int err, const char *where,
			  const char *reason);
uint64_t cw_wire_errors_total(const struct cw_wire_errors *e);
/* "3 malformed, 1 unknown version" to stderr as a warning, if any. */
void cw_wire_errors_report(const struct cw_wire_errors *e, const char *what);

/* Wire stream files. */
#define CW_WIRE_MAGIC	  "CWWIRE1\n"
#define CW_WIRE_MAGIC_LEN 8
#define CW_WIRE_FRAME_HDR 8
#define CW_WIRE_FRAME_MAX (1U << 20) /* larger lengths are corruption */

/* The 8-byte header of a frame carrying `payload`. */
void cw_wire_frame_header(uint8_t hdr[CW_WIRE_FRAME_HDR], const void *payload,
			  uint32_t len);

/*
 * In buf[0, size) holding a wire stream: whether a whole frame whose CRC
 * holds starts at `off` (true, its payload length in *len) ...
 */
bool cw_wire_frame_ok(const uint8_t *buf, size_t size, size_t off,
		      uint32_t *len);
/*
 * ... and the first offset at or after `off` where one does, or `size` when
 * none does: how a reader finds its way past a damaged stretch.  The CRC
 * work is bounded (CW_WIRE_FIND_WORK bytes): beyond it, `size`.
 */
#define CW_WIRE_FIND_WORK (256ULL << 20)
size_t cw_wire_frame_find(const uint8_t *buf, size_t size, size_t off,
			  uint32_t *len);

/* Frame reader results, besides 1 (a frame) and 0 (clean end of file). */
enum cw_wire_read_err {
	CW_WIRE_RTORN = -10,   /* file ends inside a frame: a torn write */
	CW_WIRE_RCRC = -11,    /* a whole frame whose CRC does not match */
	CW_WIRE_RBADLEN = -12, /* a length no writer makes: rest unreadable */
	CW_WIRE_RIO = -13,     /* read error (errno set) */
};

struct cw_wire_reader {
	FILE *fp;
	uint64_t offset; /* of the next frame, from the start of the file */
	uint8_t *buf;
	size_t cap;
};

/*
 * Start reading a wire stream at its magic (consumed and checked).
 * 0, or -1 with `err` saying what is wrong ("not a causeway wire file").
 * The reader does not own `fp`.
 */
int cw_wire_reader_init(struct cw_wire_reader *rd, FILE *fp, char *err,
			size_t errlen);
/*
 * Next frame: 1 with *payload (valid until the next call) and *len, 0 at a
 * clean end, or an enum cw_wire_read_err.  After CW_WIRE_RCRC the reader
 * has skipped the bad frame and can go on; after the others it cannot.
 */
int cw_wire_reader_next(struct cw_wire_reader *rd, const uint8_t **payload,
			size_t *len);
void cw_wire_reader_release(struct cw_wire_reader *rd);

/* Write the magic, or one frame, to a stdio stream; 0 or -1 (errno). */
int cw_wire_write_magic(FILE *fp);
int cw_wire_write_frame(FILE *fp, const void *payload, size_t len);

#endif
