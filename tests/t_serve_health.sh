#!/bin/bash
# Edge health in serve (#31).  Records whose ends carry health, with
# figures this test chose (exchange times at client and server, RTT
# readings, connect times, refused and timed-out connects, resets sent
# by the server), are served; then the same fleet grown (more
# connections) is served again.  Checked each time against the graph's
# own JSON (`causeway graph --format json` of the same file):
#  - /api/graph: every edge's health members equal the graph's, and a
#    node's RED summary (rate, errors, p50/p99) is what its incoming
#    edges' health says;
#  - /metrics, scraped by a real Prometheus: the counters and histogram
#    counts per (host, command) pair equal the graph's sums, and each
#    PromQL p99 lies in the bucket that holds the graph's p99;
#  - the Grafana dashboard (deploy/grafana/): Debian and npm package no
#    Grafana, so every query in it is run through Prometheus' HTTP API
#    against the scrapes of serve and must answer with a finite result;
#  - the page's drawing (/api/graph.svg): edges coloured by p99, failed
#    edges dashed red, a node's RED summary in its tooltip;
#  - the page itself, in a headless Chromium (when there is one): its
#    slowest-edges list in the API's order with the API's p99, and the
#    nodes carrying their RED summary.
. "$(dirname "$0")/lib.sh"
need_cmd python3 prometheus curl
DASH=$(cd "$(dirname "$0")/.." && pwd)/deploy/grafana/causeway-edge-health.json
cd "$T_TMP"

cat >gen.py <<'PY'
# gen.py OUT N: N web -> api connections (both ends, with health), N/5
# connects refused by 10.9.0.3:9 and N/10 timed out to 10.9.0.4:81, all
# from web; the server resets every fourth connection.
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
T0 = 1767225600 * 10**9
def proc(pid, comm):
    return {"pid": pid, "start_ns": 1000 + pid, "comm": comm, "cmdline": comm,
            "cgroup_id": pid, "container": "", "pod": ""}
def end(host, role, cookie, la, lp, ra, rp, comm, pid, i, **health):
    r = {"host": host, "netns": 4026531840, "cookie": cookie, "seq": cookie,
         "proto": "tcp", "role": role, "laddr": la, "lport": lp, "raddr": ra,
         "rport": rp, "bytes_out": 100 + i, "bytes_in": 200 + i, "calls_out": 4,
         "calls_in": 4, "msgs_out": 4, "msgs_in": 4, "first_ns": T0 + i * 10**9,
         "last_ns": T0 + i * 10**9 + 5 * 10**8, "retrans": 0, "srtt_us": 300,
         "closed": True, "preexisting": False, "nat": False,
         "process": proc(pid, comm)}
    r.update(health)
    return r
def hist(vals):
    return {"bins": [[v, 1] for v in vals]}
with open(out, "w") as f:
    for i in range(n):
        port = 40000 + i
        # exchange times chosen per connection: server 1..4 ms, client 0.5 ms more
        srv = [(1 + (i + k) % 4) * 10**6 for k in range(4)]
        cli = [s + 5 * 10**5 for s in srv]
        f.write(json.dumps(end("h-web", "client", 10 + i, "10.9.0.1", port,
            "10.9.0.2", 8080, "web", 100, i, connect_us=150 + i, fail="none",
            resets_in=1 if i % 4 == 0 else 0, resets_out=0, xchg_pipelined=0,
            rtt=hist([300000 + 1000 * i]), xchg=hist(cli),
            xchg_first=hist([c - 2 * 10**5 for c in cli]))) + "\n")
        f.write(json.dumps(end("h-api", "server", 10 + i, "10.9.0.2", 8080,
            "10.9.0.1", port, "api", 200, i, connect_us=0, fail="none",
            resets_in=0, resets_out=1 if i % 4 == 0 else 0, xchg_pipelined=1,
            rtt=hist([310000 + 1000 * i]), xchg=hist(srv))) + "\n")
    for i in range(n // 5 + n // 10):
        refused = i < n // 5
        f.write(json.dumps(end("h-web", "client", 100000 + i, "10.9.0.1",
            50000 + i, "10.9.0.3" if refused else "10.9.0.4",
            9 if refused else 81, "web", 100, i, connect_us=0,
            fail="refused" if refused else "timeout", resets_in=0,
            resets_out=0, xchg_pipelined=0)) + "\n")
PY

cat >check.py <<'PY'
# check.py SERVE PROM GRAPH_JSON DASHBOARD: serve's API and metrics, and
# the dashboard's queries, against the graph's own JSON.
import json, math, sys, time, urllib.parse, urllib.request
serve, prom, graph_file, dash_file = sys.argv[1:5]
LE = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1, 0.25, 0.5, 1, 2.5, 5, 10]
HEALTH = ["conns_refused", "conns_timeout", "resets_by_client",
          "resets_by_server", "xchg_pipelined", "failed"] + [
          "%s_%s" % (h, q) for h in ("connect", "rtt", "client", "client_first",
                                     "server", "network")
          for q in ("count", "p50_ns", "p90_ns", "p99_ns")]

def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())

def promql(q):
    r = get(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    assert r["status"] == "success", (q, r)
    return r["data"]["result"]

graph = json.load(open(graph_file))
gn = {n["id"]: n for n in graph["nodes"]}
want = {}
for e in graph["edges"]:
    want[(gn[e["client"]]["name"], gn[e["server"]]["name"])] = e
health_edges = [k for k, e in want.items() if "failed" in e]
assert len(health_edges) == 3, ("want web->api, refused, timed out", list(want))

api = get(serve + "/api/graph?by=process")
nodes = {n["id"]: n for n in api["nodes"]}
got = {(e["client"], e["server"]): e for e in api["edges"]}
assert set(got) == set(want), (set(got) ^ set(want))
for k, w in want.items():
    for f in HEALTH:
        assert got[k].get(f) == w.get(f), (k, f, got[k].get(f), w.get(f))
print("api: %d edges, health as the graph's" % len(got))

# RED: from the edges into each node
for n in api["nodes"]:
    into = [want[(c, s)] for (c, s) in want if s == n["name"] and "failed" in want[(c, s)]]
    if not into:
        assert "red" not in n, n
        continue
    red = n["red"]
    errors = sum(e["conns_refused"] + e["conns_timeout"] + e["resets_by_client"]
                 + e["resets_by_server"] for e in into)
    timed = sum(e["server_count"] or e["client_count"] for e in into)
    assert red["errors"] == errors and red["exchanges"] == timed, (n["name"], red)
    if len(into) == 1 and timed:
        e = into[0]
        side = "server" if e["server_count"] else "client"
        assert red["p99_ns"] == e[side + "_p99_ns"], (red, e)
        assert red["p50_ns"] == e[side + "_p50_ns"], (red, e)
print("red: summaries from the incoming edges' health")

# Prometheus: sums per (client_comm, server_comm)
def comm(name):
    n = next(x for x in graph["nodes"] if x["name"] == name)
    return n.get("comm") or ("external" if n["kind"] == "external" else "unknown")
def value(q):
    r = promql(q)
    return sum(float(x["value"][1]) for x in r)
for (c, s) in health_edges:
    w = want[(c, s)]
    sel = '{client_comm="%s",server_comm="%s"}' % (comm(c), comm(s))
    if "external" in sel:
        sel = sel[:-1] + ',server_host="%s"}' % next(
            x for x in graph["nodes"] if x["name"] == s)["addr"]
    checks = [
        ("causeway_edge_connections_failed_total%s" % sel.replace("}", ',reason="refused"}'), w["conns_refused"]),
        ("causeway_edge_connections_failed_total%s" % sel.replace("}", ',reason="timeout"}'), w["conns_timeout"]),
        ("causeway_edge_resets_total%s" % sel.replace("}", ',by="server"}'), w["resets_by_server"]),
        ("causeway_edge_resets_total%s" % sel.replace("}", ',by="client"}'), w["resets_by_client"]),
        ("causeway_edge_exchanges_untimed_total%s" % sel, w["xchg_pipelined"])]
    for h, name in (("client", "client_duration"), ("client_first", "client_first_byte"),
                    ("server", "server_duration"), ("connect", "connect_duration"),
                    ("rtt", "rtt")):
        checks.append(("causeway_edge_%s_seconds_count%s" % (name, sel), w[h + "_count"]))
        if not w[h + "_count"]:
            continue
        p = promql("histogram_quantile(0.99, sum by (le) (causeway_edge_%s_seconds_bucket%s))" % (name, sel))
        est, truth = float(p[0]["value"][1]), w[h + "_p99_ns"] / 1e9
        lo = max([0] + [b for b in LE if b < truth * 0.97])
        hi = min([b for b in LE if b >= truth * 1.03] + [math.inf])
        assert lo <= est <= hi, (name, sel, est, truth, lo, hi)
    for q, n in checks:
        v = value(q)
        assert v == n, (q, v, n)
    if w["network_count"]:
        for qn in ("0.5", "0.9", "0.99"):
            v = value('causeway_edge_network_seconds%s' % sel.replace(
                "}", ',quantile="%s"}' % qn))
            key = "network_p%s_ns" % qn[2:].ljust(2, "0")
            assert abs(v - w[key] / 1e9) < 1e-9, (qn, v, w[key])
print("prometheus: counters, histogram counts and network time as the graph's;"
      " p99 in its bucket")

# Grafana's queries, each through the same Prometheus
dash = json.load(open(dash_file))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
assert len(exprs) >= 8, exprs
for q in exprs:
    r = promql(q.replace("$__rate_interval", "2m"))
    assert r, ("no result", q)
    for x in r:
        v = float(x["value"][1])
        assert math.isfinite(v), ("not a number", q, x)
print("grafana: %d dashboard queries answered, every value finite" % len(exprs))
PY

port=$(free_port) || fail "no free port"
pport=$((port + 1))
python3 gen.py fleet.jsonl 8 || fail "gen failed"
serve_start $port --poll 200ms fleet.jsonl
prometheus_start $pport $port

# scraped SERVE RECORDS: wait (a bound, not a measurement) until a scrape
# of that many records is in.
scraped() {
	local i
	for i in $(seq 1 300); do
		curl -sfG "http://127.0.0.1:$pport/api/v1/query" \
			--data-urlencode "query=causeway_records_total" |
			grep -q "\"$1\"\]" && return 0
		sleep 0.2
	done
	fail "prometheus never scraped $1 records: $(tail -3 "$T_TMP/prom.log")"
}
scraped "$(wc -l <fleet.jsonl)"
sleep 2 # two scrapes of the first fleet, for the rates
# The fleet grows: every counter and histogram with it.
python3 gen.py grown.jsonl 40 && mv grown.jsonl fleet.jsonl || fail "gen failed"
scraped "$(wc -l <fleet.jsonl)"
"$CW" graph --by process --format json fleet.jsonl >graph.json ||
	fail "graph failed"
python3 check.py "http://127.0.0.1:$port" "http://127.0.0.1:$pport" \
	graph.json "$DASH" || fail "serve's health is not the graph's"

# The drawing: wait (a bound) while the layout runs.
for i in $(seq 1 100); do
	code=$(curl -s -o graph.svg -w '%{http_code}' \
		"http://127.0.0.1:$port/api/graph.svg?by=process")
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] || fail "no drawing: $code $(cat graph.svg)"
grep -q "edge colour: client p99" graph.svg || fail "no latency caption"
grep -q 'stroke="#9e9d24"' graph.svg ||
	fail "web -> api (p99 4.5 ms) not drawn olive"
grep -q 'stroke="#c62828"' graph.svg && grep -q 'stroke-dasharray' graph.svg ||
	fail "the failed edges are not red and dashed"
grep -q "rate [0-9.]*/s, errors" graph.svg || fail "no RED summary in a tooltip"
note "drawing: edges by p99, failed ones red and dashed, RED in the tooltips"
kill -0 $SERVE_PID || fail "serve died: $(cat serve.err)"

command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
	skip "no chromium or chromedriver: the API passed, the page is not checked"
dport=$((port + 2))
chromedriver_start $dport
cat >page.py <<'PY'
# page.py SERVE DRIVER PROFILE: the slowest edges and the nodes' RED.
import json, sys, urllib.request
from webdriver import Page
serve, driver, profile = sys.argv[1:4]
api = json.loads(urllib.request.urlopen(serve + "/api/graph?by=process",
                                        timeout=30).read())
page = Page(driver, profile, ".")
page.go(serve + "/#by=process")
page.wait("the graph", "const s = document.getElementById('status');"
          "return s.dataset.state === 'ready' && s.dataset.by === 'process';")
rows = page.js("return [...document.querySelectorAll('#slowest tr[data-edge]')]"
               ".map((r) => [r.dataset.edge, r.className,"
               " r.children[3].textContent]);")
edges = {e["id"]: e for e in api["edges"]}
p99 = lambda e: e["client_p99_ns"] if e["client_count"] else e["server_p99_ns"]
want = sorted([e for e in api["edges"] if "failed" in e],
              key=lambda e: (not e["failed"], -p99(e)))
assert [r[0] for r in rows] == [e["id"] for e in want], (rows, want)
for eid, cls, text in rows:
    e = edges[eid]
    assert (cls == "failed") == e["failed"], (eid, cls)
    if not e["failed"]:
        ms = "%.2f ms" % (p99(e) / 1e6)
        assert text == ms, (eid, text, ms)
reds = page.js("return [...document.querySelectorAll('#graph g.node')]"
               ".filter((g) => g.dataset.red).map((g) => g.dataset.name);")
assert sorted(reds) == sorted(n["name"] for n in api["nodes"] if "red" in n), reds
page.shot("health")
page.close()
print("page: %d slowest edges as the API orders them, %d nodes with RED"
      % (len(rows), len(reds)))
PY
PYTHONPATH="$CW_ROOT/tests/lib" python3 page.py "http://127.0.0.1:$port" \
	"http://127.0.0.1:$dport" "$T_TMP/profile" ||
	fail "the page does not show the health the API gives"
