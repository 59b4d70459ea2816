// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"

/* 64-bit FNV-1a with a final avalanche: keys here are short. */
uint64_t cw_hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

void cw_htab_init(struct cw_htab *h, size_t key_size, size_t val_size)
{
	memset(h, 0, sizeof(*h));
	h->key_size = key_size;
	h->val_size = val_size;
	/* Keep values 8-byte aligned behind their keys. */
	h->entry_size = ((key_size + 7) & ~(size_t)7) + ((val_size + 7) & ~(size_t)7);
}

void cw_htab_release(struct cw_htab *h)
{
	free(h->index);
	free(h->entries);
	cw_htab_init(h, h->key_size, h->val_size);
}

void *cw_htab_key(const struct cw_htab *h, size_t i)
{
	return h->entries + i * h->entry_size;
}

void *cw_htab_val(const struct cw_htab *h, size_t i)
{
	return h->entries + i * h->entry_size + ((h->key_size + 7) & ~(size_t)7);
}

/* Slot holding key, or the empty slot where it would go. */
static size_t find_slot(const struct cw_htab *h, const void *key)
{
	size_t mask = h->slots - 1;
	size_t s = cw_hash_bytes(key, h->key_size) & mask;

	while (h->index[s] &&
	       memcmp(cw_htab_key(h, h->index[s] - 1), key, h->key_size))
		s = (s + 1) & mask;
	return s;
}

void *cw_htab_get(const struct cw_htab *h, const void *key)
{
	size_t s;

	if (!h->len)
		return NULL;
	s = find_slot(h, key);
	return h->index[s] ? cw_htab_val(h, h->index[s] - 1) : NULL;
}

long cw_htab_index(const struct cw_htab *h, const void *key)
{
	size_t s;

	if (!h->len)
		return -1;
	s = find_slot(h, key);
	return h->index[s] ? (long)h->index[s] - 1 : -1;
}

static int grow_index(struct cw_htab *h)
{
	size_t slots = h->slots ? h->slots * 2 : 64, i;
	uint32_t *old = h->index;

	h->index = calloc(slots, sizeof(*h->index));
	if (!h->index) {
		h->index = old;
		return -1;
	}
	h->slots = slots;
	for (i = 0; i < h->len; i++)
		h->index[find_slot(h, cw_htab_key(h, i))] = (uint32_t)i + 1;
	free(old);
	return 0;
}

void *cw_htab_upsert(struct cw_htab *h, const void *key, bool *created)
{
	size_t s;

	if (created)
		*created = false;
	if ((h->len + 1) * 4 > h->slots * 3 && grow_index(h))
		return NULL;
	s = find_slot(h, key);
	if (h->index[s])
		return cw_htab_val(h, h->index[s] - 1);
	if (h->len == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 32;
		unsigned char *e = realloc(h->entries, cap * h->entry_size);

		if (!e)
			return NULL;
		h->entries = e;
		h->cap = cap;
	}
	memset(cw_htab_key(h, h->len), 0, h->entry_size);
	memcpy(cw_htab_key(h, h->len), key, h->key_size);
	h->index[s] = (uint32_t)++h->len;
	if (created)
		*created = true;
	return cw_htab_val(h, h->len - 1);
}

bool cw_htab_delete(struct cw_htab *h, const void *key)
{
	size_t mask = h->slots - 1, s, j, k, e, last;

	if (!h->len)
		return false;
	s = find_slot(h, key);
	if (!h->index[s])
		return false;
	e = h->index[s] - 1;
	/* Backward-shift deletion keeps probe chains unbroken. */
	h->index[s] = 0;
	for (j = (s + 1) & mask; h->index[j]; j = (j + 1) & mask) {
		k = cw_hash_bytes(cw_htab_key(h, h->index[j] - 1),
				  h->key_size) & mask;
		if ((j > s && (k <= s || k > j)) || (j < s && k <= s && k > j)) {
			h->index[s] = h->index[j];
			h->index[j] = 0;
			s = j;
		}
	}
	last = h->len - 1;
	if (e != last) {
		memcpy(cw_htab_key(h, e), cw_htab_key(h, last), h->entry_size);
		h->index[find_slot(h, cw_htab_key(h, e))] = (uint32_t)e + 1;
	}
	h->len--;
	return true;
}
