// SPDX-License-Identifier: MIT
/*
 * The hash table against a plain array: inserts, lookups, deletes (the
 * last entry moves into the hole), growth, reserve, the batch interface
 * (hash, prefetch, upsert_hashed), keys that differ in one byte anywhere,
 * packing and rehashing in place, and the stable FNV hash that colours
 * depend on.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "tests/unit/check.h"

/* 41 bytes (the table's key size; the struct pads to 48): not a
 * multiple of 8, so the hash reads a tail and keys compare by memcmp. */
struct key {
	uint64_t a, b;
	char name[25];
};
#define KEY_LEN (offsetof(struct key, name) + sizeof(((struct key *)0)->name))

static void key_of(struct key *k, unsigned int i)
{
	memset(k, 0, sizeof(*k));
	k->a = i * 7919ULL;
	k->b = i % 3;
	snprintf(k->name, sizeof(k->name), "host-%05u", i % 1000);
}

static void test_basic(void)
{
	enum { N = 50000 };
	struct cw_htab h;
	struct key k;
	unsigned int i;
	bool created;
	uint32_t *v;

	cw_htab_init(&h, KEY_LEN, sizeof(uint32_t));
	CHECK(!cw_htab_get(&h, &k) && cw_htab_index(&h, &k) == -1);
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		v = cw_htab_upsert(&h, &k, &created);
		CHECK(v && created && *v == 0);
		if (v)
			*v = i;
	}
	CHECK(h.len == N);
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		v = cw_htab_upsert(&h, &k, &created);
		CHECK(v && !created && *v == i);
		/* Entries are in insertion order. */
		CHECK(cw_htab_index(&h, &k) == (long)i);
		CHECK(!memcmp(cw_htab_key(&h, i), &k, sizeof(k)));
	}
	/* Delete every third: the last entry fills each hole. */
	for (i = 0; i < N; i += 3) {
		key_of(&k, i);
		CHECK(cw_htab_delete(&h, &k));
		CHECK(!cw_htab_delete(&h, &k));
	}
	CHECK(h.len == N - (N + 2) / 3);
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		v = cw_htab_get(&h, &k);
		if (i % 3 == 0) {
			CHECK(!v);
		} else {
			CHECK(v && *v == i);
		}
	}
	for (i = 0; i < h.len; i++) {
		v = cw_htab_val(&h, i);
		key_of(&k, *v);
		CHECK(cw_htab_index(&h, &k) == (long)i);
	}
	cw_htab_release(&h);
	CHECK(h.len == 0 && !cw_htab_get(&h, &k));
}

/* Keys that differ in a single byte are all distinct. */
static void test_one_byte(void)
{
	unsigned char key[40];
	struct cw_htab h;
	size_t i, b;

	cw_htab_init(&h, sizeof(key), 0);
	for (i = 0; i < sizeof(key); i++) {
		for (b = 1; b < 256; b <<= 1) {
			memset(key, 0, sizeof(key));
			key[i] = (unsigned char)b;
			CHECK(cw_htab_upsert(&h, key, NULL));
		}
	}
	CHECK(h.len == sizeof(key) * 8);
	cw_htab_release(&h);
}

static void test_batch(void)
{
	enum { N = 20000, B = 16 };
	struct cw_htab h;
	struct key k[B];
	uint32_t hv[B], *v;
	unsigned int i, j;
	bool created;

	cw_htab_init(&h, sizeof(k[0]), sizeof(uint32_t));
	CHECK(!cw_htab_reserve(&h, N));
	CHECK(h.cap >= N && h.slots * 3 >= (size_t)N * 4);
	/* Prefetching an empty slot or an empty table is harmless. */
	cw_htab_prefetch(&h, 12345);
	cw_htab_prefetch_entry(&h, 12345);
	for (i = 0; i < N; i += B) {
		for (j = 0; j < B; j++) {
			key_of(&k[j], (i + j) / 2); /* each key twice */
			hv[j] = cw_htab_hash(&h, &k[j]);
			cw_htab_prefetch(&h, hv[j]);
		}
		for (j = 0; j < B; j++)
			cw_htab_prefetch_entry(&h, hv[j]);
		for (j = 0; j < B; j++) {
			v = cw_htab_upsert_hashed(&h, &k[j], hv[j], &created);
			CHECK(v && created == !((i + j) % 2));
			if (v)
				(*v)++;
		}
	}
	CHECK(h.len == N / 2);
	for (i = 0; i < h.len; i++)
		CHECK(*(uint32_t *)cw_htab_val(&h, i) == 2);
	cw_htab_release(&h);
}

static void test_hashes(void)
{
	/* FNV-1a with the final mix: colours hang on it, never change it. */
	CHECK(cw_hash_bytes("", 0) == 0xecba3df2c3383c52ULL);
	CHECK(cw_hash_bytes("nginx", 5) == 0x5522a1cddeba403eULL);
	CHECK(cw_hash_bytes("nginx", 5) != cw_hash_bytes("nginy", 5));
	CHECK(cw_hash_mem("abcdefghi", 9) != cw_hash_mem("abcdefghj", 9));
	CHECK(cw_hash_mem("abcdefgh", 8) != cw_hash_mem("abcdefgh\0", 9));
}

/*
 * cw_htab_pack() keeps the marked entries in their order, and every kept
 * key (and no dropped one) is found after; cw_htab_rehash() finds keys
 * rewritten in place.  Keys of 41 bytes and of 8 (compared inline).
 */
static void test_pack_rehash(size_t key_size)
{
	enum { N = 3000 };
	static uint32_t id[N];
	struct cw_htab h;
	struct key k;
	unsigned int i, n = 0;
	bool created;
	uint32_t *v;

	cw_htab_init(&h, key_size, sizeof(uint32_t));
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		v = cw_htab_upsert(&h, &k, &created);
		CHECK(v && created);
		if (v)
			*v = i;
		id[i] = i % 3 == 1 ? UINT32_MAX : n++;
	}
	cw_htab_pack(&h, id);
	CHECK(h.len == n);
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		v = cw_htab_get(&h, &k);
		if (i % 3 == 1) {
			CHECK(!v);
			continue;
		}
		CHECK(v && *v == i && cw_htab_index(&h, &k) == (long)id[i]);
	}
	for (i = 0; i < h.len; i++) /* every key moved: a + 1 */
		((struct key *)cw_htab_key(&h, i))->a += 1;
	cw_htab_rehash(&h);
	for (i = 0; i < N; i++) {
		key_of(&k, i);
		CHECK(!cw_htab_get(&h, &k)); /* its old key is gone */
		k.a += 1;
		v = cw_htab_get(&h, &k);
		CHECK(i % 3 == 1 ? !v : v && *v == i);
	}
	cw_htab_release(&h);
}

int main(void)
{
	test_basic();
	test_one_byte();
	test_batch();
	test_hashes();
	test_pack_rehash(KEY_LEN);
	test_pack_rehash(sizeof(uint64_t));
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_htab: all checks passed\n");
	return 0;
}
