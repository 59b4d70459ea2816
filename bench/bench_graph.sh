#!/bin/bash
# bench_graph: the central side on one core, from agent records to answers.
# A synthetic fleet (causeway simulate) is written twice, as a wire stream
# file (protobuf envelopes, what the correlator reads from Kafka) and as
# JSON lines; each is read, paired and built into the process graph, then
# projected; `causeway graph --bench` reports each stage's time on stderr.
# The wire runs are repeated and the fastest kept (the machine may be
# shared).  Also the render time of a moderate graph.  Prints one markdown
# section on stdout; asserts no time.
#
#   bench/bench_graph.sh              100k processes, ~1M connections
#   BENCH_GRAPH_HOSTS=2500 bench/bench_graph.sh    a quicker, smaller run
#   BENCH_GRAPH_RUNS=5 ...            wire runs to keep the fastest of
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CW=${CW:-$PWD/$BUILD/causeway}
HOSTS=${BENCH_GRAPH_HOSTS:-25000}
CONNS=${BENCH_GRAPH_CONNS:-40}
RUNS=${BENCH_GRAPH_RUNS:-3}
PROCS=4
T=$(mktemp -d /tmp/causeway-bench-graph.XXXXXX)
trap 'rm -rf "$T"' EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# field NAME FILE: the value after NAME in a "bench:" line
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" "$2" | head -n 1; }
rate() { sed -n 's/.*(\([0-9]*\) records\/s).*/\1/p' "$1"; }
# vertices_edges FILE: "N vertices, M edges" of the view
vertices_edges() { sed -n 's/.*vertices \([0-9]*\) edges \([0-9]*\)$/\1 vertices, \2 edges/p' "$1"; }
project() { sed -n "s/.*project($2) \([^ ]*\).*/\1/p" "$1"; }

t0=$(now)
"$CW" simulate --hosts "$HOSTS" --conns "$CONNS" --procs $PROCS --seed 1 \
	--format wire -o "$T/fleet.cww" >&2
t_simw=$(secs "$t0" "$(now)")
t0=$(now)
"$CW" simulate --hosts "$HOSTS" --conns "$CONNS" --procs $PROCS --seed 1 \
	-o "$T/fleet.jsonl" >&2
t_sim=$(secs "$t0" "$(now)")
records=$(wc -l <"$T/fleet.jsonl")
mb=$(( $(stat -c %s "$T/fleet.jsonl") / 1048576 ))
mbw=$(( $(stat -c %s "$T/fleet.cww") / 1048576 ))

# Wire input, cumulative graph by process: RUNS runs, the fastest ingest
# and the fastest build + project kept (from their own runs).
w=$T/wire.txt
for i in $(seq "$RUNS"); do
	"$CW" graph --bench --window 0 --by process --top 1 "$T/fleet.cww" \
		>/dev/null 2>"$T/wire.$i.txt"
	echo "wire $i: $(cat "$T/wire.$i.txt")" >&2
done
best() { # best KEY: the run file with the smallest value of KEY
	for f in "$T"/wire.*.txt; do echo "$(field "$1" "$f" | tr -d s) $f"; done |
		sort -g | head -n 1 | cut -d' ' -f2
}
wr=$(best read)
wb=$(best build+project)
cp "$wb" "$w"

# JSON lines: cumulative graph (--window 0), each projection.
for by in process cmdline container host; do
	"$CW" graph --bench --window 0 --by $by --top 1 "$T/fleet.jsonl" \
		>/dev/null 2>"$T/$by.txt"
	echo "$by: $(cat "$T/$by.txt")" >&2
done
# The per-window graph (1 min windows) by process, from the wire file.
"$CW" graph --bench --window 1m --top 1 "$T/fleet.cww" >/dev/null 2>"$T/win.txt"
echo "window: $(cat "$T/win.txt")" >&2

# Render: a moderate fleet, every edge drawn.
"$CW" simulate --hosts 30 --conns 60 --seed 2 -o "$T/small.jsonl" >&2
"$CW" graph --format json --window 0 "$T/small.jsonl" >"$T/small.json"
small=$(python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); print(len(g["nodes"]), len(g["edges"]))' "$T/small.json")
t0=$(now)
"$CW" render --min-share 0 -o "$T/small.svg" "$T/small.jsonl"
t_svg=$(secs "$t0" "$(now)")
t0=$(now)
"$CW" render --min-share 0 -o "$T/small.png" "$T/small.jsonl"
t_png=$(secs "$t0" "$(now)")
t0=$(now)
"$CW" render -o "$T/small10.svg" "$T/small.jsonl"
t_svg10=$(secs "$t0" "$(now)")

p=$T/process.txt
echo "<!-- bench_graph -->"
echo "## Graph: ingest, pairing, build, projections, render"
echo
echo "Made by \`bench/run.sh bench_graph\` (BENCH_GRAPH_HOSTS=$HOSTS"
echo "BENCH_GRAPH_CONNS=$CONNS) on $(uname -r), $(nproc) cores, one thread."
echo "Input: \`causeway simulate --hosts $HOSTS --conns $CONNS --procs $PROCS\`:"
echo "$records records, as a wire stream file (\`--format wire\`, $mbw MiB,"
echo "written in ${t_simw}s) and as JSON lines ($mb MiB, ${t_sim}s)."
echo "Times from \`causeway graph --bench\` (stderr); every run reads its"
echo "file again.  Wire rows: the fastest of $RUNS runs."
echo
echo "| stage | size | time | rate |"
echo "|---|---|---|---|"
echo "| ingest, wire: read + CRC + cw_wire_decode + cw_pairing_add | $(field records "$wr") records | $(field read "$wr") | $(rate "$wr") records/s |"
echo "| pairing + graph build (cw_pairing_build), wire | $(field ends "$w") ends -> $(field nodes "$w") nodes, $(field edges "$w") edges | $(field pair+build "$w") | |"
echo "| igraph view --by process, wire | $(vertices_edges "$w") | $(project "$w" process) | |"
echo "| **build + project** (the two above, one run) | | **$(field build+project "$w")** | |"
echo "| ingest, JSON lines: read + json-c + cw_pairing_add | $(field records "$p") records | $(field read "$p") | $(rate "$p") records/s |"
echo "| pairing + graph build, JSON | $(field ends "$p") ends -> $(field nodes "$p") nodes, $(field edges "$p") edges | $(field pair+build "$p") | |"
for by in process cmdline container host; do
	f=$T/$by.txt
	echo "| igraph view --by $by (group, sum, igraph + attributes), JSON | $(vertices_edges "$f") | $(project "$f" $by) | |"
done
echo "| 1-min windows, wire: ingest + project --by process | $(field records "$T/win.txt") records | read $(field read "$T/win.txt"), project $(project "$T/win.txt" process) | |"
echo "| render SVG, every edge (gvLayout dot) | ${small% *} vertices, ${small#* } edges | ${t_svg}s | |"
echo "| render PNG, every edge | same | ${t_png}s | |"
echo "| render SVG, --min-share 0.10 (default) | same | ${t_svg10}s | |"
echo
echo "Build + project (pairing, graph, igraph view by process), wire input:"
echo "$(field build+project "$w"); from JSON lines: $(field build+project "$p")."
echo "Reading JSON (json-c) dominates end to end; the wire path is what the"
echo "correlator reads.  Render times include reading and pairing the records."
echo "<!-- /bench_graph -->"
