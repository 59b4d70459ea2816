#!/bin/bash
# Side by side: OLD and NEW causeway, graph, correlate and the wire codec,
# pinned to CPU 0, rounds alternating: a layout change must leave each no
# slower (#29).  The codec is bench_wire.sh's program (encode and decode of
# N records) built against each binary's own core library, which must sit
# beside it (BUILD/causeway, BUILD/libcauseway-core.a, in its source tree).
#
#   bench/side_by_side.sh OLD_BINARY NEW_BINARY [ROUNDS]
#	N=300000 codec records, HOSTS=2500 hosts of the graph's fleet
set -u
OLD=$(realpath "$1") NEW=$(realpath "$2") R=${3:-3} N=${N:-300000}
HOSTS=${HOSTS:-2500}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/h2-bench.XXXXXX)
cd "$T"
"$NEW" simulate --hosts "$HOSTS" --conns 40 --seed 7 --format wire -o fleet.cww 2>/dev/null
cpu() { # CMD...: user+sys seconds of CMD (and its threads)
	/usr/bin/time -f "%U %S" -o t.out "$@" >/dev/null 2>err.log
	awk '{printf "%.2f", $1 + $2}' t.out
}
echo "graph: cpu seconds of 'graph --window 0 --top 1 fleet.cww' ($HOSTS hosts x 40 conns), pinned CPU 0"
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
# codec BIN OUT: bench_wire.sh's program against BIN's core library.
codec() {
	local build tree
	build=$(dirname "$1")
	tree=$(git -C "$build" rev-parse --show-toplevel) || return 1
	# shellcheck disable=SC2046
	${CC:-cc} -O2 -g -std=gnu11 -D_GNU_SOURCE -I"$build" -I"$tree" -o "$2" \
		bench_wire.c "$build/libcauseway-core.a" \
		$(pkg-config --cflags --libs libbpf libelf zlib json-c fftw3 \
			libpcap rdkafka libprotobuf-c) -lcap -lm -lpthread
}
sed -n "/^cat >\"\$OUT\/bench_wire.c\" <<'EOF'$/,/^EOF$/p" "$HERE/bench_wire.sh" |
	sed '1d;$d' >bench_wire.c
if codec "$OLD" codec-old && codec "$NEW" codec-new; then
	echo "wire codec: records/s encoded / decoded, $N ConnRecords, pinned CPU 0 (higher is faster)"
	for i in $(seq 1 "$R"); do
		o=$(taskset -c 0 ./codec-old codec "$N" | awk '{printf "%.0f / %.0f", $3, $4}')
		n=$(taskset -c 0 ./codec-new codec "$N" | awk '{printf "%.0f / %.0f", $3, $4}')
		echo "  round $i: old $o new $n"
	done
else
	echo "wire codec: not built (each binary's libcauseway-core.a beside it?)"
fi
cd /; rm -rf "$T"
