#!/bin/bash
# Connection health from lifecycle transitions, counted exactly at the
# agent (bpf/conn.bpf.c, "Connection health"; docs/agent-counters.md):
# between two test hosts, over IPv4 and IPv6 at once, one client process
# makes, in turn,
#   normal   connects, sends a request, reads the reply, closes first;
#   abort    reads part of its reply, then the server closes with
#            SO_LINGER 0: a RST sent by the server, received by the client;
#   cabort   reads its reply, then closes with SO_LINGER 0 itself: a RST
#            sent by the client, received by the server (in recv());
#   refused  connects to a port where nothing listens (a RST to the SYN);
#   timeout  connects to a port whose SYNs the server host drops, with
#            TCP_SYNCNT 1 (the kernel gives up: ETIMEDOUT), and once more
#            with a 0.5 s connect timeout of its own (it closes the socket
#            while the SYN is unanswered).
# What the client saw (each call's outcome) is the truth; each kind must
# come out of the agent's records exactly: failed connects as one closed
# client record each with its fail kind and the client as owner, resets
# received and sent on the aborted ones only, connect times on every
# established client end.  Through `causeway run` in both hook modes, and
# through the fleet (an agent per host, a broker, the conns topic, the
# correlator); the graph's edges too (edges.json of each).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 iptables ip6tables

N_NORMAL=4 N_ABORT=3 N_CABORT=2 N_REFUSED=5 N_TMO_KERNEL=1 N_TMO_APP=2
two_hosts
cat >"$T_TMP/srv.py" <<'PY'
import socket, struct, sys, threading
addr, fam = sys.argv[1], socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
def serve(port, mode):
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port)); ls.listen(64)
    while True:
        s, _ = ls.accept()
        got = b""
        while len(got) < 100:
            b = s.recv(100 - len(got))
            if not b: break
            got += b
        if mode == "abort":
            s.sendall(b"a" * 500)
            # The client now waits for more in recv(): reset it.
            threading.Event().wait(0.2)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
        else:
            s.sendall(b"n" * 1000)
            try:
                while s.recv(4096): pass
            except ConnectionResetError:
                pass
        s.close()
for port, mode in ((int(sys.argv[2]), "normal"), (int(sys.argv[3]), "abort"),
                   (int(sys.argv[4]), "cabort")):
    threading.Thread(target=serve, args=(port, mode), daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
PY
cat >"$T_TMP/cli.py" <<'PY'
import errno, json, os, socket, struct, sys
addr, pn, pa, pr, pd, pc = sys.argv[1], *map(int, sys.argv[2:7])
nn, na, nc, nr, nk, nt = map(int, sys.argv[7:13])
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
out = {"pid": os.getpid(), "normal": [], "abort": [], "cabort": [],
       "refused": [], "timeout": [], "other": []}
def sock():
    return socket.socket(fam, socket.SOCK_STREAM)
def recv_n(s, n):
    got = b""
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b: break
        got += b
    return len(got)
for _ in range(nn):
    s = sock(); s.connect((addr, pn)); s.sendall(b"q" * 100)
    if recv_n(s, 1000) != 1000: out["other"].append("short normal")
    out["normal"].append(s.getsockname()[1]); s.close()
for _ in range(na):
    s = sock(); s.connect((addr, pa)); s.sendall(b"q" * 100)
    port = s.getsockname()[1]
    if recv_n(s, 500) != 500: out["other"].append("short abort")
    try:
        b = s.recv(10)
        out["other"].append("abort: recv gave %d bytes, no reset" % len(b))
    except ConnectionResetError:
        out["abort"].append(port)
    s.close()
for _ in range(nc):
    s = sock(); s.connect((addr, pc)); s.sendall(b"q" * 100)
    if recv_n(s, 1000) != 1000: out["other"].append("short cabort")
    out["cabort"].append(s.getsockname()[1])
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
for _ in range(nr):
    s = sock()
    try:
        s.connect((addr, pr)); out["other"].append("refused port answered")
    except ConnectionRefusedError:
        out["refused"].append(1)
    s.close()
for _ in range(nk):
    s = sock(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_SYNCNT, 1)
    try:
        s.connect((addr, pd)); out["other"].append("dropped port answered")
    except OSError as e:
        if e.errno == errno.ETIMEDOUT: out["timeout"].append("kernel")
        else: out["other"].append("kernel timeout: %s" % e)
    s.close()
for _ in range(nt):
    s = sock(); s.settimeout(0.5)
    try:
        s.connect((addr, pd)); out["other"].append("dropped port answered")
    except socket.timeout:
        out["timeout"].append("app")
    s.close()
print(json.dumps(out), flush=True)
PY

# family: firewall tool, server address, base port.
families=("iptables $SRV_IP 7100" "ip6tables $SRV_IP6 7200")
for f in "${families[@]}"; do
	read -r fw addr base <<<"$f"
	ip netns exec "$SRV" "$fw" -A INPUT -p tcp --syn --dport $((base + 3)) \
		-j DROP || skip "$fw unavailable"
	ip netns exec "$SRV" python3 "$T_TMP/srv.py" "$addr" "$base" \
		$((base + 1)) $((base + 4)) >"$T_TMP/srv-$base.log" 2>&1 &
	bg_pid $!
	wait_port "$SRV" "$base"
	wait_port "$SRV" $((base + 1))
	wait_port "$SRV" $((base + 4))
done

# check.py CONNS CLIENT_JSON ADDR BASE N_NORMAL N_ABORT N_CABORT N_REFUSED
#	N_TIMEOUT [EDGES_JSON]
cat >"$T_TMP/check.py" <<'PY'
import ipaddress, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cli = json.load(open(sys.argv[2]))
addr = str(ipaddress.ip_address(sys.argv[3]))
base = int(sys.argv[4])
n_normal, n_abort, n_cabort, n_refused, n_timeout = map(int, sys.argv[5:10])
pn, pa, pr, pd, pc = base, base + 1, base + 2, base + 3, base + 4
errs = []
if cli["other"]:
    sys.exit("the client saw what it should not: %s" % cli["other"])
for k, n in (("normal", n_normal), ("abort", n_abort), ("cabort", n_cabort),
             ("refused", n_refused), ("timeout", n_timeout)):
    if len(cli[k]) != n:
        sys.exit("client: %d %s, not %d" % (len(cli[k]), k, n))
by_cookie = {}
for r in recs:
    if r["proto"] == "tcp":
        by_cookie.setdefault(r["cookie"], []).append(r)
last = {c: max(rs, key=lambda r: r["seq"]) for c, rs in by_cookie.items()}
def h(r, k):
    return r.get(k, "none" if k == "fail" else 0)
def ends(role, port):
    if role == "client":
        return [r for r in last.values() if r["role"] == "client" and
                r["raddr"] == addr and r["rport"] == port]
    return [r for r in last.values() if r["role"] == "server" and
            r["laddr"] == addr and r["lport"] == port]
def expect(what, rs, n, **want):
    if len(rs) != n:
        errs.append("%s: %d ends, not %d" % (what, len(rs), n))
    for r in rs:
        for k, v in want.items():
            got = r["process"]["pid"] if k == "pid" else (
                r[k] if k == "closed" else h(r, k))
            if got != v:
                errs.append("%s: %s %r, not %r (cookie %d)" %
                            (what, k, got, v, r["cookie"]))
pid = cli["pid"]
expect("normal client", ends("client", pn), n_normal, closed=True,
       fail="none", resets_in=0, resets_out=0, pid=pid)
expect("normal server", ends("server", pn), n_normal, closed=True,
       fail="none", resets_in=0, resets_out=0)
expect("aborted client", ends("client", pa), n_abort, closed=True,
       fail="none", resets_in=1, resets_out=0, pid=pid)
expect("aborted server", ends("server", pa), n_abort, closed=True,
       fail="none", resets_in=0, resets_out=1)
expect("client-aborted client", ends("client", pc), n_cabort, closed=True,
       fail="none", resets_in=0, resets_out=1, pid=pid)
expect("client-aborted server", ends("server", pc), n_cabort, closed=True,
       fail="none", resets_in=1, resets_out=0)
expect("refused", ends("client", pr), n_refused, closed=True,
       fail="refused", resets_in=0, resets_out=0, bytes_out=0, bytes_in=0,
       pid=pid)
expect("timed out", ends("client", pd), n_timeout, closed=True,
       fail="timeout", resets_in=0, resets_out=0, bytes_out=0, bytes_in=0,
       pid=pid)
# Established client ends have a connect time; failed ones none.
for r in ends("client", pn) + ends("client", pa) + ends("client", pc):
    if not 0 < h(r, "connect_us") < 10000000:
        errs.append("client %d: connect_us %r" % (r["lport"],
                                                 h(r, "connect_us")))
    if r["lport"] not in cli["normal"] + cli["abort"] + cli["cabort"]:
        errs.append("client end port %d unknown to the client" % r["lport"])
# A failed connect is published once.
for r in ends("client", pr) + ends("client", pd):
    if len(by_cookie[r["cookie"]]) != 1:
        errs.append("failed connect %d: %d records" %
                    (r["cookie"], len(by_cookie[r["cookie"]])))
# And no other end between these hosts reset or failed.
mine = [r for r in last.values() if addr in (r["laddr"], r["raddr"])]
tot = lambda k: sum(h(r, k) for r in mine)
if tot("resets_in") != n_abort + n_cabort or \
        tot("resets_out") != n_abort + n_cabort:
    errs.append("resets over all ends: %d in, %d out, not %d each" %
                (tot("resets_in"), tot("resets_out"), n_abort + n_cabort))
if sum(1 for r in mine if h(r, "fail") != "none") != n_refused + n_timeout:
    errs.append("failed ends: not %d" % (n_refused + n_timeout))
if errs:
    print("\n".join(errs))
    sys.exit(1)
# The graph (edges.json of `causeway run`), when given: the client's
# edge to its server carries the resets by each side and a connect time
# per connection; its failed connects are edges to the address it tried,
# marked failed, with the refused and timed-out counts.
if len(sys.argv) > 10:
    g = json.load(open(sys.argv[10]))
    nodes = {n["id"]: n for n in g["nodes"]}
    mine_e = [e for e in g["edges"] if nodes[e["client"]].get("pid") == pid]
    # An address node (no process) is the address the client tried.
    ext = [e for e in mine_e if nodes[e["server"]].get("pid") is None]
    srv = [e for e in mine_e if nodes[e["server"]].get("pid") is not None]
    sm = lambda es, k: sum(e.get(k, 0) for e in es)
    got = {"server edge conns": sm(srv, "conns"),
           "resets_by_server": sm(srv, "resets_by_server"),
           "resets_by_client": sm(srv, "resets_by_client"),
           "connect_count": sm(srv, "connect_count"),
           "server edge refused+timeout": sm(srv, "conns_refused") +
                                          sm(srv, "conns_timeout"),
           "failed edge conns": sm(ext, "conns"),
           "conns_refused": sm(ext, "conns_refused"),
           "conns_timeout": sm(ext, "conns_timeout")}
    n_est = n_normal + n_abort + n_cabort
    want = {"server edge conns": n_est, "resets_by_server": n_abort,
            "resets_by_client": n_cabort, "connect_count": n_est,
            "server edge refused+timeout": 0,
            "failed edge conns": n_refused + n_timeout,
            "conns_refused": n_refused, "conns_timeout": n_timeout}
    for k in want:
        if got[k] != want[k]:
            errs.append("graph: %s %d, not %d" % (k, got[k], want[k]))
    for e in ext:
        n = nodes[e["server"]]
        if not e.get("failed") or n.get("addr") != addr:
            errs.append("graph: failed edge to %s not marked failed (%s)"
                        % (n.get("label"), e.get("failed")))
    if any(e.get("failed") for e in srv) or not srv:
        errs.append("graph: the server edge is missing or marked failed")
    if not errs:
        print("-- %s graph: %d conns to the server, resets by server %d, by "
              "client %d, connect p50 %.2f ms; failed edges: %d refused, "
              "%d timed out" % (addr, got["server edge conns"],
                                got["resets_by_server"],
                                got["resets_by_client"],
                                sm(srv, "connect_p50_ns") / max(len(srv), 1)
                                / 1e6, got["conns_refused"],
                                got["conns_timeout"]))
if errs:
    print("\n".join(errs))
    sys.exit(1)
ks = [len(ends("client", p)) for p in (pn, pa, pc, pr, pd)]
print("-- %s: normal %d, reset by server %d, by client %d, refused %d, "
      "timeout %d; resets received %d, sent %d (all ends)"
      % ((addr,) + tuple(ks) + (tot("resets_in"), tot("resets_out"))))
PY

# clients TAG: every family's client at once; each one's outcomes in
# $T_TMP/cli-TAG-BASE.json.
clients() {
	local f fw addr base
	for f in "${families[@]}"; do
		read -r fw addr base <<<"$f"
		ip netns exec "$CLI" python3 "$T_TMP/cli.py" "$addr" "$base" \
			$((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) \
			$N_NORMAL $N_ABORT $N_CABORT $N_REFUSED $N_TMO_KERNEL \
			$N_TMO_APP \
			>"$T_TMP/cli-$1-$base.json" &
		echo $! >"$T_TMP/cli-$base.pid"
	done
	for f in "${families[@]}"; do
		read -r fw addr base <<<"$f"
		wait "$(cat "$T_TMP/cli-$base.pid")" || fail "client failed ($fw)"
	done
}

# check TAG RECORDS [EDGES]: each family's ends in RECORDS (and edges in
# the graph EDGES) against its client.
check() {
	local f fw addr base
	for f in "${families[@]}"; do
		read -r fw addr base <<<"$f"
		python3 "$T_TMP/check.py" "$2" "$T_TMP/cli-$1-$base.json" \
			"$addr" "$base" $N_NORMAL $N_ABORT $N_CABORT \
			$N_REFUSED $((N_TMO_KERNEL + N_TMO_APP)) ${3:-} ||
			fail "$1, $fw: see above"
	done
}

# One host's agent (`causeway run`), in both hook modes.
for hooks in sampled always; do
	out=$T_TMP/out-$hooks
	agent_start "$out" --hooks "$hooks"
	clients "$hooks"
	sleep 0.5
	agent_stop "$out" >/dev/null
	check "$hooks" "$out/conns.jsonl" "$out/edges.json"
done

# The fleet: one `causeway agent` per test host publishing to a broker,
# the records read back from the conns topic (the wire's fields 30-34).
broker_start
out=$T_TMP/out-fleet
fleet_agent "$out" "$CLI" cli --kafka "$BOOT" --topic-prefix hf
pc=$FLEET_AGENT_PID
fleet_agent "$out" "$SRV" srv --kafka "$BOOT" --topic-prefix hf
ps=$FLEET_AGENT_PID
clients fleet
sleep 1
fleet_agent_stop $pc "$out/agent-cli.log"
fleet_agent_stop $ps "$out/agent-srv.log"
"$CW" dump --kafka "$BOOT" --topic-prefix hf --topic conns --from-beginning \
	--timeout 3s >"$out/conns.jsonl" 2>"$out/dump.log" ||
	fail "dump failed: $(cat "$out/dump.log")"
printf 'session.timeout.ms=6000\n' >"$T_TMP/kafka.properties"
"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
	--topic-prefix hf --group hf --from-beginning --idle 4s \
	-o "$out/corr" >/dev/null 2>"$out/corr.log" ||
	fail "correlate failed: $(cat "$out/corr.log")"
check fleet "$out/conns.jsonl" "$out/corr/edges.json"
echo ok
