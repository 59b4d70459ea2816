/* SPDX-License-Identifier: MIT */
/*
 * A hash table of fixed-size keys and values, stored inline: open
 * addressing (linear probing) over an index into a dense entry array, so
 * iteration is a walk of the array and keys are compared in full.
 *
 *	struct cw_htab h;
 *	cw_htab_init(&h, sizeof(struct key), sizeof(struct val));
 *	struct val *v = cw_htab_upsert(&h, &k, &created);  // zeroed if new
 *	for (size_t i = 0; i < h.len; i++)
 *		use(cw_htab_key(&h, i), cw_htab_val(&h, i));
 *	cw_htab_release(&h);
 *
 * Pointers into the table are valid until the next upsert or delete.
 */
#ifndef CW_HTAB_H
#define CW_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cw_htab {
	size_t key_size, val_size, entry_size;
	size_t len;	   /* entries in use */
	size_t cap;	   /* entries allocated */
	size_t slots;	   /* index slots: a power of two */
	uint32_t *index;   /* entry number + 1; 0 is empty */
	unsigned char *entries;
};

void cw_htab_init(struct cw_htab *h, size_t key_size, size_t val_size);
void cw_htab_release(struct cw_htab *h);
/* Value for key, or NULL. */
void *cw_htab_get(const struct cw_htab *h, const void *key);
/* Entry number of key (for cw_htab_key/val), or -1. */
long cw_htab_index(const struct cw_htab *h, const void *key);
/* Value for key, inserted zeroed if absent; NULL only when out of memory. */
void *cw_htab_upsert(struct cw_htab *h, const void *key, bool *created);
/* Remove key; the last entry moves into its place.  true if found. */
bool cw_htab_delete(struct cw_htab *h, const void *key);
void *cw_htab_key(const struct cw_htab *h, size_t i);
void *cw_htab_val(const struct cw_htab *h, size_t i);
uint64_t cw_hash_bytes(const void *p, size_t len);

#endif
