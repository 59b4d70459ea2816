#!/bin/bash
# Exchange times (docs/edge-health.md, "Exchange times") against what the
# services say themselves, per edge of load -> nginx -> app -> postgres:
#   load -> nginx   client: the load generator's own time per request;
#                   server: nginx's $request_time
#   nginx -> app    client: nginx's $upstream_response_time
#   app -> postgres server: postgres's log_min_duration_statement = 0
# p50, p90 and p99 within 10% each.  The delays are 10 to 40 ms (the
# query sleeps a random time, the app 5 ms more): nginx logs in whole ms,
# so a 10% bound means something there.  The exchanges of the app's
# server end and postgres's clients have no log to check against: their
# figures are printed.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx python3
APP_PYTHON=/usr/bin/python3
"$APP_PYTHON" -c 'import psycopg2' 2>/dev/null ||
	skip "$APP_PYTHON cannot import psycopg2 (make deps)"
XH="python3 $CW_ROOT/tests/lib/xchg_hist.py"

LOAD=$(ns_create load) WEB=$(ns_create web) APP=$(ns_create app)
DB=$(ns_create db)
switch_attach "$LOAD" 10.77.0.10
switch_attach "$WEB" 10.77.0.11
switch_attach "$APP" 10.77.0.12
switch_attach "$DB" 10.77.0.13
PG_LOG_DURATIONS=1 pg_start "$DB" 10.77.0.13 5432
ip netns exec "$APP" "$APP_PYTHON" "$CW_ROOT/examples/app.py" \
	--listen 10.77.0.12:8080 --postgres 10.77.0.13:5432 \
	--query "SELECT pg_sleep(0.005 + random() * 0.030)" --delay 5ms \
	2>"$T_TMP/app.log" &
bg_pid $!
wait_port "$APP" 8080

# nginx with a log of its own times (nginx_start has none: a local one).
mkdir -p "$T_TMP/nginx"
cat >"$T_TMP/nginx.conf" <<NGINX
worker_processes 1;
pid $T_TMP/nginx/nginx.pid;
error_log $T_TMP/nginx/error.log;
events { worker_connections 256; }
http {
    log_format times '\$request_time \$upstream_response_time';
    access_log $T_TMP/nginx/times.log times;
    client_body_temp_path $T_TMP/nginx;
    proxy_temp_path $T_TMP/nginx;
    fastcgi_temp_path $T_TMP/nginx;
    uwsgi_temp_path $T_TMP/nginx;
    scgi_temp_path $T_TMP/nginx;
    upstream backend { server 10.77.0.12:8080; keepalive 16; }
    server {
        listen 10.77.0.11:80;
        location / { proxy_pass http://backend; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }
    }
}
NGINX
ip netns exec "$WEB" nginx -c "$T_TMP/nginx.conf" -g 'daemon off;' &
bg_pid $!
wait_port "$WEB" 80
# Edges by the worker's pid: other tests on the machine may run nginx.
# It listens before it writes its pid file and forks its worker.
NGINX_PID=""
for i in $(seq 1 200); do
	master=$(cat "$T_TMP/nginx/nginx.pid" 2>/dev/null)
	[ -n "$master" ] && NGINX_PID=$(pgrep -P "$master" | head -n 1)
	[ -n "$NGINX_PID" ] && break
	sleep 0.05
done
[ -n "$NGINX_PID" ] ||
	fail "nginx: no worker after 10 s (master '$master'): $(cat "$T_TMP/nginx/error.log")"

# The load generator: 3 keep-alive connections of 100 requests each,
# each request timed from before its send to after its reply's last byte.
cat >"$T_TMP/load.py" <<'PY'
import http.client, sys, threading, time
out, lock = [], threading.Lock()
def run(n):
    c = http.client.HTTPConnection("10.77.0.11", 80)
    for i in range(n):
        t0 = time.perf_counter()
        c.request("GET", "/item/%d" % i)
        r = c.getresponse()
        r.read()
        t = time.perf_counter() - t0
        assert r.status == 200, r.status
        with lock:
            out.append(t)
    c.close()
ts = [threading.Thread(target=run, args=(int(sys.argv[2]),)) for _ in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
open(sys.argv[1], "w").write("".join("%.9f\n" % t for t in out))
PY

# Warm up first: the app's connections to postgres are made then, so
# their start-up exchanges (an SSL request and the start-up, which
# postgres logs as no statement, slow on a loaded machine) fall before
# the window; then the logs start afresh.
ip netns exec "$LOAD" python3 "$T_TMP/load.py" "$T_TMP/warm.times" 3 ||
	fail "warm-up failed"
: >"$T_TMP/nginx/times.log"
pg_from=$(($(wc -l <"$PG_LOG") + 1))

out=$T_TMP/out
agent_start "$out" --window 1h
ip netns exec "$LOAD" python3 "$T_TMP/load.py" "$T_TMP/load.times" 100 ||
	fail "load generator failed"
sleep 0.5
agent_stop "$out" >/dev/null

awk '{print $1}' "$T_TMP/nginx/times.log" >"$T_TMP/nginx.req"
awk '{print $2}' "$T_TMP/nginx/times.log" >"$T_TMP/nginx.up"
tail -n +"$pg_from" "$PG_LOG" |
	sed -n 's/.*duration: \([0-9.]*\) ms  statement: SELECT pg_sleep.*/\1/p' | awk '{printf "%.9f\n", $1 / 1000}' >"$T_TMP/pg.dur"
[ "$(wc -l <"$T_TMP/pg.dur")" -eq 300 ] ||
	fail "postgres logged $(wc -l <"$T_TMP/pg.dur") statements, not 300"

ns_load=$(ns_inode "$LOAD") ns_web=$(ns_inode "$WEB")
ns_app=$(ns_inode "$APP") ns_db=$(ns_inode "$DB")
# compare NAME AGENT_JSON TRUTH_JSON: p50/p90/p99 within 10%, counts
# (the agent may time a few exchanges more: a connection made in the
# window, whose start-up postgres does not log).
compare() {
	python3 - "$@" <<'PY' || fail "$1: exchange times off"
import json, sys
name, got, want = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
bad = []
for q in ("p50", "p90", "p99"):
    err = (got[q] - want[q]) / want[q]
    bad += [q] if abs(err) > 0.10 else []
    print("%-22s %s agent %8.3f ms  own %8.3f ms  %+5.1f%%"
          % (name, q, got[q] / 1e6, want[q] / 1e6, 100 * err))
print("%-22s count agent %d own %d, pipelined %d, ends %d"
      % (name, got["count"], want["count"], got["pipelined"], got["ends"]))
ok = want["count"] <= got["count"] <= want["count"] + 10 and not got["pipelined"]
sys.exit(1 if bad or not ok else 0)
PY
}
compare "load->nginx client" \
	"$($XH "$out/conns.jsonl" --netns "$ns_load" --rport 80)" \
	"$($XH --truth "$T_TMP/load.times")"
compare "load->nginx server" \
	"$($XH "$out/conns.jsonl" --netns "$ns_web" --lport 80)" \
	"$($XH --truth "$T_TMP/nginx.req")"
compare "nginx->app client" \
	"$($XH "$out/conns.jsonl" --netns "$ns_web" --rport 8080)" \
	"$($XH --truth "$T_TMP/nginx.up")"
compare "app->postgres server" \
	"$($XH "$out/conns.jsonl" --netns "$ns_db" --lport 5432)" \
	"$($XH --truth "$T_TMP/pg.dur")"
# End to end: the same figures on the graph's edges (edges.json), where
# the correlator merged the ends' histograms.
edge_q() { # SIDE FILTERS...: that side's quantiles of the matching edge
	local side=$1
	shift
	edge "$out" "$@" "${side}_count" "${side}_p50_ns" "${side}_p90_ns" \
		"${side}_p99_ns" | awk '{printf "{\"count\": %d, \"p50\": %d, \"p90\": %d, \"p99\": %d, \"pipelined\": 0, \"ends\": 0}", $1, $2, $3, $4}'
}
compare "edge load->nginx client" \
	"$(edge_q client --server-pid "$NGINX_PID")" \
	"$($XH --truth "$T_TMP/load.times")"
compare "edge load->nginx server" \
	"$(edge_q server --server-pid "$NGINX_PID")" \
	"$($XH --truth "$T_TMP/nginx.req")"
compare "edge nginx->app client" \
	"$(edge_q client --client-pid "$NGINX_PID")" \
	"$($XH --truth "$T_TMP/nginx.up")"
# (Not postgres's: a backend process per connection makes an edge per
# connection, checked above at the records.)
note "nginx->app server:    $($XH "$out/conns.jsonl" --netns "$ns_app" --lport 8080)"
note "app->postgres client: $($XH "$out/conns.jsonl" --netns "$ns_app" --rport 5432)"
echo ok
