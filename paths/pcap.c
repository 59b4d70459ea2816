// SPDX-License-Identifier: MIT
/*
 * Messages from a packet capture.  A passive tap sees both ends of every
 * connection with one clock, so each message is stamped once and recorded
 * as leaving its sender and arriving at its receiver at that instant.
 */
#include <stdio.h>

#include "common/log.h"
#include "common/pcap.h"
#include "paths/paths.h"

/* Each message is stamped at its first packet, at both ends. */
static int on_msg(void *ctx, const struct cw_pcap_msg *m)
{
	struct cw_msgtrace *t = ctx;
	int from = cw_msgtrace_node(t, m->from),
	    to = cw_msgtrace_node(t, m->to);

	if (from < 0 || to < 0)
		return cw_error("out of memory");
	if (cw_msgtrace_add(t, m->start_ns, (uint32_t)from, (uint32_t)to,
			    CW_MSG_OUT, m->bytes))
		return -1;
	return cw_msgtrace_add(t, m->start_ns, (uint32_t)to, (uint32_t)from,
			       CW_MSG_IN, m->bytes);
}

int cw_msgtrace_read_pcap(struct cw_msgtrace *t, const char *path)
{
	return cw_pcap_read_messages(path, CW_PCAP_AT_START, on_msg, t);
}

static bool is_pcap(FILE *fp, const char *path)
{
	unsigned char m[4];
	size_t n = fread(m, 1, sizeof(m), fp);

	rewind(fp);
	return cw_pcap_is_capture(m, n, path);
}

int cw_msgtrace_read_file(struct cw_msgtrace *t, const char *path)
{
	FILE *fp = fopen(path, "r");
	int err;

	if (!fp)
		return cw_error("unable to open '%s': %m", path);
	if (is_pcap(fp, path)) {
		fclose(fp);
		err = cw_msgtrace_read_pcap(t, path);
	} else {
		err = cw_msgtrace_read_csv(t, fp, path);
		fclose(fp);
	}
	return err ? err : cw_msgtrace_finish(t, path);
}
