#!/bin/bash
# What the tc sampler costs: iperf3 over a veth pair between two namespaces
# at 1 KiB and 128 KiB writes, with a 1 ms sampler run on the client's
# interface (ingress and egress hooks) against none.  Runs are interleaved
# (off, on, off, on, ...) so drift hits both alike; medians over rounds;
# ratios on / off.  Prints a markdown section for bench/RESULTS.md.
#
#   bench/run.sh bench_sampler          (ROUNDS=7 SECS=3 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd iperf3 python3
ROUNDS=${ROUNDS:-7}
SECS=${SECS:-3}
SIZES=${SIZES:-"1024 131072"}
IPERF_OPTS=${IPERF_OPTS:-}	# e.g. -N: one packet per write

A=$(ns_create a)
B=$(ns_create b)
# ns_create runs in a $(...) subshell, where its registration is lost:
# register them here so that the EXIT trap removes them.
T_NETNS+=("$A" "$B")
for n in "$A" "$B"; do
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
done
ns_link "$A" "$B" 10.77.9.1 10.77.9.2

# With run-time statistics on, the kernel times every BPF program run: the
# sampler's own cost per packet, free of iperf3's run-to-run noise.  They
# are on for "on" runs only (they cost two clock reads per program run).
sysctl -qw kernel.bpf_stats_enabled=0
on_exit sysctl -qw kernel.bpf_stats_enabled=0

# Sum of run_time_ns and run_cnt over the sampler's programs now loaded.
bpf_cost() {
	bpftool -j prog show | python3 -c '
import json, sys
ns = cnt = 0
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("cw_sampler_"):
        ns += p.get("run_time_ns", 0); cnt += p.get("run_cnt", 0)
print(ns, cnt)'
}

# run_one SIZE on|off: prints "gbps cpu_pct bpf_ns bpf_runs"
run_one() {
	local size=$1 mode=$2 rec= out=$T_TMP/run.$RANDOM
	ip netns exec "$B" iperf3 -s -B 10.77.9.2 -p 5302 -1 >/dev/null 2>&1 &
	local spid=$!
	wait_port "$B" 5302
	if [ "$mode" = on ]; then
		ip netns exec "$A" "$CW" samples record --dev "$LINK_A" \
			--interval 1ms --samples $(((SECS + 2) * 1000)) \
			-o "$out.cws" >/dev/null 2>"$out.err" &
		rec=$!
		for _ in $(seq 1 200); do
			grep -q recording "$out.err" && break
			sleep 0.05
		done
		sysctl -qw kernel.bpf_stats_enabled=1
	fi
	ip netns exec "$A" iperf3 -c 10.77.9.2 -p 5302 -t "$SECS" -l "$size" $IPERF_OPTS \
		--json >"$T_TMP/iperf.json" 2>/dev/null
	local cost="0 0"
	if [ -n "$rec" ]; then
		cost=$(bpf_cost)
		sysctl -qw kernel.bpf_stats_enabled=0
		kill -INT "$rec"
		wait "$rec"
	fi
	wait "$spid" 2>/dev/null
	python3 - "$T_TMP/iperf.json" $cost <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["end"]
cpu = e["cpu_utilization_percent"]
print("%.3f %.1f %s %s" % (e["sum_received"]["bits_per_second"] / 1e9,
                           cpu["host_total"] + cpu["remote_total"],
                           sys.argv[2], sys.argv[3]))
PY
}

results=$T_TMP/results
: >"$results"
for r in $(seq 1 "$ROUNDS"); do
	for size in $SIZES; do
		for mode in off on; do
			echo "round $r size $size sampler $mode" >&2
			echo "$size $mode $(run_one "$size" "$mode")" >>"$results"
			tail -n 1 "$results" >&2
		done
	done
done

echo "<!-- bench_sampler -->"
echo "## tc sampler overhead (bench_sampler)"
echo
echo "iperf3 client -> server over a veth pair between two namespaces, ${SECS}s"
echo "per run, $ROUNDS interleaved rounds, medians.  \"on\": \`causeway samples"
echo "record --interval 1ms\` on the client's veth (ingress + egress tc hooks)"
echo "for the whole iperf3 run.  CPU is iperf3's client + server (user + sys,"
echo "% of one core), where the tc programs run.  Cost = 1 - on/off"
echo "throughput; CPU per Gbit/s ratio = on/off.  BPF ns/packet and BPF"
echo "share come from the kernel's own BPF run-time statistics in the \"on\""
echo "runs: the sampler programs' run time per packet, and that time as a share"
echo "of all the CPU time iperf3 used (the direct cost, which iperf3's"
echo "run-to-run throughput noise on a shared 2-core VM hides)."
echo
python3 - "$results" "$SECS" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
print("| write size | Gbit/s off | Gbit/s on | throughput cost | CPU%/Gbit/s on/off | BPF ns/packet | BPF share of CPU |")
print("|-----------:|-----------:|----------:|----------------:|-------------------:|--------------:|-----------------:|")
for size in sorted({int(r[0]) for r in rows}):
    def med(mode, i):
        return st.median(float(r[i]) for r in rows if int(r[0]) == size and r[1] == mode)
    off, on = med("off", 2), med("on", 2)
    cpg_off = st.median(float(r[3]) / float(r[2]) for r in rows if int(r[0]) == size and r[1] == "off")
    cpg_on = st.median(float(r[3]) / float(r[2]) for r in rows if int(r[0]) == size and r[1] == "on")
    ons = [r for r in rows if int(r[0]) == size and r[1] == "on" and int(r[5]) > 0]
    per_pkt = st.median(int(r[4]) / int(r[5]) for r in ons) if ons else 0
    secs = float(sys.argv[2])
    share = st.median(int(r[4]) / (float(r[3]) / 100 * secs * 1e9) for r in ons) if ons else 0
    label = "%d KiB" % (size // 1024)
    print("| %s | %.2f | %.2f | %+.1f%% | %.3f | %.0f | %.2f%% |" % (label, off, on, 100 * (1 - on / off), cpg_on / cpg_off, per_pkt, 100 * share))
PY
echo
echo "Made by \`bench/run.sh bench_sampler\` (ROUNDS=$ROUNDS SECS=$SECS) on"
echo "$(uname -r), $(nproc) cores, $(date -u +%Y-%m-%d)."
echo "<!-- /bench_sampler -->"
