// SPDX-License-Identifier: MIT
/*
 * `causeway agent` past its options (agent/run.h): the order of the
 * steps matters, and says why at each.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/dns.h"
#include "agent/run.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/spool.h"
#include "common/util.h"
#include "samples/samples.h"

static void on_sigusr1(int sig)
{
	cw_window_demand = 1;
}

void cw_agent_run_defaults(struct cw_agent_run *r, const char *version)
{
	memset(r, 0, sizeof(*r));
	r->ao.sz = sizeof(r->ao);
	r->interval_ns = NSEC_PER_SEC;
	r->d.sz = sizeof(r->d);
	r->d.samples_every_ns = 60 * NSEC_PER_SEC;
	r->d.meta_every_ns = 600 * NSEC_PER_SEC;
	r->d.version = version;
	r->spool_dir = CW_AGENT_SPOOL_DIR;
	r->spool_max = CW_AGENT_SPOOL_MAX;
}

int cw_agent_open_hinted(struct cw_agent **a, const struct cw_agent_opts *ao)
{
	if (!cw_agent_open(a, ao))
		return 0;
	/* The probe passed, the real programs did not: say what is missing. */
	if (errno == EPERM)
		cw_info("hint: the kernel refused the programs for lack of "
			"privilege: run as root, or with CAP_BPF, CAP_PERFMON, "
			"CAP_NET_ADMIN and enough RLIMIT_MEMLOCK");
	return -1;
}

static int open_kafka(struct cw_agent_run *c, struct cw_spool **spool)
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

/*
 * Sampled hooks count calls and messages only inside timing windows, so a
 * fleet agent (publishing to Kafka, where windows go to their own topic)
 * with none asked for takes the default schedule: messages and the fleet's
 * causal paths keep coming with no extra option.  JSON-lines output gets
 * windows only when asked, so its readers see no new kind of line.
 */
static void default_windows(struct cw_agent_run *c)
{
	if (c->d.window_ns || !c->kc.brokers ||
	    c->ao.hooks == CW_HOOKS_ALWAYS)
		return;
	c->d.window_ns = CW_HOOKS_WINDOW_NS;
	c->d.window_every_ns = CW_HOOKS_EVERY_NS;
}

/* Options that each make sense but not together. */
static int check_options(const struct cw_agent_run *c)
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
	if (c->traces && c->ao.hooks == CW_HOOKS_ALWAYS && !d->window_ns)
		return cw_error("--traces needs timing windows: give --window "
				"with --hooks always");
	/* A 2,000-bin run at 10 ms lasts 20 s: runs must not overlap. */
	if (d->samples_every_ns && d->samples_every_ns < 30 * NSEC_PER_SEC)
		return cw_error("--samples-every: want at least 30s (or 0: "
				"off)");
	return 0;
}

static void report(const struct cw_agent_run *c, struct cw_agent *a,
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
	cw_dns_report(c->d.dns);
	report_kafka(c->d.producer, spool);
}

/* Records to a file (appended) or stdout; the daemon writes them. */
static int open_out(struct cw_agent_run *c)
{
	c->d.out = stdout;
	if (!c->out)
		return 0;
	c->d.out = fopen(c->out, "a");
	if (!c->d.out)
		return cw_error("unable to open '%s': %m", c->out);
	return 0;
}

static int close_out(struct cw_agent_run *c, int err)
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
static int drop_privileges(const struct cw_agent_run *c)
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
open_metrics(struct cw_agent_run *c, struct cw_agent *a, struct cw_spool *spool)
{
	c->d.spool = spool;
	c->d.metrics = cw_agent_metrics_board(cw_agent_host(a));
	if (!c->d.metrics)
		return NULL;
	return cw_metrics_server_start(c->metrics, c->d.metrics);
}

/* --traces: the message programs loaded, attached only in windows. */
static int open_msgs(struct cw_agent_run *c)
{
	struct cw_msgs_opts mo = {.sz = sizeof(mo), .netns = c->ao.netns};

	return cw_msgs_open(&c->d.msgs, &mo);
}


/* --dns: the capture attached with the rest, before privileges go. */
static int open_dns(struct cw_agent_run *c, struct cw_agent *a)
{
	struct cw_dns_opts o = {.sz = sizeof(o), .host = cw_agent_host(a)};

	return cw_dns_open(&c->d.dns, &o);
}

int cw_agent_run_check(struct cw_agent_run *r)
{
	if (check_options(r))
		return -1;
	default_windows(r);
	return 0;
}

int cw_agent_run(struct cw_agent_run *c)
{
	struct sigaction sa = {.sa_handler = on_sigusr1};
	struct cw_daemon_stats ds;
	struct cw_metrics_server *ms = NULL;
	struct cw_spool *spool = NULL;
	struct cw_agent *a = NULL;
	int err;

	if (open_out(c))
		return -1;
	cw_catch_signals();
	sigemptyset(&sa.sa_mask);
	if (c->d.window_ns)
		sigaction(SIGUSR1, &sa, NULL);
	err = -1;
	/* The privileges are dropped here, after attaching, not inside. */
	c->ao.keep_caps = true;
	if (cw_agent_open_hinted(&a, &c->ao) || (c->dns && open_dns(c, a)) ||
	    drop_privileges(c))
		goto out;
	if (c->kc.brokers && open_kafka(c, &spool))
		goto out;
	if (c->metrics && !(ms = open_metrics(c, a, spool)))
		goto out;
	if (c->traces && open_msgs(c))
		goto out;
	cw_info("agent on host %s with the %s hooks, every %llu ms, to %s",
		cw_agent_host(a), cw_attach_name(cw_agent_attach(a)),
		(unsigned long long)(c->interval_ns / NSEC_PER_MSEC),
		c->kc.brokers ? c->kc.brokers
		: c->out      ? c->out
			      : "stdout");
	c->d.interval_ns = c->interval_ns;
	c->d.duration_ns = c->duration_ns;
	if (cw_daemon_run(a, &c->d, &ds))
		goto out;
	report(c, a, &ds, spool);
	err = 0;
out:
	cw_metrics_server_stop(ms);
	cw_metrics_board_free(c->d.metrics);
	cw_msgs_close(c->d.msgs);
	cw_dns_close(c->d.dns);
	cw_agent_close(a);
	cw_kafka_producer_free(c->d.producer);
	cw_spool_close(spool);
	if (c->embedded)
		cw_kafka_mock_stop();
	return close_out(c, err) ? -1 : 0;
}
