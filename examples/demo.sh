#!/bin/bash
# The main job on an embedded default: a small multi-tier service in four
# test hosts (network namespaces on one switch) -- a load generator, nginx,
# an app server and redis -- watched by `causeway run`.  Leaves the table,
# edges.json, graph.dot and graph.svg in DEMO_OUT (default ./demo-out).
#
#   make demo                      (DEMO_SECS=10 by default)
set -u
cd "$(dirname "$0")/.."
export CW=${CW:-$PWD/${BUILD:-build}/causeway}
. tests/lib.sh
need_root
need_cmd nginx redis-server python3
OUT=${DEMO_OUT:-$PWD/demo-out}
SECS=${DEMO_SECS:-10}
rm -rf "$OUT"
mkdir -p "$OUT"

LOAD=$(ns_create load) WEB=$(ns_create web) APP=$(ns_create app) DB=$(ns_create db)
switch_attach "$LOAD" 10.77.0.10
switch_attach "$WEB" 10.77.0.11
switch_attach "$APP" 10.77.0.12
switch_attach "$DB" 10.77.0.13

note "db: redis-server on 10.77.0.13:6379"
ip netns exec "$DB" redis-server --bind 10.77.0.13 --port 6379 --save '' \
	--appendonly no --protected-mode no --dir "$T_TMP" >/dev/null &
bg_pid $!
wait_port "$DB" 6379
for i in $(seq 0 99); do echo "SET item:$i value-$i"; done |
	ip netns exec "$DB" redis-cli -h 10.77.0.13 >/dev/null

note "app: examples/app.py on 10.77.0.12:8080 (2 ms of work per request)"
ip netns exec "$APP" python3 examples/app.py --listen 10.77.0.12:8080 \
	--redis 10.77.0.13:6379 --delay 2ms &
bg_pid $!
wait_port "$APP" 8080

note "web: nginx on 10.77.0.11:80, proxying to the app"
nginx_start "$WEB" 10.77.0.11 80 "$T_TMP" 10.77.0.12:8080

note "causeway run: watching this host"
agent_start "$OUT"
note "load: 4 clients for ${SECS}s against nginx"
ip netns exec "$LOAD" python3 examples/load.py http://10.77.0.11/api \
	--clients 4 --duration "${SECS}s" >"$OUT/load.json" ||
	fail "load generator failed"
sleep 0.5
agent_stop "$OUT" >"$OUT/table.txt"

if command -v dot >/dev/null; then
	dot -Tsvg "$OUT/graph.dot" >"$OUT/graph.svg.tmp" &&
		mv "$OUT/graph.svg.tmp" "$OUT/graph.svg"
fi
echo
echo "Traffic between processes (causeway run, ${SECS}s):"
echo
cat "$OUT/table.txt"
echo
echo "load generator: $(cat "$OUT/load.json")"
echo "outputs: $(cd "$OUT" && ls | tr '\n' ' ')in $OUT"
