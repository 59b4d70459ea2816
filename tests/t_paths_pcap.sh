#!/bin/bash
# Messages rebuilt from a packet capture: a pcap (written here packet by
# packet) of a 3-tier service over TCP, one connection per tier; a message
# starts when a connection's direction flips.  The path comes back with
# nodes named by address and the delay at the middle tier.
. "$(dirname "$0")/lib.sh"
need_cmd python3

python3 - "$T_TMP/cap.pcap" <<'PY' || fail "unable to write the pcap"
import random, socket, struct, sys
random.seed(5)
C, W, A = "10.77.9.1", "10.77.9.2", "10.77.9.3"
pkts = []
def tcp(t, src, sport, dst, dport, payload):
    tcph = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
    body = tcph + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0, 64, 6, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    eth = b"\x00" * 12 + b"\x08\x00"
    pkts.append((t, eth + ip + body))
t = 1.0
for i in range(800):
    t += random.expovariate(100.0)
    cport, wport = 40000 + i % 20000, 50000 + i % 10000
    t1 = t + 0.002 * random.uniform(0.8, 1.2)          # web works 2 ms
    t2 = t1 + 0.0002 + 0.004 * random.uniform(0.8, 1.2)  # app works 4 ms
    t3 = t2 + 0.0003
    tcp(t, C, cport, W, 80, b"GET /")
    tcp(t + 0.00001, C, cport, W, 80, b"more")  # same direction: same message
    tcp(t1, W, wport, A, 8080, b"query")
    tcp(t2, A, 8080, W, wport, b"rows")
    tcp(t3, W, 80, C, cport, b"page")
pkts.sort()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for ts, p in pkts:
        f.write(struct.pack("<IIII", int(ts), int((ts % 1) * 1e6), len(p), len(p)))
        f.write(p)
PY
"$CW" paths --json "$T_TMP/cap.pcap" >"$T_TMP/p.json" || fail "paths on a pcap"
"$CW" paths "$T_TMP/cap.pcap"
pyjson '
import json, sys
p = json.load(open(sys.argv[1]))["paths"]
assert len(p) == 1 and p[0]["root"] == "10.77.9.1", p
hops = {(h["from"], h["to"]): h for h in p[0]["hops"]}
h = hops[("10.77.9.2", "10.77.9.3")]
got = h["delay_us"]["median"]
print("delay at web before app: %.0f us (want 2000)" % got)
assert abs(got - 2000) <= 400 and h["messages"] >= 700, h
assert hops[("10.77.9.3", "10.77.9.2")]["reply"]
' "$T_TMP/p.json" || fail "path from the pcap is wrong"
