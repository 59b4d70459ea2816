// SPDX-License-Identifier: MIT
/*
 * Messages from a packet capture, for traces: each run of payload in one
 * direction (common/pcap.h) becomes a message at both ends, with its start,
 * end and size, and the role each end played on the connection.  Nodes are
 * named by address; each connection's ends (address and port) are kept for
 * --truth-links.
 */
#include "common/log.h"
#include "common/pcap.h"
#include "traces/traces.h"

static int on_msg(void *ctx, const struct cw_pcap_msg *pm)
{
	struct cw_traces *t = ctx;
	struct cw_msg m = {.start_ns = pm->start_ns,
			    .end_ns = pm->end_ns,
			    .bytes = pm->bytes,
			    .conn = pm->conn};
	int a = cw_traces_node(t, pm->from), b = cw_traces_node(t, pm->to);

	if (a < 0 || b < 0)
		return cw_error("out of memory for node names");
	if (pm->from_client
		    ? cw_traces_set_ends(t, pm->conn, (uint32_t)a,
					 pm->from_port, (uint32_t)b,
					 pm->to_port)
		    : cw_traces_set_ends(t, pm->conn, (uint32_t)b, pm->to_port,
					 (uint32_t)a, pm->from_port))
		return -1;
	m.node = (uint32_t)a, m.peer = (uint32_t)b, m.dir = CW_MSG_OUT;
	m.role = pm->from_client ? CW_ROLE_CONNECTED : CW_ROLE_ACCEPTED;
	if (cw_traces_add_msg(t, &m))
		return -1;
	m.node = (uint32_t)b, m.peer = (uint32_t)a, m.dir = CW_MSG_IN;
	m.role = pm->from_client ? CW_ROLE_ACCEPTED : CW_ROLE_CONNECTED;
	return cw_traces_add_msg(t, &m);
}

int cw_traces_read_pcap(struct cw_traces *t, const char *path)
{
	if (cw_pcap_read_messages(path, CW_PCAP_AT_END, on_msg, t))
		return -1;
	if (!t->n_msgs)
		return cw_error("'%s': no TCP payload", path);
	return 0;
}
