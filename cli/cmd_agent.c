// SPDX-License-Identifier: MIT
/*
 * causeway agent: the long-running host agent.  The command parses its
 * options, opens the agent and its outputs (Kafka with its spool, or a
 * file of JSON lines), runs the daemon (agent/daemon.c) and prints what it
 * did.
 */
#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/spool.h"
#include "common/util.h"
#include "samples/samples.h"

#define DEFAULT_SPOOL_DIR "/var/lib/causeway/spool"
#define DEFAULT_SPOOL_MAX (1ULL << 30)
#define OPT_TRACES	  0x200 /* past the CLI_OPT_ values */

struct agent_cmd {
	struct cli_watch w;
	struct cw_daemon_opts d;
	struct cw_kafka_conf kc;
	const char *out;
	const char *spool_dir;
	uint64_t spool_max;
	bool embedded;	     /* the broker runs in this process */
	const char *user;    /* become this user after attaching */
	const char *metrics; /* --metrics ADDR:PORT, or NULL */
	bool traces;	     /* --traces: messages in windows, published */
};

static void on_sigusr1(int sig)
{
	cw_window_demand = 1;
}

/* Over 80 lines only because the help text is: one string, no logic. */
static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: causeway agent [--interval I] [--duration D] [-o "
		"FILE]\n"
		"                      [--kafka BROKERS|embedded] "
		"[--kafka-config FILE]\n"
		"                      [--topic-prefix P] [--spool DIR] "
		"[--spool-max N]\n"
		"                      [--pin DIR] [--attach V] [--netns NS] "
		"[--host ID]\n"
		"                      [--samples-every P] [--samples-store "
		"DIR]\n"
		"                      [--window D [--window-every P]] "
		"[--meta-every P]\n"
		"                      [--user NAME] [--runtime-root DIR] "
		"[--traces]\n\n"
		"Run the host agent: per-connection aggregates collected in "
		"the\n"
		"kernel and published every interval, one record per "
		"connection\n"
		"end that changed, with cumulative counters.\n\n"
		"  -i, --interval I     collection period (default 1s)\n"
		"  -d, --duration D     stop after D (default: at "
		"SIGINT/SIGTERM)\n"
		"  -o, --out FILE       without --kafka: append JSON lines to "
		"FILE\n"
		"                       (default stdout)\n"
		"  -k, --kafka B        publish to Kafka brokers B "
		"(host:port,...);\n"
		"                       'embedded' starts a broker in this "
		"process\n"
		"                       and prints its address\n"
		"      --kafka-config F librdkafka properties, key=value "
		"lines\n"
		"                       (TLS, SASL, ...)\n"
		"      --topic-prefix P topics P.conns, P.meta, P.timing, "
		"P.samples\n"
		"                       (default causeway)\n"
		"      --spool DIR      records the brokers cannot take wait "
		"here,\n"
		"                       replayed in order (default %s)\n"
		"      --spool-max N    spool bound in bytes (1M = 10^6, 1Mi "
		"= 2^20), the\n"
		"                       oldest evicted and counted at it or "
		"when the\n"
		"                       disk is full (default 1Gi)\n"
		"      --pin DIR        keep connection state pinned in DIR "
		"(bpffs),\n"
		"                       so a restarted agent never counts "
		"twice\n"
		"  -a, --attach V       auto (default), fentry, kprobe, "
		"tracepoint\n"
		"  -n, --netns NS       watch one network namespace only\n"
		"      --host ID        host id in records (default: "
		"machine-id)\n"
		"      --msg-gap D      an idle gap of D also starts a new "
		"message\n"
		"      --no-udp         do not count UDP\n"
		"      --no-nat         keep DNAT'ed (virtual) addresses: no "
		"conntrack lookups\n"
		"      --hooks H        sampled (default): the per-call "
		"programs run only\n"
		"                       inside timing windows, so a send/recv "
		"costs\n"
		"                       nothing outside, where calls and "
		"messages are\n"
		"                       estimated from the exact bytes "
		"(msgs_estimated,\n"
		"                       sampled_ppm); always: exact calls "
		"and messages\n"
		"                       everywhere, ~100 ns a call (bytes are "
		"exact either way).\n"
		"                       With --kafka and no --window, sampled "
		"takes 1s windows\n"
		"                       every 10s.\n"
		"      --samples-every P  a tc sample run every P, rotating "
		"10ms,\n"
		"                       1ms, 100us bins (default 1m; 0 turns "
		"off);\n"
		"                       with --kafka, each run is published "
		"too\n"
		"      --samples-store DIR  where runs go (see causeway "
		"samples)\n"
		"  -w, --window D       timing windows of D: every message "
		"start per\n"
		"                       connection end (ns, direction, size), "
		"to\n"
		"                       P.timing, or as JSON lines without "
		"--kafka\n"
		"      --window-every P open a window at every wall-clock "
		"multiple of\n"
		"                       P, the same instants on every host "
		"(default:\n"
		"                       only on demand: SIGUSR1 opens one at "
		"the next\n"
		"                       multiple of D)\n"
		"      --user NAME      after attaching, run as NAME with "
		"CAP_BPF,\n"
		"                       CAP_PERFMON and CAP_NET_ADMIN only "
		"(the spool\n"
		"                       and samples folders are given to "
		"NAME)\n"
		"      --meta-every P   host metadata at start and every P "
		"(default\n"
		"                       10m; 0: only at start); process "
		"metadata (CPU,\n"
		"                       memory, workload) every interval\n"
		"      --runtime-root DIR  read the container runtime's state "
		"under DIR\n"
		"                       for workload names (default "
		"$CAUSEWAY_RUNTIME_ROOT,\n"
		"                       else /)\n"
		"      --metrics A:P    the agent's own counters for "
		"Prometheus at\n"
		"                       http://A:P/metrics (a bare PORT: "
		"127.0.0.1)\n"
		"      --traces         inside timing windows only, also "
		"record every\n"
		"                       message with its thread and the "
		"request it\n"
		"                       served (for 'causeway traces'), to "
		"P.timing;\n"
		"                       needs --kafka; +0.3 to +0.65 us a "
		"send/recv while\n"
		"                       a window is open, nothing outside\n\n"
		"SIGINT and SIGTERM flush what is pending, detach and exit "
		"0.\n\n"
		"Examples:\n"
		"  causeway agent --interval 5s -o /var/log/causeway.jsonl\n"
		"  causeway agent --kafka kafka1:9092,kafka2:9092 --pin "
		"/sys/fs/bpf/causeway\n"
		"  causeway agent --kafka embedded --samples-every 0\n"
		"  causeway agent --kafka k1:9092 --window 2s --window-every "
		"1m\n",
		DEFAULT_SPOOL_DIR);
}

static int open_kafka(struct agent_cmd *c, struct cw_spool **spool)
{
	static char bootstrap[256];
	struct cw_kafka_conf *kc = &c->kc;

	if (!strcmp(kc->brokers, "embedded")) {
		if (cw_kafka_mock_start(1, bootstrap, sizeof(bootstrap)))
			return -1;
		kc->brokers = bootstrap;
		c->embedded = true;
		/* Other agents (other namespaces, other processes) join here.
		 */
		cw_info("embedded broker at %s", bootstrap);
	}
	if (cw_spool_open(spool, c->spool_dir, c->spool_max))
		return -1;
	kc->spool = *spool;
	c->d.producer = cw_kafka_producer_new(kc);
	return c->d.producer ? 0 : -1;
}

static void report_kafka(struct cw_kafka_producer *p, struct cw_spool *spool)
{
	struct cw_kafka_producer_stats ks;
	struct cw_spool_stats ss;

	if (!p)
		return;
	cw_kafka_producer_get_stats(p, &ks);
	cw_spool_get_stats(spool, &ss);
	cw_info("kafka: %llu produced, %llu delivered, %llu spooled, %llu "
		"replayed, %llu lost; spool holds %llu records, evicted %llu "
		"(%llu for a full disk, %llu times full)",
		(unsigned long long)ks.produced,
		(unsigned long long)ks.delivered,
		(unsigned long long)ks.spooled, (unsigned long long)ks.replayed,
		(unsigned long long)ks.lost, (unsigned long long)ss.records,
		(unsigned long long)ss.evicted_records,
		(unsigned long long)ss.evicted_full,
		(unsigned long long)ss.full_episodes);
}

/* The options only the agent has; 1 taken, 0 not ours, -1 bad value. */
static int agent_option(int opt, const char *arg, struct agent_cmd *c)
{
	switch (opt) {
	case 'o':
		c->out = arg;
		return 1;
	case 'H':
		if (!*arg || strlen(arg) >= CW_HOST_LEN)
			return cw_error("--host '%s': want 1 to %d characters",
					arg, CW_HOST_LEN - 1);
		c->w.ao.host = arg;
		return 1;
	case 'k':
		c->kc.brokers = arg;
		return 1;
	case 'K':
		c->kc.properties = arg;
		return 1;
	case 'T':
		c->kc.topic_prefix = arg;
		return 1;
	case 'S':
		c->spool_dir = arg;
		return 1;
	case 'M':
		if (cw_parse_size(arg, 1000000, UINT64_MAX, &c->spool_max))
			return cw_error("--spool-max '%s': want a size of at "
					"least 1M, such as 512Mi or 2G",
					arg);
		return 1;
	case 'P':
		c->w.ao.pin_dir = arg;
		return 1;
	case 'R':
		c->d.samples_store = arg;
		return 1;
	case 'u':
		c->user = arg;
		return 1;
	case 'Y':
		c->d.runtime_root = arg;
		return 1;
	case CLI_OPT_METRICS:
		c->metrics = arg;
		return 1;
	case OPT_TRACES:
		c->traces = true;
		return 1;
	}
	return 0;
}

/* The periods: 1 taken, 0 not ours, -1 bad value. */
static int period_option(int opt, const char *arg, struct agent_cmd *c)
{
	struct cw_daemon_opts *d = &c->d;

	switch (opt) {
	case 'E':
		if (!strcmp(arg, "0"))
			d->samples_every_ns = 0;
		else if (cli_duration("--samples-every", arg, NSEC_PER_SEC,
				      86400 * NSEC_PER_SEC,
				      &d->samples_every_ns))
			return -1;
		return 1;
	case 'w':
		return cli_duration("--window", arg, NSEC_PER_MSEC,
				    3600 * NSEC_PER_SEC, &d->window_ns)
			       ? -1
			       : 1;
	case 'W':
		return cli_duration("--window-every", arg, NSEC_PER_MSEC,
				    86400 * NSEC_PER_SEC, &d->window_every_ns)
			       ? -1
			       : 1;
	case 'X':
		if (!strcmp(arg, "0"))
			d->meta_every_ns = 0;
		else if (cli_duration("--meta-every", arg, NSEC_PER_SEC,
				      86400 * NSEC_PER_SEC, &d->meta_every_ns))
			return -1;
		return 1;
	}
	return 0;
}

/*
 * Sampled hooks count calls and messages only inside timing windows, so a
 * fleet agent (publishing to Kafka, where windows go to their own topic)
 * with none asked for takes the default schedule: messages and the fleet's
 * causal paths keep coming with no extra option.  JSON-lines output gets
 * windows only when asked, so its readers see no new kind of line.
 */
static void default_windows(struct agent_cmd *c)
{
	if (c->d.window_ns || !c->kc.brokers ||
	    c->w.ao.hooks == CW_HOOKS_ALWAYS)
		return;
	c->d.window_ns = CW_HOOKS_WINDOW_NS;
	c->d.window_every_ns = CW_HOOKS_EVERY_NS;
}

/* Options that each make sense but not together. */
static int check_options(const struct agent_cmd *c)
{
	const struct cw_daemon_opts *d = &c->d;

	if (c->out && c->kc.brokers)
		return cw_error("--out and --kafka: records go to one or the "
				"other");
	if (d->window_every_ns && !d->window_ns)
		return cw_error("--window-every needs --window");
	if (d->window_every_ns && d->window_every_ns < d->window_ns)
		return cw_error("--window-every must be at least --window "
				"(windows do not overlap)");
	/* The messages go on the wire only: JSON lines have no place for
	 * them, and without windows nothing would attach. */
	if (c->traces && !c->kc.brokers)
		return cw_error("--traces needs --kafka (its records go to "
				"the timing topic)");
	if (c->traces && c->w.ao.hooks == CW_HOOKS_ALWAYS && !d->window_ns)
		return cw_error("--traces needs timing windows: give --window "
				"with --hooks always");
	/* A 2,000-bin run at 10 ms lasts 20 s: runs must not overlap. */
	if (d->samples_every_ns && d->samples_every_ns < 30 * NSEC_PER_SEC)
		return cw_error("--samples-every: want at least 30s (or 0: "
				"off)");
	return 0;
}

/* 0 to go on, else the exit status (help printed, or bad usage). */
static int parse_args(int argc, char **argv, struct agent_cmd *c)
{
	static const struct option opts[] = {{"interval", 1, 0, 'i'},
					     {"duration", 1, 0, 'd'},
					     {"out", 1, 0, 'o'},
					     {"attach", 1, 0, 'a'},
					     {"netns", 1, 0, 'n'},
					     {"host", 1, 0, 'H'},
					     {"msg-gap", 1, 0, 'g'},
					     {"no-udp", 0, 0, 'U'},
					     {"no-nat", 0, 0, 'N'},
					     {"hooks", 1, 0, CLI_OPT_HOOKS},
					     {"kafka", 1, 0, 'k'},
					     {"kafka-config", 1, 0, 'K'},
					     {"topic-prefix", 1, 0, 'T'},
					     {"spool", 1, 0, 'S'},
					     {"spool-max", 1, 0, 'M'},
					     {"pin", 1, 0, 'P'},
					     {"samples-every", 1, 0, 'E'},
					     {"samples-store", 1, 0, 'R'},
					     {"window", 1, 0, 'w'},
					     {"window-every", 1, 0, 'W'},
					     {"meta-every", 1, 0, 'X'},
					     {"user", 1, 0, 'u'},
					     {"runtime-root", 1, 0, 'Y'},
					     {"metrics", 1, 0, CLI_OPT_METRICS},
					     {"traces", 0, 0, OPT_TRACES},
					     {"help", 0, 0, 'h'},
					     {0}};
	int opt, r;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "i:d:o:a:n:k:w:h", opts, NULL)) !=
	       -1) {
		r = cli_watch_option(opt, optarg, &c->w);
		if (!r)
			r = agent_option(opt, optarg, c);
		if (!r)
			r = period_option(opt, optarg, c);
		if (r < 0)
			return 2;
		if (r)
			continue;
		if (opt != 'h')
			return cli_bad_option("agent", argv);
		usage(stdout);
		return -1;
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (check_options(c))
		return 2;
	default_windows(c);
	return 0;
}

static void report(const struct agent_cmd *c, struct cw_agent *a,
		   const struct cw_daemon_stats *ds, struct cw_spool *spool)
{
	struct cw_agent_stats st;

	cw_agent_stats(a, &st);
	cw_info("stopped: %llu records in %llu collections; lost %llu close "
		"records, %llu storage failures, %llu UDP map full; %llu "
		"sample runs (%llu failed)",
		(unsigned long long)st.records,
		(unsigned long long)st.collections,
		(unsigned long long)st.close_lost,
		(unsigned long long)st.storage_fail,
		(unsigned long long)st.udp_map_full,
		(unsigned long long)ds->sample_runs,
		(unsigned long long)ds->sample_failures);
	if (c->d.window_ns)
		cw_info("timing: %" PRIu64 " windows, %" PRIu64
			" records of %" PRIu64 " messages (%" PRIu64
			" lost in the kernel), %" PRIu64
			" ends with no connection record, %" PRIu64
			" not published",
			ds->windows, ds->timing_records, ds->messages,
			st.timing_lost, ds->no_conn, ds->timing_failures);
	if (c->d.producer && c->d.samples_every_ns)
		cw_info("samples: %" PRIu64 " runs published",
			ds->samples_published);
	if (c->traces)
		cw_info("traces: %" PRIu64 " records of %" PRIu64
			" messages, %" PRIu64 " not published, %" PRIu64
			" events lost in the kernel (ring full)",
			ds->msgs_records, ds->msgs_messages, ds->msgs_failures,
			ds->msgs_lost);
	if (c->d.producer)
		cw_info("meta: %" PRIu64 " host and %" PRIu64
			" process records published, %" PRIu64 " failed",
			ds->host_meta, ds->proc_meta, ds->meta_failures);
	report_kafka(c->d.producer, spool);
}

/* Records to a file (appended) or stdout; the daemon writes them. */
static int open_out(struct agent_cmd *c)
{
	c->d.out = stdout;
	if (!c->out)
		return 0;
	c->d.out = fopen(c->out, "a");
	if (!c->d.out)
		return cw_error("unable to open '%s': %m", c->out);
	return 0;
}

static int close_out(struct agent_cmd *c, int err)
{
	if (c->d.out && c->d.out != stdout && fclose(c->d.out) && !err)
		err = cw_error("unable to write '%s': %m", c->out);
	else if (c->d.out == stdout && fflush(stdout) && !err)
		err = cw_error("unable to write records: %m");
	return err ? 1 : 0;
}

/* A folder the agent writes in, and what is in it, for uid to own. */
static int give_dir(const char *dir, uid_t uid, gid_t gid)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int err = 0;

	if (cw_mkdir_p(dir))
		return -1;
	if (chown(dir, uid, gid))
		return cw_error("unable to give '%s' to the agent's user: %m",
				dir);
	d = opendir(dir);
	if (!d)
		return cw_error("unable to read '%s': %m", dir);
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lchown(path, uid, gid))
			err = cw_error("unable to give '%s' to the agent's "
				       "user: %m",
				       path);
	}
	closedir(d);
	return err;
}

/*
 * The steady state: before the Kafka threads start, since capabilities
 * are per thread and the new ones inherit the dropped set.
 */
static int drop_privileges(const struct agent_cmd *c)
{
	uid_t uid;
	gid_t gid;

	if (c->user) {
		if (cw_user_lookup(c->user, &uid, &gid) ||
		    (c->kc.brokers && give_dir(c->spool_dir, uid, gid)) ||
		    (c->d.samples_every_ns &&
		     give_dir(cw_sample_store_dir(c->d.samples_store), uid,
			      gid)))
			return -1;
		return cw_drop_privileges(c->user);
	}
	if (cw_drop_privileges(NULL))
		cw_warn("running with more privileges than needed");
	return 0;
}

/* --metrics: the agent's counters, copied on by the daemon, served. */
static struct cw_metrics_server *
open_metrics(struct agent_cmd *c, struct cw_agent *a, struct cw_spool *spool)
{
	c->d.spool = spool;
	c->d.metrics = cw_agent_metrics_board(cw_agent_host(a));
	if (!c->d.metrics)
		return NULL;
	return cw_metrics_server_start(c->metrics, c->d.metrics);
}

/* --traces: the message programs loaded, attached only in windows. */
static int open_msgs(struct agent_cmd *c)
{
	struct cw_msgs_opts mo = {.sz = sizeof(mo), .netns = c->w.ao.netns};

	return cw_msgs_open(&c->d.msgs, &mo);
}

int cmd_agent(int argc, char **argv)
{
	struct agent_cmd c = {.w = {.ao = {.sz = sizeof(c.w.ao)},
				    .interval_ns = NSEC_PER_SEC},
			      .d = {.sz = sizeof(c.d),
				    .samples_every_ns = 60 * NSEC_PER_SEC,
				    .meta_every_ns = 600 * NSEC_PER_SEC,
				    .version = CW_VERSION},
			      .spool_dir = DEFAULT_SPOOL_DIR,
			      .spool_max = DEFAULT_SPOOL_MAX};
	struct sigaction sa = {.sa_handler = on_sigusr1};
	struct cw_daemon_stats ds;
	struct cw_metrics_server *ms = NULL;
	struct cw_spool *spool = NULL;
	struct cw_agent *a = NULL;
	int err;

	err = parse_args(argc, argv, &c);
	if (err)
		return err < 0 ? 0 : err;
	if (open_out(&c))
		return 1;
	cw_catch_signals();
	sigemptyset(&sa.sa_mask);
	if (c.d.window_ns)
		sigaction(SIGUSR1, &sa, NULL);
	err = -1;
	/* The privileges are dropped here, after attaching, not inside. */
	c.w.ao.keep_caps = true;
	if (cli_agent_open(&a, &c.w.ao) || drop_privileges(&c))
		goto out;
	if (c.kc.brokers && open_kafka(&c, &spool))
		goto out;
	if (c.metrics && !(ms = open_metrics(&c, a, spool)))
		goto out;
	if (c.traces && open_msgs(&c))
		goto out;
	cw_info("agent on host %s with the %s hooks, every %llu ms, to %s",
		cw_agent_host(a), cw_attach_name(cw_agent_attach(a)),
		(unsigned long long)(c.w.interval_ns / NSEC_PER_MSEC),
		c.kc.brokers ? c.kc.brokers
		: c.out	     ? c.out
			     : "stdout");
	c.d.interval_ns = c.w.interval_ns;
	c.d.duration_ns = c.w.duration_ns;
	if (cw_daemon_run(a, &c.d, &ds))
		goto out;
	report(&c, a, &ds, spool);
	err = 0;
out:
	cw_metrics_server_stop(ms);
	cw_metrics_board_free(c.d.metrics);
	cw_msgs_close(c.d.msgs);
	cw_agent_close(a);
	cw_kafka_producer_free(c.d.producer);
	cw_spool_close(spool);
	if (c.embedded)
		cw_kafka_mock_stop();
	return close_out(&c, err);
}
