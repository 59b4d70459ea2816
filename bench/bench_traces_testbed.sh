#!/bin/bash
# causeway traces on live captures of the testbed (tests/testbed/lib.sh:
# nginx -> Node.js event loop with OpenTelemetry -> thread-per-request and
# worker-pool services -> Redis through pools), scored against the
# services' own ground truth with --truth-links.  The capacity is measured
# first (64 closed-loop clients); then open-loop Poisson load at LEVELS
# percent of it, SECS seconds each, one capture per level.  Per level and
# tier: the share of requests right, FCFS in the same run, top-5, and
# traces right end to end; then linking speed (spans/s on one core,
# `taskset -c 0`, median of ROUNDS) and peak memory on the busiest capture.
# A capture has no thread evidence; the agent (`causeway run --traces`),
# recording the same load, gives each level a second table with it.
# Prints a markdown section.  OLD_CW=BINARY scores the same inputs with
# another build too (before/after side by side, one run, one load);
# KEEP=DIR keeps each level's capture, agent records and truth there.
# TB_FANOUT=1: the event loop fans out to three services (tests/testbed).
# FROM=DIR scores the inputs an earlier run kept (KEEP=DIR) again with
# this build, with no live run: the capacity from DIR/capacity, else CAP.
#
#   bench/run.sh bench_traces_testbed     (LEVELS="10 25 50 80 90", SECS=8)
. "$(dirname "$0")/../tests/lib.sh"
. "$CW_ROOT/tests/testbed/lib.sh"
LEVELS=${LEVELS:-10 25 50 80 90}
OLD_CW=${OLD_CW:-}
KEEP=${KEEP:-}
FROM=${FROM:-}
SECS=${SECS:-8}
ROUNDS=${ROUNDS:-5}
need_cmd taskset
if [ -n "$FROM" ]; then
	cap=$(cat "$FROM/capacity" 2>/dev/null) || cap=${CAP:-}
	[ -n "$cap" ] || fail "FROM=$FROM has no capacity file: give CAP"
else
	testbed_deps
	testbed_start
	cap=$(testbed_capacity 4) || fail "the capacity run failed"
fi

# live LEVEL: load the testbed at LEVEL% of its capacity, capture it
# and record it with the agent, and take the services' truth.
live() {
	local lv=$1 rate
	rate=$(awk -v c="$cap" -v l="$lv" 'BEGIN { printf "%.0f", c * l / 100 }')
	testbed_record_start "$T_TMP/m$lv.csv"
	testbed_capture_start "$T_TMP/l$lv.pcap"
	testbed_load --rate "$rate" --duration "$SECS" >"$T_TMP/load$lv.json" ||
		fail "load at $lv% failed"
	testbed_capture_stop >&2
	testbed_record_stop >&2
	sleep 1 # the services' last records
	testbed_truth "$T_TMP/truth$lv.csv"
}

for lv in $LEVELS; do
	if [ -n "$FROM" ]; then
		cp "$FROM/l$lv.pcap" "$FROM/m$lv.csv" "$FROM/truth$lv.csv" \
			"$FROM/load$lv.json" "$T_TMP/" ||
			fail "FROM=$FROM lacks the inputs of $lv%"
	else
		live "$lv"
	fi
	# The capture (timing alone), then the agent's messages (threads and
	# the kernel's request context) of the same load.
	for in in "l$lv.pcap s" "m$lv.csv a"; do
		read -r f k <<<"$in"
		"$CW" traces --truth-links "$T_TMP/truth$lv.csv" "$T_TMP/$f" \
			>"$T_TMP/o$k$lv.txt" 2>"$T_TMP/e$k$lv.txt" ||
			fail "causeway traces at $lv%: $(cat "$T_TMP/e$k$lv.txt")"
		python3 "$TB_DIR/scores.py" "$T_TMP/o$k$lv.txt" \
			"$T_TMP/e$k$lv.txt" >"$T_TMP/$k$lv.json"
		cat "$T_TMP/o$k$lv.txt" "$T_TMP/e$k$lv.txt" >&2
		[ -n "$OLD_CW" ] || continue
		"$OLD_CW" traces --truth-links "$T_TMP/truth$lv.csv" \
			"$T_TMP/$f" >"$T_TMP/O$k$lv.txt" 2>"$T_TMP/E$k$lv.txt" ||
			fail "$OLD_CW traces at $lv%: $(cat "$T_TMP/E$k$lv.txt")"
		python3 "$TB_DIR/scores.py" "$T_TMP/O$k$lv.txt" \
			"$T_TMP/E$k$lv.txt" >"$T_TMP/${k}old$lv.json"
	done
	[ -z "$KEEP" ] || { mkdir -p "$KEEP" && cp "$T_TMP/l$lv.pcap" \
		"$T_TMP/m$lv.csv" "$T_TMP/truth$lv.csv" "$T_TMP/load$lv.json" "$KEEP/" &&
		echo "$cap" >"$KEEP/capacity"; }
	cat "$T_TMP/load$lv.json" >&2
done
busiest=${LEVELS##* }

# speed INPUT: median spans/s of linking over ROUNDS runs on CPU 0, and
# the largest peak RSS (KiB) of those runs.
speed() {
	local i
	for i in $(seq 1 "$ROUNDS"); do
		taskset -c 0 /usr/bin/time -f "rss %M" "$CW" traces \
			--truth-links "$T_TMP/truth$busiest.csv" "$1" \
			>/dev/null 2>"$T_TMP/sp.err" || fail "speed run failed"
		awk '/spans linked in/ {printf "%.0f ", $2 / $6} /^rss/ {print $2}' \
			"$T_TMP/sp.err"
	done | sort -n | awk -v r="$ROUNDS" '{ s[NR] = $1; if ($2 > m) m = $2 }
		END { printf "%s %s\n", s[int((r + 1) / 2)], m }'
}
read -r sps rss < <(speed "$T_TMP/l$busiest.pcap")

echo "<!-- bench_traces_testbed -->"
echo "## Traces on a live testbed, scored by the services' own truth (\`bench/bench_traces_testbed.sh\`)"
echo
echo "Command: \`${TB_FANOUT:+TB_FANOUT=$TB_FANOUT }${OLD_CW:+OLD_CW=$OLD_CW }${FROM:+FROM=$FROM }${CAP:+CAP=$CAP }LEVELS=\"$LEVELS\" SECS=$SECS bench/run.sh bench_traces_testbed\`"
[ -z "$FROM" ] || echo "(the inputs an earlier live run kept there, scored again by this build)"
echo "($(date -u +%F), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end)."
echo
echo "The stack of tests/testbed in network namespaces on one bridge: nginx"
echo "-> \`evloop\` (Node.js, one event loop, OpenTelemetry JS SDK spans as"
echo "truth; calls \`tpr\` always and \`pool\` 7 times in 10 over kept-alive"
echo "pools) -> \`tpr\` (a thread per request, 1-2 Redis GETs) and \`pool\`"
echo "(an I/O thread and 4 workers, 1 GET) -> Redis (3 pooled connections"
echo "per service).  Capacity $cap requests/s (64 closed-loop clients); open-loop"
echo "Poisson load at each level for ${SECS}s, captured with tcpdump on the"
echo "bridge; \`causeway traces --truth-links\` infers from the capture alone"
echo "(timing only: no thread evidence in a capture) and scores per service:"
echo "requests right (every call made for it mapped to it and no other),"
echo "FCFS in the same run, top-5; traces right end to end (from evloop down)."
[ "${TB_FANOUT:-0}" != 1 ] || echo "Fan-out (\`TB_FANOUT=1\`): evloop calls \`tpr\`, then \`pool\` and \`tpr2\` (a second thread-per-request service) at once, for every request: three services a request, two of its calls in flight together."
echo
# table K: the scores of input K (s capture, a agent) at every level;
# with OLD_CW, its right and traces right beside ours ("before").
table() {
	local h="" r=""
	[ -z "$OLD_CW" ] || h=" before | before traces |" r="---:|---:|"
	echo "| load | req/s | p50 ms | service | requests | right | FCFS | top-5 | traces right | FCFS |$h"
	echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|$r"
	for lv in $LEVELS; do
		python3 - "$T_TMP/$1$lv.json" "$T_TMP/load$lv.json" "$lv" \
			"$T_TMP/${1}old$lv.json" <<'PY'
import json, os, sys
s, load = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
old = json.load(open(sys.argv[4])) if os.path.exists(sys.argv[4]) else None
t = s["traces"]
for i, name in enumerate(["evloop", "tpr", "pool", "tpr2", "(all)"]):
    v = s["services"].get(name)
    if not v:
        continue
    head = ("%s%%" % sys.argv[3], "%.0f" % load["rate"], "%.1f" % load["p50_ms"]) if i == 0 else ("", "", "")
    tail = ("%.3f" % t["right"], "%.3f" % t["fcfs"]) if i == 0 else ("", "")
    line = "| %s | %s | %s | %s | %d | %.3f | %.3f | %.3f | %s | %s |" % (
        head + (name, v["requests"], v["right"], v["fcfs"], v["top5"]) + tail)
    if old:
        o = old["services"].get(name, {"right": 0})
        line += " %.3f | %s |" % (o["right"], "%.3f" % old["traces"]["right"] if i == 0 else "")
    print(line)
PY
	done
	echo
}
table s
echo "The same loads recorded by the agent at the same time"
echo "(\`causeway run --traces\` on the host: every message with its thread"
echo "and the kernel's request context), scored the same way; thread links"
echo "where a thread held one request, timing for the rest:"
echo
table a
echo "Truth matched to the capture at $busiest%: $(python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))["links"]
print("%d lines in the captured time, %d requests and %d calls found, %d unmatched, %d conflicting" % (
    l["lines"] - l["outside"], l["requests"], l["calls"], l["unmatched"] + l["no_conn"], l["conflicts"]))
' "$T_TMP/s$busiest.json")."
echo
echo "Linking speed on the $busiest% capture (\`taskset -c 0\`, median of $ROUNDS,"
echo "linking alone): $sps spans/s on one core; peak memory of the whole"
echo "command (reading the pcap, building, linking, scoring): $rss KiB."
echo "<!-- /bench_traces_testbed -->"
