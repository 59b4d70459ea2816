#!/bin/bash
# The main job, the whole fleet pipeline on one machine: a small multi-tier
# service in four test hosts (network namespaces on one switch) -- a load
# generator, nginx, an app server (examples/app.py) and redis -- with one
# `causeway agent` per host publishing to an embedded Kafka broker
# (`causeway broker`), and a `causeway correlate` in its own process
# pairing the ends from every host.  Then `causeway graph` and `causeway
# render` turn the records the correlator consumed into graph.json and
# graph.svg, and a summary is printed: top edges, the host traffic matrix,
# and what the agents, the broker and the correlator counted; last, the
# command that serves the live page over what was recorded, and its URL.
#
#   make demo                      (DEMO_SECS=10, DEMO_OUT=./demo-out)
#   DEMO_SECS=30 DEMO_OUT=/tmp/d examples/demo.sh
#
# Everything it starts (namespaces, servers, agents, broker, correlator) is
# removed on exit, also when interrupted.  Outputs in DEMO_OUT:
#   summary.txt     what is printed at the end
#   table.txt       the correlator's process table
#   edges.json      the correlator's graph (and graph.dot, Graphviz source)
#   paths.jsonl     the correlator's causal paths, a line per timing window
#                   (the agents' default windows: 1 s every 10 s); paths.json
#                   the newest window's
#   records.jsonl   every record on the causeway.conns topic, as JSON lines
#   graph.json      `causeway graph --format json` of those records
#   graph.svg       `causeway render` (libgvc) of those records
#   hosts.csv       the host traffic matrix (bytes sent row -> column)
#   load.json       the load generator's own report
#   logs/           stderr of every causeway process
set -u
cd "$(dirname "$0")/.." || exit 1
export CW=${CW:-$PWD/${BUILD:-build}/causeway}
. tests/lib.sh
[ "$(id -u)" -eq 0 ] || fail "the demo needs root (BPF, network namespaces)"
[ -x "$CW" ] || fail "no $CW: run 'make' first (or 'make deps demo')"
missing=
for c in nginx redis-server redis-cli python3 ip ss; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
if [ -n "$missing" ]; then
	note "missing:$missing; installing the Debian packages (make deps)"
	make -s deps >/dev/null || fail "make deps failed"
fi
OUT=${DEMO_OUT:-$PWD/demo-out}
SECS=${DEMO_SECS:-10}
case $SECS in '' | *[!0-9]* | 0) fail "DEMO_SECS='$SECS': want whole seconds > 0" ;; esac
rm -rf "$OUT"
mkdir -p "$OUT/logs" || fail "unable to create $OUT"
LOGS=$OUT/logs
T0=$EPOCHREALTIME
step() {	# a progress line, with the time since the start
	awk -v a="$EPOCHREALTIME" -v b="$T0" -v m="$*" \
		'BEGIN { printf "-- [%5.1fs] %s\n", a - b, m }'
}

step "test hosts: load 10.77.0.10, web 10.77.0.11, app 10.77.0.12, db 10.77.0.13"
LOAD=$(ns_create load) WEB=$(ns_create web) APP=$(ns_create app) DB=$(ns_create db)
switch_attach "$LOAD" 10.77.0.10
switch_attach "$WEB" 10.77.0.11
switch_attach "$APP" 10.77.0.12
switch_attach "$DB" 10.77.0.13

step "db: redis-server on 10.77.0.13:6379"
ip netns exec "$DB" redis-server --bind 10.77.0.13 --port 6379 --save '' \
	--appendonly no --protected-mode no --dir "$T_TMP" >/dev/null &
bg_pid $!
wait_port "$DB" 6379
for i in $(seq 0 99); do echo "SET item:$i value-$i"; done |
	ip netns exec "$DB" redis-cli -h 10.77.0.13 >/dev/null

step "app: examples/app.py on 10.77.0.12:8080 (2 ms of work per request)"
ip netns exec "$APP" python3 examples/app.py --listen 10.77.0.12:8080 \
	--redis 10.77.0.13:6379 --delay 2ms &
bg_pid $!
wait_port "$APP" 8080

step "web: nginx on 10.77.0.11:80, proxying to the app"
nginx_start "$WEB" 10.77.0.11 80 "$T_TMP" 10.77.0.12:8080

"$CW" broker >"$T_TMP/boot" 2>"$LOGS/broker.log" &
BROKER=$!
bg_pid $BROKER
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
step "broker: causeway broker (embedded Kafka) at $BOOT"

# The mock broker lets a group's next member in only session.timeout.ms - 1s
# after the last one left: keep it short (docs/causeway-broker.md, "NOT A
# REAL BROKER").
printf 'session.timeout.ms=6000\n' >"$T_TMP/kafka.properties"

# agent NS HOST: one agent scoped to the host's namespace, publishing.
AGENTS=()
agent() {
	local ns=$1 host=$2 log=$LOGS/agent-$2.log
	: >"$log"
	"$CW" agent --netns "$(ns_inode "$ns")" --host "$host" \
		--interval 500ms --samples-every 0 --kafka "$BOOT" \
		--spool "$T_TMP/spool-$host" 2>"$log" &
	AGENTS+=($!)
	bg_pid $!
	for _ in $(seq 1 200); do
		grep -q "agent on host" "$log" && return 0
		kill -0 "${AGENTS[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	fail "agent $host did not start: $(cat "$log")"
}
for h in load web app db; do
	case $h in load) ns=$LOAD ;; web) ns=$WEB ;; app) ns=$APP ;; db) ns=$DB ;; esac
	agent "$ns" "$h"
done
step "agents: one per host (load, web, app, db), publishing every 500 ms"

# The correlator's --idle counts from its start too, and the broker gives a
# new group its partitions only after 3 s: 6 s leaves room for both.
"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
	--from-beginning --idle 6s --snapshot-every 2s -o "$OUT" \
	>"$OUT/table.txt" 2>"$LOGS/correlate.log" &
CORR=$!
bg_pid $CORR
step "correlator: causeway correlate, snapshots every 2 s into $OUT"

step "load: 4 keep-alive clients for ${SECS}s against nginx"
# Long steps run in the background and are waited for: `wait` returns at
# once on Ctrl-C, so the cleanup runs now, not after them.
ip netns exec "$LOAD" python3 examples/load.py http://10.77.0.11/api \
	--clients 4 --duration "${SECS}s" >"$OUT/load.json" &
LOADGEN=$!
bg_pid $LOADGEN
wait $LOADGEN || fail "load generator failed"
kill -0 $CORR 2>/dev/null ||
	fail "the correlator exited during the load: $(cat "$LOGS/correlate.log")"

step "load done; stopping the agents (each flushes what is pending)"
sleep 0.6	# one interval: the last counts go out with the flush anyway
kill -INT "${AGENTS[@]}"
for p in "${AGENTS[@]}"; do
	wait "$p" || fail "an agent failed: $(cat "$LOGS"/agent-*.log)"
done
DELIVERED=$(cat "$LOGS"/agent-*.log |
	sed -n 's/.*kafka: [0-9]* produced, \([0-9]*\) delivered.*/\1/p' |
	awk '{s += $1} END {print s + 0}')
[ "$DELIVERED" -gt 0 ] || fail "the agents delivered no record: $(cat "$LOGS"/agent-*.log)"

step "correlator draining ($DELIVERED records on the topic; it stops after 6 s idle)"
wait $CORR || fail "correlate failed: $(cat "$LOGS/correlate.log")"
[ -s "$OUT/edges.json" ] || fail "the correlator wrote no edges.json"
# traces.jsonl gets a line per window only from agents run with --traces,
# which the demo does not ask for: an empty file is no output to list.
[ -s "$OUT/traces.jsonl" ] || rm -f "$OUT/traces.jsonl"

# Nothing lost on the way: the agents' delivered records are on the topics
# they publish to (connections, hosts and processes, message timing).
step "reading the topics back: causeway dump"
"$CW" dump --kafka "$BOOT" --topic conns --topic meta --topic timing \
	--topic samples --from-beginning --count "$DELIVERED" --timeout 10s \
	>"$T_TMP/all.jsonl" 2>"$LOGS/dump.log" ||
	fail "dump failed: $(cat "$LOGS/dump.log")"
got=$(wc -l <"$T_TMP/all.jsonl")
[ "$got" -eq "$DELIVERED" ] ||
	fail "dump read $got records of $DELIVERED: $(cat "$LOGS/dump.log")"
# graph and render read connection records (JSON lines), not the
# correlator's edges.json: take the very records it consumed.
"$CW" dump --kafka "$BOOT" --from-beginning --timeout 3s \
	>"$OUT/records.jsonl" 2>>"$LOGS/dump.log" ||
	fail "dump failed: $(cat "$LOGS/dump.log")"
[ -s "$OUT/records.jsonl" ] || fail "no connection record on causeway.conns"

kill -INT $BROKER
wait $BROKER

step "graph.json (causeway graph), graph.svg (causeway render), hosts.csv"
"$CW" graph --format json -o "$OUT/graph.json" "$OUT/records.jsonl" \
	2>"$LOGS/graph.log" || fail "graph failed: $(cat "$LOGS/graph.log")"
"$CW" render --min-share 0.01 -o "$OUT/graph.svg" "$OUT/records.jsonl" \
	2>"$LOGS/render.log" || fail "render failed: $(cat "$LOGS/render.log")"
"$CW" graph --by host --matrix -o "$OUT/hosts.csv" "$OUT/records.jsonl" \
	2>>"$LOGS/graph.log" || fail "graph --matrix failed: $(cat "$LOGS/graph.log")"

python3 - "$OUT" "$SECS" "$BOOT" "$LOGS" <<'PY' | tee "$OUT/summary.txt"
import csv, glob, json, os, re, sys

out, secs, boot, logs = sys.argv[1:5]
g = json.load(open(os.path.join(out, "graph.json")))
corr = json.load(open(os.path.join(out, "edges.json")))
# load.py prints its pid first, then its report: the last line.
lines = [l for l in open(os.path.join(out, "load.json")) if l.strip()]
load = json.loads(lines[-1]) if lines else {}


def size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024.0


print()
print("== causeway demo: %ss of load -> nginx -> app.py -> redis, 4 hosts" % secs)
print()
print("Top edges, process -> process (causeway graph, from the topic):")
print()
edges = sorted(g["edges"], key=lambda e: -(e["bytes_c2s"] + e["bytes_s2c"]))
print("  %-26s %-26s %5s %11s %11s %8s %8s" % (
    "CLIENT", "SERVER", "CONNS", "BYTES C->S", "BYTES S->C", "MSGS C>S", "MSGS S>C"))
for e in edges[:8]:
    print("  %-26s %-26s %5d %11s %11s %8d %8d" % (
        e["client_name"], e["server_name"], e["conns"], size(e["bytes_c2s"]),
        size(e["bytes_s2c"]), e["msgs_c2s"], e["msgs_s2c"]))
if len(edges) > 8:
    print("  ... %d more in graph.json" % (len(edges) - 8))

print()
print("Host traffic matrix (bytes sent, row -> column; hosts.csv):")
print()
rows = list(csv.reader(open(os.path.join(out, "hosts.csv"))))
names = rows[0][1:]
w = max([len(n) for n in names] + [10])
print("  %-*s" % (w, "from\\to") + "".join(" %*s" % (w, n) for n in names))
for r in rows[1:]:
    print("  %-*s" % (w, r[0]) + "".join(
        " %*s" % (w, size(int(float(c))) if float(c) else "-") for c in r[1:]))

print()
print("Pipeline:")
for f in sorted(glob.glob(os.path.join(logs, "agent-*.log"))):
    txt = open(f).read()
    m = re.search(r"stopped: (\d+) records in (\d+) collections", txt)
    k = re.search(r"kafka: (\d+) produced, (\d+) delivered, (\d+) spooled.*?(\d+) lost", txt)
    host = os.path.basename(f)[6:-4]
    print("  agent %-5s %5s records in %3s collections; kafka %s produced, "
          "%s delivered, %s spooled, %s lost" % (
              host, m.group(1) if m else "?", m.group(2) if m else "?",
              *(k.groups() if k else ("?",) * 4)))
nrec = sum(1 for _ in open(os.path.join(out, "records.jsonl")))
print("  broker      %s: %d records on causeway.conns" % (boot, nrec))
ctxt = open(os.path.join(logs, "correlate.log")).read()
m = re.search(r"(\d+) records applied, (\d+) ends \((\d+) paired, (\d+) unpaired\), "
              r"(\d+) bad records skipped", ctxt)
if m:
    print("  correlator  %s records applied, %s ends (%s paired, %s unpaired), "
          "%s bad records skipped" % m.groups())
gs = g.get("stats", {})
print("  graph       %s records read, %s ends, %s paired, %s unpaired, %s stale" % (
    gs.get("records"), gs.get("ends"), gs.get("paired"), gs.get("unpaired"),
    gs.get("stale")))
conns = sum(e["conns"] for e in corr["edges"])
paired = sum(e.get("paired", 0) for e in corr["edges"])
print("  pairing     %d of %d connections paired from both their ends" % (
    paired, conns))
unrec = sum(e.get("unreceived_c2s", 0) + e.get("unreceived_s2c", 0)
            for e in corr["edges"])
print("  both ends   %s" % (
    "every byte one end sent, the other end received" if unrec == 0 else
    "%d bytes sent that the other end did not receive" % unrec))
tot_g = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in g["edges"])
tot_c = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in corr["edges"])
print("  bytes       %s in the correlator's edges.json, %s in graph.json%s" % (
    size(tot_c), size(tot_g), " (equal)" if tot_c == tot_g else ""))
print("  load        %s requests, %s" % (
    load.get("requests", "?"),
    ", ".join("%s %s" % (k, v) for k, v in load.items()
              if k.endswith("_ms") or k == "rps")))
print()
print("Outputs in %s: %s" % (out, " ".join(sorted(
    f for f in os.listdir(out) if f != "logs")) + " logs/"))
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "summary failed"
# The live page over what the demo recorded (it stays until Ctrl-C there).
cw_rel=${CW#"$PWD"/}
echo
paths=
[ -s "$OUT/paths.jsonl" ] && paths=" --paths $OUT/paths.jsonl"
echo "See it live:  $cw_rel serve$paths $OUT/records.jsonl"
echo "and open      http://127.0.0.1:8080/"
