/* SPDX-License-Identifier: MIT */
/*
 * Short names for the generated protobuf-c types, for the codec's two
 * halves (common/wire.c encodes, common/wire_decode.c decodes).  Nothing
 * else includes this.
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
typedef Causeway__Wire__EdgeNode pb_edge_node;
typedef Causeway__Wire__EndDelta pb_end_delta;
typedef Causeway__Wire__BucketState pb_bucket_state;
typedef Causeway__Wire__MsgWindow pb_msgs;
typedef Causeway__Wire__MsgSocket pb_msock;
typedef Causeway__Wire__Msg pb_mmsg;

#endif
