// SPDX-License-Identifier: MIT
/*
 * causeway samples: record fine-timescale tc counters, keep the runs on
 * disk, and show, export, plot and analyse them.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/sampler.h"
#include "samples/samples.h"
#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/util.h"

#define MAX_LIST 64

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway samples record [--dev DEV]... [--interval "
		"DUR] "
		"[--samples N]\n"
		"                               [--in-region PREFIX]... "
		"[--link-speed BPS]\n"
		"                               [--store DIR] [--keep DUR] "
		"[--max-size BYTES] [-o FILE]\n"
		"       causeway samples list [--store DIR] [-j]\n"
		"       causeway samples show RUN [--store DIR]\n"
		"       causeway samples export RUN --format csv|json [-o "
		"FILE]\n"
		"       causeway samples plot RUN -o FILE.svg\n"
		"       causeway samples bursts RUN [--threshold PCT] "
		"[--link-speed BPS]\n"
		"                               [--conns FILE] [--top N] [-j]\n"
		"\n"
		"RUN is a file, a run name from 'list', or 'latest'.  The "
		"store is\n"
		"--store, else $CAUSEWAY_SAMPLES_DIR, else %s.\n"
		"\n"
		"Examples:\n"
		"  causeway samples record --dev eth0 --interval 100us\n"
		"  causeway samples list\n"
		"  causeway samples export latest --format csv -o run.csv\n"
		"  causeway samples bursts latest --threshold 50 --conns "
		"conns.json\n",
		CW_SAMPLE_DEFAULT_DIR);
}

static int bad_usage(const char *fmt, const char *arg)
{
	cw_error(fmt, arg);
	return 2;
}

/* Shared by the commands that read one run: RUN and --store. */
static int load_run(const char *store, const char *name,
		    struct cw_sample_run **run)
{
	char path[4096];

	if (cw_sample_store_resolve(cw_sample_store_dir(store), name, path,
				    sizeof(path)))
		return -1;
	return cw_sample_run_read(path, run);
}

static const char *fmt_time(uint64_t real_ns, char *buf, size_t len)
{
	time_t secs = real_ns / NSEC_PER_SEC;
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03uZ",
		 (unsigned int)(real_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
	return buf;
}

static int split_devs(char *arg, const char **devs, size_t *n)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == CW_SAMPLER_MAX_DEVS)
			return -1;
		devs[(*n)++] = tok;
	}
	return 0;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"dev", required_argument, NULL, 'd'},
		{"interval", required_argument, NULL, 'i'},
		{"samples", required_argument, NULL, 'n'},
		{"in-region", required_argument, NULL, 'r'},
		{"link-speed", required_argument, NULL, 'l'},
		{"store", required_argument, NULL, 's'},
		{"keep", required_argument, NULL, 'k'},
		{"max-size", required_argument, NULL, 'm'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *devs[CW_SAMPLER_MAX_DEVS],
		*prefixes[CW_SAMPLER_MAX_PREFIXES];
	struct cw_sampler_opts o = {.sz = sizeof(o)};
	struct cw_sample_store_limits lim = {0};
	const char *store = NULL, *output = NULL, *dir;
	char name[CW_SAMPLE_NAME_MAX];
	struct cw_sample_run *run = NULL;
	struct cw_outfile of;
	uint8_t *buf = NULL;
	uint64_t v;
	size_t len;
	int c, err;

	o.devs = devs;
	o.in_region = prefixes;
	o.interval_ns = CW_SAMPLER_DEF_INTERVAL_NS;
	o.samples = CW_SAMPLER_DEF_SAMPLES;
	while ((c = getopt_long(argc, argv, "d:i:n:o:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (split_devs(optarg, devs, &o.n_devs))
				return bad_usage("too many interfaces%s", "");
			break;
		case 'i':
			if (cw_parse_duration(optarg, NSEC_PER_MSEC, &v) ||
			    v < CW_SAMPLER_MIN_INTERVAL_NS ||
			    v > CW_SAMPLER_MAX_INTERVAL_NS)
				return bad_usage("--interval '%s' is not a "
						 "duration from 10us to 1s",
						 optarg);
			o.interval_ns = v;
			break;
		case 'n':
			if (cw_parse_u64(optarg, CW_SAMPLER_MIN_SAMPLES,
					 CW_SAMPLER_MAX_SAMPLES, &v))
				return bad_usage("--samples '%s' is not a "
						 "number from 1 to 20000",
						 optarg);
			o.samples = v;
			break;
		case 'r':
			if (o.n_in_region == CW_SAMPLER_MAX_PREFIXES)
				return bad_usage("too many prefixes%s", "");
			prefixes[o.n_in_region++] = optarg;
			break;
		case 'l':
			if (cw_parse_u64(optarg, 1, UINT64_MAX / 8, &v))
				return bad_usage("--link-speed '%s' is not a "
						 "bit rate",
						 optarg);
			o.link_speed_bps = v;
			break;
		case 's':
			store = optarg;
			break;
		case 'k':
			if (cw_parse_duration(optarg, NSEC_PER_SEC, &v) || !v)
				return bad_usage("--keep '%s' is not a "
						 "duration",
						 optarg);
			lim.keep_ns = v;
			break;
		case 'm':
			if (cw_parse_u64(optarg, 1, UINT64_MAX, &v))
				return bad_usage("--max-size '%s' is not a "
						 "byte count",
						 optarg);
			lim.max_bytes = v;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	dir = cw_sample_store_dir(store);
	if (!output && (cw_mkdir_p(dir) || cw_check_writable_dir(dir)))
		return 1;
	cw_catch_signals();
	err = cw_sampler_record(&o, &run);
	if (err)
		return 1;
	if (run->flags & CW_RUN_INTERRUPTED)
		cw_info("interrupted after %u of %u bins", run->nbins,
			run->samples);
	if (output) {
		err = cw_sample_run_encode(run, &buf, &len);
		if (!err)
			err = cw_outfile_open(&of, output);
		if (!err && fwrite(buf, 1, len, of.fp) != len) {
			cw_outfile_abort(&of);
			err = cw_error("unable to write '%s'", output);
		} else if (!err) {
			err = cw_outfile_commit(&of);
		}
		if (!err)
			printf("%s\n", output);
	} else {
		err = cw_sample_store_write(dir, run, &lim, name, sizeof(name));
		if (!err)
			printf("%s/%s\n", dir, name);
	}
	free(buf);
	cw_sample_run_free(run);
	return err ? 1 : 0;
}

static int cmd_list(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{0},
	};
	const char *store = NULL, *dir;
	struct cw_sample_entry *v;
	struct cw_sample_run *run;
	char path[4096], tbuf[40], ibuf[32], inb[32], outb[32];
	struct cw_jsonw w;
	bool json = false;
	size_t n, i;
	int c;

	while ((c = getopt_long(argc, argv, "j", lopts, NULL)) != -1) {
		if (c == 's')
			store = optarg;
		else if (c == 'j')
			json = true;
		else
			return 2;
	}
	dir = cw_sample_store_dir(store);
	if (cw_sample_store_list(dir, &v, &n))
		return 1;
	if (!json)
		printf("%-32s %-24s %-12s %-8s %6s %10s %10s\n", "RUN",
		       "START (UTC)", "DEV", "INTERVAL", "BINS", "IN", "OUT");
	cw_jsonw_init(&w, stdout);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
		if (cw_sample_run_read(path, &run)) {
			if (!json)
				printf("%-32s (unreadable)\n", v[i].name);
			continue;
		}
		if (json) {
			cw_jsonw_obj_open(&w, NULL);
			cw_jsonw_str(&w, "run", v[i].name);
			cw_jsonw_u64(&w, "start_ns", run->start_real_ns);
			cw_jsonw_str(&w, "dev", run->dev);
			cw_jsonw_u64(&w, "interval_ns", run->interval_ns);
			cw_jsonw_u64(&w, "nbins", run->nbins);
			cw_jsonw_u64(&w, "bytes_in",
				     cw_sample_run_total(run, CW_SF_BYTES_IN) +
					     cw_sample_run_total(
						     run, CW_SF_BYTES_IN_X));
			cw_jsonw_u64(&w, "bytes_out",
				     cw_sample_run_total(run, CW_SF_BYTES_OUT) +
					     cw_sample_run_total(
						     run, CW_SF_BYTES_OUT_X));
			cw_jsonw_u64(&w, "size", v[i].size);
			cw_jsonw_obj_close(&w);
			cw_jsonw_end_line(&w);
		} else {
			printf("%-32s %-24s %-12s %-8s %6u %10s %10s\n",
			       v[i].name,
			       fmt_time(run->start_real_ns, tbuf, sizeof(tbuf)),
			       run->dev,
			       cw_fmt_duration(run->interval_ns, ibuf,
					       sizeof(ibuf)),
			       run->nbins,
			       cw_fmt_bytes(
				       cw_sample_run_total(run,
							   CW_SF_BYTES_IN) +
					       cw_sample_run_total(
						       run, CW_SF_BYTES_IN_X),
				       inb, sizeof(inb)),
			       cw_fmt_bytes(
				       cw_sample_run_total(run,
							   CW_SF_BYTES_OUT) +
					       cw_sample_run_total(
						       run, CW_SF_BYTES_OUT_X),
				       outb, sizeof(outb)));
		}
		cw_sample_run_free(run);
	}
	free(v);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{0},
	};
	const char *store = NULL;
	struct cw_sample_run *run;
	char tbuf[40], ibuf[32];
	uint64_t peak[CW_SF_MAX] = {0};
	uint32_t i;
	int c, f;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		if (c != 's')
			return 2;
		store = optarg;
	}
	if (optind + 1 != argc)
		return bad_usage("'show' takes one RUN%s", "");
	if (load_run(store, argv[optind], &run))
		return 1;
	for (i = 0; i < run->nbins; i++)
		for (f = 0; f < CW_SF_MAX; f++)
			if (run->bins[i].v[f] > peak[f])
				peak[f] = run->bins[i].v[f];
	printf("host:        %s\n"
	       "dev:         %s\n"
	       "start:       %s\n"
	       "interval:    %s\n"
	       "bins:        %u of %u%s\n"
	       "link speed:  %" PRIu64 " bit/s%s\n"
	       "cpus:        %u\n"
	       "regions:     %s\n"
	       "past end:    %" PRIu64 " packets\n"
	       "seq map full:%" PRIu64 "\n\n",
	       run->host, run->dev,
	       fmt_time(run->start_real_ns, tbuf, sizeof(tbuf)),
	       cw_fmt_duration(run->interval_ns, ibuf, sizeof(ibuf)),
	       run->nbins, run->samples,
	       run->flags & CW_RUN_INTERRUPTED ? " (interrupted)" : "",
	       run->link_speed_bps, run->link_speed_bps ? "" : " (unknown)",
	       run->ncpus,
	       run->flags & CW_RUN_REGIONS ? "in-region prefixes"
					   : "none (all in-region)",
	       run->past_end, run->seq_map_full);
	printf("%-14s %14s %14s\n", "field", "total", "peak bin");
	for (f = 0; f < CW_SF_MAX; f++)
		if (f < CW_SF_FLOWS_FIRST)
			printf("%-14s %14" PRIu64 " %14" PRIu64 "\n",
			       cw_sample_field_names[f],
			       cw_sample_run_total(run, f), peak[f]);
		else
			printf("%-14s %14s %14" PRIu64 "\n",
			       cw_sample_field_names[f], "-", peak[f]);
	cw_sample_run_free(run);
	return 0;
}

/* export and plot: RUN, --store, -o, and for export --format. */
static int cmd_output(int argc, char **argv, bool plot)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{0},
	};
	const char *store = NULL, *format = NULL, *output = NULL;
	struct cw_sample_run *run;
	struct cw_outfile of = {0};
	FILE *fp = stdout;
	int c, err;

	while ((c = getopt_long(argc, argv, "o:", lopts, NULL)) != -1) {
		if (c == 's')
			store = optarg;
		else if (c == 'f')
			format = optarg;
		else if (c == 'o')
			output = optarg;
		else
			return 2;
	}
	if (optind + 1 != argc)
		return bad_usage("'%s' takes one RUN", argv[0]);
	if (plot && !output)
		return bad_usage("'plot' needs -o FILE.svg%s", "");
	if (!plot &&
	    (!format || (strcmp(format, "csv") && strcmp(format, "json"))))
		return bad_usage("--format must be csv or json, not '%s'",
				 format ? format : "");
	if (load_run(store, argv[optind], &run))
		return 1;
	err = output ? cw_outfile_open(&of, output) : 0;
	if (!err) {
		if (output)
			fp = of.fp;
		if (plot)
			err = cw_sample_run_svg(fp, run);
		else if (!strcmp(format, "csv"))
			err = cw_sample_run_csv(fp, run);
		else
			err = cw_sample_run_json(fp, run);
		if (output && err) {
			cw_outfile_abort(&of);
			cw_error("unable to write '%s'", output);
		} else if (output) {
			err = cw_outfile_commit(&of);
		}
	}
	cw_sample_run_free(run);
	return err ? 1 : 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* min, median and max of v[0..n), in bins. */
static void stats3(uint64_t *v, size_t n, uint64_t out[3])
{
	out[0] = out[1] = out[2] = 0;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), u64_cmp);
	out[0] = v[0];
	out[1] = v[n / 2];
	out[2] = v[n - 1];
}

static void bursts_dir(struct cw_jsonw *w, const struct cw_sample_run *run,
		       bool ingress, const struct cw_burst *b, size_t n,
		       const struct cw_burst_edge *edges, size_t n_edges,
		       size_t top, size_t *idx)
{
	double ms = run->interval_ns / 1e6;
	uint64_t *tmp = calloc(n + 1, sizeof(*tmp)), s[3];
	size_t i, j, k;

	cw_jsonw_obj_open(w, ingress ? "ingress" : "egress");
	cw_jsonw_u64(w, "count", n);
	for (i = 0; tmp && i < n; i++)
		tmp[i] = b[i].last - b[i].first + 1;
	stats3(tmp, tmp ? n : 0, s);
	cw_jsonw_obj_open(w, "length_bins");
	cw_jsonw_u64(w, "min", s[0]);
	cw_jsonw_u64(w, "median", s[1]);
	cw_jsonw_u64(w, "max", s[2]);
	cw_jsonw_obj_close(w);
	for (i = 1; tmp && i < n; i++)
		tmp[i - 1] = b[i].first - b[i - 1].last - 1;
	stats3(tmp, tmp && n > 1 ? n - 1 : 0, s);
	cw_jsonw_obj_open(w, "gap_bins");
	cw_jsonw_u64(w, "min", s[0]);
	cw_jsonw_u64(w, "median", s[1]);
	cw_jsonw_u64(w, "max", s[2]);
	cw_jsonw_obj_close(w);
	cw_jsonw_arr_open(w, "bursts");
	for (i = 0; i < n; i++) {
		cw_jsonw_obj_open(w, NULL);
		cw_jsonw_u64(w, "first_bin", b[i].first);
		cw_jsonw_u64(w, "last_bin", b[i].last);
		cw_jsonw_double(w, "start_ms", b[i].first * ms);
		cw_jsonw_double(w, "length_ms",
				(b[i].last - b[i].first + 1) * ms);
		cw_jsonw_u64(w, "bytes", b[i].bytes);
		cw_jsonw_double(w, "peak_util", b[i].peak_util);
		cw_jsonw_u64(w, "max_flows", b[i].max_flows);
		cw_jsonw_bool(w, "flows_saturated", b[i].flows_saturated);
		if (edges) {
			k = cw_burst_attribute(run, &b[i], edges, n_edges, idx);
			cw_jsonw_arr_open(w, "edges");
			for (j = 0; j < k && j < top; j++) {
				const struct cw_burst_edge *e = &edges[idx[j]];

				cw_jsonw_obj_open(w, NULL);
				cw_jsonw_str(w, "comm", e->comm);
				cw_jsonw_i64(w, "pid", e->pid);
				cw_jsonw_str(w, "laddr", e->laddr);
				cw_jsonw_u64(w, "lport", e->lport);
				cw_jsonw_str(w, "raddr", e->raddr);
				cw_jsonw_u64(w, "rport", e->rport);
				cw_jsonw_u64(w, "bytes",
					     e->bytes_out + e->bytes_in);
				cw_jsonw_obj_close(w);
			}
			cw_jsonw_arr_close(w);
		}
		cw_jsonw_obj_close(w);
	}
	cw_jsonw_arr_close(w);
	cw_jsonw_obj_close(w);
	free(tmp);
}

static void bursts_text(const struct cw_sample_run *run, bool ingress,
			const struct cw_burst *b, size_t n, double threshold,
			uint64_t speed, const struct cw_burst_edge *edges,
			size_t n_edges, size_t top, size_t *idx)
{
	double ms = run->interval_ns / 1e6;
	size_t i, j, k;

	printf("%s: %zu bursts over %.0f%% of %" PRIu64 " bit/s\n",
	       ingress ? "ingress" : "egress", n, threshold * 100, speed);
	if (n)
		printf("  %10s %10s %12s %6s %6s\n", "start_ms", "length_ms",
		       "bytes", "peak%", "flows");
	for (i = 0; i < n; i++) {
		printf("  %10.3f %10.3f %12" PRIu64 " %6.0f %5u%s\n",
		       b[i].first * ms, (b[i].last - b[i].first + 1) * ms,
		       b[i].bytes, b[i].peak_util * 100, b[i].max_flows,
		       b[i].flows_saturated ? "+" : " ");
		if (!edges)
			continue;
		k = cw_burst_attribute(run, &b[i], edges, n_edges, idx);
		for (j = 0; j < k && j < top; j++) {
			const struct cw_burst_edge *e = &edges[idx[j]];

			printf("      %s[%" PRId64 "] %s:%u -> %s:%u %" PRIu64
			       " bytes\n",
			       e->comm, e->pid, e->laddr, e->lport, e->raddr,
			       e->rport, e->bytes_out + e->bytes_in);
		}
	}
}

static int cmd_bursts(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{"threshold", required_argument, NULL, 't'},
		{"link-speed", required_argument, NULL, 'l'},
		{"conns", required_argument, NULL, 'c'},
		{"top", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, 'j'},
		{0},
	};
	const char *store = NULL, *conns = NULL;
	struct cw_burst_edge *edges = NULL;
	struct cw_burst *bin = NULL, *bout = NULL;
	struct cw_sample_run *run = NULL;
	size_t n_edges = 0, nin = 0, nout = 0, *idx = NULL;
	uint64_t speed = 0, pct = 50, top = 5;
	double threshold;
	struct cw_jsonw w;
	bool json = false;
	int c, err = 1;

	while ((c = getopt_long(argc, argv, "j", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			store = optarg;
			break;
		case 't':
			if (cw_parse_u64(optarg, 1, 1000, &pct))
				return bad_usage("--threshold '%s' is not a "
						 "percentage from 1 to 1000",
						 optarg);
			break;
		case 'l':
			if (cw_parse_u64(optarg, 1, UINT64_MAX / 8, &speed))
				return bad_usage("--link-speed '%s' is not a "
						 "bit rate",
						 optarg);
			break;
		case 'c':
			conns = optarg;
			break;
		case 'n':
			if (cw_parse_u64(optarg, 1, 1000, &top))
				return bad_usage("--top '%s' is not a number "
						 "from 1 to 1000",
						 optarg);
			break;
		case 'j':
			json = true;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc)
		return bad_usage("'bursts' takes one RUN%s", "");
	threshold = pct / 100.0;
	if (load_run(store, argv[optind], &run))
		goto cleanup;
	if (!speed)
		speed = run->link_speed_bps;
	if (!speed) {
		cw_error("link speed of '%s' is unknown: give --link-speed",
			 run->dev);
		goto cleanup;
	}
	if (conns && cw_burst_edges_load(conns, &edges, &n_edges))
		goto cleanup;
	idx = calloc(n_edges + 1, sizeof(*idx));
	if (!idx || cw_sample_bursts(run, true, threshold, speed, &bin, &nin) ||
	    cw_sample_bursts(run, false, threshold, speed, &bout, &nout))
		goto cleanup;
	if (json) {
		cw_jsonw_init(&w, stdout);
		cw_jsonw_obj_open(&w, NULL);
		cw_jsonw_u64(&w, "link_speed_bps", speed);
		cw_jsonw_double(&w, "threshold", threshold);
		cw_jsonw_u64(&w, "interval_ns", run->interval_ns);
		bursts_dir(&w, run, true, bin, nin, edges, n_edges, top, idx);
		bursts_dir(&w, run, false, bout, nout, edges, n_edges, top,
			   idx);
		cw_jsonw_obj_close(&w);
		cw_jsonw_end_line(&w);
	} else {
		bursts_text(run, true, bin, nin, threshold, speed, edges,
			    n_edges, top, idx);
		bursts_text(run, false, bout, nout, threshold, speed, edges,
			    n_edges, top, idx);
	}
	err = 0;
cleanup:
	free(idx);
	free(bin);
	free(bout);
	free(edges);
	cw_sample_run_free(run);
	return err;
}

static int cmd_export(int argc, char **argv)
{
	return cmd_output(argc, argv, false);
}

static int cmd_plot(int argc, char **argv)
{
	return cmd_output(argc, argv, true);
}

static const struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
} subcommands[] = {
	{"record", cmd_record}, {"list", cmd_list}, {"show", cmd_show},
	{"export", cmd_export}, {"plot", cmd_plot}, {"bursts", cmd_bursts},
};

int cmd_samples(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < CW_ARRAY_SIZE(subcommands); i++) {
		if (strcmp(argv[1], subcommands[i].name))
			continue;
		optind = 1;
		return subcommands[i].fn(argc - 1, argv + 1);
	}
	cw_error("unknown samples command '%s' (see 'causeway samples "
		 "--help')",
		 argv[1]);
	return 2;
}
