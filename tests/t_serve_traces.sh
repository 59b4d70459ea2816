#!/bin/bash
# causeway serve's trace view (--traces FILE) against the OTLP/JSON that
# `causeway traces --truth` writes for the TrainTicket span trace: every
# figure of /api/traces is computed again here in Python from the OTLP
# file itself (the trace count, each trace's spans, links and lowest
# confidence, the slowest trace's id and duration, time filters and
# limits), and the waterfall of the slowest trace is compared row by row
# (name, depth, duration, critical path) with `causeway traces --trace ID`'s
# terminal waterfall.  Bad `trace` and `limit` values get a 400 naming what
# was wrong; a file rewritten with Online Boutique's traces is picked up;
# a corrupt file keeps the last good traces and is counted in /api/stats;
# a bad file at start is one line and exit 1.  Then headless Chromium
# opens the Traces tab, clicks the slowest trace and the waterfall shows
# one bar per span, placed and scaled by time, the critical path and the
# low-confidence links as the API says.  Screenshots go to the test's log
# folder.
. "$(dirname "$0")/lib.sh"
need_cmd python3 curl
SPANS=${CW_SPANS:-$CW_ROOT/../shared/data/spans}
TT=$SPANS/train-ticket-2023-01-29.csv
OB=$SPANS/online-boutique-2022-08-23.csv
[ -f "$TT" ] && [ -f "$OB" ] || skip "no span traces in $SPANS"
cd "$T_TMP"

"$CW" traces --truth "$TT" -o tt.json >tt.out 2>tt.err ||
	fail "causeway traces failed: $(cat tt.err)"
"$CW" traces --truth "$OB" -o ob.json >ob.out 2>ob.err ||
	fail "causeway traces failed: $(cat ob.err)"

# What the file holds, computed from it alone.
cat >count.py <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
tr = {}
for rs in doc["resourceSpans"]:
    svc = [a["value"]["stringValue"] for a in rs["resource"]["attributes"]
           if a["key"] == "service.name"][0]
    for ss in rs["scopeSpans"]:
        for s in ss["spans"]:
            a = {x["key"]: x["value"] for x in s["attributes"]}
            t = tr.setdefault(s["traceId"], {"spans": [], "links": {},
                                             "conf": None})
            t["spans"].append(s)
            m = a["causeway.link.method"]["stringValue"]
            t["links"][m] = t["links"].get(m, 0) + 1
            c = a["causeway.link.confidence"]["doubleValue"]
            if m != "connection" and (t["conf"] is None or c < t["conf"]):
                t["conf"] = c
for t in tr.values():
    t["start"] = min(int(s["startTimeUnixNano"]) for s in t["spans"])
    t["end"] = max(int(s["endTimeUnixNano"]) for s in t["spans"])
    t["duration"] = t["end"] - t["start"]
json.dump(tr, open(sys.argv[2], "w"))
slow = max(tr, key=lambda k: (tr[k]["duration"], -tr[k]["start"]))
print(len(tr), slow, tr[slow]["duration"])
EOF
read -r n_tt slow_tt dur_tt < <(python3 count.py tt.json tt-want.json) ||
	fail "the OTLP file does not read in Python"
read -r n_ob slow_ob dur_ob < <(python3 count.py ob.json ob-want.json) ||
	fail "the OTLP file does not read in Python"
note "TrainTicket: $n_tt traces, slowest $slow_tt ($dur_tt ns); Online Boutique: $n_ob traces"
[ "$n_tt" -gt 10 ] && [ "$n_ob" -gt 10 ] && [ "$n_tt" != "$n_ob" ] ||
	fail "want two different, non-trivial trace files"
"$CW" traces --truth "$TT" --trace "$slow_tt" >wf.txt 2>wf.err ||
	fail "causeway traces --trace failed: $(cat wf.err)"

# A bad file at start: one line naming it, where and why, and exit 1.
printf '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}\n' >bad.json
while IFS='|' read -r f pat; do
	timeout 20 "$CW" serve --listen 127.0.0.1:0 --traces "$f" >start.out 2>start.err
	rc=$?
	[ $rc -eq 1 ] && [ "$(wc -l <start.err)" -eq 1 ] && grep -qF -- "$pat" start.err ||
		fail "serve --traces $f: exit $rc, want 1 and '$pat': $(cat start.err)"
	note "$(cat start.err)"
done <<EOF2
bad.json|'bad.json': resourceSpans[0].scopeSpans[0].spans[0]: 'traceId' is not 32 hex digits
nosuch.json|unable to read 'nosuch.json'
tt.out|'tt.out': line 1: not JSON
EOF2

cp tt.json live.json
port=$(free_port) || fail "no free port"
serve_start $port --traces live.json
API=http://127.0.0.1:$port

cat >check.py <<'EOF'
import json, re, sys, urllib.error, urllib.request
api, want_file, wf_file = sys.argv[1:4]
want = json.load(open(want_file))

def get(path, code=200):
    try:
        with urllib.request.urlopen(api + path, timeout=30) as r:
            got, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        got, body = e.code, e.read()
    assert got == code, (path, got, body)
    return json.loads(body)

# The list: every trace, slowest first, each as the file says.
lst = get("/api/traces?limit=10000")
assert lst["total"] == len(want) == len(lst["traces"]), (lst["total"], len(want))
durs = [t["duration_ns"] for t in lst["traces"]]
assert durs == sorted(durs, reverse=True), "not slowest first"
for t in lst["traces"]:
    w = want[t["trace_id"]]
    assert t["spans"] == len(w["spans"]), (t["trace_id"], t["spans"], len(w["spans"]))
    assert t["start_ns"] == w["start"] and t["duration_ns"] == w["duration"], t
    for m in ("thread", "timing", "contained", "none"):
        assert t["links"][m] == w["links"].get(m, 0), (t["trace_id"], m, t["links"], w["links"])
    if w["conf"] is None:
        assert t["min_confidence"] is None, t
    else:
        assert abs(t["min_confidence"] - w["conf"]) < 1e-9, (t, w["conf"])
slow = max(want, key=lambda k: (want[k]["duration"], -want[k]["start"]))
assert lst["traces"][0]["trace_id"] == slow, (lst["traces"][0]["trace_id"], slow)
assert lst["traces"][0]["duration_ns"] == want[slow]["duration"]
print("-- list: %d traces, slowest %s %.3f ms, %d spans" % (len(want), slow,
      want[slow]["duration"] / 1e6, len(want[slow]["spans"])))
assert len(get("/api/traces")["traces"]) == min(100, len(want))
top5 = get("/api/traces?limit=5")
assert [t["trace_id"] for t in top5["traces"]] == [t["trace_id"] for t in lst["traces"][:5]]
assert top5["total"] == len(want)

# One trace of middling size: its spans are the file's.
mid = sorted(want, key=lambda k: len(want[k]["spans"]))[len(want) // 2]
one = get("/api/traces?trace=" + mid)
assert one["spans"] == len(one["waterfall"]) == len(want[mid]["spans"]), mid
assert sorted(s["span_id"] for s in one["waterfall"]) == \
    sorted(s["spanId"] for s in want[mid]["spans"]), mid
assert get("/api/traces?trace=" + mid.upper())["trace_id"] == mid
print("-- trace %s: %d spans" % (mid, one["spans"]))

# The slowest as a waterfall, row by row as `causeway traces --trace`.
one = get("/api/traces?trace=" + slow)
lines = open(wf_file).read().splitlines()
head = [i for i, l in enumerate(lines) if l.startswith("trace ")]
assert head and lines[head[0]].split()[1] == slow, lines[:3]
rows = []
for l in lines[head[0] + 1:]:
    m = re.match(r"^([* ]) ( *)(\S.*?)\s*\|[= ]*\|\s*([0-9.]+) ms", l)
    if not m:
        break
    rows.append((m.group(1) == "*", len(m.group(2)) // 2, m.group(3), m.group(4)))
got = [(s["critical"], s["depth"], s["name"], "%.3f" % (s["duration_ns"] / 1e6))
       for s in one["waterfall"]]
assert got == rows, [(a, b) for a, b in zip(got, rows) if a != b][:5]
crit = sum(r[0] for r in rows)
assert 0 < crit < len(rows), crit
byid = {s["spanId"]: s for s in want[slow]["spans"]}
for i, s in enumerate(one["waterfall"]):
    f = byid[s["span_id"]]
    assert s["offset_ns"] == int(f["startTimeUnixNano"]) - want[slow]["start"]
    p = f.get("parentSpanId")
    assert (s["parent"] is None) == (p is None), s
    if p:
        assert one["waterfall"][s["parent"]]["span_id"] == p and s["parent"] < i
print("-- waterfall of %s: %d rows, %d on the critical path, as causeway "
      "traces prints them" % (slow, len(rows), crit))

# since/until: traces that started in [since, until).
starts = sorted(w["start"] for w in want.values())
since = starts[len(starts) // 4] // 10**9 + 1
until = starts[3 * len(starts) // 4] // 10**9 + 1
inr = [k for k, w in want.items() if since * 10**9 <= w["start"] < until * 10**9]
f = get("/api/traces?since=%d&until=%d&limit=10000" % (since, until))
assert f["total"] == len(inr) and sorted(t["trace_id"] for t in f["traces"]) == sorted(inr)
assert 0 < len(inr) < len(want), len(inr)
f2 = get("/api/traces?since=%d&until=%d&limit=3" % (since, until))
assert f2["total"] == len(inr) and len(f2["traces"]) == 3
assert [t["trace_id"] for t in f2["traces"]] == [t["trace_id"] for t in f["traces"][:3]]
print("-- since %d until %d: %d of %d traces" % (since, until, len(inr), len(want)))

# Bad values: 400 (or 404) with a message that names what.
for path, code, pat in [
        ("/api/traces?trace=xyz", 400, "32 hex digits"),
        ("/api/traces?trace=" + "0" * 32, 400, "all-zero"),
        ("/api/traces?trace=" + slow + "0", 400, "32 hex digits"),
        ("/api/traces?trace=" + slow[:31] + "g", 400, "32 hex digits"),
        ("/api/traces?trace=", 400, "32 hex digits"),
        ("/api/traces?trace=%s&trace=%s" % (slow, slow), 400, "given twice"),
        ("/api/traces?trace=%s&limit=3" % slow, 400, "'limit' does not apply with 'trace'"),
        ("/api/traces?trace=%s&since=-1h" % slow, 400, "'since' does not apply with 'trace'"),
        ("/api/traces?trace=" + "ab" * 16, 404, "no trace 'abababab"),
        ("/api/traces?limit=0", 400, "'limit': want a whole number from 1 to 10000"),
        ("/api/traces?limit=10001", 400, "from 1 to 10000"),
        ("/api/traces?limit=-1", 400, "from 1 to 10000"),
        ("/api/traces?limit=2x", 400, "from 1 to 10000"),
        ("/api/traces?by=host", 400, "'by' does not apply"),
        ("/api/graph?trace=" + slow, 400, "'trace' does not apply"),
        ("/api/stats?limit=3", 400, "'limit' does not apply")]:
    e = get(path, code)
    assert e["status"] == code and pat in e["error"], (path, e)
    print("-- %s -> %d %s" % (path, code, e["error"]))
EOF
python3 check.py "$API" tt-want.json wf.txt || fail "/api/traces does not say what the file holds"

stats() { curl -sf "$API/api/stats" >stats.json || fail "no stats: $(cat serve.err)"; }
stat_of() { json_get "$(cat stats.json)" "$1"; }
stats
check_eq "traces in stats" "$(stat_of traces)" "$n_tt"
check_eq "trace loads" "$(stat_of trace_loads)" 1

# Rewritten (as `causeway traces -o` writes: a new file renamed over the
# old): picked up on the next request.
cp ob.json live.json.tmp && mv live.json.tmp live.json
for i in $(seq 100); do
	stats
	[ "$(stat_of trace_loads)" = 2 ] && break
	sleep 0.1
done
check_eq "trace loads after a rewrite" "$(stat_of trace_loads)" 2
check_eq "traces after a rewrite" "$(stat_of traces)" "$n_ob"
python3 -c '
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/traces?limit=1"))
assert d["total"] == int(sys.argv[2]) and d["traces"][0]["trace_id"] == sys.argv[3], d
assert d["traces"][0]["duration_ns"] == int(sys.argv[4]), d
' "$API" "$n_ob" "$slow_ob" "$dur_ob" || fail "the rewritten file is not what serve shows"
note "rewritten: $n_ob traces, slowest $slow_ob"

# Corrupt: not JSON, then JSON that is not OTLP; each counted once, the
# last good traces kept, the log naming the file.
curl -sf "$API/api/traces?limit=10000" >good.json || fail "no traces"
printf '{"resourceSpans": [\n{"scopeSpans": \n' >live.json.tmp && mv live.json.tmp live.json
for i in $(seq 100); do
	stats
	[ "$(stat_of trace_load_errors)" = 1 ] && break
	sleep 0.1
done
check_eq "trace load errors" "$(stat_of trace_load_errors)" 1
note "stats: $(stat_of trace_last_error)"
stat_of trace_last_error | grep -q "'live.json': line 3: not JSON" ||
	fail "the error does not say where: $(stat_of trace_last_error)"
curl -sf "$API/api/traces?limit=10000" >after.json || fail "no traces after a bad file"
cmp -s good.json after.json || fail "a corrupt file changed the traces"
stats
check_eq "trace load errors, asked again" "$(stat_of trace_load_errors)" 1
check_eq "traces kept" "$(stat_of traces)" "$n_ob"
python3 -c '
import json
d = json.load(open("ob.json"))
d["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["endTimeUnixNano"] = "1"
json.dump(d, open("live.json.tmp", "w"))
' && mv live.json.tmp live.json
for i in $(seq 100); do
	stats
	[ "$(stat_of trace_load_errors)" = 2 ] && break
	sleep 0.1
done
check_eq "trace load errors" "$(stat_of trace_load_errors)" 2
stat_of trace_last_error |
	grep -q "resourceSpans\[0\].scopeSpans\[0\].spans\[2\]: it ends before it starts" ||
	fail "the error does not say where: $(stat_of trace_last_error)"
grep -q "live.json" serve.err || fail "the log does not name the file: $(cat serve.err)"
curl -sf "$API/api/traces?limit=10000" >after.json && cmp -s good.json after.json ||
	fail "a bad file changed the traces"
note "corrupt twice: $(stat_of trace_load_errors) errors counted, $n_ob traces kept"

# Back to TrainTicket for the page.
cp tt.json live.json.tmp && mv live.json.tmp live.json
for i in $(seq 100); do
	stats
	[ "$(stat_of traces)" = "$n_tt" ] && break
	sleep 0.1
done
check_eq "traces after a good file again" "$(stat_of traces)" "$n_tt"
kill -0 $SERVE_PID || fail "serve died: $(cat serve.err)"

command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
	skip "no chromium or chromedriver: the API passed, the page is not checked"
SHOTS=$CW_ROOT/${BUILD:-build}/test-logs/t_serve_traces
rm -rf "$SHOTS"
mkdir -p "$SHOTS"
dport=$((port + 1))
chromedriver_start $dport

cat >drive.py <<'EOF'
import base64, json, sys, time, urllib.request

serve, driver, shots, profile = sys.argv[1:5]

from webdriver import http, Page

def api(path):
    with urllib.request.urlopen(serve + path, timeout=30) as r:
        return json.loads(r.read())

page = Page(driver, profile, shots)
S, js, wait, shot = page.S, page.js, page.wait, page.shot

http("POST", S + "/url", {"url": serve + "/"})
js("document.querySelector('button[data-tab=traces]').click();")
wait("the trace list", "return document.getElementById('traces-status')"
     ".dataset.state === 'ready';")
lst = api("/api/traces?limit=50")
ids = js("return [...document.querySelectorAll('#traces-list tr[data-trace]')]"
         ".map((r) => r.dataset.trace);")
assert ids == [t["trace_id"] for t in lst["traces"]], (ids[:3], lst["traces"][:1])
print("-- list: %d rows, slowest first" % len(ids))
shot("traces")

slow = ids[0]
el = http("POST", S + "/element", {"using": "css selector",
          "value": "#traces-list tr[data-trace='%s']" % slow})["value"]
http("POST", S + "/element/%s/click" % list(el.values())[0], {})
wait("the waterfall", "const s = document.getElementById('trace-status');"
     "return s.dataset.state === 'ready' && s.dataset.trace === %s;" % json.dumps(slow))
t = api("/api/traces?trace=" + slow)
dom = js("""
    return [...document.querySelectorAll('#trace .wf-row')].map((r) => {
        const lane = r.querySelector('.lane').getBoundingClientRect();
        const bar = r.querySelector('.bar').getBoundingClientRect();
        return {left: (bar.left - lane.left) / lane.width,
                width: bar.width / lane.width, lane: lane.width,
                critical: r.querySelector('.bar').classList.contains('critical'),
                low: r.querySelector('.bar').classList.contains('low'),
                mark: !!r.querySelector('.low-mark'),
                colour: getComputedStyle(r.querySelector('.bar')).backgroundColor};
    });""")
wf = t["waterfall"]
assert len(dom) == len(wf) == t["spans"], (len(dom), len(wf), t["spans"])
colour = {}
for d, s in zip(dom, wf):
    px = 1.5 / d["lane"]   # a bar is placed to within a pixel or so
    assert abs(d["left"] - s["offset_ns"] / t["duration_ns"]) < px, (d, s)
    assert abs(d["width"] - s["duration_ns"] / t["duration_ns"]) < px or \
        (d["width"] * d["lane"] <= 2.5 and s["duration_ns"] / t["duration_ns"] * d["lane"] < 2), (d, s)
    assert d["critical"] == s["critical"], (d, s)
    low = s["confidence"] is not None and s["confidence"] < 0.5 and s["method"] != "connection"
    assert d["low"] == low == d["mark"], (d, s)
    assert colour.setdefault(s["service"], d["colour"]) == d["colour"], s["service"]
assert len(set(colour.values())) > 1, colour
crit = sum(d["critical"] for d in dom)
lows = sum(d["low"] for d in dom)
assert crit == sum(s["critical"] for s in wf) and crit > 0
print("-- waterfall of %s: %d bars, %d on the critical path, %d low-confidence "
      "links marked, %d services in %d colours" % (slow, len(dom), crit, lows,
      len(colour), len(set(colour.values()))))
shot("waterfall")
http("DELETE", S)
EOF
PYTHONPATH="$CW_ROOT/tests/lib" python3 drive.py "$API" \
	"http://127.0.0.1:$dport" "$SHOTS" "$T_TMP/profile" ||
	fail "the page does not show what the API says"
kill -0 $SERVE_PID || fail "serve died"
note "screenshots: $SHOTS"
