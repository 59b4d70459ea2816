#!/bin/bash
# A correlator killed while it writes a snapshot leaves its temporary file
# (graph.dot.tmp.PID.XXXXXX) in -o DIR; the next one to start there removes
# it, and keeps the temporary of a writer that still runs.  A simulated
# fleet through the embedded broker: the snapshot files must still be
# written whole, and nothing but the live writer's temporary left beside.
. "$(dirname "$0")/lib.sh"

broker_start
"$CW" simulate --hosts 3 --conns 5 --kafka "$BOOT" 2>"$T_TMP/sim.log" ||
	fail "simulate --kafka failed: $(cat "$T_TMP/sim.log")"

OUT="$T_TMP/out"
mkdir -p "$OUT"
# A dead writer's pid: a process that ran and was waited for.
sh -c 'exit 0' &
dead=$!
wait "$dead"
kill -0 "$dead" 2>/dev/null && fail "pid $dead still runs"
# A live writer: a process of the test's that runs until the end.
sleep 600 &
live=$!
bg_pid $live
echo "half a graph" >"$OUT/graph.dot.tmp.$dead.AbC123"
echo "half a graph" >"$OUT/edges.json.tmp.$dead.xYz789"
echo "being written" >"$OUT/graph.dot.tmp.$live.LiVe00"
echo "not ours" >"$OUT/other.tmp.$dead.AbC123"

"$CW" correlate --kafka "$BOOT" --from-beginning --no-paths --idle 2s \
	-o "$OUT" >"$T_TMP/table" 2>"$T_TMP/correlate.log" ||
	fail "correlate failed: $(cat "$T_TMP/correlate.log")"

[ -e "$OUT/graph.dot.tmp.$dead.AbC123" ] &&
	fail "the dead writer's graph.dot temporary is still there"
[ -e "$OUT/edges.json.tmp.$dead.xYz789" ] &&
	fail "the dead writer's edges.json temporary is still there"
[ -e "$OUT/graph.dot.tmp.$live.LiVe00" ] ||
	fail "the live writer's temporary was removed"
[ -e "$OUT/other.tmp.$dead.AbC123" ] ||
	fail "a file that is no snapshot's temporary was removed"
grep -q "removed '.*graph.dot.tmp.$dead.AbC123', left by a writer that died" \
	"$T_TMP/correlate.log" || fail "no line says what was removed"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT/edges.json" ||
	fail "edges.json is not whole JSON"
grep -q '^digraph' "$OUT/graph.dot" || fail "graph.dot is not a graph"
n=$(ls "$OUT" | grep -c '\.tmp\.')
check_eq "temporaries left" "$n" 2
echo "PASS"
