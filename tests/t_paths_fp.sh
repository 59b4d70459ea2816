#!/bin/bash
# Independent random traffic between the nodes of a 3-tier service (same
# edges, no causality) must yield no path: the false-positive rate over 50
# seeds is printed for both methods and must stay at or under 6% (3 seeds)
# for convolution, whose threshold is set for 1% per edge pair.
. "$(dirname "$0")/lib.sh"
need_cmd python3
SEEDS=${SEEDS:-50}

fp_conv=0 fp_nest=0
for s in $(seq 1 "$SEEDS"); do
	"$CW" paths --synthetic "random:seed=$s,n=500" >"$T_TMP/r.csv" ||
		fail "synthetic trace $s"
	for m in convolution nesting; do
		"$CW" paths --method $m --json "$T_TMP/r.csv" >"$T_TMP/p.json" ||
			fail "causeway paths --method $m (seed $s)"
		k=$(pyjson 'import json,sys; print(len(json.load(open(sys.argv[1]))["paths"]))' "$T_TMP/p.json")
		if [ "$k" -gt 0 ]; then
			note "seed $s: $m found $k path(s) in random traffic"
			[ $m = convolution ] && fp_conv=$((fp_conv + 1)) || fp_nest=$((fp_nest + 1))
		fi
	done
done
rate() { awk -v a="$1" -v b="$SEEDS" 'BEGIN { printf "%.3f", a / b }'; }
echo "false-positive rate over $SEEDS seeds: convolution $(rate $fp_conv)" \
	"($fp_conv), nesting $(rate $fp_nest) ($fp_nest)"
[ $((fp_conv * 100)) -le $((SEEDS * 6)) ] ||
	fail "convolution false-positive rate $(rate $fp_conv) above 0.06"
