#!/bin/bash
# causeway traces --truth scores the same spans the same whatever order the
# rows come in and whatever their ids: ties (start times cut to 100 us, as
# in traces stamped coarsely) are broken by times, never by ids.  Three
# reshuffles with every trace and span id renamed: identical output.
. "$(dirname "$0")/lib.sh"
need_cmd python3
GEN=$CW_ROOT/tests/testbed/spangen.py
D=$T_TMP

python3 "$GEN" gen 400 1 --quantum 100000 >$D/g.csv
"$CW" traces --truth $D/g.csv >$D/0.txt 2>$D/err ||
	fail "traces --truth failed: $(cat $D/err)"
cat $D/0.txt
for s in 1 2 3; do
	python3 "$GEN" shuffle $D/g.csv $D/$s.csv $s
	"$CW" traces --truth $D/$s.csv >$D/$s.txt 2>$D/err ||
		fail "traces --truth failed: $(cat $D/err)"
	diff $D/0.txt $D/$s.txt || fail "reshuffle $s changed the scores"
done
note "three reshuffles with ids renamed: the same scores"
echo PASS
