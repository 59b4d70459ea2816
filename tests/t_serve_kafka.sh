#!/bin/bash
# causeway serve --kafka follows the conns topic as the correlator does:
# an agent watches a test host where curl fetches a page N times from a
# python3 web server, and publishes to its embedded broker; serve, a
# consumer of its own group, shows N connections from curl to the server,
# each end paired, with the bytes each way that curl counted.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl python3
N=5

H=$(ns_create web)
echo "hello from the test host" >"$T_TMP/index.html"
ip netns exec "$H" python3 -m http.server 8000 --bind 127.0.0.1 \
	--directory "$T_TMP" >/dev/null 2>&1 &
bg_pid $!
wait_port "$H" 8000

"$CW" agent --netns "$(ns_inode "$H")" --host khost --interval 300ms \
	--samples-every 0 --spool "$T_TMP/spool" --kafka embedded \
	2>"$T_TMP/agent.log" &
bg_pid $!
for _ in $(seq 1 600); do
	grep -q "agent on host" "$T_TMP/agent.log" && break
	sleep 0.1
done
grep -q "agent on host" "$T_TMP/agent.log" || fail "agent did not start: $(cat "$T_TMP/agent.log")"
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent.log")
[ -n "$BOOT" ] || fail "no embedded broker address"

port=$((20000 + $$ % 20000))
"$CW" serve --listen 127.0.0.1:$port --kafka "$BOOT" --group "serve-$$" \
	2>"$T_TMP/serve.log" &
bg_pid $!

: >"$T_TMP/sizes"
for i in $(seq $N); do
	ip netns exec "$H" curl -s -o /dev/null -w '%{size_request} %{size_header} %{size_download}\n' \
		http://127.0.0.1:8000/index.html >>"$T_TMP/sizes" || fail "curl failed"
done

# Wait (a bound, not a measurement) until serve has all N connections.
for _ in $(seq 1 300); do
	curl -sf "http://127.0.0.1:$port/api/graph" >"$T_TMP/g.json" 2>/dev/null &&
		python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
sys.exit(0 if sum(e["paired"] for e in g["edges"]) >= int(sys.argv[2]) else 1)
' "$T_TMP/g.json" $N && break
	sleep 0.2
done
python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
sizes = [tuple(map(int, l.split())) for l in open(sys.argv[3])]
nodes = {x["id"]: x for x in g["nodes"]}
edges = [e for e in g["edges"] if nodes[e["from"]]["comm"] == "curl"]
assert len(edges) == n, ("want %d curl edges" % n, g["edges"])
for e in edges:
    assert nodes[e["to"]]["comm"] == "python3", nodes[e["to"]]
    assert e["conns"] == 1 and e["paired"] == 1, e
got = sorted((e["bytes_c2s"], e["bytes_s2c"]) for e in edges)
want = sorted((q, h + d) for q, h, d in sizes)
assert got == want, (got, want)
print("-- %d connections curl -> python3, paired, bytes as curl counted: %s" % (n, got[0]))
' "$T_TMP/g.json" $N "$T_TMP/sizes" ||
	fail "serve --kafka does not show what curl did: $(cat "$T_TMP/serve.log")"
curl -sf "http://127.0.0.1:$port/api/stats" >"$T_TMP/stats.json" || fail "no stats"
grep -q '"kafka_messages":[1-9]' "$T_TMP/stats.json" || fail "no Kafka messages counted: $(cat "$T_TMP/stats.json")"
note "stats: $(cat "$T_TMP/stats.json")"
