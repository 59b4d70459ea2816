#!/bin/bash
# What exchange times add to the per-call programs (#31): inside a timing
# window every call reads the clock (a message's end is its last call),
# and each message start reads the socket's queues; outside windows a
# call going on with a message tests one global more (--hooks always;
# with --hooks sampled nothing runs there at all).  OLD and NEW causeway,
# side by side, as CPU per operation pinned to one CPU (DESIGN.md),
# modes alternating in every round:
#
#   none             no agent
#   old-in, new-in   causeway run --no-udp --window 1h: inside a window
#   old-out, new-out causeway run --no-udp: hooks always, no window
#
# Workloads (bench/pingpong.c, bench/reqrep.c): pingpong 1024 B, a stream
# (calls going on with a message: the path with the new clock read);
# reqrep 64 B, every call a new message (a ring event each).
#
#   bench/bench_exchange.sh OLD_BINARY NEW_BINARY   (ROUNDS=7)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd taskset gcc
[ $# -eq 2 ] || fail "usage: bench_exchange.sh OLD_BINARY NEW_BINARY"
OLD=$(realpath "$1") NEW=$(realpath "$2")
ROUNDS=${ROUNDS:-7}
PP_BYTES=${PP_BYTES:-200000000}
RR_COUNT=${RR_COUNT:-40000}
MODES=${MODES:-"none old-in new-in old-out new-out"}
bench_workloads "$T_TMP"

# mode_start MODE: the agent beside the workload; sets M_PID ("" none).
mode_start() {
	local log=$T_TMP/mode.log bin=$NEW args=
	M_PID=
	[ "$1" = none ] && return 0
	case $1 in old-*) bin=$OLD ;; esac
	case $1 in *-in) args="--window 1h" ;; esac
	rm -rf "$T_TMP/o"
	"$bin" run --no-udp -o "$T_TMP/o" $args >/dev/null 2>"$log" &
	M_PID=$!
	bg_pid "$M_PID"
	wait_log "$M_PID" "$log" "watching with" "$1"
	sleep 0.3
}

mode_stop() {
	[ -n "$M_PID" ] || return 0
	kill -INT "$M_PID"
	wait "$M_PID" 2>/dev/null || fail "mode exited badly: $(cat "$T_TMP/mode.log")"
	M_PID=
}

res=$T_TMP/results
: >"$res"
for round in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		mode_start "$mode"
		ns=$(taskset -c 0 "$T_TMP/pingpong" 1024 $((PP_BYTES / 3072))) ||
			fail "pingpong failed"
		echo "$mode pp $ns" >>"$res"
		ns=$(taskset -c 0 "$T_TMP/reqrep" 64 "$RR_COUNT") ||
			fail "reqrep failed"
		echo "$mode rr $ns" >>"$res"
		mode_stop
	done
	echo "round $round done" >&2
done

echo "| mode | pingpong 1024 B, ns per send+recv | reqrep 64 B, ns per round trip |"
echo "|---|---|---|"
for mode in $MODES; do
	row="| $mode"
	for w in pp rr; do
		row="$row | $(awk -v m="$mode" -v w="$w" '$1 == m && $2 == w {print $3}' "$res" |
			sort -n | awk '{v[NR] = $1} END {printf "%d [%d, %d]", v[int((NR + 1) / 2)], v[1], v[NR]}')"
	done
	echo "$row |"
done
echo "load average: $(uptime | sed 's/.*load average: //')"
