#!/bin/bash
# Inference speed of causeway traces: spans linked per second on one core
# (taskset -c 0), on a synthetic message trace (a web tier serving
# overlapping requests, each calling db and, 70% of the time, cache; one
# connection per call; timing only, so the model is learned in rounds
# from FCFS's links and from the chains') and on the two span traces.  The time is
# what causeway reports for linking alone (reading and building spans
# excluded); medians over ROUNDS runs.  Then each span trace at LOADS
# times its load (every trace's start moved so traces start that many
# times closer together; spans within a trace keep their times), traces
# right end to end, and with OLD_CW=BINARY another build's beside ours
# (before/after in one run).  Prints a markdown section.
#
#   bench/run.sh bench_traces          (ROUNDS=5, REQS=100000 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_cmd python3 taskset
ROUNDS=${ROUNDS:-5}
REQS=${REQS:-100000}
SPANS=${CW_SPANS:-$CW_ROOT/../shared/data/spans}
LOADS=${LOADS:-1 2 4}
OLD_CW=${OLD_CW:-}

# squeeze IN OUT K: the span CSV at K times its load.
squeeze() {
	python3 - "$@" <<'PY'
import csv, sys
src, dst, k = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = list(csv.reader(open(src, newline="")))
head, body = rows[0], rows[1:]
ti, si, ei = (head.index(c) for c in ("TraceID", "StartTimeUnixNano", "EndTimeUnixNano"))
first = {}
for r in body:
    first[r[ti]] = min(first.get(r[ti], 1 << 70), int(r[si]))
t0 = min(first.values())
w = csv.writer(open(dst, "w", newline=""), lineterminator="\n")
w.writerow(head)
for r in body:
    d = int((first[r[ti]] - t0) / k) + t0 - first[r[ti]]
    r[si], r[ei] = str(int(r[si]) + d), str(int(r[ei]) + d)
    w.writerow(r)
PY
}

python3 - "$REQS" >"$T_TMP/msgs.csv" <<'PY'
import random, sys
random.seed(1)
n = int(sys.argv[1])
print("start_ns,end_ns,node,peer,conn,dir,role")
conn, at = 1, 0
def rpc(c, s, a, b):
    global conn
    print("%d,%d,%s,%s,%d,out,connected" % (a, a, c, s, conn))
    print("%d,%d,%s,%s,%d,in,connected" % (b, b, c, s, conn))
    print("%d,%d,%s,%s,%d,in,accepted" % (a + 10, a + 10, s, c, conn))
    print("%d,%d,%s,%s,%d,out,accepted" % (b - 10, b - 10, s, c, conn))
    conn += 1
for i in range(n):
    at += random.randint(50000, 250000)
    j1, j2 = random.randint(0, 150000), random.randint(0, 150000)
    rpc("client", "web", at, at + 600000 + j2)
    rpc("web", "db", at + 100000 + j1, at + 300000 + j1)
    if random.random() >= 0.3:
        rpc("web", "cache", at + 400000 + j2, at + 450000 + j2)
PY

# rate INPUT...: median spans/s of linking over ROUNDS runs on CPU 0.
rate() {
	local i all=() bin=${RATE_CW:-$CW}
	for i in $(seq 1 "$ROUNDS"); do
		taskset -c 0 "$bin" traces "$@" >/dev/null 2>"$T_TMP/err" ||
			fail "causeway traces $* failed: $(cat "$T_TMP/err")"
		all+=("$(awk '/spans linked in/ {printf "%.0f\n", $2 / $6}' "$T_TMP/err")")
	done
	printf '%s\n' "${all[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p"
}

spans() {
	"$CW" traces "$@" 2>&1 >/dev/null | awk '/spans linked in/ {print $2}'
}

echo "<!-- bench_traces -->"
echo "## Traces: per-request linking, scored, and its speed (\`bench/bench_traces.sh\`)"
echo
echo "Command: \`${OLD_CW:+OLD_CW=$OLD_CW }LOADS=\"$LOADS\" ROUNDS=$ROUNDS REQS=$REQS bench/run.sh bench_traces\` ($(date -u +%F),"
echo "$(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the start)."
echo
echo "\`causeway traces --truth FILE\` on the span traces, timing only (the"
echo "files carry no thread evidence): per service, the share of requests"
echo "right (every call made for it mapped to it, and no other), FCFS in the"
echo "same run, top-5, and precision/recall of single links; then the share"
echo "of traces right end to end.  Requests counted at services that make calls."
for f in "$SPANS"/*.csv; do
	[ -f "$f" ] || continue
	echo
	echo "$(basename "$f"):"
	echo
	echo "| service | requests | right | FCFS | top-5 | link P | link R |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	"$CW" traces --truth "$f" 2>/dev/null | awk '
		/^traces right/ { t = $0; next }
		$1 != "service" && NF == 7 { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }
		END { print ""; print t }'
done
echo
echo "Each span trace at k times its load (traces start k times closer"
echo "together), traces right end to end; *before*: the build OLD_CW (if"
echo "given) on the same files in the same run:"
echo
echo "| trace | load | traces | right | FCFS |$([ -z "$OLD_CW" ] || echo " before |")"
echo "|---|---:|---:|---:|---:|$([ -z "$OLD_CW" ] || echo "---:|")"
e2e() {
	"$1" traces --truth "$2" 2>/dev/null |
		awk '/end to end/ {print $6, substr($8, 1, 5), $10}'
}
for f in "$SPANS"/*.csv; do
	[ -f "$f" ] || continue
	for k in $LOADS; do
		squeeze "$f" "$T_TMP/x.csv" "$k"
		read -r r fc n < <(e2e "$CW" "$T_TMP/x.csv")
		b=""
		[ -z "$OLD_CW" ] || b=" $(e2e "$OLD_CW" "$T_TMP/x.csv" | cut -d' ' -f1) |"
		echo "| $(basename "$f" .csv) | ${k}x | $n | $r | $fc |$b"
	done
done
echo
echo "Spans linked per second on one core (\`taskset -c 0\`), median of"
echo "$ROUNDS runs; linking alone (thread pass, FCFS, and the timing rounds"
echo "to a fixed point, from FCFS's links and from the chains', each round"
echo "one call at a time and, while it competes, windowed Hungarian), not"
echo "reading or writing."
echo
# before ARGS...: OLD_CW's rate on the same input, as a column.
before() {
	[ -z "$OLD_CW" ] || echo " $(RATE_CW=$OLD_CW rate "$@") |"
}
echo "| input | spans | spans/s (1 core) |$([ -z "$OLD_CW" ] || echo " before |")"
echo "|---|---:|---:|$([ -z "$OLD_CW" ] || echo "---:|")"
echo "| synthetic web/db/cache, $REQS requests | $(spans "$T_TMP/msgs.csv") | $(rate "$T_TMP/msgs.csv") |$(before "$T_TMP/msgs.csv")"
for f in "$SPANS"/*.csv; do
	[ -f "$f" ] || continue
	echo "| $(basename "$f") | $(spans --truth "$f") | $(rate --truth "$f") |$(before --truth "$f")"
done
echo "<!-- /bench_traces -->"
