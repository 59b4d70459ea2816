// SPDX-License-Identifier: MIT
/* One host's correlator in the agent's process (correlator/local.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "correlator/live.h"
#include "correlator/local.h"
#include "correlator/pipeline.h"
#include "paths/paths.h"

void cw_local_init(struct cw_local *l, bool paths)
{
	memset(l, 0, sizeof(*l));
	l->paths = paths;
	cw_pairing_init(&l->pairing);
	cw_peer_names_init(&l->names, 0);
}


int cw_local_on_record(const struct cw_conn_record *r, void *arg)
{
	struct cw_local *l = arg;

	if (cw_pairing_add(&l->pairing, r))
		l->err = cw_error("out of memory");
	if (l->records.fp) {
		cw_conn_record_json(&l->w, r);
		cw_jsonw_end_line(&l->w);
	}
	return l->err;
}

static int keep_window(struct cw_local *l, const struct cw_timing_record *t)
{
	struct cw_timing_record *w;

	if (CW_GROW(l->windows, l->capwindows, l->nwindows + 1, 64))
		return cw_error("out of memory for timing windows");
	w = &l->windows[l->nwindows];
	*w = *t;
	w->msgs = malloc((t->n ? t->n : 1) * sizeof(*t->msgs));
	if (!w->msgs)
		return cw_error("out of memory");
	memcpy(w->msgs, t->msgs, t->n * sizeof(*t->msgs));
	l->nwindows++;
	return 0;
}

static void free_windows(struct cw_local *l)
{
	size_t i;

	for (i = 0; i < l->nwindows; i++)
		free(l->windows[i].msgs);
	free(l->windows);
}

/* Causal paths from what the windows saw; text to stdout, JSON to DIR. */
int cw_local_paths(struct cw_local *l, const char *out)
{
	struct cw_paths_opts po;
	struct cw_msgtrace t;
	struct cw_pathset ps;
	struct cw_outfile of;
	char path[PATH_MAX];
	int err = -1;

	cw_msgtrace_init(&t);
	cw_pathset_init(&ps);
	cw_paths_opts_default(&po);
	if (!l->nwindows) {
		cw_warn("no message was seen in the timing windows: no paths");
		err = 0;
		goto out;
	}
	if (cw_live_trace(&l->pairing, l->windows, l->nwindows, false, &t) ||
	    cw_paths_convolution(&t, &po, &ps))
		goto out;
	printf("\nCausal paths (convolution over %zu timing windows):\n",
	       l->nwindows);
	cw_pathset_print_text(stdout, &t, &ps);
	if (out) {
		snprintf(path, sizeof(path), "%s/paths.json", out);
		if (cw_outfile_open(&of, path))
			goto out;
		cw_pathset_print_json(of.fp, &t, &ps);
		if (cw_outfile_commit(&of))
			goto out;
	}
	err = 0;
out:
	cw_pathset_release(&ps);
	cw_msgtrace_release(&t);
	return err;
}

int cw_local_on_timing(const struct cw_timing_record *t, void *arg)
{
	struct cw_local *l = arg;

	if (l->paths && keep_window(l, t))
		return -1;
	if (l->timing.fp) {
		cw_timing_record_json(&l->tw, t);
		cw_jsonw_end_line(&l->tw);
	}
	return 0;
}

int cw_local_on_meta(const struct cw_proc_meta *pm, void *arg)
{
	struct cw_local *l = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_PROC,
				.version = CW_WIRE_VERSION};

	m.proc = *pm;
	m.proc.seq = ++l->meta_seq;
	cw_wire_msg_json(&l->mw, &m);
	cw_jsonw_end_line(&l->mw);
	return 0;
}

int cw_local_on_dns(const struct cw_wire_dns *n, void *arg)
{
	struct cw_local *l = arg;
	struct cw_wire_msg m = {.kind = CW_WIRE_DNS,
				.version = CW_WIRE_VERSION};

	if (cw_peer_names_add(&l->names, n))
		return l->err = cw_error("out of memory for names");
	if (!l->meta.fp)
		return 0;
	m.dns = *n;
	cw_wire_msg_json(&l->mw, &m);
	cw_jsonw_end_line(&l->mw);
	return 0;
}

/* DIR/conns.jsonl, DIR/meta.jsonl, and DIR/timing.jsonl with windows. */
int cw_local_open(struct cw_local *l, const char *out, bool timing)
{
	char path[PATH_MAX];

	if (!out)
		return 0;
	snprintf(path, sizeof(path), "%s/conns.jsonl", out);
	if (cw_outfile_open(&l->records, path))
		return -1;
	cw_jsonw_init(&l->w, l->records.fp);
	snprintf(path, sizeof(path), "%s/meta.jsonl", out);
	if (cw_outfile_open(&l->meta, path))
		return -1;
	cw_jsonw_init(&l->mw, l->meta.fp);
	if (!timing)
		return 0;
	snprintf(path, sizeof(path), "%s/timing.jsonl", out);
	if (cw_outfile_open(&l->timing, path))
		return -1;
	cw_jsonw_init(&l->tw, l->timing.fp);
	return 0;
}


int cw_local_graph(struct cw_local *l, struct cw_graph *g)
{
	if (cw_pairing_graph(&l->pairing, g))
		return cw_error("out of memory while pairing");
	cw_peer_names_apply(&l->names, g);
	cw_graph_sort_edges(g);
	return 0;
}

int cw_local_commit(struct cw_local *l)
{
	if ((l->records.fp && cw_outfile_commit(&l->records)) ||
	    (l->meta.fp && cw_outfile_commit(&l->meta)) ||
	    (l->timing.fp && cw_outfile_commit(&l->timing)))
		return -1;
	return 0;
}

void cw_local_release(struct cw_local *l)
{
	if (l->records.fp)
		cw_outfile_abort(&l->records);
	if (l->timing.fp)
		cw_outfile_abort(&l->timing);
	if (l->meta.fp)
		cw_outfile_abort(&l->meta);
	cw_pairing_release(&l->pairing);
	free_windows(l);
	cw_peer_names_release(&l->names);
}
