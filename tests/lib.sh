# Shared helpers for the shell tests: sourced, never run.
#
# Test hosts are network namespaces named cwt<pid>-<name>, joined by veth,
# with addresses from 10.77.0.0/16 and fd77::/64 that exist only inside them.
# Everything a test makes is registered and removed by an EXIT trap, also
# when the test fails or is interrupted.
set -u
CW=${CW:-build/causeway}
CW_ROOT=${CW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
T_PREFIX="cwt$$"
T_TMP=$(mktemp -d /tmp/causeway-test.XXXXXX)
chmod 755 "$T_TMP"	# servers in test hosts run as other users
T_NETNS=() T_PIDS=() T_CLEANUP=()

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

t_cleanup() {
	local i pid ns
	for ((i = ${#T_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${T_CLEANUP[$i]}" >/dev/null 2>&1 || true
	done
	for pid in "${T_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	sleep 0.2
	for pid in "${T_PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	# ns_create often runs in $(...), a subshell whose T_NETNS is lost:
	# so every namespace with this test's prefix goes, whoever made it.
	for ns in "${T_NETNS[@]}" $(ip netns list 2>/dev/null |
			awk -v p="$T_PREFIX-" 'index($1, p) == 1 {print $1}'); do
		# Anything still running inside goes with the namespace.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$T_TMP"
}
trap t_cleanup EXIT
trap 'exit 130' INT TERM

# on_exit CMD: run CMD at cleanup (last registered runs first).
on_exit() { T_CLEANUP+=("$*"); }
# bg_pid PID: kill PID at cleanup.
bg_pid() { T_PIDS+=("$1"); }
# stacks_after SECS NAME PID...: should a PID outlive SECS (a stop that
# does not end, a bug: every stop is bounded), its threads' stacks go to
# $BUILD/test-logs/NAME.stacks for the post-mortem.  Only a record: the
# test's own wait decides, and the run's hang guard ends it.
stacks_after() {
	local secs=$1 name=$2 out pid
	shift 2
	out="$CW_ROOT/${BUILD:-build}/test-logs/$name.stacks"
	(
		sleep "$secs"
		for pid in "$@"; do
			case $(ps -o stat= -p "$pid" 2>/dev/null) in
			"" | Z*) continue ;;
			esac
			mkdir -p "${out%/*}"
			echo "== $pid: $(tr '\0' ' ' </proc/$pid/cmdline)" >>"$out"
			if command -v gdb >/dev/null; then
				gdb -p "$pid" -batch -ex 'thread apply all bt' \
					>>"$out" 2>&1
			else
				grep . /proc/$pid/task/*/wchan >>"$out" 2>&1
			fi
		done
	) &
	bg_pid $!
}

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (BPF, namespaces)"
}
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "'$c' is not installed (make deps)"
	done
}

# ns_create NAME: a namespace with loopback up; prints its full name.
ns_create() {
	local ns="$T_PREFIX-$1"
	ip netns add "$ns" || fail "unable to create namespace $ns"
	T_NETNS+=("$ns")
	ip -n "$ns" link set lo up
	echo "$ns"
}

# ns_link NS_A NS_B ADDR_A ADDR_B [ADDR6_A ADDR6_B]: a veth pair between
# two namespaces, with /24 (and /64) addresses.
ns_link() {
	local a=$1 b=$2 ia="v$RANDOM$RANDOM" ib="v$RANDOM$RANDOM"
	ip link add "$ia" netns "$a" type veth peer name "$ib" netns "$b" ||
		fail "unable to create veth $a <-> $b"
	ip -n "$a" addr add "$3/24" dev "$ia"
	ip -n "$b" addr add "$4/24" dev "$ib"
	if [ $# -ge 6 ]; then
		ip -n "$a" addr add "$5/64" dev "$ia" nodad
		ip -n "$b" addr add "$6/64" dev "$ib" nodad
	fi
	ip -n "$a" link set "$ia" up
	ip -n "$b" link set "$ib" up
	LINK_A=$ia LINK_B=$ib
}

# ns_inode NS: the namespace's inode number, as the agent reports it.
ns_inode() { stat -L -c %i "/run/netns/$1"; }

# wait_port NS PORT [PROTO]: wait until something listens on PORT.
wait_port() {
	local i flag=-tln
	[ "${3:-tcp}" = udp ] && flag=-uln
	for i in $(seq 1 100); do
		ip netns exec "$1" ss -H $flag "sport = :$2" | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing listens on port $2 in $1"
}

# free_port [N]: a TCP port on loopback that is free, and the next one
# too, below the ephemeral range: a port picked inside it (as 20000 + $$
# once was) can be held by any client socket, and a rehearsal hit one.
# With N: N such ports on one line, in one go, no two within 1 of each
# other (N calls, with nothing bound in between, could give one's p + 1
# as another's p).
free_port() {
	python3 - "${1:-1}" "$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)" <<'PY'
import random, socket, sys
n, hi = int(sys.argv[1]), min(int(sys.argv[2]), 32768) - 2
got = []
for _ in range(500 * n):
    p = random.randrange(10000, hi)
    if any(abs(p - q) <= 1 for q in got):
        continue
    try:
        for q in (p, p + 1):
            with socket.socket() as s:
                s.bind(("127.0.0.1", q))
    except OSError:
        continue
    got.append(p)
    if len(got) == n:
        print(" ".join(map(str, got)))
        break
else:
    sys.exit("no %d free port pairs below %d" % (n, hi))
PY
}

# client_bytes FILE: "C2S S2C", the client ends' final byte counters in a
# wire file (what a correlator's edges must add up to).
client_bytes() {
	"$CW" dump "$1" | python3 -c '
import json, sys
last = {}
for line in sys.stdin:
    r = json.loads(line)
    if r["role"] == "client":
        last[(r["host"], r["cookie"])] = r
print(sum(r["bytes_out"] for r in last.values()), sum(r["bytes_in"] for r in last.values()))'
}

# graph_totals FILE: connections, paired, bytes client to server and
# server to client, each summed over the edges of the JSON graph FILE.
graph_totals() {
	python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))["edges"]
print(*(sum(x[k] for x in e) for k in
	("conns", "paired", "bytes_c2s", "bytes_s2c")))' "$1"
}

# broker_start [-n NS] [broker options...]: `causeway broker` in the
# background (inside test host NS with -n), its address in BOOT (and in
# $T_TMP/boot), its pid in BROKER, its log in $T_TMP/broker.log; waits
# until it listens.
broker_start() {
	local in=()
	[ "${1:-}" = -n ] && in=(ip netns exec "$2") && shift 2
	"${in[@]}" "$CW" broker "$@" >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
	BROKER=$!
	bg_pid $BROKER
	wait_file "$T_TMP/boot"
	BOOT=$(head -n 1 "$T_TMP/boot")
	[ -n "$BOOT" ] || fail "the broker gave no address: $(cat "$T_TMP/broker.log")"
}

# serve_start PORT [serve options and inputs...]: `causeway serve` on
# 127.0.0.1:PORT in the background, its pid in SERVE_PID, its output in
# $T_TMP/serve.out and serve.err; waits until /api/stats answers.
serve_start() {
	local port=$1 i
	shift
	"$CW" serve --listen "127.0.0.1:$port" "$@" >"$T_TMP/serve.out" \
		2>"$T_TMP/serve.err" &
	SERVE_PID=$!
	bg_pid $SERVE_PID
	for i in $(seq 1 200); do
		curl -sf "http://127.0.0.1:$port/api/stats" >/dev/null && return 0
		kill -0 $SERVE_PID 2>/dev/null ||
			fail "serve exited: $(cat "$T_TMP/serve.err")"
		sleep 0.1
	done
	fail "serve did not answer: $(cat "$T_TMP/serve.err")"
}

# prometheus_start PORT TARGET [INTERVAL [JOB]]: a Prometheus server on
# 127.0.0.1:PORT scraping 127.0.0.1:TARGET every INTERVAL (default 1s;
# the scrape timeout the same), its data and log in $T_TMP; waits until
# it is ready.
prometheus_start() {
	local port=$1 target=$2 every=${3:-1s} job=${4:-causeway} i
	cat >"$T_TMP/prom.yml" <<EOF
global:
  scrape_interval: $every
  scrape_timeout: $every
  evaluation_interval: 1s
scrape_configs:
  - job_name: $job
    static_configs:
      - targets: ['127.0.0.1:$target']
EOF
	prometheus --config.file="$T_TMP/prom.yml" \
		--storage.tsdb.path="$T_TMP/tsdb" \
		--web.listen-address="127.0.0.1:$port" >"$T_TMP/prom.log" 2>&1 &
	PROM_PID=$!
	bg_pid $PROM_PID
	for i in $(seq 1 300); do
		curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && return 0
		kill -0 $PROM_PID 2>/dev/null || break
		sleep 0.1
	done
	fail "prometheus did not start: $(tail -5 "$T_TMP/prom.log")"
}

# chromedriver_start PORT: chromedriver on 127.0.0.1:PORT for
# tests/lib/webdriver.py, waited for; the browser it starts (profile
# $T_TMP/profile) is killed at exit, also when the test fails.
chromedriver_start() {
	local i
	on_exit "pkill -f -- '--user-data-dir=$T_TMP/profile'"
	chromedriver --port="$1" --allowed-ips=127.0.0.1 >"$T_TMP/driver.log" 2>&1 &
	bg_pid $!
	for i in $(seq 1 100); do
		curl -sf "http://127.0.0.1:$1/status" >/dev/null && return 0
		sleep 0.1
	done
	fail "chromedriver did not start: $(cat "$T_TMP/driver.log")"
}

# churn_published SIM...: an embedded broker (BOOT) holding `causeway
# simulate SIM...`'s records, and the same run in a file for the truth:
# sets CONNS, and C2S and S2C (what the graph's edges must add up to).
churn_published() {
	broker_start
	"$CW" simulate "$@" --kafka "$BOOT" --speedup 0 2>"$T_TMP/k.log" ||
		fail "simulate --kafka failed: $(cat "$T_TMP/k.log")"
	"$CW" simulate "$@" -o "$T_TMP/k.cww" 2>/dev/null ||
		fail "simulate failed"
	CONNS=$(sed -n 's/.*churn: \([0-9]*\) connections.*/\1/p' "$T_TMP/k.log")
	[ -n "$CONNS" ] || fail "no summary line: $(cat "$T_TMP/k.log")"
	client_bytes "$T_TMP/k.cww" >"$T_TMP/truth" || fail "dump failed"
	read -r C2S S2C <"$T_TMP/truth"
	note "$CONNS connections published; bytes $C2S / $S2C"
}

# wait_file FILE [SECONDS]: wait until FILE exists and is not empty.
wait_file() {
	local i
	for i in $(seq 1 $((${2:-10} * 20))); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	fail "timed out waiting for $1"
}

# wait_log PID LOG PATTERN WHAT: wait until LOG has a line that matches
# the grep pattern PATTERN (the process PID, WHAT in errors, has started);
# fail with LOG if PID ends first, or after 20 s.
wait_log() {
	local i
	for i in $(seq 1 400); do
		grep -q "$3" "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || fail "$4 exited early: $(cat "$2")"
		sleep 0.05
	done
	fail "$4 did not start: $(cat "$2")"
}

# bench_workloads DIR: bench/pingpong.c and bench/reqrep.c built (-O2)
# as DIR/pingpong and DIR/reqrep.
bench_workloads() {
	local w
	for w in pingpong reqrep; do
		gcc -O2 -Wall -o "$1/$w" "$CW_ROOT/bench/$w.c" -lpthread ||
			fail "unable to build $w"
	done
}

# within_pct GOT WANT PCT: GOT is within PCT percent of WANT.
within_pct() {
	awk -v g="$1" -v w="$2" -v p="$3" 'BEGIN {
		d = g - w; if (d < 0) d = -d;
		exit !(w == 0 ? g == 0 : d * 100 <= p * w) }'
}

# check_within WHAT GOT WANT PCT: fail with both numbers if not within.
check_within() {
	within_pct "$2" "$3" "$4" ||
		fail "$1: got $2, want $3 (within $4%)"
	note "$1: $2 (want $3, within $4%)"
}

check_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	note "$1: $2"
}

# expect_error STATUS PATTERN CMD...: CMD (bounded to 20 s) exits STATUS
# ("-": any status but 0) with nothing on stdout and exactly one line on
# stderr, a "causeway: error:" line that matches the grep pattern PATTERN
# ("" matches any).
expect_error() {
	local want=$1 pat=$2 rc
	shift 2
	timeout 20 "$@" >"$T_TMP/stdout" 2>"$T_TMP/stderr"
	rc=$?
	if [ "$want" = - ]; then
		[ $rc -ne 0 ] || fail "$*: exit 0, want a failure"
	else
		[ $rc -eq "$want" ] ||
			fail "$*: exit $rc, want $want: $(cat "$T_TMP/stderr")"
	fi
	[ "$(wc -l <"$T_TMP/stderr")" -eq 1 ] ||
		fail "$*: want one line on stderr, got: $(cat "$T_TMP/stderr")"
	grep -q '^causeway: error: ' "$T_TMP/stderr" ||
		fail "$*: not an error line: $(cat "$T_TMP/stderr")"
	grep -q -- "$pat" "$T_TMP/stderr" ||
		fail "$*: stderr does not match '$pat': $(cat "$T_TMP/stderr")"
	[ ! -s "$T_TMP/stdout" ] ||
		fail "$*: wrote to stdout: $(cat "$T_TMP/stdout")"
	note "$(cat "$T_TMP/stderr") (exit $rc)"
}

# jq-free JSON: python3 is part of make deps and reads our JSON outputs.
pyjson() { python3 -c "$@"; }

# otlp_receiver DIR: a loopback OTLP/HTTP receiver in the background that
# keeps the body of every POST, in the order they come, as DIR/post-1,
# DIR/post-2, ... (each whole once it is there) and answers 200, or 400
# to a path other than /v1/traces or a body not application/json (kept
# all the same); its port in OTLP_PORT.
otlp_receiver() {
	mkdir -p "$1"
	python3 -c '
import http.server, os, sys
out, n = sys.argv[1], 0
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global n
        body = self.rfile.read(int(self.headers["Content-Length"]))
        n += 1
        path = "%s/post-%d" % (out, n)
        open(path + ".tmp", "wb").write(body)
        os.rename(path + ".tmp", path)
        ok = self.path == "/v1/traces" and \
            self.headers["Content-Type"] == "application/json"
        self.send_response(200 if ok else 400)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(out + "/port.tmp", "w").write(str(s.server_address[1]))
os.rename(out + "/port.tmp", out + "/port")
s.serve_forever()' "$1" &
	bg_pid $!
	wait_file "$1/port" 5
	OTLP_PORT=$(cat "$1/port")
}

# delaywire_start A B DELAY_MS: tests/lib/delaywire.py between test hosts
# A and B (the kernel has neither netem nor sch_fq): a TAP device in each,
# dwa 10.77.9.1/24 in A and dwb 10.77.9.2/24 in B, and a process that
# carries every frame DELAY_MS after it left; waits until it carries.
delaywire_start() {
	[ -c /dev/net/tun ] || skip "no /dev/net/tun (CONFIG_TUN)"
	python3 "$CW_ROOT/tests/lib/delaywire.py" "$1" dwa "$2" dwb "$3" \
		"$T_TMP/wire.ready" >"$T_TMP/wire.log" 2>&1 &
	bg_pid $!
	wait_file "$T_TMP/wire.ready"
	ip -n "$1" addr add 10.77.9.1/24 dev dwa
	ip -n "$2" addr add 10.77.9.2/24 dev dwb
}

# ---- the agent ---------------------------------------------------------

# agent_start OUTDIR [causeway run options...]: start `causeway run -o
# OUTDIR` in the background and wait until its hooks are attached.
agent_start() {
	local out=$1
	shift
	mkdir -p "$out"
	"$CW" run -o "$out" "$@" >"$out/stdout" 2>"$out/stderr" &
	AGENT_PID=$!
	bg_pid "$AGENT_PID"
	wait_log "$AGENT_PID" "$out/stderr" "watching with" agent
}

# agent_stop OUTDIR: SIGINT, wait, expect exit 0 and the outputs.
agent_stop() {
	local rc
	kill -INT "$AGENT_PID"
	wait "$AGENT_PID"
	rc=$?
	[ $rc -eq 0 ] || fail "agent exited $rc: $(cat "$1/stderr")"
	[ -s "$1/edges.json" ] || fail "agent wrote no edges.json"
	cat "$1/stdout"
}

# edge OUTDIR [filters] FIELD...: fields of the matching edge.
edge() {
	local out=$1
	shift
	python3 "$CW_ROOT/tests/lib/edges.py" "$out/edges.json" "$@" ||
		fail "edge $*: not found"
}

# json_get JSON KEY: one top-level field of a JSON object.
json_get() {
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

TRAFFIC="python3 $CW_ROOT/tests/lib/traffic.py"

# two_hosts: namespaces $CLI and $SRV joined by veth, 10.77.1.1 <-> .2,
# fd77:1::1 <-> fd77:1::2.
two_hosts() {
	CLI=$(ns_create cli)
	SRV=$(ns_create srv)
	ns_link "$CLI" "$SRV" 10.77.1.1 10.77.1.2 fd77:1::1 fd77:1::2
	CLI_IP=10.77.1.1 SRV_IP=10.77.1.2 CLI_IP6=fd77:1::1 SRV_IP6=fd77:1::2
}

# nginx_start NS ADDR PORT ROOT [UPSTREAM]: nginx serving ROOT, or, with
# UPSTREAM (addr:port), a reverse proxy to it with pooled keep-alive
# connections; sets NGINX_PID (the worker).
nginx_start() {
	local ns=$1 addr=$2 port=$3 root=$4 conf up="" loc="" i
	conf="$T_TMP/nginx-$port.conf"
	if [ $# -ge 5 ]; then
		up="upstream backend { server $5; keepalive 16; keepalive_requests 1000000; }"
		loc="location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
	fi
	mkdir -p "$T_TMP/nginx-$port"
	cat >"$conf" <<NGINX
worker_processes 1;
pid $T_TMP/nginx-$port/nginx.pid;
error_log $T_TMP/nginx-$port/error.log;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 10000;
    client_body_temp_path $T_TMP/nginx-$port;
    proxy_temp_path $T_TMP/nginx-$port;
    fastcgi_temp_path $T_TMP/nginx-$port;
    uwsgi_temp_path $T_TMP/nginx-$port;
    scgi_temp_path $T_TMP/nginx-$port;
    $up
    server {
        listen $addr:$port;
        root $root;
        $loc
    }
}
NGINX
	ip netns exec "$ns" nginx -c "$conf" -g 'daemon off;' &
	bg_pid $!
	wait_port "$ns" "$port"
	# It listens before it writes its pid file and forks its worker.
	NGINX_MASTER="" NGINX_PID=""
	for i in $(seq 1 200); do
		NGINX_MASTER=$(cat "$T_TMP/nginx-$port/nginx.pid" 2>/dev/null)
		[ -n "$NGINX_MASTER" ] &&
			NGINX_PID=$(pgrep -P "$NGINX_MASTER" | head -n 1)
		[ -n "$NGINX_PID" ] && return 0
		sleep 0.05
	done
	fail "nginx on port $port: no worker after 10 s (master '$NGINX_MASTER'): $(cat "$T_TMP/nginx-$port/error.log" 2>/dev/null)"
}

# load_variant V: load-verify variant V's programs; on success exit 0.
# Otherwise returns with $LOAD_WHY (the kernel's reason) and $PROBE (the
# probe's JSON) set, for the caller to decide between skip and fail.
load_variant() {
	PROBE=$("$CW" probe --json) || fail "probe failed"
	LOAD_WHY=$("$CW" probe --load "$1" 2>&1) && { echo "$LOAD_WHY"; exit 0; }
	echo "$LOAD_WHY"
}

# switch_attach NS ADDR: plug NS into a shared switch (a bridge in its own
# namespace, made on first use) with ADDR/24.
switch_attach() {
	local ns=$1 ia="v$RANDOM$RANDOM" ib="v$RANDOM$RANDOM"
	if [ -z "${T_SWITCH:-}" ]; then
		T_SWITCH=$(ns_create switch)
		ip -n "$T_SWITCH" link add br0 type bridge
		ip -n "$T_SWITCH" link set br0 up
	fi
	ip link add "$ia" netns "$ns" type veth peer name "$ib" netns "$T_SWITCH" ||
		fail "unable to create veth for $ns"
	ip -n "$T_SWITCH" link set "$ib" master br0 up
	ip -n "$ns" addr add "$2/24" dev "$ia"
	ip -n "$ns" link set "$ia" up
}

# ss_bytes NS DST_ADDR DST_PORT: "sent received" summed over the
# established TCP connections from NS to DST (the kernel's own counters:
# bytes_acked and bytes_received), as independent ground truth.
ss_bytes() {
	ip netns exec "$1" ss -tinH state established "dst $2 and dport = :$3" |
		awk '{for (i = 1; i <= NF; i++) {
			if ($i ~ /^bytes_acked:/) { split($i, a, ":"); s += a[2] }
			if ($i ~ /^bytes_received:/) { split($i, b, ":"); r += b[2] } } }
		END { printf "%d %d\n", s, r }'
}

# redis_start NS ADDR: redis-server in test host NS on ADDR:6379, nothing
# kept on disk, its log in $T_TMP/redis.log, its pid in REDIS_PID; waits
# until it listens.
redis_start() {
	ip netns exec "$1" redis-server --bind "$2" --port 6379 --save '' \
		--appendonly no --protected-mode no --daemonize no \
		--dir "$T_TMP" >"$T_TMP/redis.log" 2>&1 &
	REDIS_PID=$!
	bg_pid $REDIS_PID
	wait_port "$1" 6379
}

# pg_start NS ADDR PORT: a throwaway postgresql cluster (initdb in
# $T_TMP/pg, trust auth, no fsync) serving ADDR:PORT in NS as the postgres
# user; sets PG_PID (the postmaster), PG_LOG (its log) and PG_BIN.  With
# PG_LOG_DURATIONS=1 the server logs every statement's duration.
pg_start() {
	local ns=$1 dir=$T_TMP/pg i
	PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -x "$PG_BIN/postgres" ] || skip "postgresql is not installed (make deps)"
	id postgres >/dev/null 2>&1 || skip "no postgres user (make deps)"
	mkdir -p "$dir"
	chown postgres: "$dir"
	PG_LOG=$dir/log
	setpriv --reuid postgres --regid postgres --init-groups \
		"$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync \
		>"$dir/initdb.log" 2>&1 || fail "initdb failed: $(cat "$dir/initdb.log")"
	echo "host all all 10.77.0.0/16 trust" >>"$dir/data/pg_hba.conf"
	ip netns exec "$ns" setpriv --reuid postgres --regid postgres \
		--init-groups "$PG_BIN/postgres" -D "$dir/data" \
		-c listen_addresses="$2" -c port="$3" \
		-c unix_socket_directories="$dir" -c fsync=off \
		-c synchronous_commit=off -c full_page_writes=off \
		-c shared_buffers=16MB -c max_connections=40 -c jit=off \
		-c log_min_duration_statement=$([ "${PG_LOG_DURATIONS:-}" = 1 ] &&
			echo 0 || echo -1) >"$PG_LOG" 2>&1 &
	PG_PID=$!
	bg_pid "$PG_PID"
	# A clean stop removes the cluster's shared memory; the namespace
	# teardown would only kill it.
	on_exit "setpriv --reuid postgres --regid postgres --init-groups" \
		"'$PG_BIN/pg_ctl' stop -D '$dir/data' -m fast -w -t 10"
	for i in $(seq 1 200); do
		"$PG_BIN/pg_isready" -q -h "$dir" -p "$3" && break
		kill -0 "$PG_PID" 2>/dev/null || fail "postgres exited: $(cat "$PG_LOG")"
		sleep 0.05
	done
	wait_port "$ns" "$3"
}

# three_tier: test hosts $LOAD $WEB $APP $DB on one switch (10.77.0.10-13)
# with nginx proxying to examples/app.py (APP_DELAY, default 2ms), backed
# by the database DB_KIND names:
#   redis     redis-server on 6379 (the default without DB_DELAY)
#   line      app.py's line database on 6379 that answers after exactly
#             DB_DELAY (the default with DB_DELAY)
#   postgres  postgresql on 5432; the app runs SELECT pg_sleep(DB_DELAY)
#             (SELECT 1 without DB_DELAY) on one connection per worker
# Sets NGINX_PID, APP_PID, DB_PID (redis, the line db or the postmaster:
# postgres serves each connection from its own backend process).  The app
# runs under /usr/bin/python3 (APP_PYTHON), where Debian's psycopg2 is.
three_tier() {
	local db=${DB_KIND:-} backend
	[ -n "$db" ] || { [ -n "${DB_DELAY:-}" ] && db=line || db=redis; }
	APP_PYTHON=${APP_PYTHON:-/usr/bin/python3}
	[ -x "$APP_PYTHON" ] || APP_PYTHON=python3
	LOAD=$(ns_create load) WEB=$(ns_create web) APP=$(ns_create app)
	DB=$(ns_create db)
	switch_attach "$LOAD" 10.77.0.10
	switch_attach "$WEB" 10.77.0.11
	switch_attach "$APP" 10.77.0.12
	switch_attach "$DB" 10.77.0.13
	case $db in
	postgres)
		"$APP_PYTHON" -c 'import psycopg2' 2>/dev/null ||
			skip "$APP_PYTHON cannot import psycopg2 (make deps)"
		pg_start "$DB" 10.77.0.13 5432
		DB_PID=$PG_PID
		PG_QUERY="SELECT 1"
		[ -n "${DB_DELAY:-}" ] &&
			PG_QUERY="SELECT pg_sleep($(cw_seconds "$DB_DELAY"))"
		backend=(--postgres 10.77.0.13:5432 --query "$PG_QUERY")
		;;
	line)
		ip netns exec "$DB" "$APP_PYTHON" "$CW_ROOT/examples/app.py" db \
			--listen 10.77.0.13:6379 --delay "${DB_DELAY:-5ms}" &
		DB_PID=$!
		bg_pid $DB_PID
		wait_port "$DB" 6379
		backend=(--db 10.77.0.13:6379)
		;;
	redis)
		redis_start "$DB" 10.77.0.13
		DB_PID=$REDIS_PID
		backend=(--redis 10.77.0.13:6379)
		;;
	*) fail "three_tier: unknown DB_KIND '$db' (redis, line or postgres)" ;;
	esac
	ip netns exec "$APP" "$APP_PYTHON" "$CW_ROOT/examples/app.py" \
		--listen 10.77.0.12:8080 "${backend[@]}" --delay "${APP_DELAY:-2ms}" \
		2>"$T_TMP/app.log" &
	APP_PID=$!
	bg_pid $APP_PID
	wait_port "$APP" 8080
	nginx_start "$WEB" 10.77.0.11 80 "$T_TMP" 10.77.0.12:8080
}

# cw_seconds DUR: a duration with a us/ms/s suffix, in seconds.
cw_seconds() {
	awk -v d="$1" 'BEGIN {
		m = 1
		if (d ~ /us$/) { m = 1e-6; sub(/us$/, "", d) }
		else if (d ~ /ms$/) { m = 1e-3; sub(/ms$/, "", d) }
		else if (d ~ /s$/) sub(/s$/, "", d)
		printf "%.9g\n", d * m }'
}

# ---- byte truth ----------------------------------------------------------

# fleet_agent OUT NS HOSTID [agent args...]: `causeway agent` scoped to NS
# in the background, publishing (give --kafka); its log in OUT/agent-HOSTID.log,
# its pid in FLEET_AGENT_PID; waits until it runs.  It collects every
# FLEET_AGENT_INTERVAL (default 300ms).  The log is appended to: an agent
# started again with the same OUT and HOSTID (a restart) keeps what the
# last one said, and the wait is for the new one's start.
fleet_agent() {
	local out=$1 ns=$2 host=$3 log i started
	shift 3
	log=$out/agent-$host.log
	mkdir -p "$out"
	: >>"$log"
	started=$(grep -c "agent on host" "$log")
	"$CW" agent --netns "$(ns_inode "$ns")" --host "$host" \
		--interval "${FLEET_AGENT_INTERVAL:-300ms}" --samples-every 0 \
		--spool "$out/spool-$host" "$@" 2>>"$log" &
	FLEET_AGENT_PID=$!
	bg_pid $FLEET_AGENT_PID
	for i in $(seq 1 200); do
		[ "$(grep -c "agent on host" "$log")" -gt "$started" ] && return 0
		kill -0 $FLEET_AGENT_PID 2>/dev/null || break
		sleep 0.05
	done
	fail "agent $host did not start: $(cat "$log")"
}

# fleet_agent_stop PID LOG: SIGINT, expect exit 0 and every record
# delivered (produced = delivered, nothing spooled or lost at the end).
fleet_agent_stop() {
	local rc line
	kill -INT "$1"
	wait "$1"
	rc=$?
	[ $rc -eq 0 ] || fail "agent exited $rc: $(cat "$2")"
	line=$(grep -o 'kafka: [0-9]* produced, [0-9]* delivered.*' "$2" | tail -n 1)
	[ -n "$line" ] || fail "no kafka summary in $2: $(cat "$2")"
	python3 - "$line" <<'PY' || fail "agent $2: not everything delivered: $line"
import re, sys
m = re.match(r"kafka: (\d+) produced, (\d+) delivered", sys.argv[1])
sys.exit(0 if m and m.group(1) == m.group(2) else 1)
PY
}

# drop_attach NS DEV SEED: loss on DEV's ingress in NS, about 1 in 40 TCP
# packets that carry data, a SYN or a FIN (tests/lib/drop.bpf.c), from a
# pseudo-random sequence seeded with SEED.  Removed at cleanup.
drop_attach() {
	local ns=$1 dev=$2 seed=$3 obj=$T_TMP/drop-$3.o
	if [ ! -s "$obj" ]; then
		clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" \
			-DDROP_SEED="$seed" -DDROP_EVERY=40 \
			-c "$CW_ROOT/tests/lib/drop.bpf.c" -o "$obj" ||
			fail "unable to build tests/lib/drop.bpf.c"
	fi
	ip netns exec "$ns" tc qdisc add dev "$dev" clsact ||
		fail "unable to add clsact on $dev in $ns"
	on_exit "ip netns exec '$ns' tc qdisc del dev '$dev' clsact"
	ip netns exec "$ns" tc filter add dev "$dev" ingress bpf \
		direct-action obj "$obj" sec tc ||
		fail "unable to attach the drop program on $dev in $ns"
}

# drop_detach NS DEV: no more loss on DEV.
drop_detach() {
	ip netns exec "$1" tc qdisc del dev "$2" clsact 2>/dev/null || true
}

# drop_count NS DEV: "SEEN DROPPED SYNS FINS", the drop program's counts
# on DEV: packets seen, dropped, and of those SYNs and FINs.
drop_count() {
	local id
	id=$(ip netns exec "$1" tc filter show dev "$2" ingress |
		sed -n 's/.* id \([0-9]*\) .*/\1/p' | head -n 1)
	[ -n "$id" ] || { echo "0 0 0 0"; return; }
	bpftool -j prog show id "$id" | python3 -c '
import json, subprocess, sys
p = json.load(sys.stdin)
for m in p.get("map_ids", []):
    d = json.loads(subprocess.check_output(
        ["bpftool", "-j", "map", "dump", "id", str(m)]))
    if len(d) == 5:
        v = [int.from_bytes(bytes(int(b, 16) for b in e["value"]), "little")
             for e in d]
        print(v[0], v[1], v[3], v[4])
        break
else:
    print("0 0 0 0")'
}

BYTES_TRUTH="python3 $CW_ROOT/tests/lib/bytes_truth.py"

# truth_serve NS ADDR BASE OUT: tests/lib/bytes_truth.py's pattern servers
# on ADDR, ports BASE...; every server end is appended to OUT.
truth_serve() {
	ip netns exec "$1" $BYTES_TRUTH serve "$2" "$3" "$4" \
		>"$T_TMP/truth-serve-$3.log" 2>&1 &
	bg_pid $!
	wait_port "$1" "$3"
}

# truth_settle NS... -- SRVFILE N: wait until the servers logged N ends and
# no TCP connection of these test hosts is still open (every close record
# final, retransmitted FINs included); bounded, then fails.
truth_settle() {
	local nss=() i n
	while [ "$1" != -- ]; do nss+=("$1"); shift; done
	shift
	for i in $(seq 1 600); do
		n=$(cat "$1" 2>/dev/null | wc -l)
		if [ "$n" -ge "$2" ]; then
			local open=0 ns
			for ns in "${nss[@]}"; do
				ip netns exec "$ns" ss -Htan state connected \
					exclude time-wait | grep -q . && open=1
			done
			[ $open -eq 0 ] && return 0
		fi
		sleep 0.1
	done
	fail "connections did not settle: $n of $2 server ends logged"
}

# truth_loss SEED NAME: loss on both test hosts' ingress ($CLI on $LINK_A,
# $SRV on $LINK_B), seeded; SEED 0: none.  truth_loss_end SEED NAME: report
# what was dropped (fails if nothing was) and remove it.
truth_loss() {
	[ "$1" != 0 ] || return 0
	drop_attach "$CLI" "$LINK_A" "$1"
	drop_attach "$SRV" "$LINK_B" "$(($1 + 1))"
}
truth_loss_end() {
	local d1 d2 s1 s2 f1 f2
	[ "$1" != 0 ] || return 0
	read -r _ d1 s1 f1 <<<"$(drop_count "$CLI" "$LINK_A")"
	read -r _ d2 s2 f2 <<<"$(drop_count "$SRV" "$LINK_B")"
	note "$2: $((d1 + d2)) packets dropped, $((s1 + s2)) SYNs and $((f1 + f2)) FINs among them"
	echo "$2 dropped $((d1 + d2)) ($((s1 + s2)) SYNs, $((f1 + f2)) FINs)" \
		>>"${TRUTH_RUNLOG:-/dev/null}"
	[ $((d1 + d2)) -gt 0 ] || fail "$2: the drop program dropped nothing"
	drop_detach "$CLI" "$LINK_A"
	drop_detach "$SRV" "$LINK_B"
}

# truth_clients NAME OUT: the pattern clients against both families'
# servers (ports 7100 on $SRV_IP, 7200 on $SRV_IP6), their ends to OUT.
truth_clients() {
	local c4 c6
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP" 7100 "$2" &
	c4=$!
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP6" 7200 "$2" &
	c6=$!
	wait $c4 || fail "$1: the IPv4 client failed"
	wait $c6 || fail "$1: the IPv6 client failed"
}

# truth_session NAME SEED [options...]: the test's own `attempt` function,
# checked with no tolerance; sets TRUTH_FAILED=1 if it fails.  One fault
# class alone earns a second attempt: at most a few ends with no record or
# no final record (attempt returns 3).  The kernel, under load, sometimes
# makes TCP state changes without running any BPF program on the
# tracepoint (docs/agent-counters.md, "Transitions the programs never
# see"); the agent recovers an unseen handshake or close, but not an end
# whose every transition went unseen.  A wrong byte count of a recorded
# end never earns one, and the second attempt must be exact.  The first
# attempt stays in the log as RETRY, its files under test-logs/TEST.d/.
# Every attempt's figures (ends, bytes each side wrote and read, drops,
# result) are appended to test-logs/TEST.runs.
TRUTH_FAILED=0
export TRUTH_RUNLOG=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).runs
truth_session() {
	local rc keep
	mkdir -p "${TRUTH_RUNLOG%/*}"
	attempt "$@"
	rc=$?
	echo "$(date +%FT%T) $1 rc=$rc" >>"$TRUTH_RUNLOG"
	if [ $rc -eq 3 ]; then
		note "RETRY $1: ends with no final record (above); once more"
		keep=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).d
		mkdir -p "$keep" && cp -r "$T_TMP/$1" "$keep/"
		attempt "$1-again" "${@:2}"
		rc=$?
		echo "$(date +%FT%T) $1-again rc=$rc RETRY" >>"$TRUTH_RUNLOG"
	fi
	[ $rc -eq 0 ] || TRUTH_FAILED=1
}

# truth_end WHAT: fail if a session failed, keeping every session's files
# under test-logs/TEST.d/ for the post-mortem.
truth_end() {
	local keep
	[ $TRUTH_FAILED -eq 0 ] && return 0
	keep=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).d
	mkdir -p "$keep" && cp -r "$T_TMP"/*/ "$keep"/
	fail "some $1 are wrong (above)"
}
