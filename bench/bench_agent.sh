#!/bin/bash
# The SAC'20 overhead comparison, reproduced: iperf3 throughput and CPU with
# no agent, with connection hooks only, with one event per send/recv summed
# in user space (--mode per-event), and with causeway's in-kernel
# aggregation.  Runs are interleaved (every mode once per round) so drift
# hits all modes alike; medians over rounds; ratios against no agent.
#
#   bench/run.sh bench_agent          (ROUNDS=3 SECS=3 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd iperf3 python3
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
SIZES=${SIZES:-"128 1024 16384 131072"}
MODES="none conn-only per-event aggregate"

LO=$(ns_create lo)	# loopback inside its own namespace: no other traffic
two_hosts

# run_one PATH SIZE MODE: one iperf3 run; prints "gbps cpu_pct calls lost"
run_one() {
	local path=$1 size=$2 mode=$3 cns sns addr out=$T_TMP/a.$RANDOM
	if [ "$path" = loopback ]; then cns=$LO sns=$LO addr=127.0.0.1
	else cns=$CLI sns=$SRV addr=$SRV_IP; fi
	ip netns exec "$sns" iperf3 -s -B "$addr" -p 5301 -1 >/dev/null 2>&1 &
	local spid=$!
	wait_port "$sns" 5301
	local apid=
	if [ "$mode" != none ]; then
		mkdir -p "$out"
		"$CW" run --mode "$mode" --no-udp -o "$out" \
			>"$out/stdout" 2>"$out/stderr" &
		apid=$!
		for _ in $(seq 1 200); do
			grep -q "watching with" "$out/stderr" 2>/dev/null && break
			sleep 0.05
		done
		a0=$(awk '{print $14 + $15}' "/proc/$apid/stat")
	fi
	ip netns exec "$cns" iperf3 -c "$addr" -p 5301 -t "$SECS" -l "$size" \
		--json >"$T_TMP/iperf.json" 2>/dev/null
	local agent_ticks=0 calls=0 lost=0
	if [ -n "$apid" ]; then
		a1=$(awk '{print $14 + $15}' "/proc/$apid/stat")
		agent_ticks=$((a1 - a0))
		kill -INT "$apid"; wait "$apid"
		read -r calls lost <<<"$(python3 - "$out" <<'PY'
import json, sys, os
d = sys.argv[1]
calls = 0
try:
    for line in open(os.path.join(d, "conns.jsonl")):
        r = json.loads(line)
        calls = max(calls, r["calls_out"] + r["calls_in"])
    st = json.load(open(os.path.join(d, "edges.json")))["stats"]
    lost = st["event_lost"] + st["close_lost"]
    if st["events"]:
        calls = st["events"]
except (OSError, ValueError, KeyError):
    pass
print(calls, lost)
PY
)"
	fi
	wait "$spid" 2>/dev/null
	python3 - "$T_TMP/iperf.json" "$agent_ticks" "$SECS" "$calls" "$lost" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1]))
e = j["end"]
gbps = e["sum_received"]["bits_per_second"] / 1e9
cpu = e["cpu_utilization_percent"]
hz = os.sysconf("SC_CLK_TCK")
agent = int(sys.argv[2]) / hz / float(sys.argv[3]) * 100
# iperf3 reports client and server CPU (user + sys) as percent of one
# core; BPF programs run inside their syscalls, so they show up there.
print("%.3f %.1f %.1f %s %s" % (gbps, cpu["host_total"] + cpu["remote_total"],
                                agent, sys.argv[4], sys.argv[5]))
PY
}

results=$T_TMP/results
: >"$results"
for round in $(seq 1 "$ROUNDS"); do
	for path in loopback veth; do
		for size in $SIZES; do
			for mode in $MODES; do
				r=$(run_one "$path" "$size" "$mode") || r="0 0 0 0 0"
				echo "$path $size $mode $r" >>"$results"
				echo "round $round $path $size $mode: $r" >&2
			done
		done
	done
done

cat <<EOF
<!-- bench_agent -->
## Agent overhead: the SAC'20 comparison (\`bench/bench_agent.sh\`)

Command: \`make bench\` (or \`ROUNDS=$ROUNDS SECS=$SECS bench/run.sh bench_agent\`);
iperf3 TCP, one stream, ${SECS}s per run, $ROUNDS interleaved rounds, medians.
Loopback runs inside a private namespace; veth runs between two test hosts.
Throughput is iperf3's received rate; CPU is iperf3 client + server (user +
sys, % of one core, where the BPF programs' cost lands) plus the agent's own
process.  Ratios are against no agent in the same round set.

EOF
python3 - "$results" "$SECS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
secs = float(sys.argv[2])
data = {}
for p, size, mode, gbps, cpu, agent, calls, lost in rows:
    data.setdefault((p, int(size), mode), []).append(
        (float(gbps), float(cpu), float(agent), int(calls), int(lost)))
def med(xs, i):
    return st.median(x[i] for x in xs)
names = {"none": "no agent", "conn-only": "connection hooks only",
         "per-event": "per-event to user space", "aggregate": "in-kernel aggregation"}
print("| path | msg size | mode | Gbit/s | vs none | CPU % (iperf3 + agent) | agent CPU % | calls/s (busiest socket) | lost |")
print("|---|---|---|---|---|---|---|---|---|")
for p in ("loopback", "veth"):
    for size in sorted({k[1] for k in data if k[0] == p}):
        base = data.get((p, size, "none"))
        for mode in ("none", "conn-only", "per-event", "aggregate"):
            xs = data.get((p, size, mode))
            if not xs or not base:
                continue
            g, b = med(xs, 0), med(base, 0)
            ratio = "%.3f" % (g / b) if b else "-"
            calls = "%.0f" % (med(xs, 3) / secs) if mode != "none" else "-"
            lost = "%d" % max(x[4] for x in xs) if mode != "none" else "-"
            print("| %s | %s | %s | %.2f | %s | %.0f + %.1f | %.1f | %s | %s |" % (
                p, size if size < 1024 else "%d KiB" % (size // 1024),
                names[mode], g, ratio, med(xs, 1), med(xs, 2), med(xs, 2),
                calls, lost))
PY
# Per-call cost of the hooks, from the kernel's own program statistics
# (kernel.bpf_stats_enabled adds its own clock reads, so this is an upper
# bound); measured in a separate run so it does not disturb the table.
sysctl -qw kernel.bpf_stats_enabled=1
on_exit sysctl -qw kernel.bpf_stats_enabled=0
mkdir -p "$T_TMP/stats"
"$CW" run --no-udp -o "$T_TMP/stats" >/dev/null 2>"$T_TMP/stats/stderr" &
apid=$!
for _ in $(seq 1 200); do
	grep -q "watching with" "$T_TMP/stats/stderr" && break; sleep 0.05
done
ip netns exec "$LO" iperf3 -s -B 127.0.0.1 -p 5302 -1 >/dev/null 2>&1 &
wait_port "$LO" 5302
ip netns exec "$LO" iperf3 -c 127.0.0.1 -p 5302 -t "$SECS" -l 1024 >/dev/null
bpftool prog show >"$T_TMP/progs.txt"
kill -INT $apid; wait $apid
sysctl -qw kernel.bpf_stats_enabled=0
echo
echo "Per-call cost of the send/recv hooks (kernel.bpf_stats_enabled, 1 KiB"
echo "loopback run; includes the statistics' own clock reads):"
echo
python3 - "$T_TMP/progs.txt" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
for m in re.finditer(r"name (cw_\w+).*?run_time_ns (\d+) run_cnt (\d+)", txt, re.S):
    n, t, c = m.group(1), int(m.group(2)), int(m.group(3))
    if c > 1000:
        print("- `%s`: %.0f ns per call over %d calls" % (n, t / c, c))
PY

cat <<EOF

Aim (issue 2): in-kernel aggregation within 1% of no agent at 128 KiB and
3% at 1 KiB; the paper measured 9% for its in-kernel aggregation and a
blow-up for per-event.  "calls/s" for aggregation is the send+recv rate the
kernel side counted with zero loss (no event crosses to user space); for
per-event it is the events user space summed, with the drops beside it.
<!-- /bench_agent -->
EOF
