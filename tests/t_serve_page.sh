#!/bin/bash
# causeway serve's page in a real browser, against a live stack: load ->
# nginx -> app -> redis in test hosts, watched by `causeway run --paths`
# while `causeway samples record` samples the web host's link.  serve reads
# the run's folder and the sample store; headless Chromium, driven through
# chromedriver's WebDriver API, loads the page and the test checks what it
# shows against the API's JSON: the graph's nodes and edges in the SVG (and
# that no edge label covers a node), another projection, the share slider,
# a time range, a node's neighbours by clicking it, the host heatmap, the
# paths and a sample run.  Screenshots go to the test's log folder.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx python3 redis-server chromium chromedriver

SHOTS=$CW_ROOT/${BUILD:-build}/test-logs/t_serve_page
rm -rf "$SHOTS"
mkdir -p "$SHOTS"

three_tier
WEB_DEV=$(ip -n "$WEB" -o link show | awk -F': ' '$2 !~ /^lo/ {sub(/@.*/, "", $2); print $2; exit}')
[ -n "$WEB_DEV" ] || fail "no link in $WEB"
STORE=$T_TMP/samples
mkdir -p "$STORE"

out=$T_TMP/out
agent_start "$out" --paths
ip netns exec "$WEB" "$CW" samples record --dev "$WEB_DEV" --interval 1ms \
	--samples 2000 --store "$STORE" >"$T_TMP/rec.out" 2>"$T_TMP/rec.err" &
rec=$!
bg_pid $rec
ip netns exec "$LOAD" python3 "$CW_ROOT/examples/load.py" \
	http://10.77.0.11/api --clients 4 --rate 40 --duration 5s \
	>"$T_TMP/load.json" || fail "load generator failed"
wait $rec || fail "samples record failed: $(cat "$T_TMP/rec.err")"
sleep 0.3
agent_stop "$out" >/dev/null
[ -s "$out/conns.jsonl" ] || fail "the run wrote no conns.jsonl"
[ -s "$out/paths.json" ] || fail "the run wrote no paths.json"

# A synthetic fleet beside the real run: hosts for the heatmap, and small
# edges for the share slider to hide.
"$CW" simulate --hosts 4 --conns 12 --seed 7 -o "$T_TMP/fleet.jsonl" ||
	fail "simulate failed"

port=$((20000 + $$ % 20000))
"$CW" serve --listen 127.0.0.1:$port --samples "$STORE" "$out" \
	"$T_TMP/fleet.jsonl" \
	>"$T_TMP/serve.out" 2>"$T_TMP/serve.err" &
SERVE_PID=$!
bg_pid $SERVE_PID
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/api/stats" >/dev/null && break
	kill -0 $SERVE_PID 2>/dev/null || fail "serve exited: $(cat "$T_TMP/serve.err")"
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/api/stats" >"$T_TMP/stats.json" ||
	fail "serve does not answer: $(cat "$T_TMP/serve.err")"
note "stats: $(cat "$T_TMP/stats.json")"

dport=$((port + 1))
# The browser chromedriver starts goes too, also when the test fails.
on_exit "pkill -f -- '--user-data-dir=$T_TMP/profile'"
chromedriver --port=$dport --allowed-ips=127.0.0.1 >"$T_TMP/driver.log" 2>&1 &
bg_pid $!
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$dport/status" >/dev/null && break
	sleep 0.1
done

cat >"$T_TMP/drive.py" <<'EOF'
import base64, json, sys, time, urllib.parse, urllib.request

serve, driver, shots, profile = sys.argv[1:5]

def http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")

def api(path):
    with urllib.request.urlopen(serve + path, timeout=30) as r:
        return json.loads(r.read())

args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync",
        "--user-data-dir=" + profile, "--window-size=1400,1000"]
caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}}
sess = http("POST", driver + "/session", caps)["value"]["sessionId"]
S = driver + "/session/" + sess

def js(script, *a):
    return http("POST", S + "/execute/sync", {"script": script, "args": list(a)})["value"]

def wait(what, cond, secs=60):
    # A bound on waiting for the page, not a measurement: a page that never
    # gets there fails with what it showed.
    end = time.time() + secs
    while time.time() < end:
        v = js(cond)
        if v:
            return v
        time.sleep(0.2)
    raise SystemExit("timed out waiting for %s; status: %s" %
                     (what, js("return document.body.innerText.slice(0, 400)")))

def shot(name):
    png = http("GET", S + "/screenshot")["value"]
    open("%s/%s.png" % (shots, name), "wb").write(base64.b64decode(png))

def ready(by, node=""):
    wait("the %s graph%s" % (by, " of " + node if node else ""),
         "const s = document.getElementById('status');"
         "return s.dataset.state === 'ready' && s.dataset.by === %s && "
         "s.dataset.node === %s;" % (json.dumps(by), json.dumps(node)))

def check_graph(query, by, node=""):
    ready(by, node)
    g = api("/api/graph?" + query)
    dom = js("""
        const nodes = {}, edges = [];
        for (const n of document.querySelectorAll('#graph g.node'))
            nodes[n.id] = n.dataset.name;
        for (const e of document.querySelectorAll('#graph g.edge'))
            edges.push([e.id, e.querySelector('title').textContent]);
        return {nodes, edges};""")
    want_nodes = {n["id"]: n["name"] for n in g["nodes"]}
    assert dom["nodes"] == want_nodes, (query, dom["nodes"], want_nodes)
    want_edges = sorted([e["id"], "%s->%s" % (e["from"], e["to"])] for e in g["edges"])
    assert sorted(dom["edges"]) == want_edges, (query, dom["edges"], want_edges)
    if node:
        assert all(node in (e["client"], e["server"]) for e in g["edges"]), g["edges"]
    return g

def check_labels():
    # Every edge label's box is clear of every node's box.
    bad = js("""
        const boxes = [...document.querySelectorAll('#graph g.node')].map(
            (n) => n.querySelector('path, polygon').getBBox());
        const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width &&
                              a.y < b.y + b.height && b.y < a.y + a.height;
        const bad = [];
        for (const t of document.querySelectorAll('#graph g.edge text')) {
            const tb = t.getBBox();
            for (const b of boxes) if (hit(tb, b)) bad.push(t.textContent);
        }
        return [bad, document.querySelectorAll('#graph g.edge text').length];""")
    assert not bad[0], "edge labels over nodes: %s" % bad[0]
    assert bad[1] > 0, "no edge labels"
    return bad[1]

http("POST", S + "/url", {"url": serve + "/"})
g = check_graph("by=process", "process")
assert len(g["edges"]) >= 3, g["edges"]
comms = {n["comm"] for n in g["nodes"]}
assert {"nginx", "redis-server"} <= comms, comms
labels = check_labels()
print("-- process view: %d nodes, %d edges, %d edge labels clear of nodes" %
      (len(g["nodes"]), len(g["edges"]), labels))
shot("graph-process")

js("const s = document.getElementById('by'); s.value = 'host';"
   "s.dispatchEvent(new Event('change'));")
g = check_graph("by=host", "host")
check_labels()
print("-- host view: %d nodes, %d edges" % (len(g["nodes"]), len(g["edges"])))
shot("graph-host")

js("const s = document.getElementById('by'); s.value = 'process';"
   "s.dispatchEvent(new Event('change'));")
full = check_graph("by=process", "process")
share = 0.05
js("const s = document.getElementById('share'); s.value = arguments[0];"
   "s.dispatchEvent(new Event('change'));", share)
wait("the share to apply", "return location.hash.includes('min_share');")
g = check_graph("by=process&min_share=%g" % share, "process")
total = full["total_bytes"]
kept = [e for e in full["edges"] if e["bytes_c2s"] + e["bytes_s2c"] >= share * total]
assert len(g["edges"]) == len(kept) and g["hidden_edges"] == len(full["edges"]) - len(kept), \
    (len(g["edges"]), len(kept), g["hidden_edges"])
assert 0 < len(kept) < len(full["edges"]), "the share hid nothing"
print("-- min_share %g: %d of %d edges" % (share, len(g["edges"]), len(full["edges"])))
js("const s = document.getElementById('share'); s.value = 0;"
   "s.dispatchEvent(new Event('change'));")
wait("the share to clear", "return !location.hash.includes('min_share');")

js("const s = document.getElementById('range'); s.value = '-1h';"
   "s.dispatchEvent(new Event('change'));")
wait("the range to apply", "return location.hash.includes('since');")
g = check_graph("by=process&since=-1h", "process")
ranged = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in g["edges"])
assert ranged > 0 and len(g["edges"]) > 0, g
print("-- last hour: %d edges, %d bytes (all: %d)" % (len(g["edges"]), ranged, total))
js("const s = document.getElementById('range'); s.value = '';"
   "s.dispatchEvent(new Event('change'));")
wait("the range to clear", "return !location.hash.includes('since');")
ready("process")

real = json.loads(open(sys.argv[5]).readline())["host"]
target = next(n for n in full["nodes"] if n["comm"] == "nginx" and n["host"] == real)
el = http("POST", S + "/element", {"using": "css selector",
          "value": "#graph g.node[data-name=%s]" % json.dumps(target["name"])})["value"]
http("POST", S + "/element/%s/click" % list(el.values())[0], {})
g = check_graph("by=process&node=" + urllib.parse.quote(target["name"]),
                "process", target["name"])
print("-- neighbours of %s: %d edges" % (target["name"], len(g["edges"])))
shot("graph-neighbours")

js("document.querySelector('button[data-tab=matrix]').click();")
wait("the heatmap", "return document.getElementById('matrix-status').dataset.state === 'ready';")
m = api("/api/matrix")
hosts = api("/api/graph?by=host")
cells = js("return document.querySelectorAll('#matrix td').length;")
assert cells == len(m["names"]) ** 2, (cells, len(m["names"]))
assert sum(map(sum, m["bytes"])) == hosts["total_bytes"], "matrix and graph differ"
assert len(m["names"]) >= 5, m["names"]
diag = [m["bytes"][i][i] for i in range(len(m["names"]))]
assert diag[m["names"].index(real)] > 0, "nothing inside the real host"
print("-- heatmap: %d x %d" % (len(m["names"]), len(m["names"])))
shot("heatmap")

js("document.querySelector('button[data-tab=paths]').click();")
wait("the paths", "return document.getElementById('paths-status').dataset.state === 'ready';")
p = api("/api/paths")
want = sum(len(w["paths"]) for w in p["windows"][-10:])
got = js("return document.querySelectorAll('#paths .path').length;")
hops = js("return document.querySelectorAll('#paths .hop .bar .iqr').length;")
assert got == want and want > 0, (got, want)
print("-- paths: %d windows, %d paths, %d hop bars" % (len(p["windows"]), got, hops))
shot("paths")

js("document.querySelector('button[data-tab=samples]').click();")
wait("the runs", "return document.getElementById('samples-status').dataset.state === 'ready';")
runs = api("/api/samples")["runs"]
assert runs, "no sample runs"
js("document.querySelector('#runs button').click();")
wait("the run's plot", "const i = document.querySelector('#run img');"
     "return i && i.complete && i.naturalWidth > 0;")
print("-- samples: %d runs, plot %s px wide" %
      (len(runs), js("return document.querySelector('#run img').naturalWidth;")))
shot("samples")
http("DELETE", S)
EOF

python3 "$T_TMP/drive.py" "http://127.0.0.1:$port" "http://127.0.0.1:$dport" \
	"$SHOTS" "$T_TMP/profile" "$out/conns.jsonl" || fail "the page does not show what the API says"
kill -0 $SERVE_PID || fail "serve died"
note "screenshots: $SHOTS"
ls "$SHOTS"
