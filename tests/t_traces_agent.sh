#!/bin/bash
# causeway traces on the agent's own observations of live traffic, scored
# against the services' ground truth (tests/testbed/lib.sh): nginx -> a
# Node.js event loop -> a thread-per-request service (tpr) and a
# worker-pool service (pool) -> Redis.  At half the stack's capacity,
# `causeway run --traces` records every message with its thread and role
# (bpf/msgs.bpf.c); `causeway traces --truth-links` then links calls to
# requests from that file alone and scores every service.
#
# Checks: the run writes a messages CSV with thread evidence; the services'
# records match it (the event loop's requests found, few lines unmatched);
# at tpr, where one thread serves one request, at least 0.99 of the calls
# are linked by thread evidence and at least 0.99 of the requests are
# right.  The event loop (one thread: many requests open, so timing) and
# the worker pool (the calling thread is not the one that read the
# request, so timing) are reported against FCFS from the same run, and
# must not fall below it by more than 0.05; tpr is also scored with the
# thread evidence ignored (--no-thread), for the report.
. "$(dirname "$0")/lib.sh"
. "$CW_ROOT/tests/testbed/lib.sh"
SECS=${SECS:-8}
testbed_deps
testbed_start

cap=$(testbed_capacity 3) || fail "the capacity run failed"
rate=$(awk -v c="$cap" 'BEGIN { printf "%.0f", c / 2 }')
note "capacity $cap requests/s; load at half: $rate/s for ${SECS}s"
[ "$rate" -ge 20 ] || fail "capacity $cap requests/s is too low to test"

testbed_record_start "$T_TMP/msgs.csv"
load=$(testbed_load --rate "$rate" --duration "$SECS") || fail "load failed"
note "load: $load"
testbed_record_stop
[ -s "$T_TMP/msgs.csv" ] || fail "no messages file"
head -n 1 "$T_TMP/msgs.csv" | grep -q "thread" || fail "no thread column"

# Stop the services so every record is written (the SDK's spans too).
kill -TERM "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID"
wait "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID" 2>/dev/null
testbed_truth "$T_TMP/truth.csv"

score() { # OUT ARGS...: traces --truth-links, scores as JSON in OUT.json
	local out=$1
	shift
	"$CW" traces --truth-links "$T_TMP/truth.csv" "$@" "${MSGS:-$T_TMP/msgs.csv}" \
		>"$out.txt" 2>"$out.err" ||
		fail "causeway traces $*: $(cat "$out.err")"
	cat "$out.txt" "$out.err"
	python3 "$TB_DIR/scores.py" "$out.txt" "$out.err" >"$out.json"
}
score "$T_TMP/s" -o "$T_TMP/otlp.json"
note "the same, thread evidence ignored:"
score "$T_TMP/nt" --no-thread
# Thread links come from the kernel's context (the request the calling
# thread held, and how many): hide it (its seq column renamed) and they
# come from span times instead, as for an input without it.
sed '1s/,seq,/,seq_hidden,/' "$T_TMP/msgs.csv" >"$T_TMP/noctx.csv"
note "the same, the kernel's context hidden:"
MSGS=$T_TMP/noctx.csv score "$T_TMP/nc"
ctx=$(grep -o "[0-9]* thread links (the kernel's context)" "$T_TMP/s.err")
[ -n "$ctx" ] || fail "thread links not from the kernel's context: $(cat "$T_TMP/s.err")"
grep -q "thread links (the kernel" "$T_TMP/nc.err" && fail "the hidden context was read"
note "thread links: ${ctx%% *} from the kernel's context," \
	"$(grep -o "[0-9]* thread links" "$T_TMP/nc.err" | cut -d' ' -f1) from span times"

pyjson '
import json, sys
s, nt = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
load, otlp = json.loads(sys.argv[3]), json.load(open(sys.argv[4]))
svc, links = s["services"], s["links"]
for name in ("evloop", "tpr", "pool"):
    assert name in svc, "no scores for %s: %s" % (name, sorted(svc))
ev, tpr, pool = svc["evloop"], svc["tpr"], svc["pool"]
assert ev["requests"] >= 0.95 * load["ok"], "evloop: %d of %d requests found" % (
    ev["requests"], load["ok"])
inside = links["lines"] - links["outside"]
bad = links["unmatched"] + links["no_conn"] + links["conflicts"]
assert bad <= 0.02 * inside, "%d of %d truth lines unmatched" % (bad, inside)
# How tpr calls were linked: the OTLP spans of service tpr, kind client.
methods = {}
for rs in otlp["resourceSpans"]:
    name = [a["value"]["stringValue"] for a in rs["resource"]["attributes"]
            if a["key"] == "service.name"]
    if name != ["tpr"]:
        continue
    for ss in rs["scopeSpans"]:
        for sp in ss["spans"]:
            if sp["kind"] != 3:
                continue
            m = [a["value"]["stringValue"] for a in sp["attributes"]
                 if a["key"] == "causeway.link.method"][0]
            methods[m] = methods.get(m, 0) + 1
calls = sum(methods.values())
assert calls > 0, "no calls from tpr in the traces"
by_thread = methods.get("thread", 0) / calls
print("tpr: %d calls, by method %s (thread %.3f)" % (calls, methods, by_thread))
assert by_thread >= 0.99, "tpr: only %.3f of calls linked by thread" % by_thread
assert tpr["right"] >= 0.99, "tpr: %.3f right (FCFS %.3f)" % (
    tpr["right"], tpr["fcfs"])
for name, v in (("evloop", ev), ("pool", pool)):
    assert v["right"] >= v["fcfs"] - 0.05, "%s: %.3f right, FCFS %.3f" % (
        name, v["right"], v["fcfs"])
tr = s["traces"]
print("agent, at half load: tpr %.3f right (FCFS %.3f, without thread "
      "evidence %.3f) of %d; evloop %.3f (FCFS %.3f) of %d; pool %.3f "
      "(FCFS %.3f) of %d; traces end to end %.3f (FCFS %.3f) of %d" % (
      tpr["right"], tpr["fcfs"], nt["services"]["tpr"]["right"],
      tpr["requests"], ev["right"], ev["fcfs"], ev["requests"],
      pool["right"], pool["fcfs"], pool["requests"], tr["right"],
      tr["fcfs"], tr["n"]))
' "$T_TMP/s.json" "$T_TMP/nt.json" "$load" "$T_TMP/otlp.json" ||
	fail "scores of the agent's messages"

# A bad file: one clear line, non-zero exit.
{ head -n 1 "$T_TMP/msgs.csv"; echo "1,2,a,b,3,in,accepted,1,1,0,80,0,0,0,1,0,0"; } >"$T_TMP/bad.csv"
"$CW" traces "$T_TMP/bad.csv" >/dev/null 2>"$T_TMP/err" && fail "a bad port was accepted"
grep -q "bad.csv:2: bad node_port or peer_port" "$T_TMP/err" || fail "unclear error: $(cat "$T_TMP/err")"
[ "$(wc -l <"$T_TMP/err")" -eq 1 ] || fail "more than one error line"
# Unwritable output: refused before the run, nothing left.
"$CW" run -d 1s --traces /nonexistent/dir/m.csv >/dev/null 2>"$T_TMP/err" &&
	fail "an unwritable --traces file was accepted"
[ "$(grep -c "error" "$T_TMP/err")" -eq 1 ] || fail "unclear error: $(cat "$T_TMP/err")"
echo "PASS"
