#!/bin/bash
# RTT and connect time against a link of known delay, and against the
# kernel's own figures (`ss -ti`).  The kernel here has neither netem nor
# sch_fq (whose earliest departure time a tc program could set), so the
# delay is tests/lib/delaywire.py: two TAP devices, one in each test host,
# and a process that carries every frame DELAY ms after it left (5 ms each
# way: an RTT of about 10.5 ms).
#
# A client keeps one connection per family busy for about 8 s (a 100 B
# request and a 2 KB reply every 40 ms) under 0.5 s collections, reading
# `ss -ti` for its end and the server's every 100 ms, then closes.  Each
# record of an established end adds the kernel's srtt of that moment to
# the end's RTT histogram (agent/collect.c): the final record must hold
# exactly the readings its records carried (one per record, bin by bin),
# none under the wire's 2 * DELAY, and its
# median within 10% of the median of ss's (or, when the wire's delay
# wandered on a busy machine, inside the middle half of ss's readings).  Connect time: the
# client's SYN_SENT -> ESTABLISHED, one round trip over the wire, must be
# at least 2*DELAY and at most what connect() took as the client timed it.
# The graph's edge (edges.json) must hold both ends' readings and the one
# connect time.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 ss

DELAY_MS=5
A=$(ns_create a)
B=$(ns_create b)
delaywire_start "$A" "$B" "$DELAY_MS"
ip -n "$A" addr add fd77:9::1/64 dev dwa nodad
ip -n "$B" addr add fd77:9::2/64 dev dwb nodad

cat >"$T_TMP/srv.py" <<'PY'
import socket, sys, threading
def serve(c):
    while True:
        got = b""
        while len(got) < 100:
            b = c.recv(100 - len(got))
            if not b:
                c.close(); return
            got += b
        c.sendall(b"r" * 2000)
def listen(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port)); ls.listen(8)
    while True:
        threading.Thread(target=serve, args=(ls.accept()[0],),
                         daemon=True).start()
for a in sys.argv[2:]:
    threading.Thread(target=listen, args=(a, int(sys.argv[1])),
                     daemon=True).start()
threading.Event().wait()
PY
cat >"$T_TMP/cli.py" <<'PY'
import json, os, socket, subprocess, sys, threading, time
port, secs, ss_srv = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
addr = sys.argv[4]
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
def ss_rtt(cmd, lport, rport):
    # "rtt:10.512/0.3": srtt/rttvar in ms, for the one socket asked.
    out = subprocess.run(cmd + ["-H", "-tin", "sport = :%d and dport = :%d"
                                % (lport, rport)], check=True,
                         capture_output=True, text=True).stdout
    for w in out.split():
        if w.startswith("rtt:"):
            return float(w[4:].split("/")[0])
    return None
s = socket.socket(fam, socket.SOCK_STREAM)
t0 = time.monotonic()
s.connect((addr, port))
connect_s = time.monotonic() - t0
lport = s.getsockname()[1]
samples = {"cli": [], "srv": []}
done = threading.Event()
def sample():
    # What ss -ti says of both ends, every 100 ms while the client runs.
    while not done.wait(0.1):
        for k, cmd, a, b in (("cli", ["ss"], lport, port),
                             ("srv", ss_srv.split(), port, lport)):
            v = ss_rtt(cmd, a, b)
            if v:
                samples[k].append(v)
th = threading.Thread(target=sample)
th.start()
end = time.monotonic() + secs
n = 0
while time.monotonic() < end:
    s.sendall(b"q" * 100)
    got = 0
    while got < 2000:
        got += len(s.recv(2000 - got))
    n += 1
    time.sleep(0.04)
done.set()
th.join()
s.close()
print(json.dumps({"pid": os.getpid(), "lport": lport,
                  "connect_us": connect_s * 1e6,
                  "rounds": n, "ss_ms": samples}))
PY
PORT=7300
ip netns exec "$B" python3 "$T_TMP/srv.py" $PORT 10.77.9.2 fd77:9::2 \
	>"$T_TMP/srv.log" 2>&1 &
bg_pid $!
wait_port "$B" $PORT
# Neighbours resolved first, so the connect time is the handshake alone.
# (a connection each way before the agent starts).
for addr in 10.77.9.2 fd77:9::2; do
	ip netns exec "$A" python3 -c 'import socket, sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), 5).close()' \
		"$addr" $PORT || fail "no path to $addr"
done

out=$T_TMP/out
agent_start "$out" --hooks sampled --interval 500ms
for addr in 10.77.9.2 fd77:9::2; do
	ip netns exec "$A" python3 "$T_TMP/cli.py" $PORT 8 \
		"ip netns exec $B ss" "$addr" >"$T_TMP/cli-$addr.json" &
	echo $! >"$T_TMP/cli-$addr.pid"
done
for addr in 10.77.9.2 fd77:9::2; do
	wait "$(cat "$T_TMP/cli-$addr.pid")" || fail "client failed ($addr)"
done
sleep 0.3
agent_stop "$out" >/dev/null

for addr in 10.77.9.2 fd77:9::2; do
	python3 - "$out/conns.jsonl" "$T_TMP/cli-$addr.json" "$addr" $PORT \
		$DELAY_MS "$out/edges.json" <<'PY' || fail "$addr: see above"
import ipaddress, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cli = json.load(open(sys.argv[2]))
addr = str(ipaddress.ip_address(sys.argv[3]))
port, delay_ms = int(sys.argv[4]), float(sys.argv[5])
errs = []
counts, connect = {}, 0
def end_recs(client):
    rs = [r for r in recs if r["proto"] == "tcp" and (
        (r["role"] == "client" and r["raddr"] == addr and
         r["rport"] == port and r["lport"] == cli["lport"]) if client else
        (r["role"] == "server" and r["laddr"] == addr and
         r["lport"] == port and r["rport"] == cli["lport"]))]
    if not rs:
        sys.exit("no %s end" % ("client" if client else "server"))
    return sorted(rs, key=lambda r: r["seq"])
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]
for client, ss_ms in ((True, cli["ss_ms"]["cli"]),
                      (False, cli["ss_ms"]["srv"])):
    rs = end_recs(client)
    name = "client" if client else "server"
    last = rs[-1]
    rtt = last.get("rtt", {"count": 0, "bins": [], "p50_ns": 0})
    counts[name] = rtt["count"]
    if not last["closed"]:
        errs.append("%s: last record not closed" % name)
    if len(ss_ms) < 10:
        sys.exit("%s: only %d ss readings" % (name, len(ss_ms)))
    # One reading per record that had an srtt.
    want = sum(1 for r in rs if r["srtt_us"] > 0)
    if rtt["count"] != want or want < 4:
        errs.append("%s: %d readings for %d records with an srtt" %
                    (name, rtt["count"], want))
    # Exactly the readings the records carried (srtt_us, the kernel's
    # tcp_sock srtt, which ss reads too), bin by bin (a bin's lower bound:
    # the value's top 6 bits), and none under the wire's two delays.
    want_bins = {}
    for r in rs:
        v = r["srtt_us"] * 1000
        if v:
            sh = max(v.bit_length() - 6, 0)
            want_bins[(v >> sh) << sh] = want_bins.get((v >> sh) << sh, 0) + 1
    got_bins = {low: n for low, n in rtt["bins"]}
    if got_bins != want_bins:
        errs.append("%s: bins %s, the records' srtt_us give %s" %
                    (name, sorted(got_bins.items()),
                     sorted(want_bins.items())))
    if rtt["bins"] and rtt["bins"][0][0] < 2 * delay_ms * 0.97e6:
        errs.append("%s: a reading of %d ns, under the wire's %g ms" %
                    (name, rtt["bins"][0][0], 2 * delay_ms))
    # The median: within 10% of ss's, or, where the wire's delay wandered
    # (a user-space wire on a busy machine), inside the middle half of
    # what ss saw: both are samples of one moving srtt, at other moments.
    ss50 = pct(ss_ms, 0.5) * 1e6
    q1, q3 = pct(ss_ms, 0.25) * 0.97e6, pct(ss_ms, 0.75) * 1.03e6
    if abs(rtt["p50_ns"] - ss50) > 0.1 * ss50 and \
            not q1 <= rtt["p50_ns"] <= q3:
        errs.append("%s: p50 %d ns vs ss srtt p50 %d ns (middle half "
                    "%d-%d)" % (name, rtt["p50_ns"], ss50, q1, q3))
    print("-- %s %s: %d readings, p50 %.2f ms p90 %.2f ms p99 %.2f ms; "
          "ss srtt (%d readings) p50 %.2f ms p90 %.2f ms, %.2f-%.2f ms" %
          (addr, name, rtt["count"], rtt["p50_ns"] / 1e6,
           rtt["p90_ns"] / 1e6, rtt["p99_ns"] / 1e6, len(ss_ms),
           ss50 / 1e6, pct(ss_ms, 0.9), min(ss_ms), max(ss_ms)))
    c = last.get("connect_us", 0)
    if client:
        if not 2 * delay_ms * 1000 <= c <= cli["connect_us"]:
            errs.append("client: connect_us %d, not in [%d, %d] (what "
                        "connect() took)" % (c, 2 * delay_ms * 1000,
                                             cli["connect_us"]))
        print("-- %s client: connect_us %d; connect() took %d us" %
              (addr, c, cli["connect_us"]))
        connect = c
    elif c:
        errs.append("server: connect_us %d, not 0" % c)
# The graph's edge from this client: both ends' readings, one connect.
g = json.load(open(sys.argv[6]))
nodes = {n["id"]: n for n in g["nodes"]}
es = [e for e in g["edges"] if nodes[e["client"]].get("pid") == cli["pid"]]
if len(es) != 1:
    errs.append("graph: %d edges from the client, not 1" % len(es))
else:
    e = es[0]
    if e.get("rtt_count") != counts["client"] + counts["server"]:
        errs.append("graph: rtt_count %s, not %d + %d" % (
            e.get("rtt_count"), counts["client"], counts["server"]))
    if e.get("connect_count") != 1 or \
            abs(e.get("connect_p50_ns", 0) - connect * 1000) > \
            connect * 1000 / 32:
        errs.append("graph: connect %s / %s ns, not one of %d us" % (
            e.get("connect_count"), e.get("connect_p50_ns"), connect))
    print("-- %s graph: rtt_count %s, p50 %.2f ms, p99 %.2f ms; connect "
          "%.2f ms" % (addr, e.get("rtt_count"), e.get("rtt_p50_ns", 0) / 1e6,
                       e.get("rtt_p99_ns", 0) / 1e6,
                       e.get("connect_p50_ns", 0) / 1e6))
if errs:
    print("\n".join(errs))
    sys.exit(1)
PY
done
echo ok
