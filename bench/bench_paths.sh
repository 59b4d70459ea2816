#!/bin/bash
# How long causal-path inference takes against the size of the problem:
# nodes x edges x window (bins per signal), on synthetic layered services
# (requests walk 6 hops down a random DAG, plus background messages on
# every edge), 100 us bins, 1 s max delay.  Each size runs with 2 workers
# and with 1, and with the sparse shortcut off (every pair through FFTW),
# side by side; medians over ROUNDS.  Prints a markdown section.
#
#   bench/run.sh bench_paths            (ROUNDS=3 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_cmd python3
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-"10:50:16384 100:1000:32768 1000:10000:32768 1000:10000:131072"}
FFT_MAX_BINS=${FFT_MAX_BINS:-32768}	# every pair through FFTW is slow: small sizes only

# secs CMD...: median wall time of ROUNDS runs, in seconds.
secs() {
	local i t all=()
	for i in $(seq 1 "$ROUNDS"); do
		t=$(python3 -c '
import subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print("%.2f" % (time.monotonic() - t)); sys.exit(rc)' "$@") ||
			fail "$* failed"
		all+=("$t")
	done
	printf '%s\n' "${all[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p"
}

rows=()
for s in $SIZES; do
	IFS=: read -r nodes edges bins <<<"$s"
	trace=$T_TMP/g-$nodes-$edges-$bins.csv
	"$CW" paths --synthetic "graph:seed=1,nodes=$nodes,edges=$edges,bins=$bins,rate=2000" \
		>"$trace" || fail "synthetic graph $s"
	msgs=$(($(wc -l <"$trace") - 1))
	"$CW" paths --json "$trace" >"$T_TMP/p.json" || fail "paths on $s"
	read -r npaths nhops ncorr < <(pyjson '
import json, sys
d = json.load(open(sys.argv[1]))
print(len(d["paths"]), sum(len(p["hops"]) for p in d["paths"]), d["correlations"])' "$T_TMP/p.json")
	t2=$(secs "$CW" paths --threads 2 "$trace")
	t1=$(secs "$CW" paths --threads 1 "$trace")
	tf=-
	[ "$bins" -le "$FFT_MAX_BINS" ] &&
		tf=$(secs "$CW" paths --threads 2 --fft-only "$trace")
	echo "size $s: $msgs obs, $ncorr pairs, 2 workers ${t2}s, 1 worker ${t1}s, fft-only ${tf}s" >&2
	rows+=("| $nodes | $edges | $bins | $msgs | $ncorr | $npaths / $nhops | $t2 | $t1 | $tf |")
done

echo "<!-- bench_paths -->"
echo "## causeway paths: inference time"
echo
echo "\`bench/run.sh bench_paths\` (ROUNDS=$ROUNDS; sizes $SIZES) on"
echo "$(uname -r), $(nproc) cores, $(date -u +%Y-%m-%d).  Synthetic traces from"
echo "\`causeway paths --synthetic graph:nodes=N,edges=E,bins=B,rate=2000\`;"
echo "inference is \`causeway paths --threads T [--fft-only] TRACE\` (convolution,"
echo "100us bins, 1s max delay), wall time in seconds, median of $ROUNDS runs, on"
echo "a machine shared with other work.  \"pairs\" counts the edge pairs the"
echo "recursion correlated; \"fft-only\" sends every pair through FFTW instead of"
echo "counting sparse pairs directly (run for windows up to $FFT_MAX_BINS bins)."
echo
echo "| nodes | edges | bins/signal | observations | pairs | paths / hops | 2 workers (s) | 1 worker (s) | fft-only, 2 workers (s) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo "<!-- /bench_paths -->"
