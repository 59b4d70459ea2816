#!/bin/bash
# golden.sh OLD_BIN NEW_BIN [WORKDIR]: run both binaries on the same inputs
# (a simulated fleet as JSON lines and wire; the shared span traces) through
# graph (every projection and format), render (DOT, SVG), paths (every
# method, text and JSON) and dump, and compare the outputs byte for byte,
# run times masked.  For refactors that must not change what users see.
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
	# run times are the one thing allowed to differ
	sed -i -E 's/"seconds":[0-9.e-]+//; s/; [0-9.]+s$//' paths-*
}
(outputs "$old" "$work/old")
(outputs "$new" "$work/new")
if diff -r "$work/old" "$work/new" >"$work/diff"; then
	echo "golden: $(ls "$work/new" | wc -l) outputs identical ($work)"
else
	echo "golden: outputs differ, see $work/diff"; head -n 20 "$work/diff"; exit 1
fi
