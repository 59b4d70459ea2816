#!/bin/bash
# golden.sh OLD_BIN NEW_BIN [WORKDIR]: run both binaries on the same inputs
# (a simulated fleet as JSON lines and wire; the shared span traces) through
# graph (every projection and format), render (DOT, SVG), paths (every
# method, text and JSON) and dump; and through the embedded broker
# (the same fleet published with simulate --kafka): correlate (its
# edges.json, graph.dot and printed table), graph --kafka, render --kafka
# and place --kafka.  Compare the outputs byte for byte, run times masked;
# where they differ, say per file whether it is the same JSON with its
# members in another order.  For refactors that must not change what
# users see.
set -u
old=$(realpath "$1") new=$(realpath "$2")
work=${3:-$(mktemp -d)}
spans=$(cd "$(dirname "$0")/../.." && pwd)/shared/data/spans

outputs() {
	local B=$1 O=$2 by f m t
	mkdir -p "$O" && cd "$O" || exit 1
	$B simulate --hosts 20 --conns 50 --seed 3 -o fleet.jsonl 2>/dev/null
	$B simulate --hosts 20 --conns 50 --seed 3 --format wire -o fleet.cww 2>/dev/null
	for by in process cmdline container host; do
		for f in table json graphml dot csv; do
			$B graph --by $by --format $f fleet.jsonl >graph-$by.$f 2>&1
			echo "rc=$?" >>graph-$by.$f
			$B graph --by $by --format $f fleet.cww >graphw-$by.$f 2>&1
			echo "rc=$?" >>graphw-$by.$f
		done
		$B graph --by $by --matrix fleet.jsonl >matrix-$by.csv 2>&1
		$B graph --by $by --top 5 --window 0 fleet.jsonl >top-$by.txt 2>&1
		$B render --by $by --format dot -o render-$by.dot fleet.jsonl >render-$by.log 2>&1
		$B render --by $by --format svg -o render-$by.svg fleet.jsonl >>render-$by.log 2>&1
	done
	$B graph --window 1m --format json fleet.jsonl >win.json 2>&1
	for m in convolution nesting both; do
		for t in online-boutique-2022-08-23 train-ticket-2023-01-29; do
			$B paths --method $m --threads 1 --truth $spans/$t.csv >paths-$m-$t.txt 2>&1
			$B paths --method $m --threads 1 --json --truth $spans/$t.csv >paths-$m-$t.json 2>&1
		done
	done
	$B dump fleet.cww >dump.jsonl 2>&1
	echo "rc=$?" >>dump.jsonl
	kafka_outputs "$B"
	# run times are the one thing allowed to differ
	sed -i -E 's/"seconds":[0-9.e-]+//; s/; [0-9.]+s$//' paths-*
}
# kafka_outputs BIN: the fleet through an embedded broker of its own.
kafka_outputs() {
	local B=$1 boot pid f
	$B broker >boot 2>broker.log &
	pid=$!
	for _ in $(seq 1 100); do [ -s boot ] && break; sleep 0.05; done
	boot=$(cat boot) && rm -f boot broker.log
	$B simulate --hosts 20 --conns 50 --seed 3 --units-out units.csv \
		--hosts-out hosts.csv --kafka "$boot" 2>/dev/null
	$B correlate --kafka "$boot" --from-beginning --no-paths --idle 2s \
		-o correlate >correlate.txt 2>correlate.log
	echo "rc=$?" >>correlate.txt
	$B correlate --kafka "$boot" --group json --from-beginning --no-paths \
		--idle 2s --bucket 0 --json >correlate.json 2>>correlate.log
	echo "rc=$?" >>correlate.json
	for f in table json dot; do
		$B graph --kafka "$boot" --by host --format $f >kgraph.$f 2>&1
		echo "rc=$?" >>kgraph.$f
	done
	$B render --kafka "$boot" --format dot -o krender.dot >krender.log 2>&1
	$B place --kafka "$boot" --idle 2s -H hosts.csv -U units.csv \
		--format json >kplace.json 2>&1
	echo "rc=$?" >>kplace.json
	kill "$pid" && wait "$pid" 2>/dev/null
	# The member's node numbers follow the order the partitions came in:
	# its graph.dot is compared as the set of its lines, numbers masked.
	sed -E 's/\bn[0-9]+\b/N/g; s/cluster_[0-9]+/cluster_N/' \
		correlate/graph.dot | sort >correlate/graph.dot.lines &&
		rm correlate/graph.dot
	sed -i -E 's/"seconds":[0-9.e-]+//g' kplace.json
	# what took how long, and the member's own log lines
	sed -i -E 's/[0-9.]+ s\b/T s/g; s/^.*(correlating|snapshots:).*$//' \
		correlate.log
}

(outputs "$old" "$work/old")
(outputs "$new" "$work/new")
# same_json A B: every line of A and B parses as JSON and they are equal
# line by line (members in another order, the same values).
same_json() {
	python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
a, b = (open(f).read().splitlines() for f in sys.argv[1:3])
ok = len(a) == len(b) and all(
    x == y or (x[:1] in "{[" and json.loads(x) == json.loads(y))
    for x, y in zip(a, b))
sys.exit(0 if ok else 1)
PY
}
if diff -r "$work/old" "$work/new" >"$work/diff"; then
	echo "golden: $(ls "$work/new" | wc -l) outputs identical ($work)"
else
	echo "golden: outputs differ, see $work/diff"
	(cd "$work/new" && find . -type f | sort) | while read -r f; do
		cmp -s "$work/old/$f" "$work/new/$f" && continue
		if same_json "$work/old/$f" "$work/new/$f"; then
			echo "  ${f#./}: the same JSON, members in another order"
		else
			echo "  ${f#./}: differs"
		fi
	done
	exit 1
fi
