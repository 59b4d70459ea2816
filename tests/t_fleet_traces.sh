#!/bin/bash
# Per-request traces of a fleet: one `causeway agent --traces` per test
# host of the traces testbed (tests/testbed/lib.sh: load -> nginx -> a
# Node.js event loop -> a thread-per-request service (tpr) and a worker
# pool (pool) -> Redis), each scoped to its host's namespace and
# publishing to the embedded broker of the load host's agent.  The agents
# attach the message programs only inside their timing windows (the same
# wall-clock multiples on every host) and publish each window's messages
# as MsgWindow records on the timing topic; `causeway traces --kafka`
# reads them back, stitches each connection's client end (one host) to
# its server end (another) by the 4-tuple, and is scored against the
# services' own records (causeway never reads them).
#
# Checks: every agent published records and reported no kernel loss; the
# services' records match the messages (few lines unmatched); at tpr, one
# thread per request, >= 0.99 of calls are linked by thread evidence and
# >= 0.97 of requests right; the event loop and the pool are not below
# FCFS of the same run by more than 0.05, nor are traces end to end; and
# most traces cross hosts: for >= 0.9 of evloop's requests a trace has
# spans at >= 3 hosts (evloop, tpr or pool, redis), each host's spans from
# its own agent.
. "$(dirname "$0")/lib.sh"
. "$CW_ROOT/tests/testbed/lib.sh"
SECS=${SECS:-8}
testbed_deps
testbed_start

cap=$(testbed_capacity 3) || fail "the capacity run failed"
rate=$(awk -v c="$cap" 'BEGIN { printf "%.0f", c / 2 }')
note "capacity $cap requests/s; load at half: $rate/s for ${SECS}s"
[ "$rate" -ge 20 ] || fail "capacity $cap requests/s is too low to test"

on_exit "mkdir -p '$CW_ROOT/$BUILD/test-logs/t_fleet_traces.d' &&" \
	"cp '$T_TMP'/*.log '$CW_ROOT/$BUILD/test-logs/t_fleet_traces.d/'"

# One agent per host, collecting every 500 ms, --traces in back-to-back
# windows of 3 s; its pid in AGENT_<HOSTID>.
FLEET_AGENT_INTERVAL=500ms
TRACE_ARGS=(--window 3s --window-every 3s --traces)
fleet_agent "$T_TMP" "$TB_LOAD" load "${TRACE_ARGS[@]}" --kafka embedded
AGENT_load=$FLEET_AGENT_PID
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent-load.log")
[ -n "$BOOT" ] || fail "no embedded broker address"
note "embedded broker at $BOOT"
HOSTS="web evloop tpr pool redis"
fleet_agent "$T_TMP" "$TB_WEB" web "${TRACE_ARGS[@]}" --kafka "$BOOT"
AGENT_web=$FLEET_AGENT_PID
fleet_agent "$T_TMP" "$TB_EVL" evloop "${TRACE_ARGS[@]}" --kafka "$BOOT"
AGENT_evloop=$FLEET_AGENT_PID
fleet_agent "$T_TMP" "$TB_TPR" tpr "${TRACE_ARGS[@]}" --kafka "$BOOT"
AGENT_tpr=$FLEET_AGENT_PID
fleet_agent "$T_TMP" "$TB_POOL" pool "${TRACE_ARGS[@]}" --kafka "$BOOT"
AGENT_pool=$FLEET_AGENT_PID
fleet_agent "$T_TMP" "$TB_DB" redis "${TRACE_ARGS[@]}" --kafka "$BOOT"
AGENT_redis=$FLEET_AGENT_PID

# The load starts once every agent's windows run.  Windows are wall-clock
# multiples, but an agent that came up late in a slot opens its first at
# the next: load in a slot some hosts recorded and others did not leaves
# requests half seen (their truth lines unmatched).
for h in $HOSTS load; do
	for _ in $(seq 1 200); do
		grep -qs "the first at" "$T_TMP/agent-$h.log" && break
		sleep 0.05
	done
done
first=$(sed -n 's/.*, the first at \([0-9]*\)$/\1/p' "$T_TMP"/agent-*.log |
	sort -n | tail -n 1)
[ -n "$first" ] || fail "no agent said when its first window opens"
python3 -c 'import sys, time
time.sleep(max(0, int(sys.argv[1]) / 1e9 - time.time()) + 0.05)' "$first"
load=$(testbed_load --rate "$rate" --duration "$SECS") || fail "load failed"
note "load: $load"
sleep 0.3 # the last replies
# The agents flush the window they are in (cut short) as they stop; the
# load host's keeps the broker up until the traces are read.
for h in $HOSTS; do
	eval "kill -INT \$AGENT_$h"
done
for h in $HOSTS; do
	eval "wait \$AGENT_$h" || fail "agent $h failed: $(cat "$T_TMP/agent-$h.log")"
	grep "traces:" "$T_TMP/agent-$h.log" | sed "s/^/$h: /"
	grep -q "traces: [1-9][0-9]* records of [1-9][0-9]* messages, 0 not published, 0 events lost" \
		"$T_TMP/agent-$h.log" ||
		fail "agent $h: no traces published, or some lost"
done

# Stop the services so every record is written (the SDK's spans too).
kill -TERM "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID"
wait "$TB_EVL_PID" "$TB_TPR_PID" "$TB_POOL_PID" 2>/dev/null
testbed_truth "$T_TMP/truth.csv"

score() { # OUT ARGS...: traces --kafka --truth-links, scores in OUT.json
	local out=$1
	shift
	"$CW" traces --kafka "$BOOT" --truth-links "$T_TMP/truth.csv" "$@" \
		>"$out.txt" 2>"$out.log" ||
		fail "causeway traces --kafka $*: $(cat "$out.log")"
	cat "$out.txt" "$out.log"
	python3 "$TB_DIR/scores.py" "$out.txt" "$out.log" >"$out.json"
}
score "$T_TMP/s" -o "$T_TMP/otlp.json"
grep -q "records from 6 hosts" "$T_TMP/s.log" ||
	fail "not every host's records were read: $(cat "$T_TMP/s.log")"

pyjson '
import json, sys
s, load, otlp = json.load(open(sys.argv[1])), json.loads(sys.argv[2]), \
    json.load(open(sys.argv[3]))
svc, links = s["services"], s["links"]
for name in ("evloop", "tpr", "pool"):
    assert name in svc, "no scores for %s: %s" % (name, sorted(svc))
ev, tpr, pool = svc["evloop"], svc["tpr"], svc["pool"]
assert ev["requests"] >= 0.8 * load["ok"], "evloop: %d of %d requests found" % (
    ev["requests"], load["ok"])
inside = links["lines"] - links["outside"]
bad = links["unmatched"] + links["no_conn"] + links["conflicts"]
assert bad <= 0.05 * inside, "%d of %d truth lines unmatched" % (bad, inside)
# Per trace, the services its spans are at; per service, its calls by
# link method.
methods, hosts = {}, {}
for rs in otlp["resourceSpans"]:
    name = [a["value"]["stringValue"] for a in rs["resource"]["attributes"]
            if a["key"] == "service.name"][0]
    for ss in rs["scopeSpans"]:
        for sp in ss["spans"]:
            hosts.setdefault(sp["traceId"], set()).add(name)
            if name != "tpr" or sp["kind"] != 3:
                continue
            m = [a["value"]["stringValue"] for a in sp["attributes"]
                 if a["key"] == "causeway.link.method"][0]
            methods[m] = methods.get(m, 0) + 1
calls = sum(methods.values())
assert calls > 0, "no calls from tpr in the traces"
by_thread = methods.get("thread", 0) / calls
assert by_thread >= 0.99, "tpr: only %.3f of calls linked by thread" % by_thread
assert tpr["right"] >= 0.97, "tpr: %.3f right (FCFS %.3f)" % (
    tpr["right"], tpr["fcfs"])
for name, v in (("evloop", ev), ("pool", pool)):
    assert v["right"] >= v["fcfs"] - 0.05, "%s: %.3f right, FCFS %.3f" % (
        name, v["right"], v["fcfs"])
tr = s["traces"]
assert tr["right"] >= tr["fcfs"] - 0.05, "traces: %.3f right, FCFS %.3f" % (
    tr["right"], tr["fcfs"])
# Stitched across hosts: a trace through evloop reaches tpr or pool and
# redis (and nginx before it), each end recorded by its own agent.
ev_traces = [h for h in hosts.values() if "evloop" in h]
wide = sum(1 for h in ev_traces if len(h) >= 3)
print("traces through evloop: %d, of them %d cross >= 3 hosts" % (
    len(ev_traces), wide))
assert wide >= 0.9 * ev["requests"], \
    "only %d traces cross 3 hosts, of %d evloop requests" % (
        wide, ev["requests"])
print("fleet, at half load: tpr %.3f right (FCFS %.3f) of %d, %.3f by "
      "thread; evloop %.3f (FCFS %.3f) of %d; pool %.3f (FCFS %.3f) of %d; "
      "traces end to end %.3f (FCFS %.3f) of %d" % (
      tpr["right"], tpr["fcfs"], tpr["requests"], by_thread, ev["right"],
      ev["fcfs"], ev["requests"], pool["right"], pool["fcfs"],
      pool["requests"], tr["right"], tr["fcfs"], tr["n"]))
' "$T_TMP/s.json" "$load" "$T_TMP/otlp.json" ||
	fail "scores of the fleet's messages"

# The correlator infers the same records window by window: each window's
# traces one line of DIR/traces.jsonl (an OTLP export request), ids salted
# with the window's slot so no two windows share a trace or span id.  The
# spans are the messages', so they are those `causeway traces` built
# (the links may differ: each window is inferred on its own).
# Each window's export request is also POSTed to a loopback OTLP/HTTP
# receiver.  The load host's agent still publishes (its windows go on),
# so the correlator is stopped once its lines hold as many spans as
# traces made.
otlp_receiver "$T_TMP/posts"
# (A grace of 10 s, as the later ones: on a busy machine the default 2 s
# closed a window before its last records were read.)
"$CW" correlate --kafka "$BOOT" --group fleet-traces --from-beginning \
	-o "$T_TMP/corr" --otlp "http://127.0.0.1:$OTLP_PORT/v1/traces" \
	--window-grace 10s >/dev/null 2>"$T_TMP/corr.log" &
CORR=$!
bg_pid $CORR
nspans() { grep -o '"spanId"' "$1" 2>/dev/null | wc -l; }
want=$(nspans "$T_TMP/otlp.json")
for _ in $(seq 1 600); do
	[ "$(nspans "$T_TMP/corr/traces.jsonl")" -ge "$want" ] && break
	kill -0 $CORR 2>/dev/null || break
	sleep 0.2
done
kill -INT $CORR 2>/dev/null
wait $CORR || fail "causeway correlate: $(cat "$T_TMP/corr.log")"
grep "traces.jsonl\|traces:" "$T_TMP/corr.log"
pyjson '
import json, sys
def spans(req):
    for rs in req["resourceSpans"]:
        name = [a["value"]["stringValue"] for a in rs["resource"]["attributes"]
                if a["key"] == "service.name"][0]
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                yield name, sp
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 2, "%d windows of traces, not >= 2" % len(lines)
ours, tids, sids = [], {}, set()
for n, line in enumerate(lines):
    for name, sp in spans(json.loads(line)):
        ours.append((sp["kind"], sp["startTimeUnixNano"],
                     sp["endTimeUnixNano"]))
        assert tids.setdefault(sp["traceId"], n) == n, \
            "trace id %s in windows %d and %d" % (sp["traceId"],
                                                   tids[sp["traceId"]], n)
        assert sp["spanId"] not in sids, "span id %s twice" % sp["spanId"]
        sids.add(sp["spanId"])
# (Names aside: --truth-links named the services in the other run.)
theirs = [(sp["kind"], sp["startTimeUnixNano"], sp["endTimeUnixNano"])
          for _, sp in spans(json.load(open(sys.argv[2])))]
assert sorted(ours) == sorted(theirs), \
    "correlator: %d spans, traces --kafka: %d; %d differ" % (
        len(ours), len(theirs), len(set(ours) ^ set(theirs)))
print("correlator: %d windows, %d spans in %d traces, as traces --kafka "
      "built them" % (len(lines), len(ours), len(tids)))
' "$T_TMP/corr/traces.jsonl" "$T_TMP/otlp.json" ||
	fail "the correlator's traces"

# Every line names its window (causeway.window.slot_ns on each resource),
# no slot twice; the receiver got each line, in order, as one POST.
# slots FILE: a line's slot per line of traces.jsonl, in order.
slots() {
	pyjson '
import json, sys
for line in open(sys.argv[1]):
    rs = json.loads(line)["resourceSpans"]
    s = {[a["value"]["intValue"] for a in r["resource"]["attributes"]
          if a["key"] == "causeway.window.slot_ns"][0] for r in rs}
    assert rs and len(s) == 1, "a line of %d resources, slots %s" % (
        len(rs), sorted(s))
    print(s.pop())
' "$1" || fail "a line of $1 without its slot"
}
slots "$T_TMP/corr/traces.jsonl" >"$T_TMP/slots1"
nwin=$(wc -l <"$T_TMP/corr/traces.jsonl")
check_eq "windows of traces, each its own slot" \
	"$(sort -u "$T_TMP/slots1" | wc -l)" "$nwin"
check_eq "POSTs received" "$(ls "$T_TMP/posts" | grep -c '^post-[0-9]*$')" "$nwin"
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf '%s\n' "$line" | cmp -s - "$T_TMP/posts/post-$i" ||
		fail "POST $i is not line $i of traces.jsonl"
done <"$T_TMP/corr/traces.jsonl"
grep -q "traces: $nwin windows, [0-9]* spans built; $nwin posted, 0 posts failed" \
	"$T_TMP/corr.log" || fail "no traces summary: $(cat "$T_TMP/corr.log")"
note "$nwin windows of traces, slots $(tr '\n' ' ' <"$T_TMP/slots1")posted once each"

# A member of another group reads every window again into the same DIR:
# traces.jsonl and paths.jsonl know their slots, so no window gets a
# second line, nor a second POST; what the first wrote stays as it was.
# It is stopped once it has met every window of the first (its debug
# lines say so): the load host's windows go on, so --idle never comes.
# It keeps the default grace (2 s): reading from the beginning, what
# holds a window is its partitions' event time, not the clock.
cp "$T_TMP/corr/traces.jsonl" "$T_TMP/traces1.jsonl"
cp "$T_TMP/corr/paths.jsonl" "$T_TMP/paths1.jsonl"
"$CW" -v correlate --kafka "$BOOT" --group fleet-traces-again \
	--from-beginning -o "$T_TMP/corr" \
	--otlp "http://127.0.0.1:$OTLP_PORT/v1/traces" \
	>/dev/null 2>"$T_TMP/again.log" &
CORR=$!
bg_pid $CORR
met() { # how many of the first run's windows the second met again
	local n=0 s
	while read -r s; do
		grep -q "window $s: in traces.jsonl already" "$T_TMP/again.log" &&
			n=$((n + 1))
	done <"$T_TMP/slots1"
	echo $n
}
for _ in $(seq 1 600); do
	[ "$(met)" -ge "$nwin" ] && break
	kill -0 $CORR 2>/dev/null || break
	sleep 0.2
done
kill -INT $CORR 2>/dev/null
wait $CORR || fail "the second correlator: $(tail -n 20 "$T_TMP/again.log")"
# Every one met again and skipped: catching up on four partitions at
# once, one partition runs many windows ahead of another; a window waits
# for the partitions still behind (event time), and one far ahead is
# paused past the oldest window one behind may still add to, so none is
# closed before its records have all come.  An oldest waiting out its grace
# alone is whole already: if the pending set fills meanwhile, a record
# of a new slot completes it, and none is refused.  (When one is
# missing, say what the second member said of windows.)
[ "$(met)" = "$nwin" ] || grep "window\|error\|paused\|resumed" \
	"$T_TMP/again.log" | tail -n 30 || true
check_eq "windows the second correlator met again" "$(met)" "$nwin"
grep "paths:" "$T_TMP/again.log" | tail -n 1
# ... each with every record the first had (its span, ends and messages
# as the first's line says them), none refused for want of room among
# the pending windows ("more than 9 timing windows pending": once, all
# partitions ran free during a grace, and a window lost 59 of its 164
# ends), none late.
# paths_line FILE SLOT: the window's span, ends and messages in FILE.
paths_line() { sed -n "s/.*window $2 \((.* messages\): .*/\1/p" "$1"; }
for s in $(cat "$T_TMP/slots1"); do
	[ -n "$(paths_line "$T_TMP/corr.log" "$s")" ] ||
		fail "no paths line of window $s in the first run"
	check_eq "window $s read again" "$(paths_line "$T_TMP/again.log" "$s")" \
		"$(paths_line "$T_TMP/corr.log" "$s")"
done
check_eq "errors of the second correlator" \
	"$(grep -c "error:" "$T_TMP/again.log")" 0
grep -q "paths: .*; 0 late records" "$T_TMP/again.log" ||
	fail "late records: $(grep "paths:" "$T_TMP/again.log")"
slots "$T_TMP/corr/traces.jsonl" >"$T_TMP/slots2"
check_eq "slots twice in traces.jsonl" "$(sort "$T_TMP/slots2" | uniq -d | wc -l)" 0
check_eq "slots twice in paths.jsonl" "$(sed 's/^{"slot_ns":\([0-9]*\),.*/\1/' \
	"$T_TMP/corr/paths.jsonl" | sort | uniq -d | wc -l)" 0
head -c "$(stat -c %s "$T_TMP/traces1.jsonl")" "$T_TMP/corr/traces.jsonl" |
	cmp -s - "$T_TMP/traces1.jsonl" || fail "the first run's traces lines changed"
head -c "$(stat -c %s "$T_TMP/paths1.jsonl")" "$T_TMP/corr/paths.jsonl" |
	cmp -s - "$T_TMP/paths1.jsonl" || fail "the first run's paths lines changed"
check_eq "POSTs after the second correlator (one per line)" \
	"$(ls "$T_TMP/posts" | grep -c '^post-[0-9]*$')" "$(wc -l <"$T_TMP/corr/traces.jsonl")"
note "second correlator: $(wc -l <"$T_TMP/corr/traces.jsonl") traces lines, $(wc -l <"$T_TMP/corr/paths.jsonl") paths lines, no slot twice"

# An endpoint that refuses: each window's POST is tried, given up on and
# counted; the correlator (no DIR: nothing on disk) goes on to the end.
dead=$(free_port)
"$CW" correlate --kafka "$BOOT" --group fleet-traces-refused \
	--from-beginning --otlp "http://127.0.0.1:$dead/v1/traces" \
	--window-grace 10s \
	>/dev/null 2>"$T_TMP/refused.log" &
CORR=$!
bg_pid $CORR
for _ in $(seq 1 600); do
	[ "$(grep -c "traces not posted" "$T_TMP/refused.log")" -ge "$nwin" ] && break
	kill -0 $CORR 2>/dev/null || break
	sleep 0.2
done
kill -INT $CORR 2>/dev/null
wait $CORR || fail "a refused POST stopped the correlator: $(tail -n 20 "$T_TMP/refused.log")"
grep "traces not posted" "$T_TMP/refused.log" | head -n 1
failed=$(grep -c "traces not posted" "$T_TMP/refused.log")
[ "$failed" -ge 1 ] || fail "no POST was given up on: $(tail -n 20 "$T_TMP/refused.log")"
# One line a window given up on, naming why; no line a try.
check_eq "lines naming the refused endpoint" \
	"$(grep -c "cannot connect to 'http://127.0.0.1:$dead" "$T_TMP/refused.log")" "$failed"
grep -q "traces: $failed windows, [0-9]* spans built; 0 posted, $failed posts failed" \
	"$T_TMP/refused.log" || fail "no count of failed posts: $(tail -n 20 "$T_TMP/refused.log")"
note "refused: $failed windows, $failed posts failed (of $nwin), the correlator went on"

# The same records from a wire stream file (what `causeway dump` reads):
# the reader refuses a file with no MsgWindow record in one line.
printf 'CWWIRE1\n' >"$T_TMP/empty.cww"
"$CW" traces "$T_TMP/empty.cww" >/dev/null 2>"$T_TMP/err.log" &&
	fail "an input with no messages was accepted"
grep -q "no messages" "$T_TMP/err.log" || fail "unclear error: $(cat "$T_TMP/err.log")"
[ "$(wc -l <"$T_TMP/err.log")" -eq 1 ] || fail "more than one error line"
# correlate --otlp wants an http:// URL: refused before anything is read.
"$CW" correlate --kafka "$BOOT" --otlp ftp://x >/dev/null 2>"$T_TMP/err.log"
check_eq "correlate --otlp ftp://x: exit status" $? 2
grep -q "wants an http:// URL" "$T_TMP/err.log" || fail "unclear error: $(cat "$T_TMP/err.log")"
[ "$(wc -l <"$T_TMP/err.log")" -eq 1 ] || fail "more than one error line"
# --traces without --kafka: refused before anything is loaded.
"$CW" agent --traces -d 1s >/dev/null 2>"$T_TMP/err.log" &&
	fail "--traces without --kafka was accepted"
grep -q "needs --kafka" "$T_TMP/err.log" || fail "unclear error: $(cat "$T_TMP/err.log")"
kill -INT "$AGENT_load"
wait "$AGENT_load" || fail "the load host's agent failed"
echo "PASS"
