#!/bin/bash
# Hostile process names, through the whole pipeline.  In a test host, a
# server and a client (tests/lib/hostile_peer.c) talk TCP; each set its
# comm with prctl to bytes a terminal or a parser chokes on (an escape
# sequence, quotes, <&>, a backslash; invalid UTF-8 and a character the
# kernel's 15-byte cut splits), and the client was exec'ed with an argv of
# escape sequences, quotes, a newline, invalid UTF-8, a bidi override and
# 600 bytes of multibyte text.  `causeway run` watches; then every output
# is read by a real parser:
#   run's table                  UTF-8, no control byte but newlines
#   conns.jsonl, edges.json      Python's json; the names are /proc's own
#                                (read here while the client lived),
#                                cleaned by an independent model: U+FFFD
#                                for bad bytes, '?' for controls, cut at
#                                15/255 bytes between characters
#   graph.dot (run -o)           Graphviz lays it out; its SVG parses
#   graph: table, json, graphml, dot, csv, matrix
#                                UTF-8 / json / XML parser / dot / csv
#   render: svg, dot             XML parser (the labels read back as the
#                                names), dot -Tsvg
#   serve: /metrics, /api/graph, /api/graph.svg
#                                promtool, json, XML parser
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 dot promtool curl gcc

# The client's own path is multibyte text too, so cuts of the command
# line at any byte count (labels keep 40, 57, 60 bytes) fall inside a
# character: 14 x "é中" after the 26 bytes of $T_TMP/.
PEER=$T_TMP/$(for _ in $(seq 14); do printf 'é中'; done)peer
gcc -O1 -Wall -o "$PEER" "$CW_ROOT/tests/lib/hostile_peer.c" ||
	fail "unable to build tests/lib/hostile_peer.c"
NS=$(ns_create hostile)
PORT=7600
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
# ESC [31m, quotes, <&>, a backslash: 12 bytes.
CLIENT_COMM=$(hex $'\e[31mEV"<&>\\')
# Two bad bytes and five 3-byte characters: the kernel keeps 15 bytes,
# the last character cut after its first byte.
SERVER_COMM=$(hex $'\xff\xfe中中中中中')
LONG=$(for _ in $(seq 120); do printf 'é中'; done)

agent_start "$T_TMP/out" --netns "$(ns_inode "$NS")" --interval 200ms
ip netns exec "$NS" "$PEER" server 127.0.0.1 $PORT \
	"$SERVER_COMM" $'\e[2J' &
bg_pid $!
wait_port "$NS" $PORT
ip netns exec "$NS" "$PEER" client 127.0.0.1 $PORT \
	"$CLIENT_COMM" 3 $'--title=\e]0;pwned\a' 'say "hi"' 'back\slash' \
	$'new\nline' '<b>&amp;</b>' $'bad\xff\xc0utf8' $'\xe2\x80\xaeevil' \
	"$LONG" >"$T_TMP/client.out" &
CLIENT=$!
bg_pid $CLIENT
wait_file "$T_TMP/client.out"
PID=$(json_get "$(cat "$T_TMP/client.out")" pid)
SPID=$(ip netns pids "$NS" | while read -r p; do
	[ "$(cat /proc/$p/comm 2>/dev/null | od -An -tx1 | tr -d ' \n' |
		cut -c1-4)" = fffe ] && echo "$p"; done | head -n 1)
[ -n "$SPID" ] || fail "no server process with the hostile comm"
# Ground truth, from /proc while both live.
cp "/proc/$PID/cmdline" "$T_TMP/client.cmdline"
cp "/proc/$PID/comm" "$T_TMP/client.comm"
cp "/proc/$SPID/comm" "$T_TMP/server.comm"
wait $CLIENT || fail "the client failed"
sleep 0.6
agent_stop "$T_TMP/out" >"$T_TMP/table.txt"
note "client pid $PID, server pid $SPID"

cd "$T_TMP" || fail "no $T_TMP"
OUT=$T_TMP/out
G="$CW graph --window 0"
$G "$OUT/conns.jsonl" >g-table.txt || fail "graph (table) failed"
for f in json graphml dot csv; do
	$G --by process -o "g.$f" "$OUT/conns.jsonl" || fail "graph -o g.$f failed"
	$G --by cmdline -o "gc.$f" "$OUT/conns.jsonl" ||
		fail "graph --by cmdline -o gc.$f failed"
done
$G --matrix --by process -o matrix.csv "$OUT/conns.jsonl" || fail "graph --matrix failed"
"$CW" render --min-share 0 -o r.svg "$OUT/conns.jsonl" || fail "render svg failed"
"$CW" render --min-share 0 --format dot -o r.dot "$OUT/conns.jsonl" ||
	fail "render dot failed"
"$CW" render --by cmdline --min-share 0 --format dot -o rc.dot \
	"$OUT/conns.jsonl" || fail "render --by cmdline dot failed"
for f in "$OUT/graph.dot" g.dot gc.dot r.dot rc.dot; do
	dot -Tsvg "$f" >"$f.svg" 2>"$f.err" || fail "Graphviz refuses $f: $(cat "$f.err")"
	[ -s "$f.err" ] && fail "Graphviz warns on $f: $(cat "$f.err")"
done

port=$(free_port) || fail "no free port"
"$CW" serve --listen 127.0.0.1:$port "$OUT" >serve.out 2>serve.err &
bg_pid $!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/api/stats" >/dev/null && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/metrics" >metrics.txt ||
	fail "no /metrics: $(cat serve.err)"
curl -sf "http://127.0.0.1:$port/api/graph?by=process" >api-graph.json ||
	fail "no /api/graph"
curl -sf "http://127.0.0.1:$port/api/graph.svg?by=process" >api-graph.svg ||
	fail "no /api/graph.svg"
promtool check metrics <metrics.txt >promtool.out 2>&1
rc=$?
[ $rc -eq 1 ] || grep -q "parsing error" promtool.out &&
	fail "promtool cannot parse /metrics: $(cat promtool.out)"
note "promtool parses /metrics (lint exit $rc)"

python3 - "$PID" "$SPID" <<'PY' || fail "an output mangles or refuses the names"
import csv, io, json, sys
import xml.etree.ElementTree as ET

pid, spid = int(sys.argv[1]), int(sys.argv[2])

def unsafe(c):
    o = ord(c)
    return (o < 0x20 or 0x7f <= o <= 0x9f or 0x2028 <= o <= 0x202e
            or 0x2066 <= o <= 0x2069)

def drop_cut(b):
    # A character the input ends inside was cut by whoever truncated it.
    for k in (1, 2, 3):
        try:
            b[-k:].decode("utf-8")
        except UnicodeDecodeError as e:
            if e.start == 0 and e.reason == "unexpected end of data":
                return b[:-k]
    return b

def model(b, limit):
    """What the agent must make of raw bytes: the independent model."""
    s = drop_cut(b).decode("utf-8", "replace")
    out = b""
    for c in ("?" if unsafe(c) else c for c in s):
        if len(out) + len(c.encode()) > limit:
            break
        out += c.encode()
    return out.decode()

raw = open("client.cmdline", "rb").read().rstrip(b"\0").replace(b"\0", b" ")
want_cmd = model(raw, 255)
want_comm = model(open("client.comm", "rb").read().rstrip(b"\n"), 15)
want_scomm = model(open("server.comm", "rb").read().rstrip(b"\n"), 15)
# The model against names worked out by hand from the bytes sent.
assert want_comm == '?[31mEV"<&>\\', want_comm
assert want_scomm == "\ufffd\ufffd中中中", want_scomm
assert want_cmd.split(" ")[1:4] == ["client", "127.0.0.1", "7600"], want_cmd
tail = want_cmd.split(" 3 ", 1)[1]
assert tail.startswith('--title=?]0;pwned? say "hi" back\\slash new?line '
                       '<b>&amp;</b> bad\ufffd\ufffdutf8 ?evil é中é中'), tail
assert 253 <= len(want_cmd.encode()) <= 255, len(want_cmd.encode())
assert len(raw) > 600
print("-- names: comm %r, server %r, cmdline %d bytes cut from %d"
      % (want_comm, want_scomm, len(want_cmd.encode()), len(raw)))

def text_ok(path, what):
    b = open(path, "rb").read()
    s = b.decode("utf-8")  # strict: raises on a bad byte
    bad = [c for c in s if unsafe(c) and c != "\n"]
    assert not bad, "%s: control characters %r" % (what, bad[:5])
    return s

# The table `causeway run` printed, and `causeway graph`'s.
for path in ("table.txt", "g-table.txt"):
    s = text_ok(path, path)
    assert "%s[%d]" % (want_comm, pid) in s, (path, s)

# JSON lines: every record parses, the names are /proc's, cleaned.
recs = [json.loads(l) for l in open("out/conns.jsonl", "rb")]
mine = [r for r in recs if r["process"]["pid"] == pid]
assert mine, "no record of the client"
for r in mine:
    assert r["process"]["comm"] == want_comm, r["process"]
    assert r["process"]["cmdline"] == want_cmd, r["process"]
srv = [r for r in recs if r["process"]["pid"] == spid]
assert srv and all(r["process"]["comm"] == want_scomm for r in srv), srv
json.load(open("out/edges.json", "rb"))

# graph --format json and the page's API: the nodes carry the names.
for path in ("g.json", "gc.json", "api-graph.json"):
    def strings(v):
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            return [s for x in v for s in strings(x)]
        return [v] if isinstance(v, str) else []
    vals = strings(json.load(open(path, "rb")))
    if path == "gc.json":
        assert want_cmd in vals, (path, vals[:30])
        continue
    assert want_comm in vals and want_scomm in vals, (path, vals[:30])

def svg_texts(path):
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()) for t in root.iter()
            if t.tag.endswith("}text")]

# GraphML: parses, and the comm and cmdline attributes are the names.
for path in ("g.graphml", "gc.graphml"):
    vals = [d.text for d in ET.parse(path).getroot().iter()
            if d.tag.endswith("}data")]
    assert want_comm in vals and want_cmd in vals, (path, vals[:20])

# SVG from Graphviz: well-formed, the labels read back as the names.
def cut(s, n):
    b = s.encode()[:n]
    return b.decode("utf-8", "ignore")
label = "%s[%d]" % (want_comm, pid)
for path in ("r.svg", "r.dot.svg", "out/graph.dot.svg", "api-graph.svg",
             "g.dot.svg", "gc.dot.svg", "rc.dot.svg"):
    texts = svg_texts(path)
    if path in ("r.svg", "r.dot.svg"):
        assert label in texts, (path, texts)
        assert cut(want_cmd, 40) in texts, (path, cut(want_cmd, 40), texts)
    if path == "out/graph.dot.svg":
        assert "%s %s" % (label, cut(want_cmd, 60)) in texts, (path, texts)

# CSV: the reader gets the names back in their fields.
for path in ("g.csv", "gc.csv", "matrix.csv"):
    rows = list(csv.reader(io.open(path, encoding="utf-8", newline="")))
    cells = [c for r in rows for c in r]
    want = want_cmd if path == "gc.csv" else label
    assert any(want in c for c in cells), (path, cells[:10])

# Prometheus: the comm label values, unescaped, are the names.
m = text_ok("metrics.txt", "/metrics")
esc = want_comm.replace("\\", "\\\\").replace('"', '\\"')
assert 'client_comm="%s"' % esc in m, m[:2000]
assert 'server_comm="%s"' % want_scomm.replace("\\", "\\\\") in m, m[:2000]
print("-- every output parses and reads the names back")
PY
