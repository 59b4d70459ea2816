#!/bin/bash
# Messages of connections that live entirely between timing windows.
# With --hooks sampled, an end no window ever saw has no messages-per-byte
# ratio of its own: it borrows its service's (the server's port; the
# address and port its client called), learnt from the ends a window did
# see.  redis-server in one test host; from the other, first one client
# connection paced across a window (the service's ratio), then short
# connections opened and closed between two windows, each doing a known
# number of SET commands.  Every short connection's ends must say that
# nothing of theirs was counted (sampled_ppm 0, no counted message) and
# still give message counts within 10% of what the client did, flagged
# as estimated, in the records and on the graph's edge.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd redis-server python3

EVERY=8
two_hosts
ip netns exec "$SRV" redis-server --bind "$SRV_IP" --port 6379 --save '' \
	--appendonly no --protected-mode no --daemonize no \
	--dir "$T_TMP" >"$T_TMP/redis.log" 2>&1 &
bg_pid $!
wait_port "$SRV" 6379

# client MODE ARGS: SET commands whose sizes cycle over ten values (so a
# window's mix is the connections' mix); prints what it did as JSON.
#   paced RATE SECS     one connection, a command every 1/RATE s
#   between CONNS N     CONNS connections of N commands each, all opened
#                       and closed between two windows (slot positions
#                       2 s to EVERY-1 s; another slot is tried if a run
#                       overruns it, and the records prove it either way)
client() {
	ip netns exec "$CLI" python3 - "$SRV_IP" 6379 "$EVERY" "$@" <<'PY'
import json, os, socket, sys, time
host, port, every, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
a, b = float(sys.argv[5]), float(sys.argv[6])

def conn():
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def cmd(s, i):
    parts = ["SET", "k:%d" % (i % 10), "v" * (20 + (i % 10) * 10)]
    c = ("*3\r\n" + "".join("$%d\r\n%s\r\n" % (len(p), p)
                              for p in parts)).encode()
    s.sendall(c)
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("redis closed the connection")
        reply += chunk
    return len(c), len(reply)

ends = []
if mode == "paced":
    s = conn()
    n = int(a * b)
    sent = recv = 0
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i / a - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        x, y = cmd(s, i)
        sent += x
        recv += y
    ends.append({"lport": s.getsockname()[1], "requests": n,
                 "sent": sent, "received": recv})
    s.close()
else:
    for attempt in range(3):
        pos = time.time() % every
        time.sleep((2.0 - pos) % every)
        start = time.time()
        ends = []
        for _ in range(int(a)):
            s = conn()
            sent = recv = 0
            for i in range(int(b)):
                x, y = cmd(s, i)
                sent += x
                recv += y
            ends.append({"lport": s.getsockname()[1], "requests": int(b),
                         "sent": sent, "received": recv})
            s.close()
        if time.time() - start < every - 3.0:
            break
print(json.dumps({"pid": os.getpid(), "ends": ends}))
PY
}

OUT=$T_TMP/out
agent_start "$OUT" --hooks sampled --window 1s --window-every ${EVERY}s
SEEN=$(client paced 40 10) || fail "paced client failed"
# Its close record teaches the agent the service's ratio; the short
# connections come after it, between two windows.
sleep 1.5
BETWEEN=$(client between 30 10) || fail "short-connection client failed"
sleep 1.5
agent_stop "$OUT" >/dev/null

echo "$SEEN" >"$T_TMP/seen.json"
echo "$BETWEEN" >"$T_TMP/between.json"
python3 - "$OUT/conns.jsonl" "$T_TMP/seen.json" "$T_TMP/between.json" <<'PY' ||
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
seen, between = (json.load(open(p)) for p in sys.argv[2:4])

def last(lport, client):
    rs = [r for r in recs if r["proto"] == "tcp" and
          (r["lport"] == lport and r["rport"] == 6379 if client else
           r["lport"] == 6379 and r["rport"] == lport)]
    assert rs, "no %s record for port %d" % (
        "client" if client else "server", lport)
    assert rs[-1]["closed"], "last record of port %d not closed" % lport
    return rs[-1]

# The connection across a window: counted in part, so it has a ratio.
e = seen["ends"][0]
for client in (True, False):
    r = last(e["lport"], client)
    assert r["sampled_msgs_out"] > 0 and r["sampled_msgs_in"] > 0, \
        ("the paced connection was not seen by a window", r)

tot = {"out": 0, "in": 0}
want = 0
for e in between["ends"]:
    n = e["requests"]
    want += n
    for client in (True, False):
        r = last(e["lport"], client)
        name = "%s end of port %d" % ("client" if client else "server",
                                      e["lport"])
        assert r["sampled_msgs_out"] == 0 and r["sampled_msgs_in"] == 0 \
            and r["sampled_ppm"] == 0, (name, "seen by a window", r)
        assert r["msgs_estimated"], (name, "not flagged as estimated")
        bout, bin_ = (e["sent"], e["received"]) if client else \
            (e["received"], e["sent"])
        assert r["bytes_out"] == bout and r["bytes_in"] == bin_, \
            (name, "bytes", r["bytes_out"], r["bytes_in"], bout, bin_)
        for d in ("out", "in"):
            got = r["msgs_" + d]
            assert abs(got - n) <= 0.1 * n, (name, d, got, n)
            if client:
                tot[d] += got
for d in ("out", "in"):
    assert abs(tot[d] - want) <= 0.1 * want, ("total", d, tot[d], want)
print("-- %d connections between windows, %d commands: client messages "
      "estimated %d out, %d in" % (len(between["ends"]), want, tot["out"],
                                   tot["in"]))
PY
	fail "records are wrong"

# The graph's edge for the short connections' client says the same.
n=$(python3 -c 'import json,sys; print(sum(e["requests"] for e in
	json.load(open(sys.argv[1]))["ends"]))' "$T_TMP/between.json")
read -r mc2s ms2c est frac <<<"$(edge "$OUT" --client-pid \
	"$(json_get "$BETWEEN" pid)" msgs_c2s msgs_s2c msgs_estimated \
	sampled_fraction)"
check_within "edge messages client -> redis" "$mc2s" "$n" 10
check_within "edge messages redis -> client" "$ms2c" "$n" 10
check_eq "edge msgs_estimated" "$est" 1
# Nothing of theirs was counted: 0, not "no estimate" (1).
awk -v f="$frac" 'BEGIN { exit !(f == 0) }' ||
	fail "edge sampled_fraction: got '$frac', want 0"
note "edge sampled_fraction: $frac"
echo ok
