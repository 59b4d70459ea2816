#!/bin/bash
# serve at fleet scale: a simulated fleet of 100 hosts makes a process
# graph of over 10,000 edges.  While Graphviz lays out a view too big for
# it (the drawing bound raised to 3,000 edges, which dot takes well over a
# minute for even on an idle machine, and the time bound lowered to 12 s:
# 1,000 edges, once used here, dot can finish inside 12 s), a real Prometheus
# scrapes serve every 4 s and the JSON API is asked again and again:
# every scrape succeeds (up == 1) and /api/graph and /metrics answer while
# the layout runs, and the layout's process holds none of serve's
# sockets.  The layout is then stopped at its time bound (503 with
# a message saying so, the child process gone); a second big layout that
# nobody asks for any more is stopped before it; the default bound (200
# edges) draws the largest edges at once, and the same view again comes
# from the cache; the page opens on the host view and says what it draws.
# Latencies are printed, not bounded.
. "$(dirname "$0")/lib.sh"
need_cmd curl python3 prometheus
cd "$T_TMP"

"$CW" simulate --hosts 100 --conns 150 --seed 5 -o fleet.jsonl || fail "simulate failed"
port=$(free_port) || fail "no free port"
pport=$((port + 1))
CAUSEWAY_LAYOUT_EDGES=3000 CAUSEWAY_LAYOUT_TIMEOUT=12s serve_start $port fleet.jsonl
prometheus_start $pport $port 4s

cat >check.py <<'EOF'
import json, os, statistics, sys, threading, time, urllib.error
import urllib.parse, urllib.request
serve, prom, serve_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])

def get(url, timeout=30):
    """Status, body and the time to the answer's head (the whole answer
    is made before its head is sent)."""
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            dt = time.monotonic() - t
            body, code = r.read(), r.status
    except urllib.error.HTTPError as e:
        dt = time.monotonic() - t
        body, code = e.read(), e.code
    return code, body, dt

def getj(url):
    code, body, _ = get(url)
    assert code == 200, (url, code, body[:300])
    return json.loads(body)

def promql(q):
    r = getj(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    assert r["status"] == "success", r
    return r["data"]["result"]

def children():
    """serve's child processes (a layout runs in one)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = open("/proc/%s/stat" % p).read()
            except OSError:
                continue
            if int(st.rsplit(")", 1)[1].split()[1]) == serve_pid:
                out.append(int(p))
    return out

def layouts():
    return getj(serve + "/api/stats")["layouts"]

# Prometheus is up and scraping before the layout starts.
for i in range(300):
    res = promql('up{job="causeway"}')
    if res and res[0]["value"][1] == "1":
        break
    time.sleep(0.2)
else:
    raise SystemExit("Prometheus never scraped serve")

g = getj(serve + "/api/graph?by=process")
ne = len(g["edges"])
assert ne >= 10000, "only %d edges" % ne
assert g["layout_max_edges"] == 3000 and g["drawn_edges"] == 3000, g
print("-- %d nodes, %d edges in the process view" % (len(g["nodes"]), ne))

# The same requests with no layout running, to compare.
idle = {"graph": [], "metrics": []}
for i in range(10):
    idle["graph"].append(get(serve + "/api/graph?by=process")[2])
    idle["metrics"].append(get(serve + "/metrics")[2])
    time.sleep(0.1)

# The page's way: ask for the SVG, and again each second while it is 202.
svg_result = {}
def page(query, key, polls):
    for i in range(polls):
        code, body, _ = get(serve + "/api/graph.svg?" + query)
        if code != 202:
            svg_result[key] = (code, body)
            return
        time.sleep(1)
    svg_result[key] = (202, b"")

t0 = time.time()
th = threading.Thread(target=page, args=("by=process", "big", 60))
th.start()
lat = {"graph": [], "metrics": []}
during = fd_checks = 0
while th.is_alive():
    st = layouts()
    running = st["running"] and children()
    code, body, dt = get(serve + "/api/graph?by=process")
    assert code == 200 and body.count(b'"bytes_c2s"') == ne, ("/api/graph", code, body[:200])
    lat["graph"].append(dt)
    code, body, dt = get(serve + "/metrics")
    assert code == 200 and b"causeway_edge_bytes_total" in body, code
    lat["metrics"].append(dt)
    if running and layouts()["running"]:
        during += 1
    for c in children():
        # The layout process holds none of serve's sockets.
        try:
            fds = [os.readlink("/proc/%d/fd/%s" % (c, f))
                   for f in os.listdir("/proc/%d/fd" % c) if int(f) > 2]
        except OSError:
            continue
        socks = [f for f in fds if f.startswith("socket:")]
        assert not socks, ("the layout holds serve's sockets", fds)
        fd_checks += 1
    time.sleep(0.1)
th.join()
t1 = time.time()
code, body = svg_result["big"]
assert code == 503, (code, body[:300])
msg = json.loads(body)["error"]
assert "time bound" in msg, msg
print("-- the 3,000-edge layout: %d after %.1f s: %s" % (code, t1 - t0, msg))
st = layouts()
assert st["timeouts"] == 1 and not st["running"], st
for i in range(50):
    if not children():
        break
    time.sleep(0.1)
assert not children(), "a layout process is left: %s" % children()

def summary(xs):
    xs = sorted(xs)
    return "median %.0f ms, max %.0f ms over %d" % (
        1000 * statistics.median(xs), 1000 * xs[-1], len(xs))
print("-- no layout: /api/graph (%d edges) %s; /metrics %s" % (
    ne, summary(idle["graph"]), summary(idle["metrics"])))
print("-- while it ran: /api/graph %s; /metrics %s" % (
    summary(lat["graph"]), summary(lat["metrics"])))
assert during >= 5, "only %d probes while the layout ran" % during
assert fd_checks, "the layout process was never looked at"

# Every scrape of the window succeeded.
time.sleep(2)
win = "%ds" % int(time.time() - t0 + 2)
ups = promql('min_over_time(up{job="causeway"}[%s])' % win)
n = promql('count_over_time(up{job="causeway"}[%s])' % win)
dur = promql('max_over_time(scrape_duration_seconds{job="causeway"}[%s])' % win)
assert ups and ups[0]["value"][1] == "1", ("a scrape failed", ups)
scrapes = int(float(n[0]["value"][1]))
assert scrapes >= 3, scrapes
print("-- Prometheus: %d scrapes in %s, all up == 1, longest %.0f ms" % (
    scrapes, win, 1000 * float(dur[0]["value"][1])))

# The same source again is not tried again: the failure is kept.
code, body, dt = get(serve + "/api/graph.svg?by=process")
assert code == 503 and "time bound" in json.loads(body)["error"], code
assert layouts()["timeouts"] == 1

# Another big layout that one request starts and nobody asks for again:
# stopped, well before its time bound.
code, body, _ = get(serve + "/api/graph.svg?by=workload")
assert code == 202 and json.loads(body)["pending"], (code, body[:200])
t0 = time.time()
for i in range(150):
    if layouts()["cancelled"] >= 1:
        break
    time.sleep(0.1)
st = layouts()
assert st["cancelled"] == 1 and st["timeouts"] == 1, st
assert not children() or (time.sleep(1) or not children()), children()
print("-- an unwanted layout stopped after %.1f s" % (time.time() - t0))
EOF
python3 check.py "http://127.0.0.1:$port" "http://127.0.0.1:$pport" "$SERVE_PID" ||
	fail "serve at scale: $(tail -3 serve.err)"

# The default bound: a fresh serve draws the 200 largest edges at once, and
# the same view again comes from the cache.
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null
port=$(free_port) || fail "no free port"
"$CW" serve --listen 127.0.0.1:$port fleet.jsonl >serve2.out 2>serve2.err &
bg_pid $!
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/api/stats" >/dev/null && break
	sleep 0.1
done
for i in 1 2; do
	code=$(curl -s -o g$i.svg -w '%{http_code}' "http://127.0.0.1:$port/api/graph.svg?by=process")
	[ "$code" = 200 ] || fail "graph.svg: $code $(head -c 300 g$i.svg)"
done
cmp -s g1.svg g2.svg || fail "the same view drew twice differently"
[ "$(grep -c 'class="edge"' g1.svg)" = 200 ] || fail "not 200 edges drawn: $(grep -c 'class="edge"' g1.svg)"
grep -q "the 200 largest of [0-9]* edges drawn" g1.svg || fail "the SVG does not say what it left out"
curl -sf "http://127.0.0.1:$port/api/stats" >stats.json || fail "no stats"
pyjson 'import json; s = json.load(open("stats.json"))["layouts"]
assert s["done"] == 1 and s["cache_hits"] == 1, s
print("-- default bound: 200 of the edges laid out in %d ms, then from the cache" % s["last_ms"])' ||
	fail "the cache was not used: $(cat stats.json)"

# The page over the same fleet: with no view named it opens on the host
# view and says why; the process view draws its largest 200 edges and
# says so.
need_cmd chromedriver chromium
dport=$(free_port) || fail "no free port"
on_exit "pkill -f -- '--user-data-dir=$T_TMP/profile'"
chromedriver --port=$dport --allowed-ips=127.0.0.1 >driver.log 2>&1 &
bg_pid $!
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$dport/status" >/dev/null && break
	sleep 0.1
done
cat >page.py <<'EOF'
import json, sys, time, urllib.request
serve, driver, profile = sys.argv[1:4]

def http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")

args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--user-data-dir=" + profile, "--window-size=1400,1000"]
caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}}
S = driver + "/session/" + http("POST", driver + "/session", caps)["value"]["sessionId"]

def js(script):
    return http("POST", S + "/execute/sync", {"script": script, "args": []})["value"]

STATE = ("const s = document.getElementById('status'),"
         " n = document.getElementById('graph-note');"
         "return {state: s.dataset.state, text: s.textContent,"
         " by: s.dataset.by || '', note: n.hidden ? '' : n.textContent,"
         " drawn: document.querySelectorAll('#graph g.edge').length};")

def ready(by):
    # A bound on waiting for the page, not a measurement.
    for i in range(300):
        st = js(STATE)
        if st["state"] == "error" or (st["state"] == "ready" and st["by"] == by):
            return st
        time.sleep(0.2)
    raise SystemExit("the %s view never came: %s" % (by, js(STATE)))

try:
    http("POST", S + "/url", {"url": serve + "/"})
    st = ready("host")
    assert st["state"] == "ready", st
    assert "showing the host view" in st["note"], st
    assert 0 < st["drawn"] <= 200, st
    print("-- the page opened on the host view: %s; %s" % (st["text"], st["note"]))
    js("const s = document.getElementById('by'); s.value = 'process';"
       "s.dispatchEvent(new Event('change'));")
    st = ready("process")
    assert st["state"] == "ready" and st["drawn"] == 200, st
    assert "the 200 largest of" in st["note"], st
    print("-- the process view: %s; %s" % (st["text"], st["note"]))
finally:
    http("DELETE", S)
EOF
python3 page.py "http://127.0.0.1:$port" "http://127.0.0.1:$dport" "$T_TMP/profile" ||
	fail "the page at scale: $(tail -3 serve2.err)"
