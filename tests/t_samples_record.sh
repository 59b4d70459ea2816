#!/bin/bash
# causeway samples record on a veth pair between two namespaces: the bins of
# a run add up to the interface counters (ip -s link), a paced sender's
# bursts every 100 ms land in the right 1 ms bins, 'bursts' finds them and
# names the connection active in them, list/show/export/plot read the run,
# and the tc hooks are gone after the run.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ip tc python3

A=$(ns_create a)
B=$(ns_create b)
# ns_create runs in a $(...) subshell, where its registration is lost:
# register them here so that the EXIT trap removes them.
T_NETNS+=("$A" "$B")
for n in "$A" "$B"; do
	# No IPv6: router solicitations and MLD would land outside the run.
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
done
ns_link "$A" "$B" 10.77.1.1 10.77.1.2
STORE=$T_TMP/store

cat >"$T_TMP/sink.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8)
while True:
    c, _ = s.accept()
    while c.recv(1 << 16):
        pass
    c.close()
PY
# BURSTS bursts of SIZE bytes, one every GAP seconds, on one connection.
cat >"$T_TMP/pacer.py" <<'PY'
import socket, sys, time
host, port, n, size, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b"x" * size
t0 = time.monotonic() + 0.05
for i in range(n):
    d = t0 + i * gap - time.monotonic()
    if d > 0:
        time.sleep(d)
    s.sendall(buf)
s.close()
PY

ip netns exec "$B" python3 "$T_TMP/sink.py" 10.77.1.2 5001 &
bg_pid $!
wait_port "$B" 5001
# Warm the neighbour tables so that no ARP falls outside the run.
ip netns exec "$A" python3 -c 'import socket; socket.create_connection(("10.77.1.2", 5001)).close()'
sleep 0.3

counters() {
	ip -n "$A" -s -j link show dev "$LINK_A" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print(s["rx"]["bytes"], s["tx"]["bytes"])'
}

read -r rx0 tx0 < <(counters)
ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --interval 1ms \
	--samples 3000 --store "$STORE" >"$T_TMP/rec.out" 2>"$T_TMP/rec.err" &
rec=$!
bg_pid $rec
for i in $(seq 100); do grep -q recording "$T_TMP/rec.err" && break; sleep 0.05; done
grep -q recording "$T_TMP/rec.err" || fail "the recorder did not start: $(cat "$T_TMP/rec.err")"
tc -n "$A" filter show dev "$LINK_A" ingress | grep -q bpf || fail "no ingress hook during the run"
tc -n "$A" filter show dev "$LINK_A" egress | grep -q bpf || fail "no egress hook during the run"
ip netns exec "$A" python3 "$T_TMP/pacer.py" 10.77.1.2 5001 10 262144 0.1
wait $rec || fail "record failed: $(cat "$T_TMP/rec.err")"
read -r rx1 tx1 < <(counters)
RUN=$(cat "$T_TMP/rec.out")
[ -f "$RUN" ] || fail "no run file: '$RUN'"
note "run: $RUN ($(stat -c %s "$RUN") bytes)"

# The hooks and the clsact qdisc we added are gone.
tc -n "$A" filter show dev "$LINK_A" ingress | grep -q bpf && fail "ingress hook left behind"
tc -n "$A" filter show dev "$LINK_A" egress | grep -q bpf && fail "egress hook left behind"
tc -n "$A" qdisc show dev "$LINK_A" | grep -q clsact && fail "clsact left behind"

"$CW" samples export "$RUN" --format json -o "$T_TMP/run.json" || fail "export json"
read -r in out < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
print(t["bytes_in"] + t["bytes_in_x"], t["bytes_out"] + t["bytes_out_x"])' "$T_TMP/run.json")
note "ip -s link: rx $((rx1 - rx0)) tx $((tx1 - tx0)); bins: in $in out $out"
check_within "bytes in vs rx counter" "$in" $((rx1 - rx0)) 0.5
check_within "bytes out vs tx counter" "$out" $((tx1 - tx0)) 0.5

# Ten bursts, 100 bins apart.
"$CW" samples export "$RUN" --format csv -o "$T_TMP/run.csv" || fail "export csv"
python3 - "$T_TMP/run.csv" <<'PY' || fail "burst pattern not where it was sent"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
busy = [int(r["bin"]) for r in rows if int(r["bytes_out"]) >= 50000]
groups = []
for b in busy:
    if groups and b - groups[-1][-1] < 20:
        groups[-1].append(b)
    else:
        groups.append([b])
starts = [g[0] for g in groups]
gaps = [b - a for a, b in zip(starts, starts[1:])]
print("-- burst starts (bins):", starts)
print("-- gaps (bins):", gaps)
# A burst's first or last segments can fall in bins below the busy
# threshold (the sender was descheduled mid-burst): a burst owns the bins
# from one before its first busy bin to 20 after its last, the same reach
# that groups busy bins into one burst, far from the next (100 apart).
near = set(x for g in groups for x in range(g[0] - 1, g[-1] + 20))
sent = sum(int(r["bytes_out"]) for r in rows if int(r["bin"]) in near)
print("-- bytes in burst bins:", sent, "of", 10 * 262144, "payload")
assert len(groups) == 10, "want 10 bursts, got %d" % len(groups)
assert all(90 <= g <= 110 for g in gaps), gaps
assert sent >= 10 * 262144
PY

# bursts: the same ten at 1 Gbit/s, attributed to the connection that was
# active; one that ended before the run is not.
start_ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start_ns"])' "$T_TMP/run.json")
cat >"$T_TMP/conns.json" <<EOF2
{"host":"a","laddr":"10.77.1.1","lport":40000,"raddr":"10.77.1.2","rport":5001,"bytes_out":2621440,"bytes_in":0,"first_ns":$start_ns,"last_ns":$((start_ns + 2000000000)),"process":{"pid":1234,"comm":"pacer"}}
{"host":"a","laddr":"10.77.1.1","lport":40001,"raddr":"10.77.1.2","rport":5001,"bytes_out":100,"bytes_in":0,"first_ns":$((start_ns + 1000)),"last_ns":$((start_ns + 2000000000)),"process":{"pid":99,"comm":"trickle"}}
{"host":"a","laddr":"10.77.1.1","lport":40002,"raddr":"10.77.1.2","rport":5001,"bytes_out":99999999,"bytes_in":0,"first_ns":1,"last_ns":$((start_ns - 1000000000)),"process":{"pid":7,"comm":"gone"}}
EOF2
"$CW" samples bursts "$RUN" --link-speed 1G --threshold 50 \
	--conns "$T_TMP/conns.json" -j >"$T_TMP/bursts.json" || fail "bursts"
python3 - "$T_TMP/bursts.json" <<'PY' || fail "bursts output"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["egress"]
starts = [b["first_bin"] for b in e["bursts"]]
merged = [s for i, s in enumerate(starts) if i == 0 or s - starts[i - 1] >= 20]
print("-- bursts:", e["count"], "lengths", e["length_bins"], "gaps", e["gap_bins"])
assert len(merged) == 10, merged
for b in e["bursts"]:
    names = [x["comm"] for x in b["edges"]]
    assert names[:2] == ["pacer", "trickle"], names
    assert "gone" not in names
    assert b["max_flows"] >= 1
print("-- top edge of burst 1:", e["bursts"][0]["edges"][0])
PY
"$CW" samples bursts "$RUN" --link-speed 1G >/dev/null || fail "bursts text"

# list, show, plot.
"$CW" samples list --store "$STORE" | grep -q "$(basename "$RUN")" || fail "list"
CAUSEWAY_SAMPLES_DIR=$STORE "$CW" samples show latest | grep -q "bins:        3000 of 3000" || fail "show"
"$CW" samples plot "$RUN" -o "$T_TMP/run.svg" || fail "plot"
python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert len(d.getElementsByTagName("polyline")) == 7' \
	"$T_TMP/run.svg" || fail "plot is not the SVG we expect"
note "svg: $(stat -c %s "$T_TMP/run.svg") bytes"
echo "PASS"
