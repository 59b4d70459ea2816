#!/bin/bash
# Messages outside timing windows.  With --hooks sampled and 1 s windows
# every 10 s, a client doing a steady 50 requests a second for 30 s has
# its messages counted only in the windows; the agent estimates the rest
# from the exact bytes.  The estimate is within 10% of what the client
# really did, each way, on the graph's edge and in the records, and both
# say it is an estimate with the share of bytes that was counted.  With
# --hooks always the same traffic gives exact counts, not flagged.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7100 >/dev/null 2>&1 &
bg_pid $!
wait_port "$SRV" 7100

# paced RATE SECS: one connection, a request every 1/RATE s (sizes 40,
# 50, ... 130 bytes in turn), each echoed back; prints what it did.
paced() {
	ip netns exec "$CLI" python3 - "$SRV_IP" 7100 "$1" "$2" <<'PY'
import json, os, socket, sys, time
host, port, rate, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
n = int(rate * secs)
sent = recv = 0
t0 = time.monotonic()
for i in range(n):
    delay = t0 + i / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    size = 40 + (i % 10) * 10
    s.sendall(b"r" * size)
    sent += size
    got = 0
    while got < size:
        b = s.recv(size - got)
        if not b:
            raise SystemExit("server closed the connection")
        got += len(b)
    recv += got
lport = s.getsockname()[1]
s.close()
print(json.dumps({"requests": n, "sent": sent, "received": recv,
                  "lport": lport, "pid": os.getpid()}))
PY
}

# one_run TAG RATE SECS ARGS...: the agent with ARGS around one paced
# client; sets RES (the client's truth) and OUT.
one_run() {
	OUT=$T_TMP/out$1
	local rate=$2 secs=$3
	shift 3
	agent_start "$OUT" "$@"
	RES=$(paced "$rate" "$secs") || fail "client failed"
	sleep 1.2
	agent_stop "$OUT" >/dev/null
}

# check_run WANT_EST TOL: the edge and both ends' last records (WANT_EST
# 1 or 0: edges.py sums a flag).
check_run() {
	local want_est=$1 tol=$2 n c2s s2c mc2s ms2c est frac
	n=$(json_get "$RES" requests)
	read -r c2s s2c mc2s ms2c est frac <<<"$(edge "$OUT" --client-pid \
		"$(json_get "$RES" pid)" bytes_c2s bytes_s2c msgs_c2s msgs_s2c \
		msgs_estimated sampled_fraction)"
	check_within "bytes client -> server" "$c2s" "$(json_get "$RES" sent)" 0.5
	check_within "bytes server -> client" "$s2c" \
		"$(json_get "$RES" received)" 0.5
	check_within "messages client -> server" "$mc2s" "$n" "$tol"
	check_within "messages server -> client" "$ms2c" "$n" "$tol"
	check_eq "edge msgs_estimated" "$est" "$want_est"
	# The graph command's views say the same from the records.
	"$CW" graph --format json -o "$OUT/graph.json" "$OUT/conns.jsonl" ||
		fail "causeway graph failed"
	check_eq "graph --format json: msgs_estimated" "$(python3 \
		"$CW_ROOT/tests/lib/edges.py" "$OUT/graph.json" --client-pid \
		"$(json_get "$RES" pid)" msgs_estimated)" "$want_est"
	python3 - "$OUT/conns.jsonl" "$(json_get "$RES" pid)" \
		"$(json_get "$RES" lport)" "$n" "$want_est" "$frac" <<'PY' ||
import json, sys
path, pid, lport, n, want, frac = sys.argv[1:7]
pid, lport, n, frac = int(pid), int(lport), int(n), float(frac)
want = want == "1"
recs = [json.loads(l) for l in open(path)]
ends = {"client": [r for r in recs if r["proto"] == "tcp" and
                   r["lport"] == lport and r["process"].get("pid") == pid],
        "server": [r for r in recs if r["proto"] == "tcp" and
                   r["rport"] == lport and r["lport"] == 7100]}
for name, rs in ends.items():
    assert rs, "no %s record" % name
    r = rs[-1]
    assert r["closed"], "%s: last record not closed" % name
    assert r["msgs_estimated"] == want, (name, r["msgs_estimated"])
    ppm = r["sampled_ppm"]
    for d in ("out", "in"):
        got, counted = r["msgs_" + d], r["sampled_msgs_" + d]
        assert abs(got - n) <= 0.1 * n, (name, d, got, n)
        if want:
            # Counted only inside windows: a part, not all.
            assert 0 < counted < got, (name, d, counted, got)
        else:
            assert counted == got, (name, d, counted, got)
    # Each request is one send and its echo one recv at the client.
    if name == "client":
        assert abs(r["calls_out"] - n) <= 0.1 * n, ("calls", r["calls_out"])
    if want:
        assert 20000 <= ppm <= 600000, (name, "sampled_ppm", ppm)
    else:
        assert ppm == 1000000, (name, "sampled_ppm", ppm)
    # Estimates never go back from one record of an end to the next.
    for k in ("msgs_out", "msgs_in", "calls_out", "calls_in"):
        v = [x[k] for x in rs]
        assert v == sorted(v), (name, k, v)
    print("-- %s: msgs %d/%d (counted %d/%d), sampled_ppm %d" % (
        name, r["msgs_out"], r["msgs_in"], r["sampled_msgs_out"],
        r["sampled_msgs_in"], ppm))
if want:
    assert 0.02 <= frac <= 0.6, ("edge sampled_fraction", frac)
else:
    assert frac == 1.0, ("edge sampled_fraction", frac)
PY
		fail "records are wrong"
	note "edge: msgs $mc2s/$ms2c for $n requests, estimated $est," \
		"sampled fraction $frac"
}

# The default schedule's shape: 1 s windows every 10 s, 30 s of traffic.
one_run A 50 30 --hooks sampled --window 1s --window-every 10s
[ "$(wc -l <"$OUT/timing.jsonl")" -ge 4 ] ||
	fail "fewer than two windows saw the connection"
check_run 1 10

# Every call counted: exact, not an estimate.
one_run B 200 3 --hooks always
check_run 0 0.5
echo ok
