#!/bin/bash
# A real Prometheus server scrapes causeway serve on loopback: PromQL over
# its HTTP API gives the edge bytes of the graph (in all, and per command
# pair), the connections, and the pipeline's health (records, agents).
# Then the input is rewritten with another fleet: serve reads it again and
# the next scrape gives the new graph's figures.
. "$(dirname "$0")/lib.sh"
need_cmd curl python3 prometheus
cd "$T_TMP"

"$CW" simulate --hosts 5 --conns 30 --seed 11 -o fleet.jsonl || fail "simulate failed"
port=$(free_port) || fail "no free port"
pport=$((port + 1))
serve_start $port --poll 200ms fleet.jsonl
curl -sf "http://127.0.0.1:$port/metrics" >metrics.txt || fail "no /metrics: $(cat serve.err)"
grep -q '^# TYPE causeway_edge_bytes_total counter' metrics.txt || fail "no edge counter"
grep -E 'pid=|port=' metrics.txt && fail "pid or port labels in the metrics"
prometheus_start $pport $port

cat >check.py <<'EOF'
import json, sys, time, urllib.parse, urllib.request
serve, prom, want_records = sys.argv[1], sys.argv[2], int(sys.argv[3])

def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())

def promql(q):
    r = get(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    assert r["status"] == "success", r
    return r["data"]["result"]

g = get(serve + "/api/graph?by=process")
want_total = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in g["edges"])
# Wait (a bound, not a measurement) until a scrape of these records is in.
for i in range(300):
    res = promql("causeway_records_total")
    if res and int(float(res[0]["value"][1])) == want_records:
        break
    time.sleep(0.2)
else:
    raise SystemExit("Prometheus never scraped %d records: %s" % (want_records, res))
res = promql("sum(causeway_edge_bytes_total)")
got = int(float(res[0]["value"][1]))
assert got == want_total, (got, want_total)

nodes = {n["id"]: n for n in g["nodes"]}
def comm(n):
    return "external" if n["external"] else n["comm"] or "unknown"
pairs = {}
for e in g["edges"]:
    k = (comm(nodes[e["from"]]), comm(nodes[e["to"]]))
    pairs[k] = pairs.get(k, 0) + e["bytes_c2s"] + e["bytes_s2c"]
res = promql("sum by (client_comm, server_comm) (causeway_edge_bytes_total)")
got_pairs = {(r["metric"]["client_comm"], r["metric"]["server_comm"]):
             int(float(r["value"][1])) for r in res}
assert got_pairs == pairs, (got_pairs, pairs)

conns = sum(e["conns"] for e in g["edges"])
res = promql("sum(causeway_edge_connections_total)")
assert int(float(res[0]["value"][1])) == conns, (res, conns)
hosts = {n["host"] for n in g["nodes"] if not n["external"]}
res = promql("causeway_agents")
assert int(float(res[0]["value"][1])) == len(hosts), (res, hosts)
print("-- PromQL: %d bytes on %d command pairs, %d connections, %d agents, "
      "as the graph says" % (got, len(pairs), conns, len(hosts)))
EOF

records=$(wc -l <fleet.jsonl)
python3 check.py "http://127.0.0.1:$port" "http://127.0.0.1:$pport" "$records" ||
	fail "Prometheus and the graph disagree: $(tail -3 prom.log)"

# Another fleet in the same file: read again, scraped again.
"$CW" simulate --hosts 7 --conns 40 --seed 12 -o fleet.new || fail "simulate failed"
mv fleet.new fleet.jsonl
records=$(wc -l <fleet.jsonl)
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/api/stats" | grep -q "\"records\":$records," && break
	sleep 0.1
done
python3 check.py "http://127.0.0.1:$port" "http://127.0.0.1:$pport" "$records" ||
	fail "after the rewrite, Prometheus and the graph disagree"
