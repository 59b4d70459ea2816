/* SPDX-License-Identifier: MIT */
/*
 * Short names for the generated protobuf-c types, for the codec's two
 * halves (common/wire.c encodes, common/wire_decode.c decodes) and the
 * DnsName part (common/wire_dns.c), and a unit test that makes records
 * no writer of ours would.  Nothing else includes this.
 */
#ifndef CW_WIRE_PB_H
#define CW_WIRE_PB_H

#include "common/wire.pb-c.h"

typedef Causeway__Wire__Envelope pb_envelope;
typedef Causeway__Wire__ConnRecord pb_conn;
typedef Causeway__Wire__Process pb_process;
typedef Causeway__Wire__HostMeta pb_host;
typedef Causeway__Wire__ProcessMeta pb_procmeta;
typedef Causeway__Wire__TimingWindow pb_timing;
typedef Causeway__Wire__SampleRun pb_samples;
typedef Causeway__Wire__StateChunk pb_state;
typedef Causeway__Wire__EdgeBucket pb_edge;
typedef Causeway__Wire__EdgeSet pb_edges;
typedef Causeway__Wire__EdgeNode pb_edge_node;
typedef Causeway__Wire__EndDelta pb_end_delta;
typedef Causeway__Wire__BucketState pb_bucket_state;
typedef Causeway__Wire__MsgWindow pb_msgs;
typedef Causeway__Wire__MsgSocket pb_msock;
typedef Causeway__Wire__Msg pb_mmsg;
typedef Causeway__Wire__DnsName pb_dns;

/* DnsName (common/wire_dns.c): env with d packed into a new buffer; 0,
 * or -1 (out of memory, an address of no family).  Decoded: its kind or
 * CW_WIRE_EMALFORMED with the reason in err. */
struct cw_wire_dns;
int cw_wire_dns_encode(pb_envelope *env, const struct cw_wire_dns *d,
		       uint8_t **buf, size_t *len);
int cw_wire_dns_from_pb(const pb_dns *r, struct cw_wire_dns *d, char *err,
			size_t errlen);

#endif
