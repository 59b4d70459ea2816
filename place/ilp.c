// SPDX-License-Identifier: MIT
/*
 * The exact method: an integer program solved by GLPK, for small instances,
 * to measure the others against.  x[u][h] = 1 when movable unit u goes to
 * host h, y[h] = 1 when h is in use, d[l] >= x[a][h] - x[b][h] (both ways,
 * every h) is 1 when link l crosses hosts.  Lexicographic: first the fewest
 * hosts (sum y), then, with sum y fixed at that, the fewest bytes (sum of
 * bytes[l] d[l]).  Units that cannot move are constants.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "place/place_int.h"

struct ilp {
	struct cw_place *p;
	glp_prob *lp;
	uint32_t *hosts; /* allowed, in order */
	size_t n;	 /* allowed hosts */
	int *mv;	 /* unit -> movable index, or -1 */
	size_t nmv;
	int ycol, dcol; /* first y and d columns */
	int bound_row;	/* cross-host bytes at most the current's, or 0 */
	int *ri, *ci;	/* one row at a time */
	double *rv;
};

static int xcol(const struct ilp *m, uint32_t u, size_t hi)
{
	return 1 + m->mv[u] * (int)m->n + (int)hi;
}

/* Row sum(vals) (type) bound, from the ci/rv built by the caller. */
static void add_row(struct ilp *m, int len, int type, double lb, double ub)
{
	int r = glp_add_rows(m->lp, 1);

	glp_set_row_bnds(m->lp, r, type, lb, ub);
	glp_set_mat_row(m->lp, r, len, m->ci, m->rv);
}

/* Position of host h among the allowed, or -1. */
static long host_pos(const struct ilp *m, uint32_t h)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->hosts[i] == h)
			return (long)i;
	return -1;
}

static void columns(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t i, h, ncols = m->nmv * m->n + m->n + p->nlinks;

	glp_add_cols(m->lp, (int)ncols);
	for (i = 1; i <= m->nmv * m->n + m->n; i++)
		glp_set_col_kind(m->lp, (int)i, GLP_BV);
	m->ycol = (int)(m->nmv * m->n) + 1;
	m->dcol = m->ycol + (int)m->n;
	for (i = 0; i < p->nlinks; i++)
		glp_set_col_bnds(m->lp, m->dcol + (int)i, GLP_DB, 0, 1);
	for (i = 0; i < p->nunits; i++) /* pinned units keep hosts in use */
		if (!p->units[i].movable &&
		    (h = (size_t)host_pos(m, p->units[i].host)) < m->n)
			glp_set_col_bnds(m->lp, m->ycol + (int)h, GLP_FX, 1, 1);
}

/* Each unit on one host; each host within capacity and only if in use. */
static void assign_and_capacity(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t u, hi, k;
	int dim;

	for (u = 0; u < p->nunits; u++) {
		if (m->mv[u] < 0)
			continue;
		for (hi = 0; hi < m->n; hi++) {
			m->ci[hi + 1] = xcol(m, (uint32_t)u, hi);
			m->rv[hi + 1] = 1;
		}
		add_row(m, (int)m->n, GLP_FX, 1, 1);
	}
	for (dim = 0; dim < 2; dim++)
		for (hi = 0; hi < m->n; hi++) {
			uint32_t h = m->hosts[hi];
			double cap = dim ? place_cap_mem(p, h)
					 : place_cap_cpu(p, h),
			       fixed = 0;

			k = 0;
			for (u = 0; u < p->nunits; u++) {
				double need = dim ? p->units[u].memory
						  : p->units[u].cpu;

				if (m->mv[u] < 0) {
					fixed += p->units[u].host == h ? need
								       : 0;
					continue;
				}
				m->ci[++k] = xcol(m, (uint32_t)u, hi);
				m->rv[k] = need;
			}
			m->ci[++k] = m->ycol + (int)hi;
			m->rv[k] = -(cap - fixed);
			add_row(m, (int)k, GLP_UP, 0, 0);
		}
}

/* x[u][h] <= y[h]: a unit with no CPU or memory still opens its host. */
static void open_hosts(struct ilp *m)
{
	size_t u, hi;

	for (u = 0; u < m->p->nunits; u++)
		for (hi = 0; m->mv[u] >= 0 && hi < m->n; hi++) {
			m->ci[1] = xcol(m, (uint32_t)u, hi);
			m->rv[1] = 1;
			m->ci[2] = m->ycol + (int)hi;
			m->rv[2] = -1;
			add_row(m, 2, GLP_UP, 0, 0);
		}
}

/* One side of |x[a][h] - x[b][h]| <= d[l], pinned ends as constants. */
static void cut_row(struct ilp *m, size_t l, uint32_t a, uint32_t b, size_t hi)
{
	uint32_t h = m->hosts[hi];
	double lb = 0;
	int k = 1;

	m->ci[1] = m->dcol + (int)l;
	m->rv[1] = 1;
	if (m->mv[a] >= 0) {
		m->ci[++k] = xcol(m, a, hi);
		m->rv[k] = -1;
	} else {
		lb += m->p->units[a].host == h;
	}
	if (m->mv[b] >= 0) {
		m->ci[++k] = xcol(m, b, hi);
		m->rv[k] = 1;
	} else {
		lb -= m->p->units[b].host == h;
	}
	add_row(m, k, GLP_LO, lb, 0);
}

static void cuts(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t l, hi;

	for (l = 0; l < p->nlinks; l++) {
		uint32_t a = p->links[l].a, b = p->links[l].b;

		if (m->mv[a] < 0 && m->mv[b] < 0) {
			double c = p->units[a].host != p->units[b].host;

			glp_set_col_bnds(m->lp, m->dcol + (int)l, GLP_FX, c, c);
			continue;
		}
		for (hi = 0; hi < m->n; hi++) {
			cut_row(m, l, a, b, hi);
			cut_row(m, l, b, a, hi);
		}
	}
}

/* At most max_moves movable units off their current host. */
static void moves_row(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t u;
	long hi;
	int k = 0;

	for (u = 0; u < p->nunits; u++)
		if (m->mv[u] >= 0 &&
		    (hi = host_pos(m, p->units[u].host)) >= 0) {
			m->ci[++k] = xcol(m, (uint32_t)u, (size_t)hi);
			m->rv[k] = 1;
		}
	add_row(m, k, GLP_LO, (double)m->nmv - (double)p->max_moves, 0);
}

/* No more cross-host bytes than the current placement has. */
static void bytes_row(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t l;

	for (l = 0; l < p->nlinks; l++) {
		m->ci[l + 1] = m->dcol + (int)l;
		m->rv[l + 1] = (double)p->links[l].bytes;
	}
	add_row(m, (int)p->nlinks, GLP_UP, 0, (double)place_cross_now(p));
	m->bound_row = glp_get_num_rows(m->lp);
}

/* Solve the MIP; 0 optimal, 1 feasible only (time), -1 no solution. */
static int run(struct ilp *m)
{
	glp_iocp parm;
	int r, st;

	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = GLP_MSG_OFF;
	parm.tm_lim =
		(int)((m->p->time_limit > 0 ? m->p->time_limit : 60) * 1000);
	r = glp_intopt(m->lp, &parm);
	st = glp_mip_status(m->lp);
	if (st == GLP_OPT && r == 0)
		return 0;
	return st == GLP_FEAS ? 1 : -1;
}

static int set_objective(struct ilp *m, bool bytes)
{
	struct cw_place *p = m->p;
	int i, ncols = glp_get_num_cols(m->lp);

	for (i = 1; i <= ncols; i++)
		glp_set_obj_coef(m->lp, i, 0);
	for (i = 0; !bytes && i < (int)m->n; i++)
		glp_set_obj_coef(m->lp, m->ycol + i, 1);
	for (i = 0; bytes && i < (int)p->nlinks; i++)
		glp_set_obj_coef(m->lp, m->dcol + i, (double)p->links[i].bytes);
	glp_set_obj_dir(m->lp, GLP_MIN);
	return 0;
}

/* The fewest hosts, then fix sum y at that; 0, 1 (not proved), -1. */
static int fewest_hosts(struct ilp *m)
{
	double k;
	int r, i;

	set_objective(m, false);
	r = run(m);
	if (r < 0)
		return r;
	k = glp_mip_obj_val(m->lp);
	for (i = 0; i < (int)m->n; i++) {
		m->ci[i + 1] = m->ycol + i;
		m->rv[i + 1] = 1;
	}
	add_row(m, (int)m->n, GLP_UP, 0, k + 0.5);
	return r;
}

static void read_plan(struct ilp *m, uint32_t *host)
{
	size_t u, hi;

	for (u = 0; u < m->p->nunits; u++) {
		host[u] = m->p->units[u].host;
		for (hi = 0; m->mv[u] >= 0 && hi < m->n; hi++)
			if (glp_mip_col_val(m->lp, xcol(m, (uint32_t)u, hi)) >
			    0.5)
				host[u] = m->hosts[hi];
	}
}

static int build(struct ilp *m)
{
	struct cw_place *p = m->p;
	size_t u;

	m->hosts = malloc((p->nhosts + 1) * sizeof(*m->hosts));
	m->mv = malloc((p->nunits + 1) * sizeof(*m->mv));
	size_t row = p->nunits + p->nhosts + p->nlinks + 4;

	m->ci = malloc(row * sizeof(*m->ci));
	m->rv = malloc(row * sizeof(*m->rv));
	if (!m->hosts || !m->mv || !m->ci || !m->rv)
		return cw_error("out of memory for the integer program");
	m->n = cw_place_host_order(p, m->hosts);
	for (u = 0; u < p->nunits; u++)
		m->mv[u] = p->units[u].movable ? (int)m->nmv++ : -1;
	if (m->nmv * m->n + p->nlinks * m->n > 200000)
		return cw_error("ilp: %zu movable units on %zu hosts is too "
				"large for the exact method (it is for small "
				"instances)",
				m->nmv, m->n);
	m->lp = glp_create_prob();
	columns(m);
	assign_and_capacity(m);
	open_hosts(m);
	cuts(m);
	if (p->max_moves >= 0)
		moves_row(m);
	if (place_keeps_bytes(p) && p->nlinks)
		bytes_row(m);
	return 0;
}

int place_ilp(struct cw_place *p, struct cw_place_plan *plan)
{
	struct ilp m = {.p = p};
	int r = 0, r2;

	if (build(&m))
		goto out;
	if (!p->fixed_hosts && p->max_moves < 0)
		r = fewest_hosts(&m);
	if (r < 0 && m.bound_row) {
		/* No plan within capacity keeps the bytes (the current
		 * placement does not fit): the fewest bytes, on any hosts. */
		glp_set_row_bnds(m.lp, m.bound_row, GLP_FR, 0, 0);
		r = 0;
	}
	if (r >= 0) {
		set_objective(&m, true);
		r2 = run(&m);
		r = r2 < 0 ? r2 : r > r2 ? r : r2;
	}
	if (r < 0) {
		r = cw_error("ilp: GLPK found no plan within capacity "
			     "in %.0f s",
			     p->time_limit > 0 ? p->time_limit : 60);
		goto out;
	}
	read_plan(&m, plan->host);
	plan->optimal = r == 0;
	r = 0;
out:
	if (m.lp)
		glp_delete_prob(m.lp);
	free(m.hosts);
	free(m.mv);
	free(m.ci);
	free(m.rv);
	return m.lp ? r : -1;
}
