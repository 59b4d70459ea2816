// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/util.h"

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

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h ^= w * 0x87c37b91114253d5ULL;
	return rotl(h, 31) * 0x4cf5ad432745937fULL;
}

/* A word at a time, then murmur3's finaliser. */
static inline uint64_t hash_mem(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0xff51afd7ed558ccdULL);
	uint64_t w;

	for (; len >= 8; len -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = mix(h, w);
	}
	if (len) {
		w = 0;
		memcpy(&w, s, len);
		h = mix(h, w);
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

uint64_t cw_hash_mem(const void *p, size_t len)
{
	return hash_mem(p, len);
}

/* The 32 bits an index slot keeps; its low bits place it. */
static inline uint32_t hash32(const struct cw_htab *h, const void *key)
{
	uint64_t x = hash_mem(key, h->key_size);

	return (uint32_t)(x ^ (x >> 32));
}

void cw_htab_init(struct cw_htab *h, size_t key_size, size_t val_size)
{
	memset(h, 0, sizeof(*h));
	h->key_size = key_size;
	h->val_size = val_size;
	/* Keep values 8-byte aligned behind their keys. */
	h->entry_size =
		((key_size + 7) & ~(size_t)7) + ((val_size + 7) & ~(size_t)7);
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
	return h->entries + i * h->entry_size +
	       ((h->key_size + 7) & ~(size_t)7);
}

static inline uint64_t slot_make(size_t entry, uint32_t hv)
{
	return (uint64_t)(entry + 1) | (uint64_t)hv << 32;
}

static inline size_t slot_entry(uint64_t s)
{
	return (size_t)(uint32_t)s - 1;
}

/* Are the keys at a and b equal?  Words at a time, inline, when the size
 * is a multiple of 8 (most keys: no call to memcmp per lookup). */
static inline bool key_eq(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	uint64_t u, v, d = 0;
	size_t i;

	if (len % 8)
		return !memcmp(a, b, len);
	for (i = 0; i < len; i += 8) {
		memcpy(&u, x + i, 8);
		memcpy(&v, y + i, 8);
		d |= u ^ v;
	}
	return !d;
}

/* Slot holding key (hashed to hv), or the empty slot where it would go. */
static size_t find_slot(const struct cw_htab *h, const void *key, uint32_t hv)
{
	size_t mask = h->slots - 1;
	size_t s = hv & mask;
	uint64_t x;

	while ((x = h->index[s])) {
		if ((uint32_t)(x >> 32) == hv &&
		    key_eq(cw_htab_key(h, slot_entry(x)), key, h->key_size))
			break;
		s = (s + 1) & mask;
	}
	return s;
}

void *cw_htab_get(const struct cw_htab *h, const void *key)
{
	size_t s;

	if (!h->len)
		return NULL;
	s = find_slot(h, key, hash32(h, key));
	return h->index[s] ? cw_htab_val(h, slot_entry(h->index[s])) : NULL;
}

long cw_htab_index(const struct cw_htab *h, const void *key)
{
	size_t s;

	if (!h->len)
		return -1;
	s = find_slot(h, key, hash32(h, key));
	return h->index[s] ? (long)slot_entry(h->index[s]) : -1;
}

/* An index of `slots` slots (a power of two), filled from the old one. */
static int resize_index(struct cw_htab *h, size_t slots)
{
	size_t i, s, mask = slots - 1;
	uint64_t *index = calloc(slots, sizeof(*index));

	if (!index)
		return -1;
	for (i = 0; i < h->slots; i++) {
		if (!h->index[i])
			continue;
		for (s = (uint32_t)(h->index[i] >> 32) & mask; index[s];
		     s = (s + 1) & mask)
			;
		index[s] = h->index[i];
	}
	free(h->index);
	h->index = index;
	h->slots = slots;
	return 0;
}

static int resize_entries(struct cw_htab *h, size_t cap)
{
	unsigned char *e = realloc(h->entries, cap * h->entry_size);

	if (!e)
		return -1;
	h->entries = e;
	h->cap = cap;
	return 0;
}

int cw_htab_reserve(struct cw_htab *h, size_t n)
{
	size_t slots = h->slots ? h->slots : 64;

	if (n > UINT32_MAX - 1)
		return -1;
	while (n * 4 > slots * 3)
		slots *= 2;
	if (slots != h->slots && resize_index(h, slots))
		return -1;
	if (n > h->cap && resize_entries(h, n))
		return -1;
	return 0;
}

uint32_t cw_htab_hash(const struct cw_htab *h, const void *key)
{
	return hash32(h, key);
}

void cw_htab_prefetch(const struct cw_htab *h, uint32_t hv)
{
	if (h->slots)
		__builtin_prefetch(&h->index[hv & (h->slots - 1)]);
}

void cw_htab_prefetch_entry(const struct cw_htab *h, uint32_t hv)
{
	uint64_t x;

	if (!h->slots)
		return;
	x = h->index[hv & (h->slots - 1)];
	if (x && (uint32_t)(x >> 32) == hv)
		__builtin_prefetch(cw_htab_key(h, slot_entry(x)));
}

void *cw_htab_upsert(struct cw_htab *h, const void *key, bool *created)
{
	return cw_htab_upsert_hashed(h, key, hash32(h, key), created);
}

void *cw_htab_upsert_hashed(struct cw_htab *h, const void *key, uint32_t hv,
			    bool *created)
{
	size_t s;

	if (created)
		*created = false;
	if ((h->len + 1) * 4 > h->slots * 3 &&
	    (h->len >= UINT32_MAX - 1 ||
	     resize_index(h, h->slots ? h->slots * 2 : 64)))
		return NULL;
	s = find_slot(h, key, hv);
	if (h->index[s])
		return cw_htab_val(h, slot_entry(h->index[s]));
	if (h->len == h->cap &&
	    cw_grow(&h->entries, &h->cap, h->len + 1, h->entry_size, 32))
		return NULL;
	memset(cw_htab_key(h, h->len), 0, h->entry_size);
	memcpy(cw_htab_key(h, h->len), key, h->key_size);
	h->index[s] = slot_make(h->len, hv);
	h->len++;
	if (created)
		*created = true;
	return cw_htab_val(h, h->len - 1);
}

void cw_htab_rehash(struct cw_htab *h)
{
	size_t i, s, mask = h->slots - 1;
	uint32_t hv;

	if (!h->slots)
		return;
	memset(h->index, 0, h->slots * sizeof(*h->index));
	for (i = 0; i < h->len; i++) {
		hv = hash32(h, cw_htab_key(h, i));
		for (s = hv & mask; h->index[s]; s = (s + 1) & mask)
			;
		h->index[s] = slot_make(i, hv);
	}
}

void cw_htab_pack(struct cw_htab *h, const uint32_t *id)
{
	size_t j, n = 0;

	for (j = 0; j < h->len; j++) {
		if (id[j] == UINT32_MAX)
			continue;
		if (n != j)
			memcpy(cw_htab_key(h, n), cw_htab_key(h, j),
			       h->entry_size);
		n++;
	}
	h->len = n;
	cw_htab_rehash(h);
}

bool cw_htab_delete(struct cw_htab *h, const void *key)
{
	size_t mask = h->slots - 1, s, j, k, e, last;

	if (!h->len)
		return false;
	s = find_slot(h, key, hash32(h, key));
	if (!h->index[s])
		return false;
	e = slot_entry(h->index[s]);
	/* Backward-shift deletion keeps probe chains unbroken. */
	h->index[s] = 0;
	for (j = (s + 1) & mask; h->index[j]; j = (j + 1) & mask) {
		k = (uint32_t)(h->index[j] >> 32) & mask;
		if ((j > s && (k <= s || k > j)) ||
		    (j < s && k <= s && k > j)) {
			h->index[s] = h->index[j];
			h->index[j] = 0;
			s = j;
		}
	}
	last = h->len - 1;
	if (e != last) {
		uint32_t hv = hash32(h, cw_htab_key(h, last));

		s = find_slot(h, cw_htab_key(h, last), hv);
		memcpy(cw_htab_key(h, e), cw_htab_key(h, last), h->entry_size);
		h->index[s] = slot_make(e, hv);
	}
	h->len--;
	return true;
}
