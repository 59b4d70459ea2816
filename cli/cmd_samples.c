// SPDX-License-Identifier: MIT
/*
 * causeway samples: record fine-timescale tc counters, keep the runs on
 * disk, and show, export, plot and analyse them.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sampler.h"
#include "samples/samples.h"
#include "cli/commands.h"
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

struct record_args {
	const char *devs[CW_SAMPLER_MAX_DEVS];
	const char *prefixes[CW_SAMPLER_MAX_PREFIXES];
	struct cw_sampler_opts o;
	struct cw_sample_store_limits lim;
	const char *store, *output;
};

/* One option of 'record' into a; 0, or 2 after a message. */
static int record_opt(int c, struct record_args *a)
{
	struct cw_sampler_opts *o = &a->o;
	uint64_t v;

	switch (c) {
	case 'd':
		if (split_devs(optarg, a->devs, &o->n_devs))
			return bad_usage("too many interfaces%s", "");
		return 0;
	case 'i':
		if (cw_parse_duration(optarg, NSEC_PER_MSEC, &v) ||
		    v < CW_SAMPLER_MIN_INTERVAL_NS ||
		    v > CW_SAMPLER_MAX_INTERVAL_NS)
			return bad_usage("--interval '%s' is not a duration "
					 "from 10us to 1s",
					 optarg);
		o->interval_ns = v;
		return 0;
	case 'n':
		if (cw_parse_u64(optarg, CW_SAMPLER_MIN_SAMPLES,
				 CW_SAMPLER_MAX_SAMPLES, &v))
			return bad_usage("--samples '%s' is not a number from "
					 "1 to 20000",
					 optarg);
		o->samples = v;
		return 0;
	case 'r':
		if (o->n_in_region == CW_SAMPLER_MAX_PREFIXES)
			return bad_usage("too many prefixes%s", "");
		a->prefixes[o->n_in_region++] = optarg;
		return 0;
	case 'l':
		if (cw_parse_u64(optarg, 1, UINT64_MAX / 8, &v))
			return bad_usage("--link-speed '%s' is not a bit rate",
					 optarg);
		o->link_speed_bps = v;
		return 0;
	case 's':
		a->store = optarg;
		return 0;
	case 'k':
		if (cw_parse_duration(optarg, NSEC_PER_SEC, &v) || !v)
			return bad_usage("--keep '%s' is not a duration",
					 optarg);
		a->lim.keep_ns = v;
		return 0;
	case 'm':
		if (cw_parse_size(optarg, 1, UINT64_MAX, &v))
			return bad_usage("--max-size '%s' is not a byte count",
					 optarg);
		a->lim.max_bytes = v;
		return 0;
	case 'o':
		a->output = optarg;
		return 0;
	}
	return 2;
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
	static struct record_args a;
	char name[CW_SAMPLE_NAME_MAX];
	struct cw_sample_run *run = NULL;
	const char *dir;
	int c, err;

	memset(&a, 0, sizeof(a));
	a.o.sz = sizeof(a.o);
	a.o.devs = a.devs;
	a.o.in_region = a.prefixes;
	a.o.interval_ns = CW_SAMPLER_DEF_INTERVAL_NS;
	a.o.samples = CW_SAMPLER_DEF_SAMPLES;
	while ((c = getopt_long(argc, argv, "d:i:n:o:h", lopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (record_opt(c, &a))
			return 2;
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	dir = cw_sample_store_dir(a.store);
	if (!a.output && (cw_mkdir_p(dir) || cw_check_writable_dir(dir)))
		return 1;
	cw_catch_signals();
	if (cw_sampler_record(&a.o, &run))
		return 1;
	if (run->flags & CW_RUN_INTERRUPTED)
		cw_info("interrupted after %u of %u bins", run->nbins,
			run->samples);
	if (a.output)
		err = cw_sample_run_save(a.output, run);
	else
		err = cw_sample_store_write(dir, run, &a.lim, name,
					    sizeof(name));
	if (!err && a.output)
		printf("%s\n", a.output);
	else if (!err)
		printf("%s/%s\n", dir, name);
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
	const char *store = NULL;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "j", lopts, NULL)) != -1) {
		if (c == 's')
			store = optarg;
		else if (c == 'j')
			json = true;
		else
			return 2;
	}
	return cw_sample_store_print(stdout, cw_sample_store_dir(store), json)
		       ? 1
		       : 0;
}

static int cmd_show(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"store", required_argument, NULL, 's'},
		{0},
	};
	const char *store = NULL;
	struct cw_sample_run *run;
	int c, err;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		if (c != 's')
			return 2;
		store = optarg;
	}
	if (optind + 1 != argc)
		return bad_usage("'show' takes one RUN%s", "");
	if (cw_sample_run_load(store, argv[optind], &run))
		return 1;
	err = cw_sample_run_summary(stdout, run);
	cw_sample_run_free(run);
	return err ? 1 : 0;
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
	if (cw_sample_run_load(store, argv[optind], &run))
		return 1;
	err = cw_sample_run_write_as(output, run,
				     plot		      ? CW_SAMPLE_SVG
				     : !strcmp(format, "csv") ? CW_SAMPLE_CSV
							      : CW_SAMPLE_JSON);
	cw_sample_run_free(run);
	return err ? 1 : 0;
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
	struct cw_sample_bursts_opts o = {0};
	struct cw_sample_run *run = NULL;
	uint64_t speed = 0, pct = 50, top = 5;
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
	if (cw_sample_run_load(store, argv[optind], &run))
		goto cleanup;
	o.threshold = pct / 100.0;
	o.speed_bps = speed ? speed : run->link_speed_bps;
	o.top = top;
	o.json = json;
	if (!o.speed_bps) {
		cw_error("link speed of '%s' is unknown: give --link-speed",
			 run->dev);
		goto cleanup;
	}
	if (conns && cw_burst_edges_load(conns, &edges, &o.n_edges))
		goto cleanup;
	o.edges = edges;
	err = cw_sample_bursts_report(stdout, run, &o) ? 1 : 0;
cleanup:
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
