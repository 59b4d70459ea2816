#!/bin/bash
# Slow and broken clients cannot lock others out of causeway's HTTP
# servers: `causeway serve` and the agent's --metrics (here `causeway run
# --metrics`, the same server).  From 127.0.0.1, 130 connections each send
# a header line every 2 s (slowloris), reopened when the server closes
# them; meanwhile a client from 127.0.0.2 asks for /metrics (and serve's
# /api/graph) every half second and must get every answer, and no slow
# connection may be held past the servers' 10 s header deadline (with
# room: 25 s), and /metrics counts the connections closed for it.  A
# request line of binary bytes, with or without a line end, gets an
# answer or a close, never a held connection.  Bound beyond loopback (in
# a test host), serve warns that it has no authentication; on loopback it
# does not.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl python3
cd "$T_TMP"

cat >slow.py <<'EOF'
import socket, sys, threading, time

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def binary(data, bound):
    """Send data; seconds until the server answered or closed (None: held)."""
    s = socket.create_connection((host, port), timeout=bound)
    s.sendall(data)
    t = time.monotonic()
    try:
        got = s.recv(4096)
    except socket.timeout:
        return None, b""
    finally:
        s.close()
    return time.monotonic() - t, got

def fetch(path):
    """One GET from 127.0.0.2: the status line, or the error."""
    try:
        s = socket.create_connection((host, port), timeout=10,
                                     source_address=("127.0.0.2", 0))
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close"
                   "\r\n\r\n" % path).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        return data.split(b"\r\n", 1)[0].decode("latin-1")
    except OSError as e:
        return "error: %s" % e

def good(paths, stop, out):
    while not stop.is_set():
        for p in paths:
            out.append((p, fetch(p)))
        time.sleep(0.5)

def slow_open(conns):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.settimeout(2)
    try:
        s.connect((host, port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    except OSError:
        s.close()
        return
    s.setblocking(False)
    conns[s] = time.monotonic()

def closed(s):
    """True when the server closed s or answered it (then it closes)."""
    try:
        if s.recv(4096) is not None:
            return True  # b"": closed; bytes: an answer, a 408 or a 400
    except BlockingIOError:
        pass
    except OSError:
        return True
    try:
        s.send(b"X-Slow: 1\r\n")
    except BlockingIOError:
        pass
    except OSError:
        return True
    return False

def slowloris(n, seconds, paths):
    conns, lives, replies = {}, [], []
    stop = threading.Event()
    t = threading.Thread(target=good, args=(paths, stop, replies))
    t0 = time.monotonic()
    for _ in range(n):
        slow_open(conns)
    t.start()
    while time.monotonic() - t0 < seconds:
        time.sleep(2)
        now = time.monotonic()
        for s in list(conns):
            if closed(s):
                lives.append(now - conns.pop(s))
                s.close()
        for _ in range(n - len(conns)):
            slow_open(conns)
    stop.set()
    t.join()
    held = [time.monotonic() - o for o in conns.values()]
    bad = [r for r in replies if not r[1].startswith("HTTP/1.1 200 ")]
    print("slow=%d closed_by_server=%d longest=%.1f good=%d bad=%d %s" % (
        n, len(lives), max(lives + held), len(replies), len(bad),
        "; ".join("%s: %s" % b for b in bad[:3])))

if mode == "binary":
    for data in (bytes(range(1, 256)) + b"\r\n\r\n",
                 b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                 b"\xff\xfe\xfd \xfa HTTP/1.1\r\n\r\n"):
        took, got = binary(data, 40)
        print("%r -> %s %r" % (data[:12], "held" if took is None
                               else "%.1fs" % took, got[:20]))
else:
    slowloris(int(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])
EOF

# attack NAME PORT PATH...: the slowloris run against one server, checked.
attack() {
	local name=$1 port=$2 out longest bad good
	shift 2
	out=$(python3 slow.py 127.0.0.1 "$port" slowloris 130 30 "$@") ||
		fail "$name: the slow client failed: $out"
	note "$name: $out"
	read -r longest bad good <<<"$(sed -n \
		's/.*longest=\([0-9.]*\) good=\([0-9]*\) bad=\([0-9]*\).*/\1 \3 \2/p' <<<"$out")"
	[ -n "$longest" ] || fail "$name: no summary: $out"
	[ "$bad" = 0 ] && [ "$good" -gt 0 ] ||
		fail "$name: the other client was locked out: $out"
	python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 25)" "$longest" ||
		fail "$name: a slow connection was held ${longest}s"
	dropped=$(curl -sf "http://127.0.0.1:$port/metrics" |
		sed -n 's/^causeway_http_header_timeouts_total \([0-9]*\)$/\1/p')
	[ -n "$dropped" ] && [ "$dropped" -gt 0 ] ||
		fail "$name: no header timeouts counted: '$dropped'"
	note "$name: causeway_http_header_timeouts_total $dropped"
}

# binary NAME PORT: binary request lines are answered or closed.
binary() {
	local out
	out=$(python3 slow.py 127.0.0.1 "$2" binary) ||
		fail "$1: binary request lines: $out"
	note "$1 binary: $(tr '\n' '|' <<<"$out")"
	grep -q held <<<"$out" && fail "$1: a binary request line held: $out"
	while read -r line; do
		secs=$(sed -n 's/.* -> \([0-9.]*\)s .*/\1/p' <<<"$line")
		python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 25)" "$secs" ||
			fail "$1: a binary request line held ${secs}s: $line"
	done <<<"$out"
}

"$CW" simulate --hosts 3 --conns 10 -o fleet.jsonl || fail "simulate failed"
port=$(free_port) || fail "no free port"
serve_start $port fleet.jsonl
grep -q "beyond loopback" serve.err && fail "a warning on loopback: $(cat serve.err)"
attack serve "$port" /metrics /api/graph
binary serve "$port"
curl -sf "http://127.0.0.1:$port/api/graph" >/dev/null || fail "serve is gone: $(cat serve.err)"

note "the agent's --metrics (causeway run)"
NS=$(ns_create run)
aport=$(free_port) || fail "no free port"
agent_start "$T_TMP/run" --netns "$(ns_inode "$NS")" --interval 300ms \
	--metrics "127.0.0.1:$aport"
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$aport/metrics" >/dev/null && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$aport/metrics" >/dev/null ||
	fail "run did not serve metrics: $(cat "$T_TMP/run/stderr")"
attack "run --metrics" "$aport" /metrics
binary "run --metrics" "$aport"
kill -0 "$AGENT_PID" || fail "run died: $(cat "$T_TMP/run/stderr")"

note "bound beyond loopback, in a test host"
WEB=$(ns_create web)
ip netns exec "$WEB" "$CW" serve --listen 0.0.0.0:$port "$T_TMP/fleet.jsonl" \
	>web.out 2>web.err &
bg_pid $!
wait_port "$WEB" "$port"
for _ in $(seq 50); do
	grep -q "beyond loopback" web.err && break
	sleep 0.1
done
grep -q "'0.0.0.0:$port' is beyond loopback.*no authentication" web.err ||
	fail "no warning beyond loopback: $(cat web.err)"
note "$(grep 'beyond loopback' web.err)"
echo ok
