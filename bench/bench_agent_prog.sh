#!/bin/bash
# The per-call programs' own run time, from the kernel's program statistics
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt of each program), while
# bench/pingpong.c sends and receives over loopback pinned to one CPU.
# Finer than CPU per send+recv pair: the whole path's noise (±5% of ~3.5 us
# a pair on a quiet machine, ±10% shared) is larger than the 25 ns a call
# the issue aims at, while a program's own time varies by a few ns.  The
# statistics cost the same two clock reads for every program, so the floor
# (an empty program on the same hooks, bench/floor.bpf.c) carries them:
# read the agent's programs against it.  Rows: the floor; `causeway run
# --hooks always`; with CW_BASE set to another build's causeway, that
# build's --hooks always in the same rounds; and the UDP counters
# (cw_udp_egress + cw_udp_ingress, cgroup_skb) while pingpong -u sends
# datagrams of the same size (their own time, against no floor: there is
# no empty cgroup_skb row).  PARTS="lookup clock ..." adds a row per piece
# of the per-call work, each an otherwise empty program on the same hooks
# (bench/floor.bpf.c built with -DFLOOR_PART), to say where the time goes;
# UDP=0 drops the UDP row.  PP_FLAGS=-r runs pingpong's request/response
# mode instead of a plain stream: every call then starts a message.
#
#   bench/run.sh bench_agent_prog   (ROUNDS=5, SIZE=128 by default)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd taskset gcc clang bpftool python3
ROUNDS=${ROUNDS:-5}
SIZE=${SIZE:-128}
N=${N:-200000}
case $BUILD in /*) BD=$BUILD ;; *) BD=$CW_ROOT/$BUILD ;; esac
BB=$BD/bench
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/pingpong" "$CW_ROOT/bench/pingpong.c" -lpthread ||
	fail "unable to build pingpong"
gcc -O2 -Wall -o "$BB/floor" "$CW_ROOT/bench/floor.c" -lbpf ||
	fail "unable to build the floor loader"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$BD" \
	-c "$CW_ROOT/bench/floor.bpf.c" -o "$BB/floor.bpf.o" ||
	fail "unable to build the floor programs"
PARTS=${PARTS:-}
for p in $PARTS; do
	P=P_$(echo "$p" | tr a-z A-Z)
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$BD" -DFLOOR_PART=$P \
		-c "$CW_ROOT/bench/floor.bpf.c" -o "$BB/floor-$p.bpf.o" ||
		fail "unable to build the floor part '$p'"
done

stats0=$(cat /proc/sys/kernel/bpf_stats_enabled)
on_exit "echo $stats0 >/proc/sys/kernel/bpf_stats_enabled"
echo 1 >/proc/sys/kernel/bpf_stats_enabled

MODES="floor always"
[ -n "${CW_BASE:-}" ] && MODES="$MODES always-base"
for p in $PARTS; do MODES="$MODES part-$p"; done
[ "${UDP:-1}" = 1 ] && MODES="$MODES udp"

# prog_ns PID NAMES...: "runs ns_per_run" summed over the named programs
# that PID holds.
prog_ns() {
	python3 - "$@" <<'PY'
import glob, json, re, subprocess, sys
pid, names = sys.argv[1], set(sys.argv[2:])
held = set()
for f in glob.glob("/proc/%s/fdinfo/*" % pid):
    try:
        m = re.search(r"^prog_id:\s*(\d+)", open(f).read(), re.M)
    except OSError:
        continue
    if m:
        held.add(int(m.group(1)))
ps = [p for p in json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
      if p["id"] in held and p.get("name") in names]
runs = sum(p.get("run_cnt", 0) for p in ps)
ns = sum(p.get("run_time_ns", 0) for p in ps)
print(runs, ns / runs if runs else 0)
PY
}

res=$T_TMP/res
: >"$res"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		log=$T_TMP/log.$mode
		case $mode in
		floor)
			"$BB/floor" "$BB/floor.bpf.o" >"$log" 2>&1 &
			names="floor_send floor_recv" ;;
		part-*)
			"$BB/floor" "$BB/floor-${mode#part-}.bpf.o" >"$log" 2>&1 &
			names="floor_send floor_recv" ;;
		always)
			"$CW" run --hooks always -o "$T_TMP/o" >/dev/null 2>"$log" &
			names="cw_tp_send cw_tp_recv" ;;
		always-base)
			"$CW_BASE" run --hooks always -o "$T_TMP/o" >/dev/null \
				2>"$log" &
			names="cw_tp_send cw_tp_recv" ;;
		udp)
			"$CW" run --hooks sampled -o "$T_TMP/o" >/dev/null 2>"$log" &
			names="cw_udp_egress cw_udp_ingress" ;;
		esac
		pid=$!
		bg_pid $pid
		for _ in $(seq 1 400); do
			grep -q "attached\|watching with" "$log" && break
			sleep 0.05
		done
		taskset -c 0 "$BB/pingpong" $([ $mode = udp ] && echo -u ||
			echo ${PP_FLAGS:-}) \
			"$SIZE" "$N" >/dev/null || fail "pingpong failed"
		read -r runs ns <<<"$(prog_ns $pid $names)"
		kill -INT $pid
		wait $pid 2>/dev/null
		[ "$runs" -ge "$N" ] || fail "$mode: $runs program runs for $N sends"
		echo "$mode $ns" >>"$res"
		echo "round $round $mode: $runs runs, $ns ns a run" >&2
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

cat <<EOF
<!-- bench_agent_prog -->
## Per-call program time (\`bench/bench_agent_prog.sh\`)

Command: \`ROUNDS=$ROUNDS N=$N${PP_FLAGS:+ PP_FLAGS=$PP_FLAGS}${PARTS:+ PARTS="$PARTS"}$([ "${UDP:-1}" = 1 ] || echo " UDP=0") bench/run.sh bench_agent_prog\`$([ -n "${CW_BASE:-}" ] &&
	echo " with \`CW_BASE\` set to the build before the change").
The kernel's program statistics (\`kernel.bpf_stats_enabled\`: run_time_ns
/ run_cnt, send and recv programs together) while \`bench/pingpong.c\`
does $N $([ -n "${PP_FLAGS:-}" ] && echo "request/response exchanges (\`pingpong $PP_FLAGS\`)" || echo sends) of $SIZE B over loopback pinned to CPU 0, $ROUNDS
alternating rounds; median [min, max] ns a run.  Every row includes the
statistics' own clock reads, which the floor (an empty program on the
same hooks) is made of: a row minus the floor is what the program does.
Load average before and after: $load0 / $load1.

EOF
python3 - "$res" <<'PY'
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    m, ns = l.split()
    d.setdefault(m, []).append(float(ns))
names = [("floor", "floor: empty tp_btf"), ("always", "--hooks always"),
         ("always-base", "--hooks always, base build"),
         ("udp", "UDP counters (cgroup_skb), per packet")]
names[3:3] = [(m, "piece: " + m[5:]) for m in d if m.startswith("part-")]
print("| program | ns a run | above the floor |")
print("|---|---|---|")
for m, name in names:
    if m in d:
        xs = d[m]
        print("| %s | %.1f [%.1f, %.1f] | %+.1f |" % (
            name, st.median(xs), min(xs), max(xs),
            st.median(xs) - st.median(d["floor"])))
PY
echo
echo "<!-- /bench_agent_prog -->"
