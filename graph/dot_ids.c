// SPDX-License-Identifier: MIT
/*
 * cgraph's graphs for the DOT files causeway writes (graph.dot and `graph
 * --format dot`), with object ids in the order objects are made.  cgraph's
 * own id allocator gives a named object the address of its name's string,
 * and its writer lists subgraphs in id order: the clusters of graph.dot
 * came out in an order that changed from run to run with the heap's
 * layout (and its anonymous ids come from one counter shared, unlocked, by
 * every graph of the process).  Here a name gets the next even id the
 * first time it is seen, an anonymous object the graph's next odd one, so
 * the same graph is written the same.
 */
#include <graphviz/cgraph.h>
#include <stdlib.h>
#include <string.h>

#include "common/htab.h"
#include "common/log.h"
#include "common/util.h"
#include "graph/graph.h"

struct dot_ids {
	Agraph_t *g;	      /* the root graph: its strings hold the names */
	struct cw_htab first; /* a name's hash -> its first name + 1 */
	struct dot_name {
		char *s;
		size_t next; /* the next name of the same hash + 1, or 0 */
	} *names;
	size_t n, cap;
	IDTYPE anon; /* the last anonymous id given (odd) */
};

static void *ids_open(Agraph_t *g, Agdisc_t *disc)
{
	struct dot_ids *d = calloc(1, sizeof(*d));

	(void)disc;
	if (d) {
		d->g = g;
		cw_htab_init(&d->first, sizeof(uint64_t), sizeof(size_t));
	}
	return d;
}

/* Name i's id: 2, 4, 6... (cgraph tells named ids by their even value). */
static IDTYPE name_id(size_t i)
{
	return (IDTYPE)(2 * (i + 1));
}

static long ids_map(void *state, int objtype, char *str, IDTYPE *id,
		    int createflag)
{
	struct dot_ids *d = state;
	uint64_t h;
	size_t *first, i;
	bool created;

	(void)objtype;
	if (!d)
		return 0; /* its open found no memory */
	if (!str) {
		d->anon += 2;
		*id = d->anon | 1;
		return 1;
	}
	h = cw_hash_bytes(str, strlen(str));
	first = createflag ? cw_htab_upsert(&d->first, &h, &created)
			   : cw_htab_get(&d->first, &h);
	if (!first)
		return 0; /* not known (or out of memory): cgraph says so */
	for (i = *first; i; i = d->names[i - 1].next)
		if (!strcmp(d->names[i - 1].s, str)) {
			*id = name_id(i - 1);
			return 1;
		}
	/* A string of the graph's own (agstrdup): its writer reads a flag
	 * in front of a name's bytes (is it HTML, to write as <...>?). */
	if (!createflag || CW_GROW(d->names, d->cap, d->n + 1, 64) ||
	    !(d->names[d->n].s = agstrdup(d->g, str)))
		return 0;
	d->names[d->n].next = *first;
	*first = ++d->n;
	*id = name_id(d->n - 1);
	return 1;
}

/* An id asked for by number: cgraph's own allocator refuses them too. */
static long ids_alloc(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
	return 0;
}

/* Names live as long as the graph: a deleted object's name may come back. */
static void ids_free(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
}

static char *ids_print(void *state, int objtype, IDTYPE id)
{
	struct dot_ids *d = state;

	(void)objtype;
	if (!d || id % 2 || !id || id / 2 > d->n)
		return NULL; /* anonymous */
	return d->names[id / 2 - 1].s;
}

static void ids_close(void *state)
{
	struct dot_ids *d = state;
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++)
		agstrfree(d->g, d->names[i].s);
	free(d->names);
	cw_htab_release(&d->first);
	free(d);
}

static void ids_register(void *state, int objtype, void *obj)
{
	(void)state;
	(void)objtype;
	(void)obj;
}

static Agiddisc_t dot_iddisc = {ids_open,  ids_map,   ids_alloc,   ids_free,
				ids_print, ids_close, ids_register};
static Agdisc_t dot_disc = {&AgMemDisc, &dot_iddisc, &AgIoDisc};

struct Agraph_s *cw_dot_open(const char *name)
{
	return agopen((char *)name, Agdirected, &dot_disc);
}
