#!/bin/bash
# Edge health of real connections, merged across correlator members:
# between two test hosts a client makes normal connections (three
# request/reply exchanges each), connections its server resets (SO_LINGER
# 0), connects to a closed port (refused) and to a port whose SYNs are
# dropped (timed out).  One agent per host publishes to the embedded
# broker; once every record is in, two correlator members of one group
# share the partitions (4), and `graph --kafka --since` (their buckets
# merged) must give exactly the health of the graph of the same records
# read back from the topic with every end kept (`graph` of `dump`'s
# JSON): every counter and every quantile, edge for edge.  And against
# what the client saw: each failed connect an edge to the address it
# tried, marked failed, with its kind counted; the resets counted once,
# by the server; a connect time for each established connection.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 iptables

N_OK=6 N_RESET=3 N_REFUSED=4 N_TMO=2
two_hosts
ip netns exec "$SRV" iptables -A INPUT -p tcp --syn --dport 7303 -j DROP ||
	skip "iptables unavailable"
cat >"$T_TMP/srv.py" <<'PY'
import socket, struct, sys, threading
def serve(port, reset):
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((sys.argv[1], port)); ls.listen(64)
    while True:
        s, _ = ls.accept()
        for _ in range(3):
            if len(s.recv(100)) == 0: break
            s.sendall(b"r" * 300)
        if reset:
            s.recv(10)  # the client's last request: reset it, unanswered
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
for port, reset in ((7300, False), (7301, True)):
    threading.Thread(target=serve, args=(port, reset), daemon=True).start()
print("ready", flush=True); threading.Event().wait()
PY
cat >"$T_TMP/cli.py" <<'PY'
import json, socket, sys
addr, n_ok, n_reset, n_ref, n_tmo = sys.argv[1], *map(int, sys.argv[2:6])
out = {"ok": 0, "reset": 0, "refused": 0, "timeout": 0, "other": []}
def talk(port):
    s = socket.create_connection((addr, port))
    for _ in range(3):
        s.sendall(b"q" * 100); got = 0
        while got < 300: got += len(s.recv(300 - got))
    return s
for _ in range(n_ok):
    talk(7300).close(); out["ok"] += 1
for _ in range(n_reset):
    s = talk(7301); s.sendall(b"x")
    try:
        if s.recv(10) == b"": out["other"].append("no reset")
        else: out["other"].append("data instead of a reset")
    except ConnectionResetError:
        out["reset"] += 1
    s.close()
for _ in range(n_ref):
    try: socket.create_connection((addr, 7302)); out["other"].append("answered")
    except ConnectionRefusedError: out["refused"] += 1
for _ in range(n_tmo):
    try: socket.create_connection((addr, 7303), timeout=0.5); out["other"].append("answered")
    except socket.timeout: out["timeout"] += 1
print(json.dumps(out))
PY
ip netns exec "$SRV" python3 "$T_TMP/srv.py" "$SRV_IP" >"$T_TMP/srv.log" 2>&1 &
bg_pid $!
wait_port "$SRV" 7300
wait_port "$SRV" 7301

broker_start -t hg.conns:4 -t hg.edges:4
out=$T_TMP/out
fleet_agent "$out" "$CLI" cli --kafka "$BOOT" --topic-prefix hg
pc=$FLEET_AGENT_PID
fleet_agent "$out" "$SRV" srv --kafka "$BOOT" --topic-prefix hg
ps=$FLEET_AGENT_PID
ip netns exec "$CLI" python3 "$T_TMP/cli.py" "$SRV_IP" $N_OK $N_RESET \
	$N_REFUSED $N_TMO >"$T_TMP/cli.json" || fail "the client failed"
sleep 1
fleet_agent_stop $pc "$out/agent-cli.log"
fleet_agent_stop $ps "$out/agent-srv.log"
"$CW" dump --kafka "$BOOT" --topic-prefix hg --topic conns --from-beginning \
	--timeout 3s >"$out/conns.jsonl" 2>"$out/dump.log" ||
	fail "dump failed: $(cat "$out/dump.log")"
"$CW" graph "$out/conns.jsonl" --window 0 --format json >"$out/ends.json" \
	2>"$out/graph-ends.log" || fail "graph failed: $(cat "$out/graph-ends.log")"

# Two members of one group: every record is in, so each ends at --idle.
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"
for m in a b; do
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--topic-prefix hg --group hg --from-beginning --no-paths \
		--idle 6s --bucket 1s --lateness 2s >/dev/null \
		2>"$out/corr-$m.log" &
	echo $! >"$out/corr-$m.pid"
	bg_pid "$(cat "$out/corr-$m.pid")"
done
for m in a b; do
	wait "$(cat "$out/corr-$m.pid")" ||
		fail "member $m failed: $(cat "$out/corr-$m.log")"
done
for m in a b; do
	grep -c 'hg.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
		"$out/corr-$m.log" | sed "s/^/-- member $m took partitions: /"
done
"$CW" graph --kafka "$BOOT" --topic-prefix hg --group hg \
	--since "@$(($(date +%s) - 3600))" --format json >"$out/kafka.json" \
	2>"$out/graph.log" || fail "graph --kafka failed: $(cat "$out/graph.log")"

python3 - "$T_TMP/cli.json" "$out/kafka.json" "$out/ends.json" "$SRV_IP" \
	"$N_OK" "$N_RESET" "$N_REFUSED" "$N_TMO" <<'EOF' ||
import json, sys
cli = json.load(open(sys.argv[1]))
addr = sys.argv[4]
n_ok, n_reset, n_ref, n_tmo = map(int, sys.argv[5:9])
assert not cli["other"] and (cli["ok"], cli["reset"], cli["refused"],
                             cli["timeout"]) == (n_ok, n_reset, n_ref,
                                                 n_tmo), cli
KEYS = ("conns", "failed", "conns_refused", "conns_timeout",
        "resets_by_client", "resets_by_server", "xchg_pipelined") + tuple(
    "%s_%s" % (n, s) for n in ("connect", "rtt", "client", "client_first",
                               "server", "network")
    for s in ("count", "p50_ns", "p90_ns", "p99_ns"))


def edges(path):
    g = json.load(open(path))
    node = {n["id"]: n for n in g["nodes"]}
    out = {}
    for e in g["edges"]:
        c, s = node[e["client"]], node[e["server"]]
        if c.get("comm") != "python3":
            continue
        key = s["label"]
        for p in ("7300", "7301", "7302", "7303"):
            if s.get("comm") is None and p in key:
                key = p
        if s.get("comm") == "python3":
            key = "server"
        assert key not in out, ("two edges", key)
        out[key] = e
    return out


k, f = edges(sys.argv[2]), edges(sys.argv[3])
assert sorted(k) == sorted(f) == ["7302", "7303", "server"], (sorted(k),
                                                              sorted(f))
for e in k:
    for x in KEYS:
        assert k[e].get(x) == f[e].get(x), "%s %s: merged %s, ends %s" % (
            e, x, k[e].get(x), f[e].get(x))
srv, ref, tmo = k["server"], k["7302"], k["7303"]
assert (srv["conns"], srv["failed"]) == (n_ok + n_reset, False), srv
assert (srv["resets_by_server"], srv["resets_by_client"]) == (n_reset, 0), srv
assert srv["connect_count"] == n_ok + n_reset, srv
assert srv["rtt_count"] >= n_ok + n_reset, srv
assert (ref["conns"], ref["conns_refused"], ref["failed"]) == (n_ref, n_ref,
                                                             True), ref
assert (tmo["conns"], tmo["conns_timeout"], tmo["failed"]) == (n_tmo, n_tmo,
                                                             True), tmo
print("-- merged == every end kept: server edge %d conns, resets by server "
      "%d, connect p50 %d ns, rtt %d readings p50 %d ns, exchanges "
      "client %d server %d; refused %d/%d failed, timed out %d/%d failed"
      % (srv["conns"], srv["resets_by_server"], srv["connect_p50_ns"],
         srv["rtt_count"], srv["rtt_p50_ns"], srv["client_count"],
         srv["server_count"], ref["conns_refused"], ref["conns"],
         tmo["conns_timeout"], tmo["conns"]))
EOF
	fail "the members' merged edge health is not the ends'"
echo ok
