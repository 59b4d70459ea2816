// SPDX-License-Identifier: MIT
/*
 * The traffic graph from the pairing: a node per owner (a process, or an
 * unknown owner in a network namespace), an external node for the other
 * side of an end nobody paired, and one link per connection added to the
 * graph all at once.
 */
#include <stdlib.h>
#include <string.h>

#include "correlator/pipeline.h"

/* What the build needs at hand. */
struct builder {
	const struct cw_pairing *p;
	struct cw_graph *g;
	long *node_of;		    /* by owner: graph node or -1 */
	struct cw_conn_link *links; /* one per pair or lone end */
	size_t nlinks;
};

#define NO_END UINT32_MAX

/* The graph node of watched end i, made once per owner. */
static long node_for(struct builder *b, size_t i)
{
	long *n = &b->node_of[cw_pairing_numbers(b->p, i)->owner];
	struct cw_end_owner o;

	if (*n < 0) {
		cw_pairing_owner(b->p, i, &o);
		*n = cw_graph_node_for_proc(b->g, o.host, o.netns, o.unknown,
					    &o.proc);
	}
	return *n;
}

/* The bytes of `bytes` whose messages e's agent counted, not estimated. */
static void sampled_traffic(const struct cw_end *e, uint64_t bytes, uint8_t bit,
			    struct cw_conn_traffic *t)
{
	/* ppm 0 is "no estimate block" only where the end is not flagged:
	 * an estimated end no window saw counted none of its bytes. */
	uint32_t ppm = e->sampled_ppm || (e->flags & CW_REC_MSGS_EST)
			       ? e->sampled_ppm
			       : CW_PPM;

	t->has_sampled |= e->sampled_ppm || (e->flags & CW_REC_MSGS_EST);
	t->sampled_bytes += (uint64_t)((double)bytes * ppm / CW_PPM + 0.5);
	if (e->flags & CW_REC_MSGS_EST)
		t->msgs_est |= bit;
}

/* A connection seen from both ends: c the client's, s the server's. */
static void pair_traffic(const struct cw_end *c, const struct cw_end *s,
			 struct cw_conn_traffic *t)
{
	t->bytes_c2s = c->bytes_out;
	t->bytes_s2c = s->bytes_out;
	t->msgs_c2s = c->msgs_out;
	t->msgs_s2c = s->msgs_out;
	t->diff_c2s = (int64_t)(c->bytes_out - s->bytes_in);
	t->diff_s2c = (int64_t)(s->bytes_out - c->bytes_in);
	t->first_ns = c->first_ns < s->first_ns ? c->first_ns : s->first_ns;
	t->last_ns = c->last_ns > s->last_ns ? c->last_ns : s->last_ns;
	t->retrans = c->retrans + s->retrans;
	t->both_ends = 1;
	sampled_traffic(c, t->bytes_c2s, 1, t);
	sampled_traffic(s, t->bytes_s2c, 2, t);
}

/* An end whose partner was not watched. */
static void single_traffic(const struct cw_end *e, struct cw_conn_traffic *t)
{
	bool client = cw_end_is_client(e);

	t->bytes_c2s = client ? e->bytes_out : e->bytes_in;
	t->bytes_s2c = client ? e->bytes_in : e->bytes_out;
	t->msgs_c2s = client ? e->msgs_out : e->msgs_in;
	t->msgs_s2c = client ? e->msgs_in : e->msgs_out;
	t->first_ns = e->first_ns;
	t->last_ns = e->last_ns;
	t->retrans = e->retrans;
	sampled_traffic(e, t->bytes_c2s + t->bytes_s2c, 3, t);
}

/* End i's health into the connection's (paired: its partner is seen). */
static void end_health(const struct cw_pairing *p, size_t i, bool paired,
		       struct cw_conn_traffic *t)
{
	const struct cw_end *e = cw_pairing_numbers(p, i);
	struct cw_end_health x;

	cw_end_health_of(e, cw_pairing_hists(p, i), &x);
	cw_edge_health_end(&t->h, &x, cw_end_is_client(e), paired);
}

static void link_traffic(const struct cw_conn_link *l,
			 struct cw_conn_traffic *t, void *arg)
{
	const struct cw_pairing *p = arg;

	if (l->b == NO_END)
		single_traffic(cw_pairing_numbers(p, l->a), t);
	else
		pair_traffic(cw_pairing_numbers(p, l->a),
			     cw_pairing_numbers(p, l->b), t);
	end_health(p, l->a, l->b != NO_END, t);
	if (l->b != NO_END)
		end_health(p, l->b, true, t);
}

static int add_pair(struct builder *b, size_t ci, size_t si)
{
	struct cw_conn_link *l = &b->links[b->nlinks++];
	long cn = node_for(b, ci), sn = node_for(b, si);

	if (cn < 0 || sn < 0)
		return -1;
	l->client = (uint32_t)cn;
	l->server = (uint32_t)sn;
	l->a = (uint32_t)ci;
	l->b = (uint32_t)si;
	l->protocol = cw_pairing_numbers(b->p, ci)->protocol;
	return 0;
}

static int add_single(struct builder *b, size_t i)
{
	struct cw_conn_link *l = &b->links[b->nlinks++];
	const struct cw_end *e = cw_pairing_numbers(b->p, i);
	bool client = cw_end_is_client(e);
	long me = node_for(b, i);
	long other =
		cw_graph_node_external(b->g, &e->raddr, client ? e->rport : 0);

	if (me < 0 || other < 0)
		return -1;
	l->client = (uint32_t)(client ? me : other);
	l->server = (uint32_t)(client ? other : me);
	l->a = (uint32_t)i;
	l->b = NO_END;
	l->protocol = e->protocol;
	return 0;
}

/*
 * Into the graph, in the order the pairs were found: each end when it
 * comes first in its group's order, with its partner if it has one.
 */
static int add_group(struct builder *b, const uint32_t *idx, size_t n,
		     bool *done)
{
	const struct cw_pairing *p = b->p;
	size_t i;
	long q;

	for (i = 0; i < n; i++) {
		if (done[idx[i]])
			continue;
		done[idx[i]] = true;
		q = p->partner[idx[i]];
		if (q < 0) {
			if (add_single(b, idx[i]))
				return -1;
			continue;
		}
		done[q] = true;
		if (cw_end_is_client(cw_pairing_numbers(p, idx[i]))
			    ? add_pair(b, idx[i], (size_t)q)
			    : add_pair(b, (size_t)q, idx[i]))
			return -1;
	}
	return 0;
}

int cw_pairing_graph_paired(const struct cw_pairing *p, struct cw_graph *g)
{
	size_t n = p->st.ends, units = n - p->st.paired, i, j;
	struct builder b = {.p = p, .g = g};
	bool *done = calloc(n ? n : 1, sizeof(*done));
	int err = -1;

	b.node_of = malloc((cw_pairing_owners(p) + 1) * sizeof(*b.node_of));
	b.links = malloc((units + 1) * sizeof(*b.links));
	if (!done || !b.node_of || !b.links ||
	    cw_graph_reserve(g, g->nnodes + cw_pairing_owners(p) + 64, 0))
		goto out;
	for (i = 0; i < cw_pairing_owners(p); i++)
		b.node_of[i] = -1;
	/* Nodes as the ends come, then the edges all at once. */
	for (i = 0, j = 0; i < p->ngroups; j = p->group_end[i++])
		if (add_group(&b, p->order + j, p->group_end[i] - j, done))
			goto out;
	free(done);
	done = NULL;
	if (cw_graph_add_links(g, b.links, b.nlinks, link_traffic, (void *)p))
		goto out;
	err = 0;
out:
	free(done);
	free(b.links);
	free(b.node_of);
	return err;
}

int cw_pairing_graph(struct cw_pairing *p, struct cw_graph *g)
{
	if (cw_pairing_pair(p))
		return -1;
	return cw_pairing_graph_paired(p, g);
}

int cw_pairing_graph_buckets(struct cw_pairing *p, struct cw_graph *g)
{
	return cw_pairing_edges(p, cw_graph_bucket_edge, g) ? -1 : 0;
}
