// SPDX-License-Identifier: MIT
/*
 * Live causal paths: the agents' timing windows, joined to the connection
 * ends the pairing matched, become a message trace whose nodes are
 * processes; each message is stamped by the clock of the host that saw it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "correlator/live.h"

struct obs {
	uint32_t node, peer;
	uint64_t ts_ns, bytes;
	uint8_t dir;
};

static int cmp_obs(const void *a, const void *b)
{
	const struct obs *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* "comm[pid]" for a process, the address for what nobody watched. */
static void end_label(const struct cw_conn_record *r, bool with_host,
		      char *buf, size_t len)
{
	if (r->flags & CW_REC_NO_OWNER)
		snprintf(buf, len, "?[netns %u]", r->netns);
	else if (with_host)
		snprintf(buf, len, "%s[%u]@%s", r->proc.comm, r->proc.tgid,
			 r->host);
	else
		snprintf(buf, len, "%s[%u]", r->proc.comm, r->proc.tgid);
}

static void peer_label(const struct cw_conn_record *r, char *buf, size_t len)
{
	char a[64];

	cw_addr_str(&r->raddr, a, sizeof(a));
	if (r->role == CW_REC_ROLE_CLIENT)
		snprintf(buf, len, "%s:%u", a, r->rport);
	else
		snprintf(buf, len, "%s", a);
}

int cw_live_trace(const struct cw_pairing *p,
		  const struct cw_timing_record *recs, size_t n,
		  bool with_host, struct cw_msgtrace *t)
{
	const struct cw_conn_record *me, *peer;
	struct obs *o = NULL, *tmp;
	size_t i, j, no = 0, cap = 0;
	char a[192], b[192];
	int node, pnode, err = -1;
	long e;

	for (i = 0; i < n; i++) {
		e = cw_pairing_find(p, recs[i].host, recs[i].cookie);
		if (e < 0 || !p->partner)
			continue; /* a window of a connection never collected */
		me = cw_pairing_end(p, (size_t)e);
		end_label(me, with_host, a, sizeof(a));
		if (p->partner[e] >= 0) {
			peer = cw_pairing_end(p, (size_t)p->partner[e]);
			end_label(peer, with_host, b, sizeof(b));
		} else {
			peer_label(me, b, sizeof(b));
		}
		node = cw_msgtrace_node(t, a);
		pnode = cw_msgtrace_node(t, b);
		if (node < 0 || pnode < 0)
			goto out;
		for (j = 0; j < recs[i].n; j++) {
			if (no == cap) {
				cap = cap ? cap * 2 : 1024;
				tmp = realloc(o, cap * sizeof(*o));
				if (!tmp)
					goto out;
				o = tmp;
			}
			o[no++] = (struct obs){
				.node = (uint32_t)node,
				.peer = (uint32_t)pnode,
				.ts_ns = recs[i].msgs[j].ts_ns,
				.bytes = recs[i].msgs[j].bytes,
				.dir = recs[i].msgs[j].dir,
			};
		}
	}
	/* The trace wants each node's messages in its own clock's order. */
	qsort(o, no, sizeof(*o), cmp_obs);
	for (i = 0; i < no; i++)
		if (cw_msgtrace_add(t, o[i].ts_ns, o[i].node, o[i].peer,
				    o[i].dir == 1 ? CW_MSG_OUT : CW_MSG_IN,
				    o[i].bytes))
			goto out;
	err = cw_msgtrace_finish(t, "timing windows");
out:
	if (err)
		cw_error("unable to build the message trace from timing windows");
	free(o);
	return err;
}
