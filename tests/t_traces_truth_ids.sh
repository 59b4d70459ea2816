#!/bin/bash
# --truth keeps span identity per trace: span ids reused across traces (a
# root span id of 1 in every trace, as some tracers number them) must not
# merge traces.  The same spans with ids 1, 2, ... in every trace and with
# ids unique in the file give the same scores, every trace counted.
. "$(dirname "$0")/lib.sh"
need_cmd python3
GEN=$CW_ROOT/tests/testbed/spangen.py
D=$T_TMP

python3 "$GEN" gen 300 4 >$D/unique.csv
python3 "$GEN" gen 300 4 --reuse-ids >$D/reused.csv
[ "$(cut -d, -f2 $D/reused.csv | sort -u | wc -l)" -lt 12 ] ||
	fail "the generator did not reuse span ids"
for f in unique reused; do
	"$CW" traces --truth $D/$f.csv >$D/$f.txt 2>$D/err ||
		fail "traces --truth $f.csv failed: $(cat $D/err)"
	grep -E "^(web|\(all\)|traces)" $D/$f.txt >$D/$f.scores
done
cat $D/reused.txt
grep -q " of 300$" $D/reused.scores || fail "reused ids: not 300 traces"
diff $D/unique.scores $D/reused.scores ||
	fail "reused span ids changed the scores"
note "ids 1, 2, ... in each of 300 traces: the scores of unique ids"
echo PASS
