// SPDX-License-Identifier: MIT
/*
 * Decoded wire records as JSON lines (`causeway dump`, `run -o`'s
 * records, the agent's spool dump): one object a record, its fields as
 * common/wire.h holds them, every string cleaned to UTF-8 by the writer.
 */
#include <inttypes.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/sample_run.h"
#include "common/wire.h"

/* A sample run: the fields of `causeway samples export --format json`. */
static void samples_json(struct cw_jsonw *w, const struct cw_wire_samples *s)
{
	const struct cw_sample_run *run = s->run;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "samples");
	cw_jsonw_str(w, "host", run->host);
	cw_jsonw_u64(w, "seq", s->seq);
	cw_sample_run_json_fields(w, run);
	cw_jsonw_obj_close(w);
}

/* A checkpoint chunk: its header and its ends as conn records. */
static void state_json(struct cw_jsonw *w, const struct cw_wire_state *st)
{
	size_t i;

	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "state");
	cw_jsonw_str(w, "group", st->group);
	cw_jsonw_str(w, "topic", st->topic);
	cw_jsonw_u64(w, "partition", (uint64_t)st->partition);
	cw_jsonw_u64(w, "offset", (uint64_t)st->offset);
	cw_jsonw_u64(w, "checkpoint", st->checkpoint);
	cw_jsonw_u64(w, "chunk", st->chunk);
	cw_jsonw_u64(w, "chunks", st->chunks);
	cw_jsonw_u64(w, "records", st->records);
	cw_jsonw_u64(w, "stale", st->stale);
	cw_jsonw_u64(w, "lost", st->lost);
	if (st->bk.width_ns)
		cw_jsonw_u64(w, "bucket_ns", st->bk.width_ns);
	cw_jsonw_u64(w, "deltas", st->ndeltas);
	cw_jsonw_u64(w, "edges", st->nedges);
	cw_jsonw_arr_open(w, "ends");
	for (i = 0; i < st->n; i++)
		cw_conn_record_json(w, &st->ends[i]);
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
}

static void edge_node_json(struct cw_jsonw *w, const char *name,
			   const struct cw_edge_node *n)
{
	char a[64];

	cw_jsonw_obj_open(w, name);
	cw_jsonw_str(w, "kind",
		     n->kind == CW_EDGE_NODE_EXTERNAL  ? "external"
		     : n->kind == CW_EDGE_NODE_UNKNOWN ? "unknown"
						       : "process");
	if (n->kind == CW_EDGE_NODE_EXTERNAL) {
		cw_addr_str(&n->addr, a, sizeof(a));
		cw_jsonw_str(w, "addr", a);
		cw_jsonw_u64(w, "port", n->port);
	} else {
		cw_jsonw_str(w, "host", n->host);
		cw_jsonw_u64(w, "netns", n->netns);
	}
	if (n->kind == CW_EDGE_NODE_PROCESS)
		cw_process_json(w, 0, &n->proc);
	cw_jsonw_obj_close(w);
}

/* An edge bucket: its key, its source and its totals. */
static void edge_json(struct cw_jsonw *w, const struct cw_wire_edge *e)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "edge");
	cw_jsonw_str(w, "group", e->group);
	cw_jsonw_str(w, "topic", e->topic);
	cw_jsonw_u64(w, "partition", (uint64_t)e->partition);
	cw_jsonw_u64(w, "offset", (uint64_t)e->offset);
	cw_jsonw_u64(w, "bucket_ns", e->bucket_ns);
	cw_jsonw_u64(w, "width_ns", e->width_ns);
	cw_jsonw_bool(w, "sealed", e->sealed);
	cw_jsonw_u64(w, "protocol", e->protocol);
	edge_node_json(w, "client", &e->client);
	edge_node_json(w, "server", &e->server);
	cw_jsonw_u64(w, "conns", e->t.conns);
	cw_jsonw_u64(w, "paired", e->t.paired);
	cw_jsonw_u64(w, "bytes_c2s", e->t.bytes_c2s);
	cw_jsonw_u64(w, "bytes_s2c", e->t.bytes_s2c);
	cw_jsonw_u64(w, "msgs_c2s", e->t.msgs_c2s);
	cw_jsonw_u64(w, "msgs_s2c", e->t.msgs_s2c);
	cw_jsonw_i64(w, "diff_c2s", e->t.diff_c2s);
	cw_jsonw_i64(w, "diff_s2c", e->t.diff_s2c);
	cw_jsonw_u64(w, "first_ns", e->t.first_ns);
	cw_jsonw_u64(w, "last_ns", e->t.last_ns);
	cw_jsonw_u64(w, "retrans", e->t.retrans);
	cw_edge_health_json(w, &e->h);
	cw_jsonw_u64(w, "set_size", e->set_size);
	cw_jsonw_u64(w, "set_index", e->set_index);
	cw_jsonw_obj_close(w);
}

/* The agent's health, when it sent any (older agents did not). */
static void health_json(struct cw_jsonw *w, const struct cw_host_health *x)
{
	static const struct cw_host_health none;

	if (!memcmp(x, &none, sizeof(none)))
		return;
	cw_jsonw_obj_open(w, "health");
	cw_jsonw_u64(w, "records", x->records);
	cw_jsonw_u64(w, "delivered", x->delivered);
	cw_jsonw_u64(w, "lost", x->lost);
	cw_jsonw_u64(w, "spooled", x->spooled);
	cw_jsonw_u64(w, "spool_records", x->spool_records);
	cw_jsonw_u64(w, "spool_evicted", x->spool_evicted);
	cw_jsonw_u64(w, "kernel_lost", x->kernel_lost);
	cw_jsonw_u64(w, "map_full", x->map_full);
	cw_jsonw_u64(w, "no_owner", x->no_owner);
	cw_jsonw_u64(w, "windows", x->windows);
	cw_jsonw_obj_close(w);
}

/* A window's messages: the header and counts (the lists are for readers
 * of the wire, not for a terminal). */
static void msgs_json(struct cw_jsonw *w, const struct cw_wire_msgs *m)
{
	cw_jsonw_obj_open(w, NULL);
	cw_jsonw_str(w, "kind", "msgs");
	cw_jsonw_str(w, "host", m->host);
	if (m->boot_id[0])
		cw_jsonw_str(w, "boot_id", m->boot_id);
	cw_jsonw_u64(w, "seq", m->seq);
	cw_jsonw_u64(w, "slot_ns", m->slot_ns);
	cw_jsonw_u64(w, "start_ns", m->start_ns);
	cw_jsonw_u64(w, "end_ns", m->end_ns);
	cw_jsonw_u64(w, "chunk", m->chunk);
	cw_jsonw_bool(w, "last", m->last);
	cw_jsonw_u64(w, "lost", m->lost);
	cw_jsonw_u64(w, "sockets", m->nsocks);
	cw_jsonw_u64(w, "messages", m->n);
	cw_jsonw_obj_close(w);
}

void cw_wire_msg_json(struct cw_jsonw *w, const struct cw_wire_msg *m)
{
	switch (m->kind) {
	case CW_WIRE_DNS:
		cw_wire_dns_json(w, &m->dns);
		break;
	case CW_WIRE_MSGS:
		msgs_json(w, &m->msgs);
		break;
	case CW_WIRE_STATE:
		state_json(w, &m->state);
		break;
	case CW_WIRE_EDGE:
		edge_json(w, &m->edge);
		break;
	case CW_WIRE_EDGES:
		/* A line an edge, as its EdgeBucket records would print. */
		for (size_t i = 0; i < m->edges.n; i++) {
			if (i)
				cw_jsonw_end_line(w);
			edge_json(w, &m->edges.e[i]);
		}
		break;
	case CW_WIRE_TIMING:
		cw_timing_window_json(w, &m->timing);
		break;
	case CW_WIRE_SAMPLES:
		samples_json(w, &m->samples);
		break;
	case CW_WIRE_CONN:
		cw_conn_record_json(w, &m->conn);
		break;
	case CW_WIRE_HOST:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "host");
		cw_jsonw_str(w, "host", m->host.host);
		cw_jsonw_u64(w, "seq", m->host.seq);
		cw_jsonw_str(w, "hostname", m->host.hostname);
		cw_jsonw_str(w, "kernel", m->host.kernel);
		cw_jsonw_str(w, "agent_version", m->host.agent_version);
		cw_jsonw_u64(w, "cpus", m->host.cpus);
		cw_jsonw_u64(w, "mem_bytes", m->host.mem_bytes);
		cw_jsonw_u64(w, "time_ns", m->host.time_ns);
		if (m->host.boot_id[0])
			cw_jsonw_str(w, "boot_id", m->host.boot_id);
		health_json(w, &m->host.health);
		cw_jsonw_obj_close(w);
		break;
	case CW_WIRE_PROC:
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_str(w, "kind", "process");
		cw_jsonw_str(w, "host", m->proc.host);
		cw_jsonw_u64(w, "seq", m->proc.seq);
		cw_process_json(w, 0, &m->proc.proc);
		cw_jsonw_u64(w, "rss_bytes", m->proc.rss_bytes);
		cw_jsonw_u64(w, "cpu_ns", m->proc.cpu_ns);
		cw_jsonw_u64(w, "time_ns", m->proc.time_ns);
		cw_jsonw_str(w, "source",
			     m->proc.source == CW_USAGE_CGROUP ? "cgroup"
							       : "proc");
		cw_jsonw_u64(w, "rss_hwm_bytes", m->proc.rss_hwm_bytes);
		cw_jsonw_obj_close(w);
		break;
	}
}
