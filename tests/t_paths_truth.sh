#!/bin/bash
# causeway paths --truth on both span traces in ../shared/data/spans
# (or $CW_SPANS): every figure is printed for both methods; convolution
# must reach edge precision >= 0.9 and recall >= 0.8 on each trace, and
# nesting edge precision >= 0.9, recall >= 0.7 and a median hop delay
# error under 15% (it was 0.54 and 27% on Online Boutique before it gave
# each call one parent, first come first served, and judged nesting
# against the callers' busy time).
. "$(dirname "$0")/lib.sh"
need_cmd python3
SPANS=${CW_SPANS:-$CW_ROOT/../shared/data/spans}
[ -d "$SPANS" ] || skip "no span traces in $SPANS"

n=0
for f in "$SPANS"/*.csv; do
	n=$((n + 1))
	"$CW" paths --method both --truth "$f" ||
		fail "causeway paths --truth '$f' failed"
	"$CW" paths --method both --json --truth "$f" >"$T_TMP/eval.json" ||
		fail "causeway paths --json --truth '$f' failed"
	pyjson '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print("%s %s: edge P %.3f R %.3f, triple P %.3f R %.3f, delay err %.1f%% (%.0fus, %d hops)" % (
        sys.argv[2], e["method"], e["edge_precision"], e["edge_recall"],
        e["triple_precision"], e["triple_recall"], 100 * e["delay_rel_err"],
        e["delay_abs_err_us"], e["delay_hops"]))
    if e["method"] == "convolution":
        assert e["edge_precision"] >= 0.9, "edge precision below 0.9"
        assert e["edge_recall"] >= 0.8, "edge recall below 0.8"
    else:
        assert e["edge_precision"] >= 0.9, "nesting edge precision below 0.9"
        assert e["edge_recall"] >= 0.7, "nesting edge recall below 0.7"
        assert e["delay_rel_err"] < 0.15, "nesting delay error above 15%"
' "$T_TMP/eval.json" "$(basename "$f")" || fail "thresholds not met on $f"
done
[ "$n" -ge 2 ] || fail "want both span traces, found $n"

# The same trace as Jaeger JSON (one process per pod, times in us) must
# give the same verdict.
f=$(ls "$SPANS"/train*.csv 2>/dev/null | head -n 1)
[ -n "$f" ] || f=$(ls "$SPANS"/*.csv | head -n 1)
pyjson '
import csv, json, re, sys
traces, procs = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    pod = r["PodName"]
    pid = procs.setdefault(pod, "p%d" % len(procs))
    refs = [] if r["ParentID"] == "root" else [{"refType": "CHILD_OF", "traceID": r["TraceID"], "spanID": r["ParentID"]}]
    s, e = int(r["StartTimeUnixNano"]) // 1000, int(r["EndTimeUnixNano"]) // 1000
    traces.setdefault(r["TraceID"], []).append({"traceID": r["TraceID"], "spanID": r["SpanID"],
        "operationName": r["OperationName"], "references": refs, "startTime": s,
        "duration": e - s, "processID": pid})
svc = {pid: re.sub(r"-[a-z0-9]{6,10}-[a-z0-9]{5}$", "", pod) for pod, pid in procs.items()}
data = [{"traceID": t, "spans": sp, "processes": {p: {"serviceName": svc[p]} for p in procs.values()}}
        for t, sp in traces.items()]
json.dump({"data": data}, open(sys.argv[2], "w"))
' "$f" "$T_TMP/jaeger.json" || fail "unable to convert to Jaeger JSON"
"$CW" paths --json --truth "$T_TMP/jaeger.json" >"$T_TMP/j.json" ||
	fail "causeway paths --truth on Jaeger JSON failed"
pyjson '
import json, sys
e = json.loads(open(sys.argv[1]).readline())
print("jaeger json %s: edge P %.3f R %.3f" % (e["method"], e["edge_precision"], e["edge_recall"]))
assert e["edge_precision"] >= 0.9 and e["edge_recall"] >= 0.8
' "$T_TMP/j.json" || fail "thresholds not met on the Jaeger JSON form"
