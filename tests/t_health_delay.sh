#!/bin/bash
# Exchange times across a wire of known delay (docs/edge-health.md,
# "Exchange times"): the client's time rises by the round trip the wire
# adds, the server's does not move, and client minus server (the network
# and queueing time) rises by the same ~10 ms.
#
# The issue asks for the delay to be made by a tc program that sets each
# packet's earliest departure time under the fq qdisc; the kernel here
# has neither sch_fq nor netem (only htb, tbf, ingress and fifo), so the
# delay is tests/lib/delaywire.py instead: two TAP devices, one in each
# test host, and a process that carries every frame 5 ms after it left
# (10.4 to 10.6 ms of RTT).
#
# Both paths in one run, side by side: the client host A reaches the
# server host B over a veth (direct) and over the wire (delayed), one
# client and one server process each (so each path is an edge), the same
# 150 exchanges on both (a 100 B request, the server sleeps 2 ms, a
# 2,000 B reply, every 30 ms).  Checked at the ends' records, then end to
# end at the two edges of the graph.
#
# AGENT_ARGS (default --window 1h: every exchange in one window) and
# MIN_TIMED (default 148 of 150) are set by t_health_delay_sampled.sh:
# the agent's default mode, windows of 1 s every 2 s.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3
XH="python3 $CW_ROOT/tests/lib/xchg_hist.py"

DELAY_MS=5
A=$(ns_create a)
B=$(ns_create b)
ns_link "$A" "$B" 10.77.8.1 10.77.8.2
delaywire_start "$A" "$B" "$DELAY_MS"

RR="python3 $CW_ROOT/tests/lib/reqrep.py"
# One server process per path, so that each path is an edge of its own.
ip netns exec "$B" $RR serve 10.77.8.2 7070 100 0.002 2000 &
SRV_DIRECT=$!
bg_pid $SRV_DIRECT
ip netns exec "$B" $RR serve 10.77.9.2 7070 100 0.002 2000 &
SRV_DELAYED=$!
bg_pid $SRV_DELAYED
for i in $(seq 1 100); do
	[ "$(ip netns exec "$B" ss -Htln "sport = :7070" | wc -l)" -ge 2 ] && break
	sleep 0.05
done

out=$T_TMP/out
# shellcheck disable=SC2086
agent_start "$out" ${AGENT_ARGS:---window 1h}
ip netns exec "$A" $RR serial 10.77.8.2 7070 150 100 2000 0.03 &
c1=$!
ip netns exec "$A" $RR serial 10.77.9.2 7070 150 100 2000 0.03 ||
	fail "client failed"
wait $c1 || fail "client failed"
sleep 0.5
agent_stop "$out" >/dev/null

# The ends by address: the client's raddr, the server's laddr.
python3 - "$out/conns.jsonl" "$(ns_inode "$A")" "$(ns_inode "$B")" \
	"$CW_ROOT/tests/lib/xchg_hist.py" "${MIN_TIMED:-148}" <<'PY' ||
import json, subprocess, sys
conns, ns_a, ns_b, xh, min_timed = sys.argv[1:]
def q(ns, addr_key, addr, port_key):
    # xchg_hist.py selects by port; split the file by address first.
    path = conns + "." + addr
    with open(path, "w") as f:
        for l in open(conns):
            r = json.loads(l)
            if r.get(addr_key) == addr:
                f.write(l)
    args = ["python3", xh, path, "--netns", ns, port_key, "7070"]
    return json.loads(subprocess.run(args, capture_output=True, text=True,
                                     check=True).stdout)
res = {}
for path, addr in (("direct", "10.77.8.2"), ("delayed", "10.77.9.2")):
    res[path] = {"client": q(ns_a, "raddr", addr, "--rport"),
                 "server": q(ns_b, "laddr", addr, "--lport")}
    for side in ("client", "server"):
        r = res[path][side]
        print("%-8s %-7s count %3d pipelined %d  p50 %7.3f  p90 %7.3f  p99 %7.3f ms"
              % (path, side, r["count"], r["pipelined"], r["p50"] / 1e6,
                 r["p90"] / 1e6, r["p99"] / 1e6))
bad = []
for path in res:
    for side in ("client", "server"):
        r = res[path][side]
        if not int(min_timed) <= r["count"] <= 150 or r["pipelined"]:
            bad.append("%s %s: %d timed, %d pipelined"
                       % (path, side, r["count"], r["pipelined"]))
d, w = res["direct"], res["delayed"]
# The medians are held to it: the wire is a Python process on a shared
# machine, whose extra delay under load shows in the upper quantiles
# (printed, not checked).
for p in ("p50", "p90"):
    rise_c = (w["client"][p] - d["client"][p]) / 1e6
    rise_s = (w["server"][p] - d["server"][p]) / 1e6
    net_d = (d["client"][p] - d["server"][p]) / 1e6
    net_w = (w["client"][p] - w["server"][p]) / 1e6
    print("%s: client +%.3f ms, server %+.3f ms, network %.3f -> %.3f ms (+%.3f)"
          % (p, rise_c, rise_s, net_d, net_w, net_w - net_d))
    if p != "p50":
        continue
    # Two delays and the wire's own carrying: 10.4-10.6 ms of RTT.
    if not 9.5 <= rise_c <= 12.0:
        bad.append("%s client rose %.3f ms, not ~10" % (p, rise_c))
    if abs(rise_s) > max(0.1 * d["server"][p] / 1e6, 0.2):
        bad.append("%s server moved %.3f ms" % (p, rise_s))
    if not 9.5 <= net_w - net_d <= 12.0:
        bad.append("%s network rose %.3f ms, not ~10" % (p, net_w - net_d))
print("\n".join("bad: " + b for b in bad))
sys.exit(1 if bad else 0)
PY
	fail "delay not where it belongs"

# End to end: each path's edge in the graph (edges.json), where the
# network time is client minus server quantile by quantile
# (docs/edge-health.md, "The network-time rule").
read -r nd cd sd <<<"$(edge "$out" --server-pid "$SRV_DIRECT" \
	network_p50_ns client_p50_ns server_p50_ns)"
read -r nw cw sw <<<"$(edge "$out" --server-pid "$SRV_DELAYED" \
	network_p50_ns client_p50_ns server_p50_ns)"
python3 - "$nd" "$cd" "$sd" "$nw" "$cw" "$sw" <<'PY' || fail "edges' network time"
import sys
nd, cd, sd, nw, cw, sw = (int(x) / 1e6 for x in sys.argv[1:])
print("edges p50: direct client %.3f server %.3f network %.3f ms; "
      "delayed client %.3f server %.3f network %.3f ms (+%.3f)"
      % (cd, sd, nd, cw, sw, nw, nw - nd))
sys.exit(0 if 9.5 <= nw - nd <= 12.0 and abs(sw - sd) <= max(0.1 * sd, 0.2)
         else 1)
PY
echo ok
