#!/bin/bash
# The agent's UDP cost on its own: the cgroup_skb programs that count UDP
# per (socket, peer) run for every packet, so they are priced per
# datagram.  bench/pingpong.c -u, pinned to one CPU (taskset -c 0): one
# thread doing N sendto() of an S-byte datagram over loopback and the
# recvfrom() that takes it, in turn; getrusage CPU per pair.  Rows: no
# agent; the agent's default (--hooks sampled, outside a window) with
# --no-udp (no cgroup_skb program); the default with them; with CW_BASE
# set to another build's causeway, that build's default in the same rounds.
# Every mode once per round, ROUNDS_PP rounds; medians with min/max.
#
#   bench/run.sh bench_agent_udp   (ROUNDS_PP=9 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd taskset gcc python3
ROUNDS_PP=${ROUNDS_PP:-9}
SIZES=${SIZES:-"128 1024 16384"}
# Bytes per run: a few tenths of a second at every size.
PP_BYTES=${PP_BYTES:-200000000}
case $BUILD in /*) BD=$BUILD ;; *) BD=$CW_ROOT/$BUILD ;; esac
BB=$BD/bench
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/pingpong" "$CW_ROOT/bench/pingpong.c" -lpthread ||
	fail "unable to build pingpong"

# pp_start MODE: the agent beside pingpong; sets PP_PID ("" for none).
pp_start() {
	local log=$T_TMP/pp.log args= cw=$CW
	PP_PID=
	: >"$log"
	case $1 in
	none) return 0 ;;
	noudp) args="--no-udp" ;;
	udp) args= ;;
	udp-base) cw=$CW_BASE ;;
	esac
	mkdir -p "$T_TMP/pp"
	"$cw" run --hooks sampled $args -o "$T_TMP/pp" >/dev/null 2>"$log" &
	PP_PID=$!
	bg_pid "$PP_PID"
	for _ in $(seq 1 400); do
		grep -q "watching with" "$log" && return 0
		kill -0 "$PP_PID" 2>/dev/null || fail "$1 exited: $(cat "$log")"
		sleep 0.05
	done
	fail "$1 did not start: $(cat "$log")"
}

pp_stop() {
	[ -n "$PP_PID" ] || return 0
	kill -INT "$PP_PID"
	wait "$PP_PID" 2>/dev/null
	PP_PID=
}

MODES="none noudp udp"
[ -n "${CW_BASE:-}" ] && MODES="$MODES udp-base"
pp=$T_TMP/pingpong
: >"$pp"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS_PP"); do
	for mode in $MODES; do
		pp_start "$mode"
		for size in $SIZES; do
			n=$((PP_BYTES / (size + 4096)))
			ns=$(taskset -c 0 "$BB/pingpong" -u "$size" "$n") ||
				fail "pingpong -u $size $n failed"
			echo "$mode $size $ns" >>"$pp"
			echo "round $round $mode $size: $ns ns" >&2
		done
		pp_stop
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

cat <<EOF
<!-- bench_agent_udp -->
## Agent overhead on UDP (\`bench/bench_agent_udp.sh\`)

Command: \`ROUNDS_PP=$ROUNDS_PP bench/run.sh bench_agent_udp\`$([ -n "${CW_BASE:-}" ] &&
	echo " with \`CW_BASE\` set to the build before the change").
\`bench/pingpong.c -u\` pinned to CPU 0 (\`taskset -c 0\`): two loopback
UDP sockets, one thread doing N \`sendto()\` of an S-byte datagram and the
\`recvfrom()\` that takes it, in turn (N = $PP_BYTES / (S + 4096)); the
figure is the process's CPU time (getrusage, user + sys) per pair.
$ROUNDS_PP rounds, every mode once per round; median, [min, max]; the
percentage is the median against no agent.  The agent is \`causeway run
--hooks sampled\` (the agent's default) outside a timing window, so no
per-call program runs: the difference between its two rows is the
cgroup_skb UDP counters alone (egress on the sendto, ingress on the
delivery: two program runs and a hash update each per pair).  Load
average before and after: $load0 / $load1.

EOF
python3 - "$pp" <<'PY'
import sys, statistics as st
data = {}
for l in open(sys.argv[1]):
    m, s, ns = l.split()
    data.setdefault((m, int(s)), []).append(float(ns))
names = [("none", "no agent"), ("noudp", "default, --no-udp"),
         ("udp", "default (UDP counted)"),
         ("udp-base", "default (UDP counted), base build (CW_BASE)")]
sizes = sorted({k[1] for k in data})
def lab(s):
    return "%d B" % s if s < 1024 else "%d KiB" % (s // 1024)
print("| mode | " + " | ".join(lab(s) for s in sizes) + " |")
print("|---|" + "---|" * len(sizes))
for m, name in names:
    if (m, sizes[0]) not in data:
        continue
    cells = []
    for s in sizes:
        xs, base = data.get((m, s)), data.get(("none", s))
        med = st.median(xs)
        pct = (med / st.median(base) - 1) * 100
        cells.append("%.0f ns [%.0f, %.0f] %+.1f%%" % (med, min(xs), max(xs), pct))
    print("| %s | %s |" % (name, " | ".join(cells)))
print()
for m in ("udp", "udp-base"):
    if (m, sizes[0]) in data:
        print("- %s: UDP counters, ns per datagram pair above --no-udp: %s" % (
            m, ", ".join("%s %.0f" % (lab(s), st.median(data[(m, s)]) -
                                      st.median(data[("noudp", s)]))
                         for s in sizes)))
PY
echo
echo "<!-- /bench_agent_udp -->"
