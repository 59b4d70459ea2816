// SPDX-License-Identifier: MIT
/*
 * Names of the peers outside the fleet (correlator/pipeline.h): the
 * agents' DnsName records into one address -> name map, and the graph's
 * external nodes named from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "correlator/pipeline.h"

struct name_key {
	struct cw_addr addr;
	uint8_t pad[7]; /* zeroed: keys hash 8 bytes at a time */
};

struct name_val {
	uint64_t time_ns;
	uint32_t ttl_s;
	char host[CW_HOST_LEN];
	char name[CW_NODE_NAME_MAX];
};

void cw_peer_names_init(struct cw_peer_names *n, size_t cap)
{
	memset(n, 0, sizeof(*n));
	cw_htab_init(&n->map, sizeof(struct name_key), sizeof(struct name_val));
	n->cap = cap ? cap : CW_PEER_NAMES_MAX;
}

void cw_peer_names_release(struct cw_peer_names *n)
{
	cw_htab_release(&n->map);
	free(n->pos);
	memset(n, 0, sizeof(*n));
}

/* Whether record d stands over what v holds: newer, or on a tie the
 * smaller host, then the smaller name (an order, so any merge agrees). */
static bool wins(const struct cw_wire_dns *d, const char *name,
		 const struct name_val *v)
{
	int c;

	if (d->time_ns != v->time_ns)
		return d->time_ns > v->time_ns;
	c = strcmp(d->host, v->host);
	return c ? c < 0 : strcmp(name, v->name) < 0;
}

/* Room for one more: among a few entries from the cursor, the one
 * learned longest ago goes (a sample keeps an add O(1)). */
static void evict_one(struct cw_peer_names *n)
{
	size_t best = 0, i;
	uint64_t oldest = UINT64_MAX;

	for (i = 0; i < 16 && i < n->map.len; i++) {
		size_t at = (n->cursor + i) % n->map.len;
		const struct name_val *v = cw_htab_val(&n->map, at);

		if (v->time_ns < oldest) {
			oldest = v->time_ns;
			best = at;
		}
	}
	n->cursor = (n->cursor + i) % n->map.len;
	n->evicted++;
	cw_htab_delete(&n->map, cw_htab_key(&n->map, best));
}

int cw_peer_names_add(struct cw_peer_names *n, const struct cw_wire_dns *d)
{
	char name[CW_NODE_NAME_MAX];
	struct name_key k;
	struct name_val *v;
	bool created;

	memset(&k, 0, sizeof(k));
	k.addr = d->addr;
	/* Names past the node's room (escaped bytes only) are cut. */
	snprintf(name, sizeof(name), "%.*s", (int)sizeof(name) - 1, d->name);
	n->records++;
	v = cw_htab_get(&n->map, &k);
	if (v && strcmp(v->name, name))
		n->disagreed++;
	if (v && !wins(d, name, v))
		return 0;
	if (!v && n->map.len >= n->cap)
		evict_one(n);
	v = cw_htab_upsert(&n->map, &k, &created);
	if (!v)
		return -1;
	v->time_ns = d->time_ns;
	v->ttl_s = d->ttl_s;
	snprintf(v->host, sizeof(v->host), "%s", d->host);
	snprintf(v->name, sizeof(v->name), "%s", name);
	return 0;
}

const char *cw_peer_names_get(const struct cw_peer_names *n,
			      const struct cw_addr *a)
{
	struct name_key k;
	const struct name_val *v;

	memset(&k, 0, sizeof(k));
	k.addr = *a;
	v = cw_htab_get(&n->map, &k);
	return v ? v->name : NULL;
}

size_t cw_peer_names_apply(const struct cw_peer_names *n, struct cw_graph *g)
{
	size_t i, named = 0;

	for (i = 0; i < g->nnodes; i++) {
		struct cw_node *x = &g->nodes[i];
		const char *name;

		if (x->kind != CW_NODE_EXTERNAL)
			continue;
		name = cw_peer_names_get(n, &x->addr);
		snprintf(x->name, sizeof(x->name), "%s", name ? name : "");
		named += name != NULL;
	}
	return named;
}

/* One record of the meta topic: only DnsName ones are keyed (by host),
 * so the other metadata is passed over without decoding. */
static int read_one(void *arg, int64_t at, const char *key, size_t key_len,
		    const uint8_t *v, size_t len)
{
	struct cw_peer_names *n = arg;
	struct cw_wire_msg m;
	int kind;

	if (!key || !key_len)
		return 0;
	kind = cw_wire_decode(v, len, &m, NULL, 0);
	if (kind == CW_WIRE_DNS)
		return cw_peer_names_add(n, &m.dns) ? -1 : 0;
	n->bad += kind < 0;
	cw_wire_msg_release(&m);
	return 0;
}

/* Keep where the read is in each partition, for the next read on. */
struct reading {
	struct cw_peer_names *n;
	int64_t *pos;
};

static int read_at(void *arg, int64_t at, const char *key, size_t key_len,
		   const uint8_t *v, size_t len)
{
	struct reading *r = arg;

	*r->pos = at + 1;
	return read_one(r->n, at, key, key_len, v, len);
}

int cw_peer_names_read_on(struct cw_peer_names *n, struct cw_kafka_log *l)
{
	int parts = cw_kafka_log_partitions(l), p, err = 0;

	if (parts < 0)
		return -1;
	if (parts > n->nparts) {
		int64_t *pos = realloc(n->pos, (size_t)parts * sizeof(*pos));

		if (!pos)
			return cw_error("out of memory");
		for (p = n->nparts; p < parts; p++)
			pos[p] = 0;
		n->pos = pos;
		n->nparts = parts;
	}
	for (p = 0; !err && p < parts; p++) {
		struct reading r = {n, &n->pos[p]};

		err = cw_kafka_log_read(l, p, n->pos[p], read_at, &r);
	}
	return err ? -1 : 0;
}

int cw_peer_names_read_kafka(struct cw_peer_names *n,
			     const struct cw_kafka_conf *kc)
{
	char topic[CW_KAFKA_TOPIC_MAX];
	struct cw_kafka_log *l;
	int err;

	if (!cw_kafka_topic(kc, CW_WIRE_DNS, topic, sizeof(topic)))
		return -1;
	l = cw_kafka_log_new(kc, topic);
	err = l ? cw_peer_names_read_on(n, l) : -1;
	cw_kafka_log_free(l);
	if (err)
		return cw_error("unable to read the names of '%s'", topic);
	if (n->bad)
		cw_warn("'%s': skipped %llu keyed records that do not decode",
			topic, (unsigned long long)n->bad);
	return 0;
}
