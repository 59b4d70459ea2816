#!/bin/bash
# causeway serve's page in a real browser, against a live stack: load ->
# nginx -> app -> redis in test hosts, watched by `causeway run --paths`
# while `causeway samples record` samples the web host's link.  serve reads
# the run's folder and the sample store; headless Chromium, driven through
# chromedriver's WebDriver API, loads the page and the test checks what it
# shows against the API's JSON: the graph's nodes and edges in the SVG (and
# that no edge label covers a node), the processes' resources (the run's
# meta.jsonl) equal to `causeway graph --format json` on the same inputs,
# node heights from memory and lines from CPU as viz/'s scales say, the
# pod and workload projections against the graph's, another projection,
# the share slider, a time range, a node's neighbours by clicking it, the
# host heatmap, the paths, a sample run, the placement plan of `causeway place` (units per
# host before and after, the moves) and the stats.  Screenshots go to the
# test's log folder.
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
[ -s "$out/meta.jsonl" ] || fail "the run wrote no meta.jsonl"

# A synthetic fleet beside the real run: hosts for the heatmap, and small
# edges for the share slider to hide.
"$CW" simulate --hosts 4 --conns 12 --seed 7 -o "$T_TMP/fleet.jsonl" ||
	fail "simulate failed"

# A placement plan of another simulated fleet, as `causeway place` writes.
"$CW" simulate -H 8 -c 20 -p 4 -o "$T_TMP/pf.jsonl" --units-out "$T_TMP/u.csv" \
	--hosts-out "$T_TMP/h.csv" >/dev/null || fail "simulate failed"
"$CW" graph --by container --format json -o "$T_TMP/pg.json" "$T_TMP/pf.jsonl" ||
	fail "graph failed"
"$CW" place -H "$T_TMP/h.csv" -U "$T_TMP/u.csv" --time-limit 5 --format json \
	-o "$T_TMP/plan.json" "$T_TMP/pg.json" || fail "place failed"

# What `causeway graph` makes of serve's inputs: the resources and groups
# the page must show.
for by in process pod workload; do
	"$CW" graph --by $by --format json -o "$T_TMP/want-$by.json" \
		"$out/conns.jsonl" "$out/meta.jsonl" "$T_TMP/fleet.jsonl" ||
		fail "graph --by $by failed"
done

port=$(free_port) || fail "no free port"
serve_start $port --samples "$STORE" "$out" "$T_TMP/fleet.jsonl" \
	--plan "$T_TMP/plan.json"
curl -sf "http://127.0.0.1:$port/api/stats" >"$T_TMP/stats.json" ||
	fail "serve does not answer: $(cat "$T_TMP/serve.err")"
note "stats: $(cat "$T_TMP/stats.json")"
# Every process sample of the run's meta.jsonl reached the model.
check_eq "process samples serve holds" \
	"$(json_get "$(cat "$T_TMP/stats.json")" process_samples)" \
	"$(grep -c '"kind":"process"' "$out/meta.jsonl")"

dport=$((port + 1))
chromedriver_start $dport

cat >"$T_TMP/drive.py" <<'EOF'
import base64, json, sys, time, urllib.parse, urllib.request

serve, driver, shots, profile = sys.argv[1:5]
wantdir = sys.argv[7]

from webdriver import http, Page

def api(path):
    with urllib.request.urlopen(serve + path, timeout=30) as r:
        return json.loads(r.read())

page = Page(driver, profile, shots)
S, js, wait, shot = page.S, page.js, page.wait, page.shot

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

USAGE = ("cpu_ms", "cpu_cores", "cpu_peak_cores", "rss_bytes", "rss_peak_bytes")
IDENT = ("pod", "pod_uid", "namespace", "workload", "workload_kind",
         "container_name")

def check_like_graph(g, by):
    # Nodes, their resources and identity, and edges as `causeway graph`
    # gives them for the same inputs.
    want = json.load(open("%s/want-%s.json" % (wantdir, by)))
    wn = {n["name"]: n for n in want["nodes"]}
    for n in g["nodes"]:
        assert n["name"] in wn, (by, n["name"], sorted(wn))
        w = wn[n["name"]]
        for k in USAGE + IDENT:
            assert n.get(k) == w.get(k), (by, n["name"], k, n.get(k), w.get(k))
    we = sorted((e["client_name"], e["server_name"], e["bytes_c2s"], e["bytes_s2c"])
                for e in want["edges"] if e["bytes_c2s"] + e["bytes_s2c"] or e["conns"])
    ge = sorted((e["client"], e["server"], e["bytes_c2s"], e["bytes_s2c"])
                for e in g["edges"])
    assert ge == we, (by, ge, we)
    return [n for n in g["nodes"] if "rss_bytes" in n]

def check_encoding(g, spread=True):
    # Each node's drawn box and line against viz/'s scales: height 0.5 + 2
    # sqrt(rss / largest) inches (at least: a label may need more), line
    # 1 + 7 cpu / busiest points.
    used = [n for n in g["nodes"] if "rss_bytes" in n]
    top_rss = max(n["rss_bytes"] for n in used)
    top_cpu = max(n["cpu_cores"] for n in used)
    dom = js("""
        const out = {};
        for (const n of document.querySelectorAll('#graph g.node')) {
            const s = n.querySelector('path, polygon');
            out[n.id] = [s.getBBox().height, +(s.getAttribute('stroke-width') || 1)];
        }
        return out;""")
    rows = []
    for n in used:
        h = 72 * (0.5 + 2 * (n["rss_bytes"] / top_rss) ** 0.5)
        w = 1 + 7 * n["cpu_cores"] / top_cpu if top_cpu > 0 else 1
        got_h, got_w = dom[n["id"]]
        assert got_h >= h - 1.5, (n["name"], got_h, h)
        assert abs(got_w - w) < 0.02, (n["name"], got_w, w)
        rows.append((n["rss_bytes"], got_h, n["name"]))
    rows.sort()
    # The largest memory is drawn tallest, and memory sets heights apart.
    assert rows[-1][1] >= max(r[1] for r in rows) - 0.5, rows
    assert not spread or rows[-1][1] - rows[0][1] > 10, rows
    legend = js("return [...document.querySelectorAll('#graph svg > g > text')]"
                ".map((t) => t.textContent).join(' ');")
    assert "node height: memory" in legend, legend
    return rows

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
used = check_like_graph(g, "process")
mine = [n for n in used if n["host"] == json.loads(open(sys.argv[5]).readline())["host"]]
assert {"nginx", "redis-server"} <= {n["comm"] for n in mine}, [n["name"] for n in mine]
rows = check_encoding(g)
print("-- resources of %d nodes as causeway graph's; heights %.0f..%.0f pt for "
      "%d..%d bytes of memory" % (len(used), rows[0][1], rows[-1][1], rows[0][0], rows[-1][0]))
for n in mine:
    print("--   %s: %.1f ms CPU, %.3f cores (peak %.3f), %d bytes RSS" %
          (n["name"], n["cpu_ms"], n["cpu_cores"], n["cpu_peak_cores"], n["rss_bytes"]))
shot("graph-process")

for by in ("pod", "workload"):
    js("const s = document.getElementById('by'); s.value = arguments[0];"
       "s.dispatchEvent(new Event('change'));", by)
    g = check_graph("by=" + by, by)
    used = check_like_graph(g, by)
    pods = [n["name"] for n in g["nodes"] if n["name"].startswith("pod ")]
    assert pods and any(n["name"].endswith("(no container)") for n in g["nodes"]), \
        [n["name"] for n in g["nodes"]]
    # The test hosts' processes share one host: one group outside pods.
    check_encoding(g, spread=False)
    print("-- %s view: %d nodes (%d pods of the simulated fleet), %d edges, "
          "%d with resources" % (by, len(g["nodes"]), len(pods), len(g["edges"]), len(used)))
    shot("graph-" + by)

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

js("document.querySelector('button[data-tab=plan]').click();")
wait("the plan", "return document.getElementById('plan-status').dataset.state === 'ready';")
plan = json.load(open(sys.argv[6]))
chosen = next(x for x in plan["plans"] if x["method"] == plan["chosen"])
want = {}
for u in chosen["units"]:
    want.setdefault(u["from"], [0, 0])[0] += 1
    want.setdefault(u["to"], [0, 0])[1] += 1
dom = js("""
    const out = {};
    for (const r of document.querySelectorAll('#plan-hosts tr[data-host]'))
        out[r.dataset.host] = [+r.querySelector('.before').dataset.n,
                               +r.querySelector('.after').dataset.n];
    return [out, [...document.querySelectorAll('#plan-moves tr.move')].map(
        (r) => r.dataset.unit)];""")
assert dom[0] == want, (dom[0], want)
assert dom[1] == [m["unit"] for m in chosen["moves"]], (dom[1], chosen["moves"])
assert chosen["moves"], "the plan moves nothing"
print("-- placement: %d hosts, %d moves, %d -> %d bytes between hosts" %
      (len(want), len(dom[1]), chosen["cross_bytes_now"], chosen["cross_bytes"]))
shot("placement")

js("document.querySelector('button[data-tab=stats]').click();")
wait("the stats", "return document.getElementById('stats-status').dataset.state === 'ready';")
st = api("/api/stats")
rows = js("return [...document.querySelectorAll('#stats tr th')].map((t) => t.textContent);")
assert rows == list(st.keys()), (rows, list(st.keys()))
print("-- stats: %d rows" % len(rows))
shot("stats")
http("DELETE", S)
EOF

PYTHONPATH="$CW_ROOT/tests/lib" python3 "$T_TMP/drive.py" \
	"http://127.0.0.1:$port" "http://127.0.0.1:$dport" \
	"$SHOTS" "$T_TMP/profile" "$out/conns.jsonl" "$T_TMP/plan.json" "$T_TMP" ||
	fail "the page does not show what the API says"
kill -0 $SERVE_PID || fail "serve died"
note "screenshots: $SHOTS"
ls "$SHOTS"
