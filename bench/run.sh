#!/bin/bash
# Runs every bench/bench_*.sh (or those named as arguments) and assembles
# bench/RESULTS.md from the markdown sections they print on stdout.  Each
# benchmark measures its ratios side by side in one run; none asserts a time.
#
#   bench/run.sh                 all benchmarks
#   bench/run.sh bench_agent     one of them
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD CW="$PWD/$BUILD/causeway" CW_ROOT="$PWD"
OUT=$BUILD/bench
mkdir -p "$OUT"

if [ $# -gt 0 ]; then
	benches=("$@")
else
	benches=()
	for f in bench/bench_*.sh; do benches+=("$(basename "$f" .sh)"); done
fi

declare -A ran
for b in "${benches[@]}"; do
	echo "== $b" >&2
	bash "bench/$b.sh" >"$OUT/$b.md.tmp" 2>"$OUT/$b.log" ||
		{ echo "bench $b failed: see $OUT/$b.log" >&2; tail -n 20 "$OUT/$b.log" >&2; exit 1; }
	mv "$OUT/$b.md.tmp" "$OUT/$b.md"
	ran[$b]=1
done

# RESULTS.md takes the sections of the benchmarks run now, keeps every
# other section as it is there (not an older run's output left in $OUT,
# which may predate a section spliced in by hand), and everything after
# the line $KEPT (sections no benchmark prints, such as the fuzzing
# campaign's figures) as it is.
KEPT='<!-- kept by bench/run.sh: sections below are not made by a benchmark -->'
kept=$(mktemp)
[ -f bench/RESULTS.md ] && awk -v k="$KEPT" '$0==k{f=1} f' bench/RESULTS.md >"$kept"
{
	echo "# Benchmark results"
	echo
	echo "Made by \`make bench\` (or \`bench/run.sh NAME\` for one section) on"
	echo "$(uname -r), $(nproc) cores; each section names its own command."
	echo "Ratios are measured side by side in one run; nothing here is a"
	echo "pass/fail bound."
	for f in bench/bench_*.sh; do
		b=$(basename "$f" .sh)
		echo
		if [ -n "${ran[$b]:-}" ]; then
			cat "$OUT/$b.md"
		elif [ -f bench/RESULTS.md ] &&
			awk -v h="<!-- $b -->" '$0==h{f=1} f' bench/RESULTS.md | grep -q .; then
			awk -v h="<!-- $b -->" -v e="<!-- /$b -->" \
				'$0==h{f=1} f{print} $0==e{f=0}' bench/RESULTS.md
		fi
	done
	if [ -s "$kept" ]; then
		echo
		cat "$kept"
	fi
} >bench/RESULTS.md.tmp && mv bench/RESULTS.md.tmp bench/RESULTS.md
rm -f "$kept"
echo "wrote bench/RESULTS.md" >&2
