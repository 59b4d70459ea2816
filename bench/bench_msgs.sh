#!/bin/bash
# The cost of the per-message observations for traces (bpf/msgs.bpf.c,
# issue 17), as CPU per operation pinned to one CPU (DESIGN.md):
#
#   bench/pingpong.c  one-way stream: N send() of S bytes and the recv()s;
#                     CPU per send+recv pair (the message goes on: the
#                     programs' cheap path)
#   bench/reqrep.c    request-reply: CPU per round trip of S bytes each
#                     way, two sends and two recvs, each a new message
#                     (the costly path: one ring event per message)
#
# Modes, every one once per round, ROUNDS rounds, medians [min, max]:
#   none     no agent
#   floor    an empty tp_btf program on sock_send_length/sock_recv_length
#   run      causeway run --hooks sampled --no-udp: the agent, no per-call
#            program attached (the baseline of the two below)
#   traces   the same with --traces FILE: bpf/msgs.bpf.c attached all along
#   outside  --traces FILE --window 200ms --window-every 1h, measured after
#            that first window closed: detached, nothing should change
#   old      `traces` with OLD_CW=BINARY (another build: before/after)
#
# and, per mode, the syscalls the loop-iteration hook (tp_btf/sys_exit)
# sees: SC_COUNT epoll_wait(timeout 0) on an empty epoll set (a wait: a
# compare and a lookup) and getppid() (any other syscall: a compare),
# CPU per call.
#
#   flock /tmp/cw-heavy.lock bench/run.sh bench_msgs   (ROUNDS=9)
#   RES=/tmp/r ROUNDS=5 bench/bench_msgs.sh, twice (one lock hold each)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd taskset gcc clang
ROUNDS=${ROUNDS:-9}
PP_SIZES=${PP_SIZES:-"128 1024 16384"}
RR_SIZES=${RR_SIZES:-"64 1024"}
PP_BYTES=${PP_BYTES:-200000000}
RR_COUNT=${RR_COUNT:-40000}
OLD_CW=${OLD_CW:-}
MODES=${MODES:-"none floor run traces outside${OLD_CW:+ old}"}
SC_COUNT=${SC_COUNT:-2000000}
case $BUILD in /*) BD=$BUILD ;; *) BD=$CW_ROOT/$BUILD ;; esac
BB=$BD/bench
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/pingpong" "$CW_ROOT/bench/pingpong.c" -lpthread ||
	fail "unable to build pingpong"
gcc -O2 -Wall -o "$BB/reqrep" "$CW_ROOT/bench/reqrep.c" -lpthread ||
	fail "unable to build reqrep"
gcc -O2 -Wall -o "$BB/floor" "$CW_ROOT/bench/floor.c" -lbpf ||
	fail "unable to build the floor loader"
# sysloop KIND N: CPU ns per syscall (epoll: epoll_wait with timeout 0
# on an empty set; ppid: getppid), the process's CPU clock.
cat >"$BB/sysloop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct epoll_event ev;
	struct timespec a, b;
	long i, n = argc > 2 ? atol(argv[2]) : 1000000;
	int ep = epoll_create1(0), wait = argc > 1 && !strcmp(argv[1], "epoll");

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (i = 0; i < n; i++)
		if (wait)
			epoll_wait(ep, &ev, 1, 0);
		else
			syscall(SYS_getppid);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
C
gcc -O2 -Wall -o "$BB/sysloop" "$BB/sysloop.c" || fail "unable to build sysloop"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$BD" \
	-c "$CW_ROOT/bench/floor.bpf.c" -o "$BB/floor.bpf.o" ||
	fail "unable to build the floor programs"

# mode_start MODE: what runs beside the workload; sets M_PID ("" none).
mode_start() {
	local log=$T_TMP/mode.log args=
	M_PID=
	: >"$log"
	rm -f "$T_TMP/msgs.csv"
	case $1 in
	none) return 0 ;;
	floor)
		"$BB/floor" "$BB/floor.bpf.o" >"$log" 2>&1 &
		M_PID=$! ;;
	*)
		local cw=$CW
		case $1 in
		traces) args="--traces $T_TMP/msgs.csv" ;;
		old) args="--traces $T_TMP/msgs.csv" cw=$OLD_CW ;;
		outside) args="--traces $T_TMP/msgs.csv --window 200ms --window-every 1h" ;;
		esac
		"$cw" run --hooks sampled --no-udp $args >/dev/null 2>"$log" &
		M_PID=$! ;;
	esac
	bg_pid "$M_PID"
	for _ in $(seq 1 400); do
		if grep -q "attached\|watching with" "$log"; then
			# outside: past the first window, both hooks detached
			[ "$1" = outside ] && sleep 0.5
			return 0
		fi
		kill -0 "$M_PID" 2>/dev/null || fail "$1 exited: $(cat "$log")"
		sleep 0.05
	done
	fail "$1 did not start: $(cat "$log")"
}

mode_stop() {
	[ -n "$M_PID" ] || return 0
	kill -INT "$M_PID"
	wait "$M_PID" 2>/dev/null || fail "mode exited badly: $(cat "$T_TMP/mode.log")"
	grep "traces:" "$T_TMP/mode.log" >&2
	M_PID=
}

ticks() { [ -n "$M_PID" ] && awk '{print $14 + $15}' "/proc/$M_PID/stat" || echo 0; }

# RES=FILE keeps the runs across invocations (rounds split over several
# holds of the lock, each under ~5 minutes); the table is made from all.
res=${RES:-$T_TMP/results}
[ -n "${RES:-}" ] || : >"$res"
for round in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		mode_start "$mode"
		for size in $PP_SIZES; do
			n=$((PP_BYTES / (size + 2048)))
			ns=$(taskset -c 0 "$BB/pingpong" "$size" "$n") ||
				fail "pingpong $size $n failed"
			echo "$mode pp $size $ns 0" >>"$res"
		done
		for size in $RR_SIZES; do
			a0=$(ticks)
			ns=$(taskset -c 0 "$BB/reqrep" "$size" "$RR_COUNT") ||
				fail "reqrep $size failed"
			a1=$(ticks)
			# the agent's own CPU (reading the ring, writing the
			# file) per round trip, from its clock ticks
			echo "$mode rr $size $ns $(( (a1 - a0) * 1000000000 / $(getconf CLK_TCK) / RR_COUNT ))" >>"$res"
		done
		for sc in epoll ppid; do
			ns=$(taskset -c 0 "$BB/sysloop" "$sc" "$SC_COUNT") ||
				fail "sysloop $sc failed"
			echo "$mode sc$sc 0 $ns 0" >>"$res"
		done
		echo "round $round $mode: $(grep -c "^$mode " "$res") runs" >&2
		mode_stop
	done
done

nr=$(awk '$1 == "none" && $2 == "pp"' "$res" | wc -l)
nr=$((nr / $(echo $PP_SIZES | wc -w)))
shared=$(uptime | sed 's/.*load average: //')
cat <<EOF
<!-- bench_msgs -->
## Per-message observations for traces (\`bench/bench_msgs.sh\`)

Command: \`flock /tmp/cw-heavy.lock bench/run.sh bench_msgs\`; here $nr
rounds$([ -n "${RES:-}" ] && echo ", kept in RES=FILE across invocations of \`RES=FILE ROUNDS=$ROUNDS bench/bench_msgs.sh\` (one lock hold each)").
What \`causeway run --traces\` and timing windows attach (bpf/msgs.bpf.c:
tp_btf on sock_send_length, sock_recv_length and inet_sock_set_state;
one ring event per message, aggregated per socket in the kernel), as CPU
per operation pinned to CPU 0 (\`taskset -c 0\`), every mode once per
round; median [min, max], and the median against no agent.
*pingpong*: bench/pingpong.c, a one-way loopback stream, CPU per send+recv
pair (N = $PP_BYTES / (S + 2048)); the message goes on, the programs'
cheap path.  *reqrep*: bench/reqrep.c, request-reply on loopback, CPU per
round trip of S bytes each way ($RR_COUNT round trips): two sends and two
recvs, each a new message, the costly path.  Modes: *floor* an empty
tp_btf program on the send and recv hooks; *run* \`causeway run --hooks
sampled --no-udp\`, no per-call program attached; *traces* the same with
\`--traces FILE\` (msgs attached all along); *outside* \`--traces FILE
--window 200ms --window-every 1h\` measured after that window closed
(detached)$([ -n "$OLD_CW" ] && echo "; *old* *traces* with OLD_CW=$OLD_CW").
*epoll_wait(0)*, *getppid*: CPU per syscall ($SC_COUNT of them, pinned),
what the loop-iteration hook (tp_btf/sys_exit, attached with the others)
adds to a wait (a compare and a lookup) and to any other syscall (a
compare).  Load average at the end: $shared (the machine was shared
with other helpers; compare rows).

EOF
python3 - "$res" "$RR_COUNT" <<'PY'
import sys, statistics as st
data, agent = {}, {}
for l in open(sys.argv[1]):
    m, kind, s, ns, ag = l.split()
    data.setdefault((m, kind, int(s)), []).append(float(ns))
    agent.setdefault((m, kind, int(s)), []).append(float(ag))
names = [("none", "no agent"), ("floor", "floor: empty tp_btf on send/recv"),
         ("run", "run, no per-call program"),
         ("traces", "run --traces: msgs attached"),
         ("outside", "run --traces, outside its window"),
         ("old", "run --traces, OLD_CW's build")]
cols = sorted({(k[1], k[2]) for k in data},
              key=lambda c: (c[0] != "pp", c[0].startswith("sc"), c[0], c[1]))
def lab(c):
    if c[0].startswith("sc"):
        return "epoll_wait(0)" if c[0] == "scepoll" else "getppid"
    s = "%d B" % c[1] if c[1] < 1024 else "%d KiB" % (c[1] // 1024)
    return ("pingpong " if c[0] == "pp" else "reqrep ") + s
print("| mode | " + " | ".join(lab(c) for c in cols) + " |")
print("|---|" + "---|" * len(cols))
for m, name in names:
    cells = []
    for c in cols:
        xs, base = data.get((m,) + c), data.get(("none",) + c)
        if not xs:
            cells.append("-")
            continue
        med = st.median(xs)
        pct = (med / st.median(base) - 1) * 100 if base else 0
        cells.append("%.0f ns [%.0f, %.0f] %+.1f%%" % (med, min(xs), max(xs), pct))
    print("| %s | %s |" % (name, " | ".join(cells)))
print()
def med(m, c):
    return st.median(data[(m,) + c])
for c in cols:
    if ("traces",) + c not in data or ("run",) + c not in data:
        continue
    calls = 2 if c[0] == "pp" else 1 if c[0].startswith("sc") else 4
    line = "- %s: traces against run %+.0f ns per call" % (
        lab(c), (med("traces", c) - med("run", c)) / calls)
    if ("old",) + c in data:
        line += " (OLD_CW's %+.0f)" % ((med("old", c) - med("run", c)) / calls)
    if ("floor",) + c in data and ("none",) + c in data:
        line += " (floor against none %+.0f)" % (
            (med("floor", c) - med("none", c)) / calls)
    if c[0] == "rr":
        line += "; the agent's own CPU %.0f ns per round trip (4 messages)" % (
            st.median(agent[("traces",) + c]))
    if ("outside",) + c in data:
        line += "; outside against run %+.1f%%" % (
            (med("outside", c) / med("run", c) - 1) * 100)
    print(line)
PY
echo "<!-- /bench_msgs -->"
