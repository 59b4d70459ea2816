// SPDX-License-Identifier: MIT
/* `causeway traces` past its options (traces/cmd.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "traces/cmd.h"
#include "traces/traces.h"

static const struct cw_traces *name_order;

static int by_name(const void *a, const void *b)
{
	return strcmp(name_order->names[*(const uint32_t *)a],
		      name_order->names[*(const uint32_t *)b]);
}

static void print_row(const char *name, const struct cw_traces_score *s)
{
	double n = s->requests ? (double)s->requests : 1;

	printf("%-28s %8zu %9.3f %9.3f %9.3f %9.3f %9.3f\n", name, s->requests,
	       s->right / n, s->right_fcfs / n, s->top5 / n,
	       s->links_found ? (double)s->links_hit / s->links_found : 0,
	       s->links_true ? (double)s->links_hit / s->links_true : 0);
}

/* Of the timing links given confidence p, the share right, per bin. */
static void print_calibration(const struct cw_traces_eval *ev)
{
	int b;

	printf("confidence of timing links: bin, links, mean confidence, "
	       "share right\n");
	for (b = 0; b < CW_TRACES_CALIB_BINS; b++) {
		const struct cw_traces_calib *k = &ev->calib[b];

		if (!k->links)
			continue;
		printf("  [%.2f, %.2f) %8zu %9.3f %9.3f\n", cw_traces_calib_lo[b],
		       b + 1 < CW_TRACES_CALIB_BINS ? cw_traces_calib_lo[b + 1]
						    : 1.0,
		       k->links, k->conf_sum / (double)k->links,
		       (double)k->right / (double)k->links);
	}
}

/* Per service by name (the same lines whatever order the input named
 * them in), the whole, what was not scored and what the bound cost. */
static void print_scores(const struct cw_traces *t,
			 const struct cw_traces_eval *ev, size_t max_cands)
{
	uint32_t *ix = malloc((t->n_names + 1) * sizeof(*ix));
	size_t v, n = 0;

	printf("%-28s %8s %9s %9s %9s %9s %9s\n", "service", "requests",
	       "right", "fcfs", "top5", "link-P", "link-R");
	for (v = 0; ix && v < t->n_names; v++)
		if (ev->node[v].requests)
			ix[n++] = (uint32_t)v;
	name_order = t;
	if (ix)
		qsort(ix, n, sizeof(*ix), by_name);
	for (v = 0; v < n; v++)
		print_row(t->names[ix[v]], &ev->node[ix[v]]);
	free(ix);
	if (ev->node[t->n_names].requests)
		print_row("(all)", &ev->node[t->n_names]);
	printf("traces right end to end: %.3f (FCFS %.3f) of %zu\n",
	       ev->traces ? (double)ev->traces_right / ev->traces : 0,
	       ev->traces ? (double)ev->traces_right_fcfs / ev->traces : 0,
	       ev->traces);
	if (t->n_no_client)
		printf("caller side not recorded: %zu calls have no client "
		       "span and are left out; %zu requests that made them "
		       "not scored (scored on the callee side only)\n",
		       t->n_no_client, ev->blind);
	printf("candidate bound (%zu kept, %d held): %zu of %zu windows cut, "
	       "%zu calls, %zu candidates dropped; %zu calls lost their true "
	       "request to it\n",
	       max_cands, CW_TRACES_MAX_OPEN, t->n_cut, t->n_windows,
	       t->n_cut_calls, t->n_cut_cands, t->n_cut_truth);
	print_calibration(ev);
}

static int read_links(struct cw_traces *t, const char *path)
{
	const struct cw_tlinks_stats *l = &t->links;
	FILE *fp = fopen(path, "r");
	int rc;

	if (!fp)
		return cw_error("unable to open '%s': %m", path);
	rc = cw_traces_read_truth_links(t, fp, path);
	fclose(fp);
	if (rc)
		return -1;
	fprintf(stderr,
		"causeway: truth links: %zu lines; %zu requests and %zu calls "
		"found; %zu outside the capture, %zu on connections it lacks, "
		"%zu unmatched, %zu conflicting\n",
		l->records, l->requests, l->calls, l->outside, l->no_conn,
		l->unmatched, l->conflicts);
	return 0;
}

static int write_out(const struct cw_traces *t, const struct cw_traces_cmd *a)
{
	struct cw_outfile of;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (a->output) {
		if (cw_outfile_open(&of, a->output))
			return -1;
		rc = !strcmp(a->format, "jaeger")
			     ? cw_traces_write_jaeger(t, of.fp)
			     : cw_traces_write_otlp(t, of.fp);
		if (rc) {
			cw_outfile_abort(&of);
			return -1;
		}
		if (cw_outfile_commit(&of))
			return -1;
	}
	if (!a->otlp)
		return 0;
	mem = open_memstream(&buf, &len);
	if (!mem)
		return cw_error("out of memory for the OTLP body");
	rc = cw_traces_write_otlp(t, mem);
	fclose(mem);
	if (!rc)
		rc = cw_traces_post(a->otlp, buf, len, NULL, 0);
	free(buf);
	return rc;
}

/* Every MsgWindow record on the timing topic, as a new reader. */
static int read_kafka(struct cw_traces *t, const struct cw_traces_cmd *a)
{
	static struct cw_wire_msg wm; /* large: off the stack */
	struct cw_kafka_conf kc = a->kc;
	char topic[CW_KAFKA_TOPIC_MAX], group[64], why[160];
	const char *topics[1] = {topic};
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	uint64_t last = cw_now_mono_ns(), reb;
	int r, rc = 0;

	snprintf(group, sizeof(group), "causeway-traces-%d-%llu", (int)getpid(),
		 (unsigned long long)cw_now_real_ns());
	kc.group = group; /* never committed: reads the topic whole */
	kc.from_beginning = true;
	cw_kafka_topic(&kc, CW_WIRE_TIMING, topic, sizeof(topic));
	c = cw_kafka_consumer_new(&kc, topics, 1);
	if (!c)
		return -1;
	while (!rc && cw_now_mono_ns() - last < a->idle_ns) {
		r = cw_kafka_consume(c, 200, &m);
		/* Joining the group is no idle time: nothing could come. */
		if (!cw_kafka_consumer_member(c, &reb))
			last = cw_now_mono_ns();
		if (r < 0)
			rc = -1;
		if (r <= 0)
			continue;
		last = cw_now_mono_ns();
		if (cw_wire_decode(m.value, m.len, &wm, why, sizeof(why)) ==
		    CW_WIRE_MSGS)
			rc = cw_traces_add_wire(t, &wm.msgs);
		cw_wire_msg_release(&wm);
		cw_kafka_msg_release(&m);
	}
	cw_kafka_consumer_free(c);
	if (!rc && !t->n_msgs)
		return cw_error("%s: no messages (no records of 'causeway "
				"agent --traces')",
				topic);
	return rc;
}

/* A wire stream file, or what cw_traces_read_file() reads. */
static int read_input(struct cw_traces *t, const char *path)
{
	char head[CW_WIRE_MAGIC_LEN];
	FILE *fp = fopen(path, "r");
	int rc;

	if (!fp)
		return cw_error("cannot open '%s': %m", path);
	if (fread(head, 1, sizeof(head), fp) != sizeof(head) ||
	    memcmp(head, CW_WIRE_MAGIC, sizeof(head))) {
		fclose(fp);
		return cw_traces_read_file(t, path);
	}
	rewind(fp);
	rc = cw_traces_read_wire(t, fp, path);
	fclose(fp);
	return rc;
}

static int read_any(struct cw_traces *t, const struct cw_traces_cmd *a)
{
	int rc;

	t->fold_replicas = a->fold_replicas;
	if (a->truth)
		return cw_traces_read_file(t, a->truth);
	rc = a->kc.brokers ? read_kafka(t, a) : read_input(t, a->input);
	cw_traces_wire_done(t);
	if (!rc && t->wire_records)
		fprintf(stderr,
			"causeway: %zu records from %zu hosts: %zu messages, "
			"%zu left out (loopback or link-local), %llu "
			"events the kernel lost\n",
			t->wire_records, t->wire_hosts, t->n_msgs,
			t->wire_left_out, (unsigned long long)t->wire_lost);
	return rc;
}

int cw_traces_cmd_run(struct cw_traces *t, const struct cw_traces_cmd *a)
{
	struct cw_traces_eval ev;
	uint64_t t0;
	int32_t root;

	if (read_any(t, a) || cw_traces_build(t))
		return -1;
	if (a->links && read_links(t, a->links))
		return -1;
	t0 = cw_now_mono_ns();
	if (cw_traces_infer(t, &a->o))
		return -1;
	fprintf(stderr,
		"causeway: %zu spans linked in %.6fs; %zu windows, %zu cut "
		"(%zu calls, %zu candidates dropped); "
		"%zu thread links%s, %zu ambiguous; %zu multiplexed "
		"connections\n",
		t->n_spans, (double)(cw_now_mono_ns() - t0) / 1e9, t->n_windows,
		t->n_cut, t->n_cut_calls, t->n_cut_cands, t->n_thread_links,
		t->has_ctx ? " (the kernel's context)" : "",
		t->n_ambiguous_thread, t->n_multiplexed);
	if (t->n_round_bound)
		fprintf(stderr,
			"causeway: %zu nodes' timing rounds stopped at the "
			"bound (--rounds %d), still gaining\n",
			t->n_round_bound, a->o.rounds);
	if (t->n_ctx_missing)
		fprintf(stderr,
			"causeway: %zu calls name a request not recorded "
			"(read before the recording began): linked by "
			"timing\n",
			t->n_ctx_missing);
	if (a->truth || a->links) {
		if (cw_traces_evaluate(t, &ev))
			return -1;
		print_scores(t, &ev, a->o.max_cands);
		cw_traces_eval_release(&ev);
	}
	if (write_out(t, a))
		return -1;
	if (!a->waterfall)
		return 0;
	root = cw_traces_find(t, a->trace);
	if (root < 0)
		return cw_error("no trace '%s'", a->trace ? a->trace : "");
	cw_traces_print_waterfall(t, root, stdout);
	return 0;
}

