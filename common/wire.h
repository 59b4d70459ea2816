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
	CW_WIRE_STATE = 6,   /* a correlator checkpoint chunk: cw_wire_state */
	CW_WIRE_EDGE = 7,    /* an edge's time bucket: struct cw_wire_edge */
	CW_WIRE_MSGS = 8,    /* a window's messages for traces: cw_wire_msgs */
	CW_WIRE_DNS = 9,     /* a name for an address: struct cw_wire_dns */
	CW_WIRE_EDGES = 10,  /* edges of one set: struct cw_wire_edges */
};
/* The kinds agents publish (the correlators' own come after). */
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
	/*
	 * Not the decoder's: a consumer's check of a decoded record, counted
	 * with the rest.  Times beyond the correlator's skew bound
	 * (correlator/correlator.h): ahead of its clock, or long before what
	 * it has sealed.  Applied, such a record would move its partition's
	 * sealing point.
	 */
	CW_WIRE_EFUTURE = -4,
	CW_WIRE_EPAST = -5,
};
#define CW_WIRE_NERR 5

/* The agent's own health counters, cumulative since it started. */
struct cw_host_health {
	uint64_t records;	/* connection records made */
	uint64_t delivered;	/* acknowledged by the brokers */
	uint64_t lost;		/* neither delivered nor spooled */
	uint64_t spooled;	/* written to the spool */
	uint64_t spool_records; /* waiting in the spool now */
	uint64_t spool_evicted; /* dropped from the spool for its bound */
	uint64_t kernel_lost;	/* events the kernel dropped: rings full */
	uint64_t map_full;	/* sockets or flows a full map missed */
	uint64_t no_owner;	/* ends closed before an owner was seen */
	uint64_t windows;	/* timing windows collected */
};

struct cw_host_meta {
	char host[CW_HOST_LEN];
	char hostname[CW_HOST_LEN];
	char kernel[CW_HOST_LEN];
	char agent_version[32];
	uint32_t cpus;
	uint64_t mem_bytes;
	uint64_t time_ns; /* CLOCK_REALTIME */
	uint64_t seq;
	/* Boot identity (wire field 9): the host's boot_id, "" if unknown. */
	char boot_id[CW_BOOT_ID_LEN];
	/* The agent's health (HostMeta 10-19): all 0 from older agents. */
	struct cw_host_health health;
};

struct cw_proc_meta {
	char host[CW_HOST_LEN];
	struct cw_process proc;
	uint64_t rss_bytes;
	uint64_t cpu_ns; /* user + system, cumulative */
	uint64_t time_ns;
	uint64_t seq;
	/* Where the figures come from (wire ProcessMeta fields 7-8). */
	uint8_t source;		/* enum cw_usage_source */
	uint64_t rss_hwm_bytes; /* highest resident memory seen; 0 unknown */
};

/* cw_proc_meta.source: a cgroup's figures are the whole container's. */
enum cw_usage_source {
	CW_USAGE_PROC = 0,
	CW_USAGE_CGROUP = 1,
};

struct cw_sample_run; /* common/sample_run.h */

/* A sample run and its place in the agent's sequence. */
struct cw_wire_samples {
	uint64_t seq;
	struct cw_sample_run *run; /* decoded: owned by the message */
};

#define CW_WIRE_NAME_MAX 256 /* group and topic names */

/*
 * Time buckets of edge totals (correlator/bucket.c, topic <prefix>.edges).
 * A node of an edge as the buckets keep it: a process (or an unknown owner
 * in a netns) on a host, or an address nobody watched.
 */
enum cw_edge_node_kind {
	CW_EDGE_NODE_PROCESS = 0,
	CW_EDGE_NODE_UNKNOWN = 1,
	CW_EDGE_NODE_EXTERNAL = 2,
};

struct cw_edge_node {
	uint8_t kind; /* enum cw_edge_node_kind */
	char host[CW_HOST_LEN];
	uint32_t netns;
	struct cw_addr addr; /* external */
	uint16_t port;	     /* external server; 0 for a client */
	struct cw_process proc;
};

/*
 * An edge's health (docs/edge-health.md): counters summed exactly, and
 * histograms (ns; common/hist.h) merged exactly.  connect: the client
 * ends' connect times; rtt: both ends' srtt readings; client and
 * client_first: the client ends' exchange times (to the reply's end, to
 * its start); server: the server ends'.  The edge failed when every
 * connection on it failed (cw_edge_failed()).
 */
struct cw_edge_health {
	uint64_t conns_refused, conns_timeout;
	uint64_t resets_by_client, resets_by_server;
	uint64_t xchg_pipelined;
	struct cw_rec_hist connect, rtt, client, client_first, server;
};

/* x's health into t: counters summed (saturating), histograms merged
 * (x NULL: nothing). */
void cw_edge_health_add(struct cw_edge_health *t,
			const struct cw_edge_health *x);

/*
 * Where edges are stored in bulk (struct cw_edge_total, the graph's
 * connections, edges and view edges) the health is a block of its own
 * on the heap (1.3 KB), NULL while there is none, which is every edge of
 * agents without health: the holder owns it, so a struct copy must
 * either move it (and clear the source) or duplicate it.
 * cw_edge_health_more: x's health (NULL or empty: nothing) into *t, the
 * block made when first needed; 0 or -1 (out of memory: *t unchanged).
 * cw_edge_health_dup: a copy of h (NULL when h has nothing or out of
 * memory).  cw_edge_health_free: *h freed and NULL.
 */
int cw_edge_health_more(struct cw_edge_health **t,
			const struct cw_edge_health *x);
struct cw_edge_health *cw_edge_health_dup(const struct cw_edge_health *h);
void cw_edge_health_free(struct cw_edge_health **h);

/*
 * What one end gives its edge, as differences or totals (pointers NULL:
 * no histogram).  A client end gives its connect time (one sample), its
 * failed connect (refused or timed out) and its exchange times (client,
 * client_first); a server end its exchange times (server); both their
 * rtt readings and untimed exchanges.  A reset counts at its sender
 * (resets_out); the receiver's resets_in only when the edge's other end
 * was not seen (paired false).
 */
struct cw_end_health {
	uint32_t connect_us;
	uint8_t fail;
	uint64_t resets_in, resets_out, xchg_pipelined;
	const struct cw_rec_hist *rtt, *xchg, *xchg_first;
};
bool cw_end_health_any(const struct cw_end_health *e);
/* Into *t, the block made when e has anything; 0 or -1 (out of memory). */
int cw_edge_health_end(struct cw_edge_health **t, const struct cw_end_health *e,
		       bool client, bool paired);

struct cw_jsonw;
/* Has h anything at all (an edge from agents without health, or h NULL:
 * no)?  The readers below take NULL as no health. */
bool cw_edge_health_any(const struct cw_edge_health *h);
/*
 * The network time of an edge at quantile q, ns: the client's exchange
 * time minus the server's at the same quantile (docs/edge-health.md, "the
 * network-time rule"), 0 when negative or when either side has none.
 */
uint64_t cw_edge_network_ns(const struct cw_edge_health *h, double q);
/*
 * h's keys in the current JSON object: the five counters, then for each
 * histogram <name>_count, <name>_p50_ns, _p90_ns, _p99_ns (connect, rtt,
 * client, client_first, server) and the network time's (network_count:
 * the fewer of the two sides' counts).  Nothing when h has nothing.
 */
void cw_edge_health_json(struct cw_jsonw *w, const struct cw_edge_health *h);

/* h's figures as the outputs write them: per histogram (connect, rtt,
 * client, client_first, server, then the network time) count, p50, p90
 * and p99 in ns. */
enum { CW_HEALTH_CONNECT, CW_HEALTH_RTT, CW_HEALTH_CLIENT,
       CW_HEALTH_CLIENT_FIRST, CW_HEALTH_SERVER, CW_HEALTH_NETWORK,
       CW_HEALTH_NQ };
struct cw_health_q {
	uint64_t count, p50, p90, p99;
};
extern const char *const cw_health_q_names[CW_HEALTH_NQ];
void cw_edge_health_q(const struct cw_edge_health *h,
		      struct cw_health_q q[CW_HEALTH_NQ]);

/* One edge's traffic over one bucket (or over many, summed). */
struct cw_edge_total {
	uint64_t conns, paired;
	uint64_t bytes_c2s, bytes_s2c, msgs_c2s, msgs_s2c;
	int64_t diff_c2s, diff_s2c;
	uint64_t first_ns, last_ns;
	uint64_t retrans, est_conns, sampled_bytes;
	uint32_t has_sampled;
	uint32_t pad;
	/* Its health (docs/edge-health.md), NULL: none; owned (see
	 * cw_edge_health_more()): free with cw_edge_health_free(&t->h). */
	struct cw_edge_health *h;
};

/* Did every connection counted on the edge fail to connect? */
static inline bool cw_edge_failed(const struct cw_edge_total *t)
{
	uint64_t f = t->h ? t->h->conns_refused + t->h->conns_timeout : 0;

	return t->conns && f >= t->conns;
}

/* An EdgeBucket record: an edge's bucket from one input partition. */
struct cw_wire_edge {
	char group[CW_WIRE_NAME_MAX];
	char topic[CW_WIRE_NAME_MAX];
	int32_t partition;
	int64_t offset; /* complete up to this input offset */
	uint64_t bucket_ns, width_ns;
	bool sealed;
	uint8_t protocol;
	struct cw_edge_node client, server;
	struct cw_edge_total t; /* t.h NULL: the health is h */
	/* EdgeBucket fields 27-36, in the message itself (one at a time) */
	struct cw_edge_health h;
	uint32_t set_size, set_index; /* its set: (bucket, partition, offset) */
};

/* An EdgeBucket of t: its totals, its health copied into w->h. */
void cw_wire_edge_set_total(struct cw_wire_edge *w,
			    const struct cw_edge_total *t);

/*
 * An EdgeSet record: edges of one set (the same group, topic, partition,
 * offset, bucket_ns, width_ns, sealed and set_size) with consecutive
 * set_index, in one record.  Written from e[0]'s set fields (the others'
 * are not looked at); decoded, e is malloc'ed and each e[i] whole, as an
 * EdgeBucket record of it would decode, so a reader adds them one by one.
 * A writer puts at most CW_WIRE_EDGES_CHUNK edges and CW_WIRE_EDGES_BYTES
 * bytes in one record; a reader takes up to CW_WIRE_EDGES_MAX.
 */
#define CW_WIRE_EDGES_CHUNK 512
#define CW_WIRE_EDGES_BYTES (256u << 10)
#define CW_WIRE_EDGES_MAX   4096
struct cw_wire_edges {
	struct cw_wire_edge *e;
	size_t n;
};

/* What one end did in one open bucket (a StateChunk's EndDelta). */
struct cw_end_delta {
	uint32_t end; /* index among all the checkpoint's live ends */
	uint64_t bucket_ns;
	uint64_t bytes_out, bytes_in, msgs_out, msgs_in, retrans;
	uint64_t last_ns;
	/* Edge health (EndDelta 9-16): what the end's record added. */
	uint32_t connect_us; /* its connect time, when first told here */
	uint8_t fail;	     /* its failed connect, when first told here */
	uint32_t resets_in, resets_out;
	uint64_t xchg_pipelined;
	struct cw_rec_hist rtt, xchg, xchg_first;
};

/* StateChunk.end_flags */
#define CW_END_COUNTED (1u << 0) /* its connection is on an edge already */
#define CW_END_DORMANT (1u << 1) /* silent past the TTL: totals only */

/* The bucket settings and counters of a partition's state. */
struct cw_bucket_state {
	uint64_t width_ns, ttl_ns, lateness_ns;
	uint64_t watermark_ns, sealed_ns;
	uint64_t gone_ends, gone_paired, gone_unpaired;
	uint64_t late, dormant, revived;
	uint64_t sealed_records; /* the pairing's records at the last seal */
};

/*
 * One chunk of a correlator member's checkpoint of one input partition
 * (topic <prefix>.state): the pairing state reflecting every record of
 * (topic, partition) before `offset`, as each end's newest record, split
 * over `chunks` records of at most CW_WIRE_STATE_CHUNK ends so that none is
 * large.  A checkpoint is whole when all its chunks (same checkpoint id)
 * are read.  Decoded, ends is malloc'ed (cw_wire_msg_release frees it).
 */
#define CW_WIRE_STATE_CHUNK 500
#define CW_WIRE_STATE_MAX   4096
struct cw_wire_state {
	char group[CW_WIRE_NAME_MAX]; /* the consumer group it belongs to */
	char topic[CW_WIRE_NAME_MAX]; /* the input topic */
	int32_t partition;
	int64_t offset;	     /* next input offset: reflects all before */
	uint64_t checkpoint; /* id: the same in every chunk, increasing */
	uint32_t chunk, chunks;
	uint64_t records, stale; /* pairing counters at offset */
	uint64_t lost;		 /* records retention deleted before use */
	struct cw_conn_record *ends;
	size_t n;
	/*
	 * Time buckets (wire fields 12-15): end_flags[n] (CW_END_*; NULL
	 * when none), the ends' deltas in open buckets, the sealed edge
	 * totals, and the bucket state (chunk 0; width_ns 0: none).
	 * Decoded, each array is malloc'ed.
	 */
	uint32_t *end_flags;
	struct cw_end_delta *deltas;
	size_t ndeltas;
	struct cw_wire_edge *edges;
	size_t nedges;
	struct cw_bucket_state bk;
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
 * Per-message observations of one host in one timing window (`causeway
 * agent --traces`; Envelope field 17, MsgWindow, on the timing topic).  A
 * window's messages are cut into records of at most CW_WIRE_MSGS_CHUNK
 * (consecutive `chunk` from 0, `last` on the final one), each carrying the
 * sockets its messages name, so a record stands alone.  At most about
 * 2048 * 68 + 4096 * 74 bytes (450 KB); a decoded record may hold up to
 * CW_WIRE_MSGS_MAX messages and twice as many sockets.  Decoded, socks and
 * msgs are malloc'ed.
 */
#define CW_WIRE_MSGS_CHUNK 2048
#define CW_WIRE_MSGS_MAX   16384

struct cw_wire_msock {
	uint64_t cookie;
	uint32_t netns, tgid;
	struct cw_addr laddr, raddr;
	uint16_t lport, rport;
	uint8_t role; /* enum cw_rec_role: SERVER accepted, CLIENT connected */
	bool role_seen;
};

struct cw_wire_mmsg {
	uint64_t start_ns, end_ns, bytes; /* CLOCK_REALTIME, absolute */
	uint32_t sock;			  /* index into socks */
	uint32_t ctx; /* 1 + index of the request's socket */
	uint32_t tid, seq, ctx_seq, ctx_open;
	bool out;
	bool ctx_loop; /* ctx is the read of the same loop iteration */
};

struct cw_wire_msgs {
	char host[CW_HOST_LEN];
	char boot_id[CW_BOOT_ID_LEN];
	uint64_t slot_ns, start_ns, end_ns, seq, lost;
	uint32_t chunk;
	bool last;
	struct cw_wire_msock *socks;
	size_t nsocks;
	struct cw_wire_mmsg *msgs;
	size_t n;
};

/*
 * A name an agent learned for an address from a DNS answer its host
 * received (Envelope field 18, DnsName, topic <prefix>.meta, keyed by
 * host; common/wire_dns.c).  name: as common/dns.h writes it, non-empty
 * printable ASCII.
 */
#define CW_WIRE_DNS_NAME_MAX 1024 /* CW_DNS_NAME_MAX */
struct cw_wire_dns {
	char host[CW_HOST_LEN];
	char boot_id[CW_BOOT_ID_LEN];
	struct cw_addr addr;
	char name[CW_WIRE_DNS_NAME_MAX];
	uint32_t ttl_s;
	uint64_t time_ns; /* CLOCK_REALTIME */
	uint64_t seq;
};

struct cw_jsonw;
/* Whether s is a name or host a DnsName may carry: non-empty printable
 * ASCII with no space, as common/dns.c writes names. */
bool cw_wire_dns_name_ok(const char *s);
/* One DnsName as the JSON object `causeway dump` prints (kind "dns"). */
void cw_wire_dns_json(struct cw_jsonw *w, const struct cw_wire_dns *d);

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
		struct cw_wire_state state;	/* ends malloc'ed */
		struct cw_wire_edge edge;
		struct cw_wire_msgs msgs; /* socks and msgs malloc'ed */
		struct cw_wire_dns dns;
		struct cw_wire_edges edges; /* e malloc'ed */
	};
};

void cw_wire_msg_release(struct cw_wire_msg *m);

/*
 * Encode one record into a new malloc'ed buffer the caller frees.
 * 0, or -1 (out of memory, or a kind we can't encode).
 */
int cw_wire_encode(const struct cw_wire_msg *m, uint8_t **buf, size_t *len);
/*
 * cw_wire_encode()'s two ways for connection records, edge buckets and
 * checkpoint chunks,
 * for the tests that hold their bytes equal: written straight from the
 * struct (common/wire_put.c; 0, -1 out of memory, 1 declined), or through
 * protobuf-c's structs (cw_wire_encode_pb, every kind).
 */
int cw_wire_encode_conn_fast(const struct cw_conn_record *r, uint8_t **buf,
			     size_t *len);
int cw_wire_encode_edge_fast(const struct cw_wire_edge *e, uint8_t **buf,
			     size_t *len);
int cw_wire_encode_state_fast(const struct cw_wire_state *st, uint8_t **buf,
			      size_t *len);
int cw_wire_encode_pb(const struct cw_wire_msg *m, uint8_t **buf, size_t *len);
/*
 * An edge bucket's Envelope written into the caller's buffer, for a writer
 * whose transport copies the bytes (a Kafka log): no allocation.  The same
 * bytes as cw_wire_encode(); 0 with *len, -1 never (the room holds any).
 */
#define CW_WIRE_EDGE_ROOM 4800
int cw_wire_encode_edge_to(const struct cw_wire_edge *e,
			   uint8_t buf[CW_WIRE_EDGE_ROOM], size_t *len);
int cw_wire_encode_edges_fast(const struct cw_wire_edges *s, uint8_t **buf,
			      size_t *len);
/*
 * An EdgeSet written edge by edge into the caller's buffer (cap >=
 * CW_WIRE_EDGES_ROOM), for the correlator's writer, which neither copies
 * its edges into an array nor knows their sizes before:
 *
 *	cw_wire_edges_begin(&p, buf, cap, &head);  // head: set fields, and
 *						    // set_index of the first
 *	while (more && !cw_wire_edges_add(&p, &edge))	// 1: no room left
 *		...;
 *	len = cw_wire_edges_end(&p);	// p.n edges, the Envelope's bytes;
 *					// 0: no edge added (or no room)
 *
 * The same bytes as cw_wire_encode() of those edges.  Add never fails on
 * an empty record.  The fields are the writer's own.
 */
#define CW_WIRE_EDGES_ROOM (CW_WIRE_EDGE_ROOM + 2 * CW_WIRE_NAME_MAX + 96)
/*
 * Nodes already encoded, for a writer that puts the same nodes in many
 * edges (the correlator's edge sets of a partition): a node
 * equal to one met before (byte for byte) is copied, not encoded again;
 * the bytes are the same.  It keeps pointers to the nodes it met: they
 * stay where they are, unchanged, while it is in use.  Zeroed is empty;
 * out of memory, nodes are encoded as ever.
 */
struct cw_wire_memo_slot;
struct cw_wire_memo {
	struct cw_wire_memo_slot *slot;
	uint8_t *bytes;
	size_t len, cap;
};
void cw_wire_memo_release(struct cw_wire_memo *m);

struct cw_wire_edges_put {
	uint8_t *buf, *p, *end;
	uint8_t *body; /* the EdgeSet's, after room for its length */
	size_t n;      /* edges added */
	/* NULL (begin sets it): each node encoded; set after begin to
	 * share one memo over the records of a writer. */
	struct cw_wire_memo *memo;
};
void cw_wire_edges_begin(struct cw_wire_edges_put *p, uint8_t *buf, size_t cap,
			 const struct cw_wire_edge *head);
int cw_wire_edges_add(struct cw_wire_edges_put *p,
		      const struct cw_wire_edge *e);
/* The same with these nodes in place of e's own (not read): no copy of
 * a kilobyte each into e. */
int cw_wire_edges_add_nodes(struct cw_wire_edges_put *p,
			    const struct cw_wire_edge *e,
			    const struct cw_edge_node *client,
			    const struct cw_edge_node *server);
size_t cw_wire_edges_end(struct cw_wire_edges_put *p);
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
/*
 * cw_wire_decode()'s two ways, for the fuzzer that holds them equal.  A
 * connection record in the shape agents write is read straight into `out`
 * (CW_WIRE_CONN; common/wire_fast.c); anything else is declined (0) and
 * goes through protobuf-c (cw_wire_decode_pb), which judges every input.
 */
int cw_wire_decode_conn_fast(const uint8_t *buf, size_t len,
			     struct cw_wire_msg *out);
int cw_wire_decode_pb(const uint8_t *buf, size_t len, struct cw_wire_msg *out,
		      char *err, size_t errlen);

/* "malformed", "unknown version", "unknown kind", "future", "past". */
const char *cw_wire_strerror(int err);
/* "conn", "host", "process", "timing", "samples", "state", "edge",
 * "msgs", "dns", "edges". */
const char *cw_wire_kind_name(int kind);
/*
 * One decoded message as a JSON object with a "kind" key (what `causeway
 * dump` prints); no line end.  An EdgeSet is one object of kind "edge"
 * a line for each of its edges, as its EdgeBucket records would print.
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
 * by "<host>/<device>"; DNS names by host.  Other metadata has none:
 * returns 0 with buf "".
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
