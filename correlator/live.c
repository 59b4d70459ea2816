// SPDX-License-Identifier: MIT
/*
 * Live causal paths: the agents' timing windows, joined to the connection
 * ends the pairing matched, become a message trace whose nodes are
 * processes; each message is stamped by the clock of the host that saw it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "correlator/live.h"

struct obs {
	uint32_t node, peer, conn; /* conn: the same id at both ends */
	uint64_t ts_ns, bytes;
	uint8_t dir;
};

/* The inference's direction of an observed one. */
static enum cw_msg_dir msg_dir(uint8_t dir)
{
	return dir == CW_OBS_OUT ? CW_MSG_OUT : CW_MSG_IN;
}

static int cmp_obs(const void *a, const void *b)
{
	const struct obs *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* The connection's roles tell the inference who calls whom. */
static int add_role(struct cw_msgtrace *t, uint8_t role, uint32_t node,
		    uint32_t peer)
{
	if (role == CW_REC_ROLE_CLIENT)
		return cw_msgtrace_add_call(t, node, peer);
	if (role == CW_REC_ROLE_SERVER)
		return cw_msgtrace_add_call(t, peer, node);
	return 0;
}

/* A node's name: comm[pid], @host when ends of several hosts meet. */
static void node_label(char *buf, size_t len, bool with_host, uint32_t flags,
		       uint32_t netns, const struct cw_process *proc,
		       const char *host)
{
	if (flags & CW_REC_NO_OWNER)
		snprintf(buf, len, with_host ? "?[netns %u]@%s" : "?[netns %u]",
			 netns, host);
	else if (with_host)
		snprintf(buf, len, "%s[%u]@%s", proc->comm, proc->tgid, host);
	else
		snprintf(buf, len, "%s[%u]", proc->comm, proc->tgid);
}

/* An unpaired end's peer: the server's address and port, a client's
 * address alone (its port changes with every connection). */
static void addr_label(char *buf, size_t len, uint8_t role,
		       const struct cw_addr *raddr, uint16_t rport)
{
	char a[64];

	cw_addr_str(raddr, a, sizeof(a));
	if (role == CW_REC_ROLE_CLIENT)
		snprintf(buf, len, "%s:%u", a, rport);
	else
		snprintf(buf, len, "%s", a);
}

#define END_LABEL(r, with_host, buf)                                           \
	node_label(buf, sizeof(buf), with_host, (r)->flags, (r)->netns,        \
		   &(r)->proc, (r)->host)
#define PEER_LABEL(r, buf)                                                     \
	addr_label(buf, sizeof(buf), (r)->role, &(r)->raddr, (r)->rport)

int cw_live_trace(const struct cw_pairing *p,
		  const struct cw_timing_record *recs, size_t n, bool with_host,
		  struct cw_msgtrace *t)
{
	const struct cw_conn_record *me, *peer;
	struct obs *o = NULL;
	size_t i, j, no = 0, cap = 0;
	char a[192], b[192];
	int node, pnode, err = -1;
	long e, conn;

	for (i = 0; i < n; i++) {
		e = cw_pairing_find(p, recs[i].host, recs[i].boot_id,
				    recs[i].cookie);
		if (e < 0 || !p->partner)
			continue; /* a window of a connection never collected */
		me = cw_pairing_end(p, (size_t)e);
		END_LABEL(me, with_host, a);
		if (p->partner[e] >= 0) {
			peer = cw_pairing_end(p, (size_t)p->partner[e]);
			END_LABEL(peer, with_host, b);
		} else {
			PEER_LABEL(me, b);
		}
		conn = p->partner[e] >= 0 && p->partner[e] < e ? p->partner[e]
							       : e;
		node = cw_msgtrace_node(t, a);
		pnode = cw_msgtrace_node(t, b);
		if (node < 0 || pnode < 0 ||
		    add_role(t, me->role, (uint32_t)node, (uint32_t)pnode))
			goto out;
		for (j = 0; j < recs[i].n; j++) {
			if (CW_GROW(o, cap, no + 1, 1024))
				goto out;
			o[no++] = (struct obs){
				.node = (uint32_t)node,
				.peer = (uint32_t)pnode,
				.conn = (uint32_t)conn + 1,
				.ts_ns = recs[i].msgs[j].ts_ns,
				.bytes = recs[i].msgs[j].bytes,
				.dir = recs[i].msgs[j].dir,
			};
		}
	}
	/* The trace wants each node's messages in its own clock's order. */
	qsort(o, no, sizeof(*o), cmp_obs);
	for (i = 0; i < no; i++)
		if (cw_msgtrace_add_conn(t, o[i].ts_ns, o[i].node, o[i].peer,
					 msg_dir(o[i].dir), o[i].bytes,
					 o[i].conn))
			goto out;
	err = cw_msgtrace_finish(t, "timing windows");
out:
	if (err)
		cw_error("unable to build the message trace from timing "
			 "windows");
	free(o);
	return err;
}

/* ---- pairing the ends from the windows alone ---------------------------- */

struct wend {
	const struct cw_timing_record *rec; /* its first record */
	size_t first, nrecs;		    /* in the sorted record order */
	long partner;			    /* index in ends, or -1 */
	char key[CW_WIRE_KEY_MAX];	    /* canonical 4-tuple + protocol */
};

/* Order of ends: host, boot, cookie (an end's identity). */
static int same_end_cmp(const struct cw_timing_record *x,
			const struct cw_timing_record *y)
{
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	c = strcmp(x->boot_id, y->boot_id);
	if (c)
		return c;
	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct cw_timing_record *x =
		*(const struct cw_timing_record *const *)a;
	const struct cw_timing_record *y =
		*(const struct cw_timing_record *const *)b;
	int c = same_end_cmp(x, y);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_wend(const void *a, const void *b)
{
	const struct wend *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return same_end_cmp(x->rec, y->rec);
}

/* b is a's other end: mirrored endpoints, roles not the same. */
static bool mirrored(const struct cw_timing_record *a,
		     const struct cw_timing_record *b)
{
	if (a->protocol != b->protocol || a->lport != b->rport ||
	    a->rport != b->lport || cw_addr_cmp(&a->laddr, &b->raddr) ||
	    cw_addr_cmp(&a->raddr, &b->laddr))
		return false;
	if (!same_end_cmp(a, b))
		return false;
	/* Loopback and link-local tuples pair inside one host (in one boot)
	 * and netns. */
	if ((cw_addr_is_local(&a->laddr) || cw_addr_is_local(&a->raddr)) &&
	    (strcmp(a->host, b->host) || strcmp(a->boot_id, b->boot_id) ||
	     a->netns != b->netns))
		return false;
	return !(a->role && a->role == b->role);
}

/* Pair the ends of one 4-tuple group [lo, hi) of the sorted ends. */
static void pair_group(struct wend *e, size_t lo, size_t hi,
		       struct cw_live_stats *st)
{
	size_t i, j, found, cand = 0;

	for (i = lo; i < hi; i++) {
		if (e[i].partner >= 0)
			continue;
		found = 0;
		for (j = lo; j < hi; j++)
			if (j != i && mirrored(e[i].rec, e[j].rec)) {
				found++;
				cand = j;
			}
		if (found == 1 && e[cand].partner < 0) {
			/* Mutual: cand must see only i as well. */
			size_t back = 0;

			for (j = lo; j < hi; j++)
				if (j != cand &&
				    mirrored(e[cand].rec, e[j].rec))
					back++;
			if (back == 1) {
				e[i].partner = (long)cand;
				e[cand].partner = (long)i;
				continue;
			}
		}
		if (found > 1)
			st->ambiguous++;
	}
}

/*
 * The records with their end's fields into r (sorted by host, cookie,
 * seq; a replay's NULL), and the ends they make into e, paired; *nr.
 * Returns the number of ends.
 */
static size_t collect_ends(const struct cw_timing_record *recs, size_t n,
			   const struct cw_timing_record **r, struct wend *e,
			   size_t *nr, struct cw_live_stats *st)
{
	const struct cw_timing_record *prev = NULL;
	size_t i, j, ne = 0;

	*nr = 0;
	for (i = 0; i < n; i++) {
		if (!recs[i].has_conn) {
			st->unknown++;
			continue;
		}
		r[(*nr)++] = &recs[i];
	}
	qsort(r, *nr, sizeof(*r), cmp_rec);
	/* Ends: runs of one (host, boot, cookie); a repeated seq is a
	 * replay. */
	for (i = 0; i < *nr; i++) {
		if (prev && !cmp_rec(&prev, &r[i])) {
			st->duplicates++;
			r[i] = NULL;
			continue;
		}
		prev = r[i];
		if (ne && !same_end_cmp(e[ne - 1].rec, r[i])) {
			e[ne - 1].nrecs = i + 1 - e[ne - 1].first;
			continue;
		}
		e[ne] = (struct wend){
			.rec = r[i], .first = i, .nrecs = 1, .partner = -1};
		cw_wire_timing_conn_key(r[i], e[ne].key, sizeof(e[ne].key));
		ne++;
	}
	qsort(e, ne, sizeof(*e), cmp_wend);
	for (i = 0; i < ne; i = j) {
		for (j = i + 1; j < ne && !strcmp(e[i].key, e[j].key); j++)
			;
		if (j - i > 1)
			pair_group(e, i, j, st);
	}
	return ne;
}

/*
 * End i's messages into o[*no..] as node -> pnode.  A window may open in
 * the middle of an exchange: drop what answers a request sent before it,
 * so that each connection begins with its client's request at both ends
 * and the inference sees who calls whom (it goes by the first message on
 * each node's clock).
 */
static void end_messages(const struct wend *e, size_t i,
			 const struct cw_timing_record *const *r, int node,
			 int pnode, struct obs *o, size_t *no,
			 struct cw_live_stats *st)
{
	uint8_t role = e[i].rec->role;
	uint8_t first_dir = role == CW_REC_ROLE_CLIENT	 ? CW_OBS_OUT
			    : role == CW_REC_ROLE_SERVER ? CW_OBS_IN
							 : 0;
	size_t conn = e[i].partner >= 0 && (size_t)e[i].partner < i
			      ? (size_t)e[i].partner
			      : i;
	size_t j, k;

	for (k = e[i].first; k < e[i].first + e[i].nrecs; k++) {
		const struct cw_timing_record *w = r[k];

		for (j = 0; w && j < w->n; j++) {
			if (first_dir && w->msgs[j].dir != first_dir) {
				st->trimmed++;
				continue;
			}
			first_dir = 0;
			o[(*no)++] = (struct obs){
				.node = (uint32_t)node,
				.peer = (uint32_t)pnode,
				.conn = (uint32_t)conn + 1,
				.ts_ns = w->msgs[j].ts_ns,
				.bytes = w->msgs[j].bytes,
				.dir = w->msgs[j].dir,
			};
		}
	}
}

int cw_live_trace_windows(const struct cw_timing_record *recs, size_t n,
			  bool with_host, struct cw_msgtrace *t,
			  struct cw_live_stats *stp)
{
	const struct cw_timing_record **r = NULL;
	struct cw_live_stats st = {.records = n};
	bool oom = true;
	struct wend *e = NULL;
	struct obs *o = NULL;
	size_t i, nr = 0, ne = 0, no = 0, nmsgs = 0;
	char a[192], b[192];
	int node, pnode, err = -1;

	r = malloc((n ? n : 1) * sizeof(*r));
	e = calloc(n ? n : 1, sizeof(*e));
	if (!r || !e)
		goto out;
	ne = collect_ends(recs, n, r, e, &nr, &st);
	for (i = 0; i < nr; i++)
		if (r[i])
			nmsgs += r[i]->n;
	st.ends = ne;
	o = malloc((nmsgs ? nmsgs : 1) * sizeof(*o));
	if (!o)
		goto out;
	for (i = 0; i < ne; i++) {
		END_LABEL(e[i].rec, with_host, a);
		if (e[i].partner >= 0) {
			END_LABEL(e[e[i].partner].rec, with_host, b);
			st.paired++;
		} else {
			PEER_LABEL(e[i].rec, b);
			st.unpaired++;
		}
		node = cw_msgtrace_node(t, a);
		pnode = cw_msgtrace_node(t, b);
		if (node < 0 || pnode < 0 ||
		    add_role(t, e[i].rec->role, (uint32_t)node,
			     (uint32_t)pnode))
			goto out;
		end_messages(e, i, r, node, pnode, o, &no, &st);
	}
	st.messages = no;
	qsort(o, no, sizeof(*o), cmp_obs);
	for (i = 0; i < no; i++)
		if (cw_msgtrace_add_conn(t, o[i].ts_ns, o[i].node, o[i].peer,
					 msg_dir(o[i].dir), o[i].bytes,
					 o[i].conn))
			goto out;
	oom = false;
	err = cw_msgtrace_finish(t, "timing windows");
out:
	if (err && oom)
		cw_error("out of memory building the message trace of a "
			 "window");
	if (stp)
		*stp = st;
	free(o);
	free(e);
	free(r);
	return err;
}
