#!/bin/bash
# The agent's CPU spent publishing: one workload (many short connections and
# a steady set of streams, in a test host), watched by `causeway agent`
# writing JSON lines to a local file and by `causeway agent --kafka` to an
# embedded broker (`causeway broker`: librdkafka's mock cluster on loopback,
# the same producer code as for real brokers, protobuf records, lz4).  The
# two modes alternate in every round so drift hits both alike; the agent
# process's CPU time (utime + stime of all its threads, /proc/PID/stat) is
# taken from after its start-up to after the workload's last records went
# out, and divided by the records it published.  Medians over rounds.
#
#   bench/run.sh bench_publish    (ROUNDS=3 SHORT=5000 STREAMS=64 SECS=5)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd python3
ROUNDS=${ROUNDS:-3}
SHORT=${SHORT:-5000}	# short connections per run, 200 bytes each way
STREAMS=${STREAMS:-64}	# long connections, 256 bytes each way every 10 ms
SECS=${SECS:-5}		# how long the streams run
INTERVAL=${INTERVAL:-250ms}
MODES="local kafka"

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7500 &
bg_pid $!
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7501 &
bg_pid $!
wait_port "$SRV" 7500
wait_port "$SRV" 7501

"$CW" broker >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
bg_pid $!
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
echo "embedded broker at $BOOT" >&2

cat >"$T_TMP/streams.py" <<'PY'
import socket, sys, time
host, port, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
socks = [socket.create_connection((host, port)) for _ in range(n)]
end = time.monotonic() + secs
while time.monotonic() < end:
    for s in socks:
        s.sendall(b"s" * 256)
        got = 0
        while got < 256:
            got += len(s.recv(256 - got))
    time.sleep(0.01)
for s in socks:
    s.close()
PY

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_one MODE: prints "cpu_ticks records"
run_one() {
	local mode=$1 log=$T_TMP/agent.$RANDOM.log apid a0 a1 recs args
	args=(--netns "$(ns_inode "$CLI")" --host bench --interval "$INTERVAL"
		--samples-every 0)
	if [ "$mode" = kafka ]; then
		args+=(--kafka "$BOOT" --spool "$T_TMP/spool")
	else
		args+=(-o "$T_TMP/local.jsonl")
	fi
	: >"$log"
	"$CW" agent "${args[@]}" 2>"$log" &
	apid=$!
	for _ in $(seq 1 200); do
		grep -q "agent on host" "$log" && break
		sleep 0.05
	done
	grep -q "agent on host" "$log" || { cat "$log" >&2; return 1; }
	sleep 0.5	# past start-up (and the producer's first connection)
	a0=$(ticks $apid)
	ip netns exec "$CLI" python3 "$T_TMP/streams.py" "$SRV_IP" 7501 \
		"$STREAMS" "$SECS" &
	local spid=$!
	ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7500 "$SHORT" 200 >/dev/null
	wait $spid
	sleep 1	# four intervals: the last records are out
	a1=$(ticks $apid)
	kill -INT $apid
	wait $apid || { cat "$log" >&2; return 1; }
	if [ "$mode" = kafka ]; then
		recs=$(sed -n 's/.*kafka: [0-9]* produced, \([0-9]*\) delivered.*/\1/p' "$log")
	else
		recs=$(wc -l <"$T_TMP/local.jsonl")
	fi
	rm -f "$T_TMP/local.jsonl"
	echo "$((a1 - a0)) ${recs:-0}"
}

results=$T_TMP/results
: >"$results"
for round in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		r=$(run_one "$mode") || { echo "round $round $mode failed" >&2; exit 1; }
		echo "$round $mode $r" >>"$results"
		echo "round $round $mode: cpu_ticks records = $r" >&2
	done
done

cat <<EOF
<!-- bench_publish -->
## Agent CPU spent publishing (\`bench/bench_publish.sh\`)

Command: \`make bench\` (or \`ROUNDS=$ROUNDS bench/run.sh bench_publish\`).
One agent scoped to a test host, \`--interval $INTERVAL\`; per run $SHORT short
TCP connections (200 bytes each way) and $STREAMS connections exchanging 256
bytes each way every 10 ms for ${SECS}s.  \`local\`: \`causeway agent -o FILE\`
(JSON lines to a file); \`kafka\`: \`causeway agent --kafka\` to \`causeway
broker\` (protobuf, lz4, idempotent producer, delivery reports checked).
CPU is the agent process's utime + stime (all threads, librdkafka's
included) from after start-up to after the last records went out;
records are those written (local) or delivered (kafka).  $ROUNDS
interleaved rounds, medians; the ratio is kafka / local per round.

EOF
python3 - "$results" "$(getconf CLK_TCK)" <<'PY'
import statistics as st, sys
hz = int(sys.argv[2])
runs = {}
for line in open(sys.argv[1]):
    rnd, mode, ticks, recs = line.split()
    runs.setdefault(mode, {})[int(rnd)] = (int(ticks) * 1000.0 / hz, int(recs))
def per_k(ms, recs):
    return ms * 1000.0 / recs if recs else float("nan")
print("| mode | records per run | agent CPU ms per run | CPU ms per 1,000 records |")
print("|---|---|---|---|")
names = {"local": "local JSON lines", "kafka": "Kafka (embedded broker)"}
for mode in ("local", "kafka"):
    xs = list(runs.get(mode, {}).values())
    if not xs:
        continue
    print("| %s | %.0f | %.0f | %.2f |" % (
        names[mode], st.median(r for _, r in xs), st.median(m for m, _ in xs),
        st.median(per_k(m, r) for m, r in xs)))
ratios = []
for rnd, (m, r) in sorted(runs.get("kafka", {}).items()):
    lm, lr = runs.get("local", {}).get(rnd, (0, 0))
    if lm and r and lr:
        ratios.append(per_k(m, r) / per_k(lm, lr))
if ratios:
    print()
    print("Ratio kafka / local, CPU per record: %.2f (median of %s)" % (
        st.median(ratios), ", ".join("%.2f" % x for x in ratios)))
PY
cat <<EOF

The CPU clock ticks at $(getconf CLK_TCK) Hz, so each run's figure is
good to about 10 ms; the per-record cost includes the per-interval
collection (the BPF iterator and record building), which both modes pay.
<!-- /bench_publish -->
EOF
