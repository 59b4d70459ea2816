#!/bin/bash
# --msg-gap: an idle gap also starts a message, not only a direction flip.
# A client sends 20 bursts of 3 back-to-back sends to a sink, 300 ms
# apart, never reading: with --hooks always --msg-gap 50ms each burst is
# one message (20), without it the whole one-way stream is one message.
# Calls and bytes are exact either way.  (The gap path reads the clock on
# every call; the flip path reads it only inside windows.)
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
BURSTS=20

# one_run TAG ARGS...: the agent with ARGS around one sink connection;
# sets RES (what the client did) and OUT.
one_run() {
	OUT=$T_TMP/out$1
	shift
	ip netns exec "$SRV" $TRAFFIC sink-server "$SRV_IP" 7200 \
		$((BURSTS * 300)) 0 >/dev/null 2>&1 &
	bg_pid $!
	wait_port "$SRV" 7200
	agent_start "$OUT" "$@"
	RES=$(ip netns exec "$CLI" python3 - "$SRV_IP" 7200 "$BURSTS" <<'PY'
import json, os, socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(int(sys.argv[3])):
    time.sleep(0.3)
    for _ in range(3):
        s.sendall(b"g" * 100)
lport = s.getsockname()[1]
s.shutdown(socket.SHUT_WR)
s.recv(1)
s.close()
print(json.dumps({"lport": lport, "pid": os.getpid()}))
PY
) || fail "client failed"
	sleep 1.2
	agent_stop "$OUT" >/dev/null
}

# check WANT_LO WANT_HI: the client end's last record.
check() {
	python3 - "$OUT/conns.jsonl" "$(json_get "$RES" lport)" "$BURSTS" \
		"$1" "$2" <<'PY' || fail "records are wrong"
import json, sys
path, lport, bursts, lo, hi = sys.argv[1], *map(int, sys.argv[2:6])
rs = [r for l in open(path) for r in [json.loads(l)]
      if r["proto"] == "tcp" and r["lport"] == lport and r["rport"] == 7200]
assert rs, "no client record"
r = rs[-1]
assert r["bytes_out"] == bursts * 300, ("bytes_out", r["bytes_out"])
assert r["calls_out"] == bursts * 3, ("calls_out", r["calls_out"])
assert not r["msgs_estimated"], "always: not an estimate"
# A burst split by a send delayed past the gap (a loaded machine) adds
# a message: a little over, never under.
assert lo <= r["msgs_out"] <= hi, ("msgs_out", r["msgs_out"], lo, hi)
print("-- client: %d calls, %d messages out" % (r["calls_out"],
                                               r["msgs_out"]))
PY
}

one_run A --hooks always --msg-gap 50ms
check "$BURSTS" $((BURSTS + 2))
one_run B --hooks always
check 1 1
echo ok
