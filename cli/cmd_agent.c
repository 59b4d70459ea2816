// SPDX-License-Identifier: MIT
/*
 * causeway agent: the long-running host agent.  The command parses its
 * options; agent/run.h opens the agent and its outputs, runs the daemon
 * and says what it did.
 */
#include <stdio.h>

#include "agent/run.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/util.h"

static const char help[] =
	"usage: causeway agent [--interval I] [--duration D] [-o FILE]\n"
	"                      [--kafka BROKERS|embedded] [--kafka-config FILE]\n"
	"                      [--topic-prefix P] [--spool DIR] [--spool-max N]\n"
	"                      [--pin DIR] [--attach V] [--netns NS] [--host ID]\n"
	"                      [--samples-every P] [--samples-store DIR]\n"
	"                      [--window D [--window-every P]] [--meta-every P]\n"
	"                      [--user NAME] [--runtime-root DIR] [--traces]\n"
	"                      [--hooks always|sampled] [--msg-gap D] [--no-udp]\n"
	"                      [--no-nat] [--metrics A:P] [--dns]\n"
	"\n"
	"Run the host agent: per-connection aggregates collected in the\n"
	"kernel and published every interval, one record per connection\n"
	"end that changed, with cumulative counters.\n"
	"\n"
	"  -i, --interval I     collection period (default 1s)\n"
	"  -d, --duration D     stop after D (default: at SIGINT/SIGTERM)\n"
	"  -o, --out FILE       without --kafka: append JSON lines to FILE\n"
	"                       (default stdout)\n"
	"  -k, --kafka B        publish to Kafka brokers B (host:port,...);\n"
	"                       'embedded' starts a broker in this process\n"
	"                       and prints its address\n"
	"      --kafka-config F librdkafka properties, key=value lines\n"
	"                       (TLS, SASL, ...)\n"
	"      --topic-prefix P topics P.conns, P.meta, P.timing, P.samples\n"
	"                       (default causeway)\n"
	"      --spool DIR      records the brokers cannot take wait here,\n"
	"                       replayed in order (default " CW_AGENT_SPOOL_DIR ")\n"
	"      --spool-max N    spool bound in bytes (1M = 10^6, 1Mi = 2^20), the\n"
	"                       oldest evicted and counted at it or when the\n"
	"                       disk is full (default 1Gi)\n"
	"      --pin DIR        keep connection state pinned in DIR (bpffs),\n"
	"                       so a restarted agent never counts twice\n"
	"  -a, --attach V       auto (default), fentry, kprobe, tracepoint\n"
	"  -n, --netns NS       watch one network namespace only\n"
	"      --host ID        host id in records (default: machine-id)\n"
	"      --msg-gap D      an idle gap of D also starts a new message\n"
	"      --no-udp         do not count UDP\n"
	"      --dns            learn the names of peers from the DNS answers\n"
	"                       the host receives and publish them (DnsName on\n"
	"                       the meta topic); off by default: it reads what\n"
	"                       every process looks up\n"
	"      --no-nat         keep DNAT'ed (virtual) addresses: no conntrack lookups\n"
	"      --hooks H        sampled (default): the per-call programs run only\n"
	"                       inside timing windows, so a send/recv costs\n"
	"                       nothing outside, where calls and messages are\n"
	"                       estimated from the exact bytes (msgs_estimated,\n"
	"                       sampled_ppm); always: exact calls and messages\n"
	"                       everywhere, ~100 ns a call (bytes are exact either way).\n"
	"                       With --kafka and no --window, sampled takes 1s windows\n"
	"                       every 10s.\n"
	"      --samples-every P  a tc sample run every P, rotating 10ms,\n"
	"                       1ms, 100us bins (default 1m; 0 turns off);\n"
	"                       with --kafka, each run is published too\n"
	"      --samples-store DIR  where runs go (see causeway samples)\n"
	"  -w, --window D       timing windows of D: every message start per\n"
	"                       connection end (ns, direction, size), to\n"
	"                       P.timing, or as JSON lines without --kafka\n"
	"      --window-every P open a window at every wall-clock multiple of\n"
	"                       P, the same instants on every host (default:\n"
	"                       only on demand: SIGUSR1 opens one at the next\n"
	"                       multiple of D)\n"
	"      --user NAME      after attaching, run as NAME with CAP_BPF,\n"
	"                       CAP_PERFMON and CAP_NET_ADMIN only (the spool\n"
	"                       and samples folders are given to NAME)\n"
	"      --meta-every P   host metadata at start and every P (default\n"
	"                       10m; 0: only at start); process metadata (CPU,\n"
	"                       memory, workload) every interval\n"
	"      --runtime-root DIR  read the container runtime's state under DIR\n"
	"                       for workload names (default $CAUSEWAY_RUNTIME_ROOT,\n"
	"                       else /)\n"
	"      --metrics A:P    the agent's own counters for Prometheus at\n"
	"                       http://A:P/metrics (a bare PORT: 127.0.0.1)\n"
	"      --traces         inside timing windows only, also record every\n"
	"                       message with its thread and the request it\n"
	"                       served (for 'causeway traces'), to P.timing;\n"
	"                       needs --kafka; +0.3 to +0.65 us a send/recv while\n"
	"                       a window is open, nothing outside\n"
	"\n"
	"SIGINT and SIGTERM flush what is pending, detach and exit 0.\n"
	"\n"
	"Examples:\n"
	"  causeway agent --interval 5s -o /var/log/causeway.jsonl\n"
	"  causeway agent --kafka kafka1:9092,kafka2:9092 --pin /sys/fs/bpf/causeway\n"
	"  causeway agent --kafka embedded --samples-every 0\n"
	"  causeway agent --kafka k1:9092 --window 2s --window-every 1m\n";

int cmd_agent(int argc, char **argv)
{
	const uint64_t day = 86400 * NSEC_PER_SEC;
	struct cw_agent_run r;
	struct cw_daemon_opts *d = &r.d;
	const struct cw_opt t[] = {
		CLI_WATCH(&r),
		CW_OPT_STR("out", 'o', &r.out),
		{.name = "host", .key = 'H', .kind = CW_OPT_KSTR, .to = &r.ao.host,
		 .max = CW_HOST_LEN - 1},
		CLI_KAFKA(&r.kc),
		CW_OPT_STR("spool", 0, &r.spool_dir),
		{.name = "spool-max", .kind = CW_OPT_KSIZE, .to = &r.spool_max,
		 .min = 1000000, .max = UINT64_MAX,
		 .want = "a size of at least 1M, such as 512Mi or 2G"},
		CW_OPT_STR("pin", 0, &r.ao.pin_dir),
		{.name = "samples-every", .kind = CW_OPT_KDUR,
		 .to = &d->samples_every_ns, .min = NSEC_PER_SEC, .max = day,
		 .flags = CW_OPT_ZERO_OFF},
		CW_OPT_STR("samples-store", 0, &d->samples_store),
		CW_OPT_DUR("window", 'w', &d->window_ns, NSEC_PER_MSEC,
			3600 * NSEC_PER_SEC),
		CW_OPT_DUR("window-every", 0, &d->window_every_ns, NSEC_PER_MSEC,
			day),
		{.name = "meta-every", .kind = CW_OPT_KDUR,
		 .to = &d->meta_every_ns, .min = NSEC_PER_SEC, .max = day,
		 .flags = CW_OPT_ZERO_OFF},
		CW_OPT_STR("user", 0, &r.user),
		CW_OPT_STR("runtime-root", 0, &d->runtime_root),
		CW_OPT_STR("metrics", 0, &r.metrics),
		CW_OPT_FLAG("traces", 0, &r.traces),
		CW_OPT_FLAG("dns", 0, &r.dns),
		{0}};
	int rc;

	cw_agent_run_defaults(&r, CW_VERSION);
	rc = cw_opts_parse("agent", t, argc, argv, help);
	if (rc >= 0)
		return rc;
	if (cw_opts_one_operand(argc, argv, NULL) || cw_agent_run_check(&r))
		return 2;
	return cw_agent_run(&r) ? 1 : 0;
}
