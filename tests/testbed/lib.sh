# The traces testbed: sourced after tests/lib.sh, never run.
#
# Test hosts on one switch (a bridge in its own namespace, tests/lib.sh):
#
#   load 10.77.0.10 -> web 10.77.0.11 (nginx, kept-alive upstream pool)
#     -> evloop 10.77.0.12:8080 (Node.js, one event loop, OpenTelemetry JS)
#          -> tpr 10.77.0.13:8080 (a thread per request)   -> redis
#          -> pool 10.77.0.14:8080 (an I/O thread + workers) -> redis
#     redis 10.77.0.15:6379 (each service holds a pool of 3 connections)
#
# Every service but nginx and redis records which incoming request made
# which outgoing calls (truth-links lines, docs/causeway-traces.md);
# causeway never reads them, they only score it.  The capture is taken on
# the switch's bridge, so it sees every hop once, with one clock.
TB_DIR=$CW_ROOT/tests/testbed
TB_JS=${TB_JS:-$CW_ROOT/${BUILD:-build}/testbed-otel}
TB_TARGET=10.77.0.11:80

# testbed_deps: skip unless everything the testbed runs is here; installs
# the OpenTelemetry JS SDK into $TB_JS once (npm's registry).
testbed_deps() {
	need_root
	need_cmd python3 node npm nginx redis-server tcpdump
	[ -d "$TB_JS/node_modules/@opentelemetry/instrumentation-http" ] &&
		return 0
	mkdir -p "$TB_JS"
	(cd "$TB_JS" && npm init -y >/dev/null &&
		npm install --no-audit --no-fund @opentelemetry/api@1.9.0 \
			@opentelemetry/sdk-trace-node@1.25.1 \
			@opentelemetry/sdk-trace-base@1.25.1 \
			@opentelemetry/instrumentation@0.52.1 \
			@opentelemetry/instrumentation-http@0.52.1 \
			>npm.log 2>&1) ||
		skip "npm could not install the OpenTelemetry JS SDK (see $TB_JS/npm.log)"
}

# testbed_start: the stack, up and answering; truth goes to $T_TMP/truth-*.
# TB_FANOUT=1: a second thread-per-request service, tpr2 10.77.0.16, that
# the event loop calls with the pool at once (three services a request).
testbed_start() {
	local h fan=""
	TB_LOAD=$(ns_create load) TB_WEB=$(ns_create web)
	TB_EVL=$(ns_create evloop) TB_TPR=$(ns_create tpr)
	TB_POOL=$(ns_create pool) TB_DB=$(ns_create redis)
	switch_attach "$TB_LOAD" 10.77.0.10
	switch_attach "$TB_WEB" 10.77.0.11
	switch_attach "$TB_EVL" 10.77.0.12
	switch_attach "$TB_TPR" 10.77.0.13
	switch_attach "$TB_POOL" 10.77.0.14
	switch_attach "$TB_DB" 10.77.0.15
	redis_start "$TB_DB" 10.77.0.15
	ip netns exec "$TB_TPR" python3 "$TB_DIR/services.py" tpr \
		--listen 10.77.0.13:8080 --redis 10.77.0.15:6379 \
		--truth "$T_TMP/truth-tpr.csv" 2>"$T_TMP/tpr.log" &
	TB_TPR_PID=$!
	bg_pid $TB_TPR_PID
	ip netns exec "$TB_POOL" python3 "$TB_DIR/services.py" pool \
		--listen 10.77.0.14:8080 --redis 10.77.0.15:6379 \
		--truth "$T_TMP/truth-pool.csv" 2>"$T_TMP/pool.log" &
	TB_POOL_PID=$!
	bg_pid $TB_POOL_PID
	wait_port "$TB_TPR" 8080
	wait_port "$TB_POOL" 8080
	if [ "${TB_FANOUT:-0}" = 1 ]; then
		TB_TPR2=$(ns_create tpr2)
		switch_attach "$TB_TPR2" 10.77.0.16
		ip netns exec "$TB_TPR2" python3 "$TB_DIR/services.py" tpr \
			--name tpr2 --listen 10.77.0.16:8080 \
			--redis 10.77.0.15:6379 --truth "$T_TMP/truth-tpr2.csv" \
			2>"$T_TMP/tpr2.log" &
		bg_pid $!
		wait_port "$TB_TPR2" 8080
		fan=10.77.0.16:8080
	fi
	ip netns exec "$TB_EVL" env NODE_PATH="$TB_JS/node_modules" node \
		"$TB_DIR/evloop.js" 10.77.0.12:8080 10.77.0.13:8080 \
		10.77.0.14:8080 "$T_TMP/spans-evloop.jsonl" $fan \
		2>"$T_TMP/evloop.log" &
	TB_EVL_PID=$!
	bg_pid $TB_EVL_PID
	wait_port "$TB_EVL" 8080
	nginx_start "$TB_WEB" 10.77.0.11 80 "$T_TMP" 10.77.0.12:8080
	for h in 1 2 3; do
		ip netns exec "$TB_LOAD" curl -sf "http://$TB_TARGET/" >/dev/null &&
			return 0
		sleep 0.5
	done
	fail "the testbed does not answer: $(cat "$T_TMP"/evloop.log "$T_TMP"/tpr.log)"
}

# testbed_load ARGS...: loadgen.py against nginx from the load host; prints
# its JSON line.
testbed_load() {
	ip netns exec "$TB_LOAD" python3 "$TB_DIR/loadgen.py" \
		--target "$TB_TARGET" "$@"
}

# testbed_capacity [SECONDS]: requests/s answered with 64 closed-loop
# clients (the stack saturated).
testbed_capacity() {
	testbed_load --closed 64 --duration "${1:-4}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["rate"])'
}

# testbed_capture_start FILE / testbed_capture_stop: tcpdump on the
# switch's bridge, whole packets (the reader needs every payload length).
testbed_capture_start() {
	TB_PCAP=$1
	ip netns exec "$T_SWITCH" tcpdump -i br0 -s 0 -B 16384 -U -w "$TB_PCAP" \
		tcp 2>"$T_TMP/tcpdump.log" &
	TB_TCPDUMP=$!
	bg_pid $TB_TCPDUMP
	for _ in $(seq 1 100); do
		grep -q "listening on" "$T_TMP/tcpdump.log" && return 0
		sleep 0.05
	done
	fail "tcpdump did not start: $(cat "$T_TMP/tcpdump.log")"
}
testbed_capture_stop() {
	sleep 0.3 # the last replies
	kill -INT "$TB_TCPDUMP"
	wait "$TB_TCPDUMP" 2>/dev/null
	grep "dropped by kernel" "$T_TMP/tcpdump.log"
}

# testbed_record_start FILE / testbed_record_stop: `causeway run --traces
# FILE` on the whole host (the agent sees every test host's namespace):
# each message with its thread and the kernel's request context.
testbed_record_start() {
	mkdir -p "$T_TMP/run"
	"$CW" run --traces "$1" -o "$T_TMP/run" >"$T_TMP/run.out" \
		2>"$T_TMP/run.err" &
	TB_RUN=$!
	bg_pid $TB_RUN
	wait_log $TB_RUN "$T_TMP/run.err" "watching with" "causeway run"
}
testbed_record_stop() {
	sleep 0.3 # the last replies
	kill -INT "$TB_RUN"
	wait "$TB_RUN" || fail "causeway run failed: $(cat "$T_TMP/run.err")"
	grep "traces:" "$T_TMP/run.err"
}

# testbed_truth OUT: every service's truth in one truth-links file (the
# event loop's from its OpenTelemetry spans); the OTel check on stderr.
testbed_truth() {
	python3 "$TB_DIR/otel_truth.py" "$T_TMP/spans-evloop.jsonl" \
		>"$1" 2>"$T_TMP/otel-check.json" ||
		fail "cannot read the OpenTelemetry spans"
	tail -q -n +2 "$T_TMP/truth-tpr.csv" "$T_TMP/truth-pool.csv" >>"$1"
	[ ! -f "$T_TMP/truth-tpr2.csv" ] ||
		tail -q -n +2 "$T_TMP/truth-tpr2.csv" >>"$1"
}
