#!/bin/bash
# Timing windows: inside a window the kernel records when each message
# starts; both ends of a connection get one start per request and per
# reply, in order, with the right sizes, and nothing is recorded outside.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd redis-server python3

two_hosts
redis_start "$SRV" "$SRV_IP"

out=$T_TMP/out
agent_start "$out" --window 1h
N=300
res=$(ip netns exec "$CLI" $TRAFFIC redis "$SRV_IP" 6379 $N) || fail "client failed"
sleep 0.3
agent_stop "$out" >/dev/null
[ -s "$out/timing.jsonl" ] || fail "no timing.jsonl"

python3 - "$out" "$(json_get "$res" pid)" "$(json_get "$res" lport)" \
	"$(json_get "$res" sent)" <<'PY' || fail "timing records are wrong"
import json, sys
out, pid, lport, sent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
recs = [json.loads(l) for l in open(out + "/conns.jsonl")]
client = [r for r in recs if r["process"].get("pid") == pid and r["lport"] == lport][-1]
server = [r for r in recs if r["rport"] == lport and r["process"].get("comm") == "redis-server"][-1]
tim = {t["cookie"]: t for t in map(json.loads, open(out + "/timing.jsonl"))}
c, s = tim[client["cookie"]]["msgs"], tim[server["cookie"]]["msgs"]
assert len(c) == 600 and len(s) == 600, (len(c), len(s))
assert [m[1] for m in c] == ["out", "in"] * 300, "client order"
assert [m[1] for m in s] == ["in", "out"] * 300, "server order"
assert all(c[i][0] <= c[i + 1][0] for i in range(599)), "sorted"
# Sizes: every request but the last one's is known from the next start.
req = sum(m[2] for m in c if m[1] == "out")
last = [m for m in c if m[1] == "out"][-1][2]
assert last == 0 and req > 0, (req, last)
print("client starts %d, server starts %d, request bytes %d of %d (last open)"
      % (len(c), len(s), req, sent))
# Each reply starts at the server after its request arrived there.
for i in range(0, 600, 2):
    assert s[i + 1][0] >= s[i][0]
PY
lost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["timing_lost"])' "$out/edges.json")
check_eq "message starts lost" "$lost" 0

# Without --window nothing is recorded.
out2=$T_TMP/out2
agent_start "$out2"
ip netns exec "$CLI" $TRAFFIC redis "$SRV_IP" 6379 10 >/dev/null
agent_stop "$out2" >/dev/null
[ -e "$out2/timing.jsonl" ] && fail "timing.jsonl written without --window"
echo ok
