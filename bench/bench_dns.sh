#!/bin/bash
# What the DNS capture (--dns, bpf/dns.bpf.c) costs per packet: its
# cgroup_skb ingress program runs for every datagram and segment a socket
# receives, and its egress twin for every one a socket sends (queries are
# noted, so that only answers to them count); both leave at once for what
# is not UDP to or from port 53.  Priced
# as DESIGN.md says, CPU time per operation: bench/pingpong.c pinned to one
# CPU (taskset -c 0), UDP (-u: a sendto and the recvfrom that takes it,
# one ingress run per pair) and a TCP stream (a send and a recv of S
# bytes: one ingress run per segment, and per ACK).  The program alone,
# attached and detached in turn (the agent's own cost is bench_agent's):
# each round runs both modes back to back, in alternating order, and the
# figure is the median of the rounds' differences, which a machine shared
# with other work needs (its load moves between rounds more than the
# program costs).
#
#   bench/run.sh bench_dns   (ROUNDS_PP=61 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd taskset gcc clang bpftool python3
ROUNDS_PP=${ROUNDS_PP:-61}
PP_BYTES=${PP_BYTES:-60000000}
case $BUILD in /*) BD=$BUILD ;; *) BD=$CW_ROOT/$BUILD ;; esac
BB=$BD/bench
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/pingpong" "$CW_ROOT/bench/pingpong.c" -lpthread ||
	fail "unable to build pingpong"

# The capture alone, with no agent: bpf/dns.bpf.c loaded by bpftool and
# attached to the cgroup v2 root (as the agent attaches it) or detached,
# in turn, so rounds are quick and each pairs the two modes back to back.
CG=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
[ -n "$CG" ] || skip "no cgroup v2 mount"
mount | grep -q " /sys/fs/bpf " || skip "bpffs is not mounted on /sys/fs/bpf"
PIN=/sys/fs/bpf/cw-bench-dns-$$
OBJ=$BD/bpf/dns.bpf.o
[ -f "$OBJ" ] || fail "no $OBJ: build first"
clang -g -O2 -target bpf -I"$BD" -c "$CW_ROOT/bench/dns_floor.bpf.c" \
	-o "$BB/dns_floor.bpf.o" || fail "unable to build the floor"
mkdir "$PIN" || fail "unable to make $PIN"
on_exit rm -rf "$PIN"
bpftool prog loadall "$OBJ" "$PIN/dns" || fail "unable to load $OBJ"
bpftool prog loadall "$BB/dns_floor.bpf.o" "$PIN/floor" ||
	fail "unable to load the floor"
# Both hooks, as the agent attaches them: egress notes queries.
for m in dns floor; do
	for h in ingress egress; do
		on_exit bpftool cgroup detach "$CG" "$h" pinned \
			"$PIN/$m/cw_dns_$h"
	done
done
prog_on() {
	local h
	for h in egress ingress; do
		bpftool cgroup attach "$CG" "$h" pinned "$PIN/$1/cw_dns_$h" \
			multi || fail "unable to attach $1 ($h) to $CG"
	done
}
prog_off() {
	local h
	for h in ingress egress; do
		bpftool cgroup detach "$CG" "$h" pinned "$PIN/$1/cw_dns_$h" ||
			fail "unable to detach $1 ($h)"
	done
}

# Workloads: "name:flag:size".
WORK="udp-128:-u:128 tcp-1k::1024 tcp-16k::16384"
pp=$T_TMP/pingpong
: >"$pp"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS_PP"); do
	order="none floor dns"
	[ $((round % 2)) -eq 0 ] && order="dns floor none"
	for mode in $order; do
		[ "$mode" != none ] && prog_on "$mode"
		for w in $WORK; do
			IFS=: read -r name flag size <<<"$w"
			n=$((PP_BYTES / (size + 4096)))
			ns=$(taskset -c 0 "$BB/pingpong" $flag "$size" "$n") ||
				fail "pingpong $flag $size $n failed"
			echo "$round $mode $name $ns" >>"$pp"
			echo "round $round $mode $name: $ns ns" >&2
		done
		[ "$mode" != none ] && prog_off "$mode"
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

cat <<EOF2
<!-- bench_dns -->
## The DNS capture's cost (\`bench/bench_dns.sh\`)

Command: \`ROUNDS_PP=$ROUNDS_PP bench/run.sh bench_dns\`.
\`bench/pingpong.c\` pinned to CPU 0 (\`taskset -c 0\`), N = $PP_BYTES /
(S + 4096) operations: UDP (\`-u\`: a \`sendto()\` of S bytes and the
\`recvfrom()\` that takes it: an egress and an ingress run per pair) and
a TCP stream (a \`send()\` of S bytes and the \`recv()\`s that take it:
runs per segment and per ACK); the figure is the process's CPU time
(getrusage, user + sys) per pair.  bpf/dns.bpf.c's two programs (what
\`--dns\` attaches: ingress, and egress noting queries), empty programs at
the same hooks (bench/dns_floor.bpf.c: what any cgroup_skb program costs
there, as the agent's UDP counters pay it already by default) or nothing
is attached to the cgroup v2 root, in turn:
the three modes back to back in each of $ROUNDS_PP rounds, in alternating
order.  No
packet here is DNS, as almost none is on a host: the program leaves after
reading the socket's protocol (TCP), or the IP and UDP headers (UDP).
Medians, [min, max], and the median of the rounds' differences (each
round pairs the modes, so the machine's load, which moves between rounds,
mostly cancels).  Load average before and after: $load0 / $load1.

EOF2
python3 - "$pp" <<'PY'
import sys, statistics as st
data, rounds = {}, {}
for l in open(sys.argv[1]):
    r, m, w, ns = l.split()
    data.setdefault((m, w), []).append(float(ns))
    rounds.setdefault((int(r), w), {})[m] = float(ns)
works = ["udp-128", "tcp-1k", "tcp-16k"]
print("| | " + " | ".join(works) + " |")
print("|---|" + "---|" * len(works))
for m, name in (("none", "nothing attached"),
                ("floor", "an empty program (the floor)"),
                ("dns", "the capture")):
    print("| %s | %s |" % (name, " | ".join(
        "%.0f ns [%.0f, %.0f]" % (st.median(data[(m, w)]),
                                  min(data[(m, w)]), max(data[(m, w)]))
        for w in works)))
for a, b, name in (("dns", "none", "capture - nothing, per round"),
                   ("floor", "none", "floor - nothing: the hook"),
                   ("dns", "floor", "capture - floor: its own work")):
    cells = []
    for w in works:
        d = [v[a] - v[b] for (r, x), v in rounds.items() if x == w]
        base = st.median(data[("none", w)])
        cells.append("%+.0f ns (%+.1f%%) [%+.0f, %+.0f]" % (
            st.median(d), st.median(d) / base * 100, min(d), max(d)))
    print("| %s | %s |" % (name, " | ".join(cells)))
PY
echo
echo "<!-- /bench_dns -->"
