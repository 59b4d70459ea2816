// SPDX-License-Identifier: MIT
/*
 * Node names: the one name index of paths/ and traces/.  Open addressing
 * over the names' FNV-1a hashes, kept at most half full so probes stay
 * short: interning n names costs O(n), whatever n is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "paths/paths.h"

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/* The slot holding name, or the free slot where it would go. */
static size_t slot_of(const struct cw_names *nm, const char *name)
{
	size_t mask = nm->n_slots - 1;
	size_t i = name_hash(name) & mask;

	while (nm->slots[i] && strcmp(nm->names[nm->slots[i] - 1], name))
		i = (i + 1) & mask;
	return i;
}

int cw_names_find(const struct cw_names *nm, const char *name)
{
	size_t s;

	if (!nm->n_slots)
		return -1;
	s = slot_of(nm, name);
	return nm->slots[s] ? (int)nm->slots[s] - 1 : -1;
}

static int grow_index(struct cw_names *nm)
{
	size_t n = nm->n_slots ? nm->n_slots * 2 : 64, i;
	uint32_t *old = nm->slots;
	size_t old_n = nm->n_slots;

	nm->slots = calloc(n, sizeof(*nm->slots));
	if (!nm->slots) {
		nm->slots = old;
		return -1;
	}
	nm->n_slots = n;
	for (i = 0; i < old_n; i++)
		if (old[i])
			nm->slots[slot_of(nm, nm->names[old[i] - 1])] = old[i];
	free(old);
	return 0;
}

int cw_names_id(struct cw_names *nm, const char *name)
{
	int id = cw_names_find(nm, name);

	if (id >= 0)
		return id;
	if (nm->n_names >= INT32_MAX)
		return -1;
	if ((nm->n_names + 1) * 2 > nm->n_slots && grow_index(nm))
		return -1;
	if (CW_GROW(nm->names, nm->cap_names, nm->n_names + 1, 16))
		return -1;
	nm->names[nm->n_names] = strdup(name);
	if (!nm->names[nm->n_names])
		return -1;
	nm->slots[slot_of(nm, name)] = (uint32_t)++nm->n_names;
	return (int)nm->n_names - 1;
}

void cw_names_reindex(struct cw_names *nm)
{
	size_t i, s;

	if (!nm->n_slots)
		return;
	memset(nm->slots, 0, nm->n_slots * sizeof(*nm->slots));
	for (i = 0; i < nm->n_names; i++) {
		s = slot_of(nm, nm->names[i]);
		if (!nm->slots[s])
			nm->slots[s] = (uint32_t)i + 1;
	}
}

void cw_names_release(struct cw_names *nm)
{
	size_t i;

	for (i = 0; i < nm->n_names; i++)
		free(nm->names[i]);
	free(nm->names);
	free(nm->slots);
	memset(nm, 0, sizeof(*nm));
}
