#!/bin/bash
# causeway traces on a live capture, scored against the services' own
# ground truth (tests/testbed/lib.sh): nginx -> a Node.js event loop
# (OpenTelemetry JS spans are its truth) -> a thread-per-request service
# and a worker-pool service (each logs its own links) -> Redis through
# connection pools.  The stack's capacity is measured first; then, at half
# of it, tcpdump on the test switch records the traffic, `causeway traces
# --truth-links` infers from the capture alone and scores every service.
#
# Checks: the ground truth is complete (every request the event loop
# served has its OTel spans with their connections; every call the event
# loop made is a request the tier below logged); the truth matches the
# capture (the event loop's requests found, few lines unmatched); the
# event-loop tier's share of requests right reaches FLOOR (default 0.75)
# and neither it nor traces right end to end fall below FCFS's from the
# same run by more than 0.03.  Measured (timing alone: a capture has no
# thread evidence) at half load: the event loop 0.90-0.91 against FCFS's
# 0.89 in three runs on an idle machine, and 0.80-0.82 against 0.81-0.82
# with two CPU hogs beside the stack (delays of milliseconds, where an
# event loop's order is the best evidence); end to end 0.72-0.74 against
# 0.71-0.72, and 0.60-0.61 against 0.57-0.59 when busy.  The issue's aim
# of 0.90 at the event loop under any load wants the agent's per-message
# thread context, which a capture does not have.
. "$(dirname "$0")/lib.sh"
. "$CW_ROOT/tests/testbed/lib.sh"
FLOOR=${FLOOR:-0.75}
SECS=${SECS:-8}
testbed_deps
testbed_start

cap=$(testbed_capacity 3) || fail "the capacity run failed"
rate=$(awk -v c="$cap" 'BEGIN { printf "%.0f", c / 2 }')
note "capacity $cap requests/s; load at half: $rate/s for ${SECS}s"
[ "$rate" -ge 20 ] || fail "capacity $cap requests/s is too low to test"
testbed_capture_start "$T_TMP/live.pcap"
load=$(testbed_load --rate "$rate" --duration "$SECS") || fail "load failed"
note "load: $load"
testbed_capture_stop
# Stop the services so every record is written (the SDK's spans too).
kill -TERM "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID"
wait "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID" 2>/dev/null
testbed_truth "$T_TMP/truth.csv"
note "OTel spans: $(cat "$T_TMP/otel-check.json")"

# The ground truth itself: complete and consistent across tiers.
pyjson '
import json, sys
otel = json.load(open(sys.argv[1]))
load = json.loads(sys.argv[2])
assert load["errors"] == 0 and load["ok"] > 0, "load errors: %s" % load
assert otel["incomplete_spans"] == 0, "spans without connection ends"
assert otel["requests_without_calls"] == 0, "a request with no call"
assert otel["requests"] >= load["ok"], "fewer server spans than answers"
assert otel["calls"] >= otel["requests"], otel
# Every evloop call is a request of the tier it went to, and back.
calls, served = {}, {}
for line in open(sys.argv[3]):
    f = line.rstrip("\n").split(",")
    if f[0] == "evloop" and f[4]:
        calls.setdefault(f[5], set()).add((f[4], f[6]))
    elif f[0] in ("tpr", "pool"):
        served.setdefault(f[2], set()).add((f[1], f[3]))
for srv, want in calls.items():
    got = served.get(srv, set())
    assert len(got) == len(want), "%s: %d calls, %d requests logged" % (
        srv, len(want), len(got))
print("truth complete: %d requests, %d calls; tiers below log %s" % (
    otel["requests"], otel["calls"],
    {k: len(v) for k, v in served.items()}))
' "$T_TMP/otel-check.json" "$load" "$T_TMP/truth.csv" ||
	fail "the ground truth is incomplete"

"$CW" traces --truth-links "$T_TMP/truth.csv" -o "$T_TMP/otlp.json" \
	"$T_TMP/live.pcap" >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" ||
	fail "causeway traces failed: $(cat "$T_TMP/err.txt")"
cat "$T_TMP/out.txt" "$T_TMP/err.txt"
python3 "$TB_DIR/scores.py" "$T_TMP/out.txt" "$T_TMP/err.txt" >"$T_TMP/s.json"
pyjson '
import json, sys
s = json.load(open(sys.argv[1]))
load, floor = json.loads(sys.argv[2]), float(sys.argv[3])
svc, links = s["services"], s["links"]
for name in ("evloop", "tpr", "pool"):
    assert name in svc, "no scores for %s: %s" % (name, sorted(svc))
ev = svc["evloop"]
# The capture holds the load phase: its requests must all be found.
assert ev["requests"] >= 0.95 * load["ok"], "evloop: %d of %d requests found" % (
    ev["requests"], load["ok"])
inside = links["lines"] - links["outside"]
bad = links["unmatched"] + links["no_conn"] + links["conflicts"]
assert bad <= 0.02 * inside, "%d of %d truth lines unmatched" % (bad, inside)
for name, v in svc.items():
    assert 0 <= v["right"] <= v["top5"] <= 1, name
assert svc["(all)"]["top5"] >= 0.95, "top-5: %.3f" % svc["(all)"]["top5"]
assert ev["right"] >= ev["fcfs"] - 0.03, "evloop: %.3f right, below FCFS %.3f" % (
    ev["right"], ev["fcfs"])
tr = s["traces"]
assert tr["right"] >= tr["fcfs"] - 0.03, "traces: %.3f right end to end, FCFS %.3f" % (
    tr["right"], tr["fcfs"])
assert ev["right"] >= floor, "evloop: %.3f right, below %.2f" % (ev["right"], floor)
print("evloop %.3f right (FCFS %.3f) of %d requests; traces %.3f (FCFS %.3f)" % (
    ev["right"], ev["fcfs"], ev["requests"], s["traces"]["right"],
    s["traces"]["fcfs"]))
' "$T_TMP/s.json" "$load" "$FLOOR" || fail "scores of the live capture"
[ -s "$T_TMP/otlp.json" ] || fail "no OTLP output"

# Bad truth: one clear line, non-zero exit, no output file.
{ head -n 1 "$T_TMP/truth.csv"; echo "tpr,10.77.0.12:1,10.77.0.13:8080,soon,,,"; } >"$T_TMP/bad.csv"
"$CW" traces --truth-links "$T_TMP/bad.csv" -o "$T_TMP/bad.json" \
	"$T_TMP/live.pcap" >/dev/null 2>"$T_TMP/err" && fail "a bad time was accepted"
grep -q "bad.csv:2: bad start time" "$T_TMP/err" || fail "unclear error: $(cat "$T_TMP/err")"
[ "$(wc -l <"$T_TMP/err")" -eq 1 ] || fail "more than one error line"
[ ! -e "$T_TMP/bad.json" ] || fail "output written from bad truth"
echo "PASS"
