#!/bin/bash
# Side by side: OLD and NEW causeway, graph and correlate, pinned to CPU 0,
# rounds alternating: a layout change must leave both no slower (#29).
#
#   bench/side_by_side.sh OLD_BINARY NEW_BINARY [ROUNDS]
set -u
OLD=$1 NEW=$2 R=${3:-3}
T=$(mktemp -d /tmp/h2-bench.XXXXXX)
cd "$T"
"$NEW" simulate --hosts 2500 --conns 40 --seed 7 --format wire -o fleet.cww 2>/dev/null
cpu() { # CMD...: user+sys seconds of CMD (and its threads)
	/usr/bin/time -f "%U %S" -o t.out "$@" >/dev/null 2>err.log
	awk '{printf "%.2f", $1 + $2}' t.out
}
echo "graph: cpu seconds of 'graph --window 0 --top 1 fleet.cww' (2500 hosts x 40 conns), pinned CPU 0"
for i in $(seq 1 "$R"); do
	o=$(cpu taskset -c 0 "$OLD" graph --window 0 --top 1 fleet.cww)
	n=$(cpu taskset -c 0 "$NEW" graph --window 0 --top 1 fleet.cww)
	echo "  round $i: old $o new $n"
done
taskset -c 1 "$NEW" broker -t causeway.conns:16 >boot 2>broker.log &
bpid=$!
for _ in $(seq 1 100); do [ -s boot ] && break; sleep 0.05; done
B=$(cat boot)
taskset -c 1 "$NEW" simulate --churn --hosts 1000 --live 5 -d 4h -s 5 --kafka "$B" --speedup 0 2>/dev/null
echo "correlate: cpu seconds to read the churn stream (1000 hosts, 5 live, 4h) --no-paths, pinned CPU 0"
for i in $(seq 1 "$R"); do
	o=$(cpu taskset -c 0 "$OLD" correlate --kafka "$B" --group o$i --from-beginning --no-paths --idle 2s)
	n=$(cpu taskset -c 0 "$NEW" correlate --kafka "$B" --group n$i --from-beginning --no-paths --idle 2s)
	echo "  round $i: old $o new $n"
done
kill "$bpid"; wait "$bpid" 2>/dev/null
cd /; rm -rf "$T"
