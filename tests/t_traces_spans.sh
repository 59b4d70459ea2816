#!/bin/bash
# causeway traces --truth on both span traces in ../shared/data/spans (or
# $CW_SPANS), timing only: every service's share of requests right and the
# traces right end to end must be computed and be at least FCFS's from the
# same run; the OTLP/JSON output must load in the OTLP schema of the
# OpenTelemetry JS packages (protobufjs: from JSON to protobuf and back)
# and its parent links must stay inside one trace; Jaeger JSON must parse;
# --otlp must POST the same document to a loopback OTLP/HTTP receiver.
. "$(dirname "$0")/lib.sh"
need_cmd python3 node npm
SPANS=${CW_SPANS:-$CW_ROOT/../shared/data/spans}
[ -d "$SPANS" ] || skip "no span traces in $SPANS"
OTLP_JS=${OTLP_JS:-$CW_ROOT/${BUILD:-build}/otlp-check}
ROOT_JS=$OTLP_JS/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js
if [ ! -f "$ROOT_JS" ]; then
	mkdir -p "$OTLP_JS"
	(cd "$OTLP_JS" && npm init -y >/dev/null &&
		npm install --no-audit --no-fund \
			@opentelemetry/otlp-transformer@0.52.1 >npm.log 2>&1) ||
		skip "npm could not install @opentelemetry/otlp-transformer (see $OTLP_JS/npm.log)"
fi

cat >"$T_TMP/check.js" <<'JS'
// Load OTLP/JSON into the OTLP protobuf schema and back; check the ids.
const root = require(process.argv[2]);
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const doc = JSON.parse(require("fs").readFileSync(process.argv[3], "utf8"));
const hex = (s, n) => {
	if (typeof s !== "string" || !new RegExp("^[0-9a-f]{" + n + "}$").test(s))
		throw new Error("bad id " + s);
	return Buffer.from(s, "hex");
};
const ids = new Map();
let n = 0;
for (const rs of doc.resourceSpans)
	for (const ss of rs.scopeSpans)
		for (const s of ss.spans) {
			ids.set(s.spanId, s.traceId);
			s.traceId = hex(s.traceId, 32);
			s.spanId = hex(s.spanId, 16);
			if (s.parentSpanId !== undefined)
				s.parentSpanId = hex(s.parentSpanId, 16);
			n++;
		}
const back = Req.toObject(Req.decode(Req.encode(Req.fromObject(doc)).finish()),
	{longs: String, enums: Number, bytes: String});
let m = 0, linked = 0;
for (const rs of back.resourceSpans) {
	if (rs.resource.attributes[0].key !== "service.name") throw new Error("no service.name");
	for (const ss of rs.scopeSpans)
		for (const s of ss.spans) {
			m++;
			const tid = Buffer.from(s.traceId, "base64").toString("hex");
			const sid = Buffer.from(s.spanId, "base64").toString("hex");
			if (ids.get(sid) !== tid) throw new Error("span " + sid + " lost its trace");
			if (s.parentSpanId && s.parentSpanId.length) {
				const p = Buffer.from(s.parentSpanId, "base64").toString("hex");
				if (ids.get(p) !== tid) throw new Error("parent of " + sid + " in another trace");
				linked++;
			}
			if (BigInt(s.startTimeUnixNano) > BigInt(s.endTimeUnixNano)) throw new Error("ends before start");
			if (s.kind !== 2 && s.kind !== 3) throw new Error("kind " + s.kind);
			const a = Object.fromEntries(s.attributes.map(x => [x.key, x.value]));
			if (!a["causeway.link.method"] || a["causeway.link.confidence"] === undefined)
				throw new Error("no link attributes");
		}
}
if (m !== n || n === 0) throw new Error("span count " + n + " -> " + m);
console.log("otlp ok: " + n + " spans, " + linked + " with parents");
JS

n=0
for f in "$SPANS"/*.csv; do
	n=$((n + 1))
	"$CW" traces --truth "$f" -o "$T_TMP/otlp.json" --waterfall \
		>"$T_TMP/out.txt" || fail "causeway traces --truth '$f' failed"
	cat "$T_TMP/out.txt"
	pyjson '
import sys
rows, traces = {}, None
for line in open(sys.argv[1]):
    w = line.split()
    if traces is not None:
        break
    if len(w) == 7 and w[0] != "service":
        rows[w[0]] = [float(x) for x in w[2:]] + [int(w[1])]
    if line.startswith("traces right end to end:"):
        traces = (float(w[5]), float(w[7].rstrip(")")))
assert "(all)" in rows and len(rows) >= 3, "no per-service scores"
for s, (right, fcfs, top5, p, r, n) in rows.items():
    assert n > 0 and 0 <= right <= 1 and 0 <= fcfs <= 1, s
    assert right >= fcfs, "%s: %.3f below FCFS %.3f" % (s, right, fcfs)
    assert top5 >= right, "%s: top-5 below top-1" % s
assert traces and traces[0] >= traces[1], "traces below FCFS: %s" % (traces,)
assert rows["(all)"][3] > 0.5 and rows["(all)"][4] > 0.5, "links P/R too low"
' "$T_TMP/out.txt" || fail "scores on $(basename "$f") missing or below FCFS"
	grep -q "^\* " "$T_TMP/out.txt" || fail "no critical path in the waterfall"
	node "$T_TMP/check.js" "$ROOT_JS" "$T_TMP/otlp.json" ||
		fail "OTLP/JSON of $(basename "$f") does not load in the OTLP schema"
done
[ "$n" -ge 2 ] || fail "want both span traces, found $n"

"$CW" traces --truth "$f" --format jaeger -o "$T_TMP/jaeger.json" >/dev/null ||
	fail "causeway traces --format jaeger failed"
pyjson '
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert d and all(t["spans"] and t["processes"] for t in d)
ids = {s["spanID"] for t in d for s in t["spans"]}
for t in d:
    for s in t["spans"]:
        for r in s["references"]:
            assert r["spanID"] in ids and r["traceID"] == t["traceID"]
print("jaeger ok: %d traces" % len(d))
' "$T_TMP/jaeger.json" || fail "Jaeger JSON is malformed"

# A loopback OTLP/HTTP receiver keeps what it is sent.
otlp_receiver "$T_TMP/posts"
"$CW" traces --truth "$f" --otlp "http://127.0.0.1:$OTLP_PORT/v1/traces" \
	-o "$T_TMP/otlp.json" >/dev/null || fail "--otlp POST failed"
cmp -s "$T_TMP/otlp.json" "$T_TMP/posts/post-1" ||
	fail "the receiver did not get the OTLP document"
"$CW" traces --truth "$f" --otlp "http://127.0.0.1:$OTLP_PORT/elsewhere" \
	>/dev/null 2>"$T_TMP/err" && fail "a 400 answer was taken as success"
grep -q "answered 'HTTP/1.0 400" "$T_TMP/err" || fail "no clear error: $(cat "$T_TMP/err")"
node "$T_TMP/check.js" "$ROOT_JS" "$T_TMP/posts/post-1" || fail "posted OTLP does not load"

# Messages with thread evidence: web serves two overlapping requests on
# threads 7 and 8; the first call (sent by thread 8) belongs to the second
# request, which FCFS gets wrong and the thread link gets right.
cat >"$T_TMP/msgs.csv" <<'CSV'
start_ns,end_ns,node,peer,conn,dir,role,thread
0,0,client,web,1,out,connected,0
1000000,1000000,client,web,1,in,connected,0
10,10,web,client,1,in,accepted,7
999990,999990,web,client,1,out,accepted,7
100000,100000,client,web,2,out,connected,0
900000,900000,client,web,2,in,connected,0
100010,100010,web,client,2,in,accepted,8
899990,899990,web,client,2,out,accepted,8
200000,200000,web,db,3,out,connected,8
300000,300000,web,db,3,in,connected,8
200010,200010,db,web,3,in,accepted,0
299990,299990,db,web,3,out,accepted,0
CSV
"$CW" traces -o "$T_TMP/m.json" "$T_TMP/msgs.csv" 2>"$T_TMP/err" ||
	fail "causeway traces on messages failed: $(cat "$T_TMP/err")"
grep -q "1 thread links" "$T_TMP/err" || fail "no thread link: $(cat "$T_TMP/err")"
node "$T_TMP/check.js" "$ROOT_JS" "$T_TMP/m.json" || fail "messages OTLP does not load"
pyjson '
import json, sys
spans = {}
for rs in json.load(open(sys.argv[1]))["resourceSpans"]:
    for ss in rs["scopeSpans"]:
        for s in ss["spans"]:
            a = {x["key"]: list(x["value"].values())[0] for x in s["attributes"]}
            spans[s["spanId"]] = (s, a)
call = [s for s, a in spans.values() if s["name"] == "web -> db"][0]
parent = spans[call["parentSpanId"]][0]
assert spans[call["spanId"]][1]["causeway.link.method"] == "thread"
assert parent["startTimeUnixNano"] == "100010", parent
' "$T_TMP/m.json" || fail "the thread link is not in the OTLP output"

# A capture: client -> web -> db over TCP, two requests on one kept-alive
# connection; the SYNs name the clients; the db's reply in two runs of
# packets is one message.
cat >"$T_TMP/mkpcap.py" <<'PY'
import struct, sys
out = open(sys.argv[1], "wb")
out.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
def ip(a): return bytes(int(x) for x in a.split("."))
def pkt(t_us, src, sport, dst, dport, flags, payload=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 0, 0, 5 << 4, flags, 65535, 0, 0) + payload
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, ip(src), ip(dst))
    eth = b"\0" * 12 + b"\x08\x00"
    frame = eth + iph + tcp
    out.write(struct.pack("<IIII", t_us // 1000000, t_us % 1000000, len(frame), len(frame)) + frame)
# Two overlapping requests to web (threads unknown); web calls db for each.
C, W, D = "10.0.0.1", "10.0.0.2", "10.0.0.3"
pkt(1000, C, 40000, W, 80, 0x02); pkt(1001, W, 80, C, 40000, 0x12)
pkt(1100, C, 40000, W, 80, 0x18, b"GET /a")
pkt(1200, W, 50000, D, 5432, 0x02); pkt(1201, D, 5432, W, 50000, 0x12)
pkt(1300, W, 50000, D, 5432, 0x18, b"Q1")
pkt(1900, D, 5432, W, 50000, 0x18, b"R1")
pkt(2000, W, 80, C, 40000, 0x18, b"200 OK")
pkt(2100, C, 40000, W, 80, 0x18, b"GET /b")
pkt(2200, W, 50000, D, 5432, 0x18, b"Q2")
pkt(2300, D, 5432, W, 50000, 0x18, b"R2")
pkt(2400, D, 5432, W, 50000, 0x18, b"R2b")
pkt(2500, W, 80, C, 40000, 0x18, b"200 OK")
PY
python3 "$T_TMP/mkpcap.py" "$T_TMP/t.pcap" || fail "cannot write the test pcap"
"$CW" traces -o "$T_TMP/p.json" "$T_TMP/t.pcap" 2>"$T_TMP/err" ||
	fail "causeway traces on a pcap failed: $(cat "$T_TMP/err")"
node "$T_TMP/check.js" "$ROOT_JS" "$T_TMP/p.json" || fail "pcap OTLP does not load"
pyjson '
import json, sys
spans = {s["spanId"]: s for rs in json.load(open(sys.argv[1]))["resourceSpans"]
         for ss in rs["scopeSpans"] for s in ss["spans"]}
calls = sorted((s for s in spans.values() if s["name"] == "10.0.0.2 -> 10.0.0.3"),
               key=lambda s: int(s["startTimeUnixNano"]))
assert len(calls) == 2 and len(spans) == 6, len(spans)
want = [("1100000", "2000000", "1300000", "1900000"), ("2100000", "2500000", "2200000", "2400000")]
for c, (rs, re_, cs, ce) in zip(calls, want):
    p = spans[c["parentSpanId"]]
    assert (p["startTimeUnixNano"], p["endTimeUnixNano"]) == (rs, re_), p
    assert (c["startTimeUnixNano"], c["endTimeUnixNano"]) == (cs, ce), c
' "$T_TMP/p.json" || fail "the pcap traces are wrong"

# Bad input: one clear line, non-zero exit, no output file.
printf 'start_ns,node,peer,conn,dir,role\n1,a,b,1,sideways,accepted\n' >"$T_TMP/bad.csv"
"$CW" traces -o "$T_TMP/bad.json" "$T_TMP/bad.csv" 2>"$T_TMP/err" && fail "bad dir accepted"
grep -q "bad.csv:2: bad dir 'sideways'" "$T_TMP/err" || fail "unclear error: $(cat "$T_TMP/err")"
[ "$(wc -l <"$T_TMP/err")" -eq 1 ] || fail "more than one error line"
[ ! -e "$T_TMP/bad.json" ] || fail "output written from bad input"
"$CW" traces --otlp ftp://x "$T_TMP/msgs.csv" 2>/dev/null && fail "ftp URL accepted"
echo "PASS"
