// SPDX-License-Identifier: MIT
/* `causeway dump`'s reading and printing (common/wire_dump.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/wire_dump.h"

void cw_dump_start(struct cw_dump *d)
{
	cw_jsonw_init(&d->w, stdout);
}

/* One record: print it or count why not.  false when output failed. */
static bool dump_one(struct cw_dump *d, const uint8_t *buf, size_t len,
		     const char *where)
{
	static struct cw_wire_msg m; /* large: keep it off the stack */
	char err[256];
	int kind = cw_wire_decode(buf, len, &m, err, sizeof(err));

	if (kind < 0) {
		cw_wire_errors_count(&d->errs, kind, where, err);
		return true;
	}
	cw_wire_msg_json(&d->w, &m);
	cw_jsonw_end_line(&d->w);
	cw_wire_msg_release(&m);
	d->printed++;
	if (ferror(stdout)) {
		d->stdout_failed = true;
		return false;
	}
	return true;
}

bool cw_dump_done(const struct cw_dump *d)
{
	return d->stdout_failed || cw_stop ||
	       (d->count && d->printed >= d->count);
}

/*
 * After an impossible length at `bad`: the first offset past it where a
 * whole frame's CRC holds, as the spool resyncs, into *next; 0, or -1
 * when there is none (or the stream cannot seek: a pipe's bytes are gone
 * once read).  Windows overlap by a largest frame, so a frame cut by one
 * window's end is whole in the next.
 */
static int resync(FILE *fp, uint64_t bad, uint64_t *next)
{
	const size_t frame = CW_WIRE_FRAME_MAX + CW_WIRE_FRAME_HDR;
	uint8_t *buf = malloc(2 * frame);
	uint64_t pos = bad + 1;
	uint32_t len;
	size_t n, at;
	int ret = -1;

	while (buf && !fseeko(fp, (off_t)pos, SEEK_SET)) {
		n = fread(buf, 1, 2 * frame, fp);
		at = cw_wire_frame_find(buf, n, 0, &len);
		if (at < n) {
			*next = pos + at;
			ret = fseeko(fp, (off_t)*next, SEEK_SET) ? -1 : 0;
			break;
		}
		if (n < 2 * frame)
			break;
		pos += n - frame;
	}
	free(buf);
	return ret;
}

/* An impossible length at `off`: resync past it; 0 to go on, or -1. */
static int bad_length(struct cw_dump *d, struct cw_wire_reader *rd,
		      const char *where, uint64_t off)
{
	uint64_t next;

	if (fseeko(rd->fp, 0, SEEK_CUR))
		return cw_error("%s: impossible record length: the rest is "
				"unreadable (a pipe cannot be searched for "
				"the next record: give the file)",
				where);
	if (resync(rd->fp, off, &next))
		return cw_error("%s: impossible record length, and no "
				"readable record after it",
				where);
	cw_warn("%s: impossible record length: skipped %" PRIu64
		" bytes to the next record whose CRC holds",
		where, next - off);
	d->resyncs++;
	d->skipped += next - off;
	rd->offset = next;
	return 0;
}

/* 0 when the file was read to its end, -1 when it could not be. */
int cw_dump_file(struct cw_dump *d, const char *path)
{
	struct cw_wire_reader rd;
	const uint8_t *p;
	char err[160], where[PATH_MAX + 32];
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	FILE *fp = strcmp(path, "-") ? fopen(path, "r") : stdin;
	uint64_t off;
	size_t n;
	int r, ret = 0;

	if (!fp)
		return cw_error("unable to open '%s': %s", path,
				strerror(errno));
	if (cw_wire_reader_init(&rd, fp, err, sizeof(err))) {
		ret = cw_error("'%s': %s", name, err);
		goto out;
	}
	while (!cw_dump_done(d)) {
		off = rd.offset;
		r = cw_wire_reader_next(&rd, &p, &n);
		if (r == 0)
			break;
		snprintf(where, sizeof(where), "'%s' offset %" PRIu64, name,
			 off);
		if (r == 1) {
			dump_one(d, p, n, where);
			continue;
		}
		d->frame_errors++;
		if (r == CW_WIRE_RCRC) {
			cw_warn("%s: record fails its CRC check: skipped",
				where);
			continue;
		}
		if (r == CW_WIRE_RBADLEN && !bad_length(d, &rd, where, off))
			continue;
		if (r == CW_WIRE_RTORN)
			cw_warn("%s: file ends inside a record (torn write): "
				"ignored",
				where);
		else if (r == CW_WIRE_RBADLEN)
			ret = -1;
		else
			ret = cw_error("unable to read '%s': %s", name,
				       strerror(errno));
		break;
	}
out:
	cw_wire_reader_release(&rd);
	if (fp != stdin)
		fclose(fp);
	return ret;
}

/* How long --timeout waits for the group to hand out partitions at all. */
#define DUMP_JOIN_NS (30 * NSEC_PER_SEC)

int cw_dump_kafka(struct cw_dump *d, const struct cw_kafka_conf *conf,
		      const char *const *topics, int ntopics,
		      uint64_t timeout_ns)
{
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	char where[CW_KAFKA_TOPIC_MAX + 64];
	uint64_t now, start = cw_now_mono_ns(), last = start, rebalances,
		      seen = 0;
	bool member;
	int r, ret = 0;

	c = cw_kafka_consumer_new(conf, topics, ntopics);
	if (!c)
		return -1;
	while (!cw_dump_done(d)) {
		/* Joining the group (seconds on a busy broker) is not "no
		 * record came": the clock runs once partitions are held. */
		now = cw_now_mono_ns();
		member = cw_kafka_consumer_member(c, &rebalances);
		if (rebalances != seen) {
			seen = rebalances;
			last = now;
		}
		if (timeout_ns && member && now - last >= timeout_ns)
			break;
		if (timeout_ns && !seen &&
		    now - start >= timeout_ns + DUMP_JOIN_NS) {
			ret = cw_error(
				"kafka: no partitions assigned in %" PRIu64
				" s: is the broker reachable?",
				(uint64_t)((now - start) / NSEC_PER_SEC));
			break;
		}
		r = cw_kafka_consume(c, 200, &m);
		if (r < 0) {
			ret = -1;
			break;
		}
		if (r == 0)
			continue;
		last = cw_now_mono_ns();
		snprintf(where, sizeof(where), "%s[%d] offset %" PRId64,
			 m.topic, m.partition, m.offset);
		dump_one(d, m.value, m.len, where);
		/* dump only reads: nothing is marked applied or committed. */
		cw_kafka_msg_release(&m);
	}
	cw_kafka_consumer_free(c);
	return ret;
}

int cw_dump_finish(struct cw_dump *d, int ret)
{
	if (fflush(stdout) || d->stdout_failed) {
		/* A closed pipe (dump | head) is not an error. */
		if (errno != EPIPE)
			ret = cw_error("unable to write the output: %s",
				       strerror(errno));
	}
	cw_wire_errors_report(&d->errs, "dump");
	if (d->frame_errors)
		cw_warn("dump: %" PRIu64 " damaged records (torn, failing "
			"their CRC or of an impossible length)",
			d->frame_errors);
	if (d->resyncs)
		cw_warn("dump: %" PRIu64 " resyncs past impossible lengths, "
			"%" PRIu64 " bytes skipped",
			d->resyncs, d->skipped);
	cw_debug("dump: %" PRIu64 " records printed", d->printed);
	if (ret)
		return 1;
	if (ret)
		return 1;
	return cw_wire_errors_total(&d->errs) || d->frame_errors ? 1 : 0;
}
