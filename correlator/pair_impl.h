/* SPDX-License-Identifier: MIT */
/*
 * The pairing's private parts, shared by correlator/pair.c (ends, owners,
 * processes) and correlator/bucket.c (time buckets): nothing outside the
 * correlator includes this.
 */
#ifndef CW_PAIR_IMPL_H
#define CW_PAIR_IMPL_H

#include <stdint.h>

#include "correlator/correlator.h"

/* One end of a connection on one host; no padding, hashed as it is. */
struct end_key {
	uint64_t cookie;
	uint64_t generation; /* UDP: first_ns, a flow re-created later */
	uint32_t host;	     /* id in p->hosts */
	uint16_t rport;	     /* UDP */
	uint8_t protocol;
	uint8_t rfamily; /* UDP: the remote address */
	uint8_t raddr[16];
};

/*
 * A host in one boot: cookies, pids and start times restart at boot, so
 * everything keyed by host id (ends, owners, local-scope tuples) is keyed
 * by the boot too.  Records without a boot id share the boot "".
 */
struct host_key {
	char name[CW_HOST_LEN];	   /* NUL-padded */
	char boot[CW_BOOT_ID_LEN]; /* NUL-padded */
};

/* What makes an end's node: a process on a host, or an unknown owner in a
 * network namespace of a host.  No padding. */
struct owner_key {
	uint32_t host;
	uint32_t netns; /* unknown owner only */
	uint32_t tgid;
	uint32_t unknown;
	uint64_t start_ns;
};

/*
 * An end's process, in p->procs: this header, then comm, cmdline,
 * container and pod, each with its NUL, then zeroes to a multiple of 8.
 * Written as ends come, so ingest writes in order instead of looking up.
 */
struct proc_head {
	uint32_t netns;
	uint32_t tgid;
	uint32_t len; /* of the whole, padded */
	uint32_t pad;
	uint64_t start_ns;
	uint64_t cgroup_id;
};

#define PROC_MAX                                                               \
	(sizeof(struct proc_head) + CW_COMM_MAX + CW_CMDLINE_MAX +             \
	 CW_CONTAINER_MAX + CW_POD_MAX + 8)

/*
 * Both ends of one connection share this key.  A loopback or link-local
 * tuple names a connection inside one host and network namespace only, so
 * its key holds them too: two hosts' 127.0.0.1:6379 never pair.
 */
struct tuple_key {
	struct cw_addr a, b;
	uint16_t aport, bport;
	uint8_t protocol;
	uint8_t pad[5];
	uint32_t host, netns; /* local-scope tuples only, else 0 */
};

/* What the buckets need of an end's process and record. */
const struct proc_head *cw_pairing_proc(const struct cw_pairing *p,
					const struct cw_end *e);
void cw_pairing_proc_unpack(const struct proc_head *h, struct cw_process *pr);
void cw_pairing_end_key(const struct cw_conn_record *r, uint32_t host,
			struct end_key *k);
/* The host id of (host, boot), interned; -1 when out of memory. */
long cw_pairing_host(struct cw_pairing *p, const char *host, const char *boot);
/* Drop what cw_pairing_pair() and cw_pairing_end() made. */
void cw_pairing_forget(struct cw_pairing *p);

/* After ends were freed: drop the processes and owners nobody holds
 * when they are most of the log; 0 or -1. */
int cw_pairing_compact(struct cw_pairing *p);
/* Drop what cw_pairing_pair() found (correlator/pair_match.c). */
void cw_pairing_unpair(struct cw_pairing *p);

/*
 * Each end's tuple (correlator/pair_match.c), kept in p->end_tuple as an
 * id in p->tuples: noted when end i was made or its record replaced,
 * 0 or -1 (no memory: a made end is then dropped by the caller); moved
 * when an end was deleted at i (the ends' last entry moved in); the
 * tuples no end holds any more dropped once they are most of them (after
 * ends were freed), 0 or -1.
 */
int cw_pairing_tuple_note(struct cw_pairing *p, size_t i, bool created);
void cw_pairing_tuple_drop(struct cw_pairing *p, size_t i);
int cw_pairing_tuples_compact(struct cw_pairing *p);

/* bucket.c: the delta of end e (its numbers were prev) into its bucket. */
int cw_buckets_note(struct cw_pairing *p, struct cw_end *e,
		    const struct end_key *k, const struct cw_end *prev,
		    const struct cw_conn_record *r);
/* bucket.c: end k is back; its dormant totals into *prev (true) or not. */
bool cw_buckets_revive(struct cw_pairing *p, const struct end_key *k,
		       struct cw_end *prev);

#endif
