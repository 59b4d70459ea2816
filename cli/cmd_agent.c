// SPDX-License-Identifier: MIT
/*
 * causeway agent: the long-running host agent.  Every interval it publishes
 * the connection ends that changed -- to Kafka, or as JSON lines -- with
 * cumulative counters, so a consumer keeps the newest record per end and
 * never double counts.  It also records fine-timescale sample runs on a
 * schedule (agent/sampler.h) and, when asked, timing windows: every
 * message start per connection end, in windows that open at the same
 * wall-clock multiples on every host.  Both are published too.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/sampler.h"
#include "samples/samples.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/jsonw.h"
#include "common/htab.h"
#include "common/kafka.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/util.h"
#include "common/wire.h"

#define DEFAULT_SPOOL_DIR "/var/lib/causeway/spool"
#define DEFAULT_SPOOL_MAX (1ULL << 30)

/* Timing windows at wall-clock multiples of a period, or on SIGUSR1. */
struct timing_sched {
	uint64_t window_ns;    /* 0: off */
	uint64_t every_ns;     /* 0: only on demand */
	uint64_t next_real;    /* next scheduled window starts then */
	uint64_t demand_real;  /* an on-demand window starts then; 0: none */
	uint64_t slot;	       /* the open window's multiple; 0: none open */
	uint64_t stopped_real; /* cut short at this time; 0: ran its length */
	struct cw_htab ends;
	uint64_t seq;
	uint64_t windows, records, messages, no_conn, failures;
};

struct agent_out {
	FILE *fp; /* JSON lines, when no broker */
	struct cw_jsonw w;
	struct cw_kafka_producer *producer;
	/* With timing windows: its ends map (cookie -> newest struct
	 * cw_conn_record) gives each window its end's addresses and process. */
	struct timing_sched *ts;
};

static volatile sig_atomic_t window_demand;

static void on_sigusr1(int sig)
{
	window_demand = 1;
}

/* Scheduled sample runs: 10 ms, 1 ms, 100 us in turn, once a period. */
struct sample_sched {
	uint64_t every_ns; /* 0: off */
	const char *store;
	struct cw_sampler *s;
	uint64_t next_real; /* next run starts at this wall-clock time */
	uint64_t end_mono;  /* running until then; 0: idle */
	unsigned turn;
	uint64_t runs, failures;
	struct cw_kafka_producer *producer; /* publish runs there too */
	const char *host;		    /* the agent's host id */
	uint64_t seq, published;
};

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
		"                      [--window D [--window-every P]]\n\n"
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
		"      --spool-max N    spool bound in bytes, oldest evicted "
		"and\n"
		"                       counted (default 1G)\n"
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
		"                       nothing outside; always: exact calls "
		"and messages\n"
		"                       everywhere, ~100 ns a call (bytes are "
		"exact either way)\n"
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
		"                       multiple of D)\n\n"
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

static int on_record(const struct cw_conn_record *r, void *arg)
{
	struct agent_out *o = arg;

	if (o->ts) {
		struct cw_conn_record *e =
			cw_htab_upsert(&o->ts->ends, &r->cookie, NULL);

		if (!e)
			return cw_error("out of memory");
		*e = *r;
	}
	if (o->producer)
		return cw_kafka_produce_conn(o->producer, r) ? -1 : 0;
	cw_conn_record_json(&o->w, r);
	cw_jsonw_end_line(&o->w);
	return ferror(o->fp) ? cw_error("unable to write records: %m") : 0;
}

static void sample_finish(struct sample_sched *ss, bool interrupted)
{
	struct cw_sample_run *run = NULL;
	char name[CW_SAMPLE_NAME_MAX];

	cw_sampler_detach(ss->s);
	ss->end_mono = 0;
	if (cw_sampler_collect(ss->s, 0, &run)) {
		ss->failures++;
		return;
	}
	/* The run names its host as every record of this agent does. */
	if (ss->host)
		snprintf(run->host, sizeof(run->host), "%s", ss->host);
	if (cw_sample_store_write(cw_sample_store_dir(ss->store), run, NULL,
				  name, sizeof(name))) {
		ss->failures++;
	} else {
		ss->runs++;
		cw_debug("sample run %s%s", name,
			 interrupted ? " (interrupted)" : "");
	}
	/* Published whether or not the store took it; spooled if need be. */
	if (ss->producer &&
	    !cw_kafka_produce_samples(ss->producer, run, ++ss->seq))
		ss->published++;
	cw_sample_run_free(run);
}

/* Start a run when one is due; finish it when its bins are full. */
static void sample_step(struct sample_sched *ss)
{
	struct cw_sampler_opts so = {.sz = sizeof(so)};
	uint64_t now = cw_now_real_ns();

	if (!ss->every_ns)
		return;
	if (ss->end_mono) {
		if (cw_now_mono_ns() >= ss->end_mono)
			sample_finish(ss, false);
		return;
	}
	if (now < ss->next_real)
		return;
	ss->next_real = cw_window_next(now, ss->every_ns);
	so.interval_ns = cw_sampler_schedule[ss->turn++ % 3];
	so.samples = CW_SAMPLER_DEF_SAMPLES;
	if (ss->s)
		cw_sampler_free(ss->s);
	ss->s = NULL;
	if (cw_sampler_open(&so, &ss->s) || cw_sampler_attach(ss->s)) {
		ss->failures++;
		return;
	}
	ss->end_mono = cw_sampler_start(ss->s) +
		       so.interval_ns * CW_SAMPLER_DEF_SAMPLES;
}

static void sample_stop(struct sample_sched *ss)
{
	if (ss->end_mono)
		sample_finish(ss, true);
	cw_sampler_free(ss->s);
	ss->s = NULL;
}

/*
 * One end's window, published in records of at most CW_WIRE_TIMING_CHUNK
 * messages, with its connection's fields and the window's slot.
 */
static int on_timing(const struct cw_timing_record *t, void *arg)
{
	struct agent_out *o = arg;
	struct timing_sched *ts = o->ts;
	const struct cw_conn_record *r = cw_htab_get(&ts->ends, &t->cookie);
	struct cw_timing_record c = *t;
	uint64_t end = t->window_start_ns + t->window_ns;
	size_t off = 0;

	if (ts->stopped_real && ts->stopped_real < end &&
	    ts->stopped_real >= t->window_start_ns)
		end = ts->stopped_real;
	c.slot_ns = ts->slot;
	if (r)
		cw_timing_record_set_conn(&c, r);
	else
		ts->no_conn++;
	/* The clocks may disagree by a hair: the window covers its msgs. */
	if (t->n && t->msgs[0].ts_ns < c.window_start_ns)
		c.window_start_ns = t->msgs[0].ts_ns;
	if (t->n && t->msgs[t->n - 1].ts_ns > end)
		end = t->msgs[t->n - 1].ts_ns;
	c.window_ns = end - c.window_start_ns;
	ts->messages += t->n;
	do {
		c.msgs = t->msgs + off;
		c.n = t->n - off < CW_WIRE_TIMING_CHUNK ? t->n - off
							: CW_WIRE_TIMING_CHUNK;
		c.seq = ++ts->seq;
		off += c.n;
		ts->records++;
		if (o->producer) {
			if (cw_kafka_produce_timing(o->producer, &c))
				ts->failures++;
			continue;
		}
		cw_timing_window_json(&o->w, &c);
		cw_jsonw_end_line(&o->w);
		if (ferror(o->fp))
			return cw_error("unable to write records: %m");
	} while (off < t->n);
	return 0;
}

/* Forget the ends that closed: their last window has been collected. */
static void forget_closed(struct cw_htab *ends)
{
	size_t i = 0;

	while (i < ends->len) {
		const struct cw_conn_record *r = cw_htab_val(ends, i);

		if (r->flags & CW_REC_CLOSED)
			cw_htab_delete(ends, cw_htab_key(ends, i));
		else
			i++;
	}
}

/* Collect the open window: the ends' records first, so each is known. */
static int timing_collect(struct cw_agent *a, struct timing_sched *ts,
			  struct agent_out *o)
{
	int err;

	if (cw_agent_collect(a, on_record, o))
		return -1;
	err = cw_agent_window_collect(a, on_timing, o);
	ts->windows++;
	cw_debug("timing window at %" PRIu64 " collected", ts->slot);
	ts->slot = 0;
	forget_closed(&ts->ends);
	return err;
}

/* Open windows when due; collect one when it has ended. */
static int timing_step(struct cw_agent *a, struct timing_sched *ts,
		       struct agent_out *o)
{
	uint64_t now = cw_now_real_ns(), at;

	if (!ts->window_ns)
		return 0;
	if (window_demand) {
		window_demand = 0;
		at = cw_window_next(now, ts->window_ns);
		if (!ts->demand_real || at < ts->demand_real)
			ts->demand_real = at;
		cw_info("timing window on demand at the next multiple of "
			"%" PRIu64 " ms",
			(uint64_t)(ts->window_ns / NSEC_PER_MSEC));
	}
	if (ts->slot) {
		if (!cw_agent_window_done(a))
			return 0;
		if (timing_collect(a, ts, o))
			return -1;
		now = cw_now_real_ns();
	}
	if (ts->every_ns && now >= ts->next_real) {
		at = ts->next_real;
		ts->next_real = cw_window_next(now, ts->every_ns);
	} else if (ts->demand_real && now >= ts->demand_real) {
		at = ts->demand_real;
	} else {
		return 0;
	}
	/* One window at a time: a demand due now is served by this one. */
	if (ts->demand_real && ts->demand_real <= now)
		ts->demand_real = 0;
	ts->slot = at;
	return cw_agent_window_open(a, ts->window_ns);
}

/* Wake up on time for the next window, so hosts open theirs together. */
static int poll_ms(const struct timing_sched *ts)
{
	uint64_t now = cw_now_real_ns(), at = UINT64_MAX, ms;

	if (!ts->window_ns || ts->slot)
		return 50;
	if (ts->every_ns)
		at = ts->next_real;
	if (ts->demand_real && ts->demand_real < at)
		at = ts->demand_real;
	if (at == UINT64_MAX || at >= now + 50 * NSEC_PER_MSEC)
		return 50;
	ms = at > now ? (at - now) / NSEC_PER_MSEC : 0;
	return (int)ms;
}

static int open_kafka(struct agent_out *o, struct cw_kafka_conf *kc,
		      struct cw_spool **spool, const char *spool_dir,
		      uint64_t spool_max)
{
	static char bootstrap[256];

	if (!strcmp(kc->brokers, "embedded")) {
		if (cw_kafka_mock_start(1, bootstrap, sizeof(bootstrap)))
			return -1;
		kc->brokers = bootstrap;
		/* Other agents (other namespaces, other processes) join here.
		 */
		cw_info("embedded broker at %s", bootstrap);
	}
	if (cw_spool_open(spool, spool_dir, spool_max))
		return -1;
	kc->spool = *spool;
	o->producer = cw_kafka_producer_new(kc);
	return o->producer ? 0 : -1;
}

static void report_kafka(struct agent_out *o, struct cw_spool *spool)
{
	struct cw_kafka_producer_stats ks;
	struct cw_spool_stats ss;

	if (!o->producer)
		return;
	cw_kafka_producer_get_stats(o->producer, &ks);
	cw_spool_get_stats(spool, &ss);
	cw_info("kafka: %llu produced, %llu delivered, %llu spooled, %llu "
		"replayed, %llu lost; spool holds %llu records, evicted %llu",
		(unsigned long long)ks.produced,
		(unsigned long long)ks.delivered,
		(unsigned long long)ks.spooled, (unsigned long long)ks.replayed,
		(unsigned long long)ks.lost, (unsigned long long)ss.records,
		(unsigned long long)ss.evicted_records);
}

int cmd_agent(int argc, char **argv)
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
					     {"help", 0, 0, 'h'},
					     {0}};
	struct cli_watch w = {.ao = {.sz = sizeof(w.ao)},
			      .interval_ns = NSEC_PER_SEC};
	uint64_t start, next, now;
	uint64_t spool_max = DEFAULT_SPOOL_MAX;
	struct sample_sched ss = {.every_ns = 60 * NSEC_PER_SEC};
	struct timing_sched ts = {0};
	struct cw_kafka_conf kc = {0};
	struct agent_out o = {.fp = stdout};
	const char *spool_dir = DEFAULT_SPOOL_DIR;
	struct cw_spool *spool = NULL;
	struct cw_agent_stats st;
	struct cw_agent *a = NULL;
	const char *out = NULL;
	int opt, err = 1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "i:d:o:a:n:k:w:h", opts, NULL)) !=
	       -1) {
		switch (cli_watch_option(opt, optarg, &w)) {
		case -1:
			return 2;
		case 1:
			continue;
		}
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'H':
			if (!*optarg || strlen(optarg) >= CW_HOST_LEN) {
				cw_error("--host '%s': want 1 to %d characters",
					 optarg, CW_HOST_LEN - 1);
				return 2;
			}
			w.ao.host = optarg;
			break;
		case 'k':
			kc.brokers = optarg;
			break;
		case 'K':
			kc.properties = optarg;
			break;
		case 'T':
			kc.topic_prefix = optarg;
			break;
		case 'S':
			spool_dir = optarg;
			break;
		case 'M':
			if (cw_parse_u64(optarg, 1 << 20, UINT64_MAX,
					 &spool_max)) {
				cw_error("--spool-max '%s': want a byte count "
					 "of at least 1M",
					 optarg);
				return 2;
			}
			break;
		case 'P':
			w.ao.pin_dir = optarg;
			break;
		case 'E':
			if (!strcmp(optarg, "0"))
				ss.every_ns = 0;
			else if (cli_duration("--samples-every", optarg,
					      NSEC_PER_SEC,
					      86400 * NSEC_PER_SEC,
					      &ss.every_ns))
				return 2;
			break;
		case 'R':
			ss.store = optarg;
			break;
		case 'w':
			if (cli_duration("--window", optarg, NSEC_PER_MSEC,
					 3600 * NSEC_PER_SEC, &ts.window_ns))
				return 2;
			break;
		case 'W':
			if (cli_duration("--window-every", optarg,
					 NSEC_PER_MSEC, 86400 * NSEC_PER_SEC,
					 &ts.every_ns))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("agent", argv);
		}
	}
	if (optind < argc) {
		cw_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (out && kc.brokers) {
		cw_error("--out and --kafka: records go to one or the other");
		return 2;
	}
	if (ts.every_ns && !ts.window_ns) {
		cw_error("--window-every needs --window");
		return 2;
	}
	if (ts.every_ns && ts.every_ns < ts.window_ns) {
		cw_error("--window-every must be at least --window (windows "
			 "do not overlap)");
		return 2;
	}
	/* A 2,000-bin run at 10 ms lasts 20 s: runs must not overlap. */
	if (ss.every_ns && ss.every_ns < 30 * NSEC_PER_SEC) {
		cw_error("--samples-every: want at least 30s (or 0: off)");
		return 2;
	}
	if (out) {
		o.fp = fopen(out, "a");
		if (!o.fp) {
			cw_error("unable to open '%s': %m", out);
			return 1;
		}
	}
	cw_jsonw_init(&o.w, o.fp);
	cw_catch_signals();
	cw_htab_init(&ts.ends, sizeof(uint64_t), sizeof(struct cw_conn_record));
	if (ts.window_ns) {
		struct sigaction sa = {.sa_handler = on_sigusr1};

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
		o.ts = &ts;
	}
	if (kc.brokers && open_kafka(&o, &kc, &spool, spool_dir, spool_max))
		goto out;
	ss.producer = o.producer;
	if (cw_agent_open(&a, &w.ao))
		goto out;
	cw_info("agent on host %s with the %s hooks, every %llu ms, to %s",
		cw_agent_host(a), cw_attach_name(cw_agent_attach(a)),
		(unsigned long long)(w.interval_ns / NSEC_PER_MSEC),
		kc.brokers ? kc.brokers
		: out	   ? out
			   : "stdout");
	ss.host = cw_agent_host(a);
	start = cw_now_mono_ns();
	next = start + w.interval_ns;
	ss.next_real =
		cw_window_next(cw_now_real_ns(), ss.every_ns ? ss.every_ns : 1);
	if (ts.every_ns) {
		ts.next_real = cw_window_next(cw_now_real_ns(), ts.every_ns);
		cw_info("timing windows of %" PRIu64 " ms every %" PRIu64
			" ms, the first at %" PRIu64,
			(uint64_t)(ts.window_ns / NSEC_PER_MSEC),
			(uint64_t)(ts.every_ns / NSEC_PER_MSEC), ts.next_real);
	}
	while (!cw_stop) {
		now = cw_now_mono_ns();
		if (w.duration_ns && now >= start + w.duration_ns)
			break;
		if (now >= next) {
			if (cw_agent_collect(a, on_record, &o))
				goto out;
			if (!o.producer)
				fflush(o.fp);
			next += w.interval_ns;
		}
		sample_step(&ss);
		if (timing_step(a, &ts, &o))
			goto out;
		if (o.producer)
			cw_kafka_producer_poll(o.producer, 0);
		if (cw_agent_poll(a, poll_ms(&ts)))
			goto out;
	}
	/* Flush what is pending before detaching: a window cut short too. */
	if (ts.slot) {
		ts.stopped_real = cw_now_real_ns();
		if (timing_collect(a, &ts, &o))
			goto out;
	}
	if (cw_agent_collect(a, on_record, &o))
		goto out;
	if (o.producer)
		cw_kafka_producer_flush(o.producer, 10000);
	cw_agent_stats(a, &st);
	cw_info("stopped: %llu records in %llu collections; lost %llu close "
		"records, %llu storage failures, %llu UDP map full; %llu "
		"sample runs (%llu failed)",
		(unsigned long long)st.records,
		(unsigned long long)st.collections,
		(unsigned long long)st.close_lost,
		(unsigned long long)st.storage_fail,
		(unsigned long long)st.udp_map_full,
		(unsigned long long)ss.runs, (unsigned long long)ss.failures);
	if (ts.window_ns)
		cw_info("timing: %" PRIu64 " windows, %" PRIu64
			" records of %" PRIu64 " messages (%" PRIu64
			" lost in the kernel), %" PRIu64
			" ends with no connection record, %" PRIu64
			" not published",
			ts.windows, ts.records, ts.messages, st.timing_lost,
			ts.no_conn, ts.failures);
	if (o.producer && ss.every_ns)
		cw_info("samples: %" PRIu64 " runs published", ss.published);
	report_kafka(&o, spool);
	err = 0;
out:
	sample_stop(&ss);
	cw_agent_close(a);
	cw_htab_release(&ts.ends);
	cw_kafka_producer_free(o.producer);
	cw_spool_close(spool);
	if (!strcmp(kc.brokers ? kc.brokers : "", "embedded"))
		cw_kafka_mock_stop();
	if (o.fp != stdout && fclose(o.fp) && !err)
		err = cw_error("unable to write '%s': %m", out);
	else if (o.fp == stdout && fflush(stdout) && !err)
		err = cw_error("unable to write records: %m");
	return err;
}
