/* SPDX-License-Identifier: MIT */
/*
 * A hash table of fixed-size keys and values, stored inline: open
 * addressing (linear probing) over an index into a dense entry array, so
 * iteration is a walk of the array and keys are compared in full.  Each
 * index slot keeps 32 bits of its key's hash: probing and growing rarely
 * touch the entries.  Keys are hashed 8 bytes at a time, so pad them with
 * zeroes, never garbage.
 *
 *	struct cw_htab h;
 *	cw_htab_init(&h, sizeof(struct key), sizeof(struct val));
 *	cw_htab_reserve(&h, expected);			     // optional
 *	struct val *v = cw_htab_upsert(&h, &k, &created);  // zeroed if new
 *	for (size_t i = 0; i < h.len; i++)
 *		use(cw_htab_key(&h, i), cw_htab_val(&h, i));
 *	cw_htab_release(&h);
 *
 * Pointers into the table are valid until the next upsert, delete or
 * cw_htab_pack() (which moves the entries it keeps).
 */
#ifndef CW_HTAB_H
#define CW_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cw_htab {
	size_t key_size, val_size, entry_size;
	size_t len;	 /* entries in use */
	size_t cap;	 /* entries allocated */
	size_t slots;	 /* index slots: a power of two */
	uint64_t *index; /* low 32 bits: entry number + 1 (0 is empty);
			  * high 32 bits: the key's hash */
	unsigned char *entries;
};

void cw_htab_init(struct cw_htab *h, size_t key_size, size_t val_size);
void cw_htab_release(struct cw_htab *h);
/* Room for n entries without growing; 0 or -1 (out of memory). */
int cw_htab_reserve(struct cw_htab *h, size_t n);
/* Value for key, or NULL. */
void *cw_htab_get(const struct cw_htab *h, const void *key);
/* Entry number of key (for cw_htab_key/val), or -1. */
long cw_htab_index(const struct cw_htab *h, const void *key);
/* Value for key, inserted zeroed if absent; NULL only when out of memory. */
void *cw_htab_upsert(struct cw_htab *h, const void *key, bool *created);
/* Remove key; the last entry moves into its place.  true if found. */
bool cw_htab_delete(struct cw_htab *h, const void *key);
/*
 * The same with the key's hash from cw_htab_hash(), for batches: hash a
 * few keys and cw_htab_prefetch() each (a hint to fetch its index slot),
 * then (optionally) cw_htab_prefetch_entry() each (reads the slot, fetches
 * the entry), then look them up: the memory arrives in parallel.
 */
uint32_t cw_htab_hash(const struct cw_htab *h, const void *key);
void cw_htab_prefetch(const struct cw_htab *h, uint32_t hash);
void cw_htab_prefetch_entry(const struct cw_htab *h, uint32_t hash);
void *cw_htab_upsert_hashed(struct cw_htab *h, const void *key, uint32_t hash,
			    bool *created);
void *cw_htab_key(const struct cw_htab *h, size_t i);
void *cw_htab_val(const struct cw_htab *h, size_t i);
/*
 * In place, nothing allocated or freed (the memory stays for the entries
 * to come, its pages already touched): cw_htab_rehash() rebuilds the
 * index from the keys, after the caller rewrote keys in place (no two
 * equal); cw_htab_pack() keeps the entries j whose id[j] is not
 * UINT32_MAX, in their order (id[j]: j's rank among them), and rebuilds
 * the index.  Neither fails.
 */
void cw_htab_rehash(struct cw_htab *h);
void cw_htab_pack(struct cw_htab *h, const uint32_t *id);
/*
 * FNV-1a over the bytes, with a final avalanche.  Stable across versions
 * (colours are picked with it); the table itself uses cw_hash_mem.
 */
uint64_t cw_hash_bytes(const void *p, size_t len);
/* A fast 64-bit hash of len bytes, read 8 at a time. */
uint64_t cw_hash_mem(const void *p, size_t len);

#endif
