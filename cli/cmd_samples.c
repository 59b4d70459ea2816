// SPDX-License-Identifier: MIT
/*
 * causeway samples: record fine-timescale tc counters, keep the runs on
 * disk, and show, export, plot and analyse them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/sampler.h"
#include "samples/samples.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"

static const char help[] =
	"usage: causeway samples record [--dev DEV]... [--interval DUR] [--samples N]\n"
	"                               [--in-region PREFIX]... [--link-speed BPS]\n"
	"                               [--store DIR] [--keep DUR] [--max-size BYTES] [-o FILE]\n"
	"       causeway samples list [--store DIR] [-j]\n"
	"       causeway samples show RUN [--store DIR]\n"
	"       causeway samples export RUN --format csv|json [-o FILE]\n"
	"       causeway samples plot RUN -o FILE.svg\n"
	"       causeway samples bursts RUN [--threshold PCT] [--link-speed BPS]\n"
	"                               [--conns FILE] [--top N] [-j]\n"
	"\n"
	"RUN is a file, a run name from 'list', or 'latest'.  The store is\n"
	"--store, else $CAUSEWAY_SAMPLES_DIR, else " CW_SAMPLE_DEFAULT_DIR ".\n"
	"\n"
	"Examples:\n"
	"  causeway samples record --dev eth0 --interval 100us\n"
	"  causeway samples list\n"
	"  causeway samples export latest --format csv -o run.csv\n"
	"  causeway samples bursts latest --threshold 50 --conns conns.json\n";

struct record_args {
	const char *devs[CW_SAMPLER_MAX_DEVS];
	const char *prefixes[CW_SAMPLER_MAX_PREFIXES];
	struct cw_sampler_opts o;
	struct cw_sample_store_limits lim;
	const char *store, *output;
};

/* --dev A,B: each into the list. */
static int dev_opt(const struct cw_opt *opt, const char *arg)
{
	struct record_args *a = opt->to;
	char *copy = strdup(arg), *save = NULL, *tok;

	if (!copy)
		return cw_error("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (a->o.n_devs == CW_SAMPLER_MAX_DEVS)
			return cw_error("too many interfaces");
		a->devs[a->o.n_devs++] = tok; /* copy: kept for the run */
	}
	return 0;
}

static int region_opt(const struct cw_opt *opt, const char *arg)
{
	struct record_args *a = opt->to;

	if (a->o.n_in_region == CW_SAMPLER_MAX_PREFIXES)
		return cw_error("too many prefixes");
	a->prefixes[a->o.n_in_region++] = arg;
	return 0;
}

/* The run's options: 0 to go on, else the exit status. */
static int record_args(int argc, char **argv, struct record_args *a)
{
	uint64_t samples = CW_SAMPLER_DEF_SAMPLES;
	const struct cw_opt t[] = {
		CW_OPT_CALL("dev", 'd', a, dev_opt),
		{.name = "interval", .key = 'i', .kind = CW_OPT_KDUR,
		 .to = &a->o.interval_ns, .min = CW_SAMPLER_MIN_INTERVAL_NS,
		 .max = CW_SAMPLER_MAX_INTERVAL_NS, .unit = NSEC_PER_MSEC},
		CW_OPT_U64("samples", 'n', &samples, CW_SAMPLER_MIN_SAMPLES,
			CW_SAMPLER_MAX_SAMPLES),
		CW_OPT_CALL("in-region", 0, a, region_opt),
		CW_OPT_U64("link-speed", 0, &a->o.link_speed_bps, 1,
			UINT64_MAX / 8),
		CW_OPT_STR("store", 0, &a->store),
		CW_OPT_DUR("keep", 0, &a->lim.keep_ns, 1, UINT64_MAX),
		{.name = "max-size", .kind = CW_OPT_KSIZE, .to = &a->lim.max_bytes,
		 .min = 1, .max = UINT64_MAX, .want = "a byte count"},
		CW_OPT_STR("output", 'o', &a->output),
		{0}};
	int rc;

	a->o.sz = sizeof(a->o);
	a->o.devs = a->devs;
	a->o.in_region = a->prefixes;
	a->o.interval_ns = CW_SAMPLER_DEF_INTERVAL_NS;
	rc = cw_opts_parse("samples record", t, argc, argv, help);
	a->o.samples = samples;
	if (rc >= 0)
		return rc;
	return cw_opts_one_operand(argc, argv, NULL) ? 2 : -1;
}

static int cmd_record(int argc, char **argv)
{
	static struct record_args a;
	char name[CW_SAMPLE_NAME_MAX];
	struct cw_sample_run *run = NULL;
	const char *dir;
	int err;

	memset(&a, 0, sizeof(a));
	err = record_args(argc, argv, &a);
	if (err >= 0)
		return err;
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

/* One RUN after the options of t; -1 to go on, else the exit status. */
static int one_run(const struct cw_opt *t, int argc, char **argv)
{
	char cmd[32];
	int rc;

	snprintf(cmd, sizeof(cmd), "samples %s", argv[0]);
	rc = cw_opts_parse(cmd, t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (optind + 1 != argc)
		return cw_error("'%s' takes one RUN", argv[0]), 2;
	return -1;
}

static int cmd_list(int argc, char **argv)
{
	const char *store = NULL, *dir;
	struct stat st;
	bool json = false;
	const struct cw_opt t[] = {CW_OPT_STR("store", 0, &store),
				    CW_OPT_FLAG("json", 'j', &json), {0}};
	int rc = cw_opts_parse("samples list", t, argc, argv, help);

	if (rc >= 0)
		return rc;
	dir = cw_sample_store_dir(store);
	/* The default store not made yet is an empty list; a store named
	 * (--store, $CAUSEWAY_SAMPLES_DIR) that is not there is a typo. */
	if (strcmp(dir, CW_SAMPLE_DEFAULT_DIR) && stat(dir, &st))
		return cw_error("unable to open store '%s': %s", dir,
				strerror(errno)),
		       1;
	return cw_sample_store_print(stdout, dir, json) ? 1 : 0;
}

static int cmd_show(int argc, char **argv)
{
	const char *store = NULL;
	const struct cw_opt t[] = {CW_OPT_STR("store", 0, &store), {0}};
	struct cw_sample_run *run;
	int err = one_run(t, argc, argv);

	if (err >= 0)
		return err;
	if (cw_sample_run_load(store, argv[optind], &run))
		return 1;
	err = cw_sample_run_summary(stdout, run);
	cw_sample_run_free(run);
	return err ? 1 : 0;
}

static const char *const formats[] = {"csv", "json", NULL};

/* export and plot: RUN, --store, -o, and for export --format. */
static int cmd_output(int argc, char **argv, bool plot)
{
	const char *store = NULL, *output = NULL;
	int format = -1;
	const struct cw_opt t[] = {CW_OPT_STR("store", 0, &store),
				    CW_OPT_ENUM("format", 0, &format, formats),
				    CW_OPT_STR("output", 'o', &output), {0}};
	struct cw_sample_run *run;
	int err = one_run(t, argc, argv);

	if (err >= 0)
		return err;
	if (plot && !output)
		return cw_error("'plot' needs -o FILE.svg"), 2;
	if (!plot && format < 0)
		return cw_error("--format must be csv or json"), 2;
	if (cw_sample_run_load(store, argv[optind], &run))
		return 1;
	err = cw_sample_run_write_as(output, run,
				     plot	   ? CW_SAMPLE_SVG
				     : format == 0 ? CW_SAMPLE_CSV
						   : CW_SAMPLE_JSON);
	cw_sample_run_free(run);
	return err ? 1 : 0;
}

static int cmd_bursts(int argc, char **argv)
{
	const char *store = NULL, *conns = NULL;
	struct cw_burst_edge *edges = NULL;
	struct cw_sample_bursts_opts o = {0};
	struct cw_sample_run *run = NULL;
	uint64_t speed = 0, pct = 50, top = 5;
	bool json = false;
	const struct cw_opt t[] = {
		CW_OPT_STR("store", 0, &store),
		CW_OPT_U64("threshold", 0, &pct, 1, 1000),
		CW_OPT_U64("link-speed", 0, &speed, 1, UINT64_MAX / 8),
		CW_OPT_STR("conns", 0, &conns),
		CW_OPT_U64("top", 0, &top, 1, 1000),
		CW_OPT_FLAG("json", 'j', &json),
		{0}};
	int err = one_run(t, argc, argv);

	if (err >= 0)
		return err;
	err = 1;
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
		fputs(help, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(help, stdout);
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
