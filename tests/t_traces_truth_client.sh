#!/bin/bash
# --truth on span traces that record no client spans (the callee's span
# hangs off the caller's server span, common in Jaeger data): a call's
# caller-side times must come from a real client span only.  Taken from
# the parent server span, every call carries its request's exact times and
# any inference scores 1.000.  Here: with no client span anywhere, nothing
# is scored at web and the output says the caller side was not recorded;
# with half the traces lacking them, exactly the requests of the other
# half are scored, the same as in a file of that half alone.
. "$(dirname "$0")/lib.sh"
need_cmd python3
GEN=$CW_ROOT/tests/testbed/spangen.py
D=$T_TMP

python3 "$GEN" gen 300 2 --no-client-share 1 >$D/none.csv
"$CW" traces --truth $D/none.csv >$D/none.txt 2>$D/err ||
	fail "traces --truth failed: $(cat $D/err)"
cat $D/none.txt
calls=$(awk -F, 'NR > 1 && $4 !~ /^web-/' $D/none.csv | wc -l)
grep -q "^caller side not recorded: $calls calls have no client span" \
	$D/none.txt || fail "no word that the caller side of $calls calls is unrecorded"
grep -q "^web" $D/none.txt && fail "web scored from calls with its requests' own times"
grep -q "traces right end to end: 0.000 (FCFS 0.000) of 0$" $D/none.txt ||
	fail "traces scored though no request could be"
note "no client spans: $calls calls left out, nothing scored, said"

# Half the traces without client spans: only the others' requests count.
python3 "$GEN" gen 400 3 --no-client-share 0.5 >$D/half.csv
python3 - $D/half.csv >$D/want <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
pod = {(r["TraceID"], r["SpanID"]): r["PodName"] for r in rows}
blind, traces = set(), set()
for r in rows:
    traces.add(r["TraceID"])
    p = (r["TraceID"], r["ParentID"])
    # a callee's span whose parent is web's root: no client span
    if r["ParentID"] != "root" and r["PodName"] != pod[p] and \
       [x for x in rows if (x["TraceID"], x["SpanID"]) == p][0]["ParentID"] == "root":
        blind.add(r["TraceID"])
print(len(traces) - len(blind), len(blind))
PY
read -r scored blind <$D/want
"$CW" traces --truth $D/half.csv >$D/half.txt 2>$D/err ||
	fail "traces --truth failed: $(cat $D/err)"
cat $D/half.txt
got=$(awk '$1 ~ /^web-/ {print $2}' $D/half.txt)
[ "$got" = "$scored" ] || fail "web: $got requests scored, want $scored (of $((scored + blind)); $blind lack client spans)"
grep -q "; $blind requests that made them not scored" $D/half.txt ||
	fail "the $blind requests left unscored are not said"
note "half without client spans: $scored requests scored, $blind not"
echo PASS
