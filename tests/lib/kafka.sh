# Apache Kafka for the shell tests: sourced after tests/lib.sh, never run.
#
# Real brokers (Apache Kafka 4.x in KRaft mode, each node a combined
# broker and controller) on loopback, from the jars tests/kafka/fetch.sh
# put in $BUILD/kafka/lib (`make deps`).  One set per test file:
#
#	. "$(dirname "$0")/lib.sh"
#	. "$(dirname "$0")/lib/kafka.sh"
#	kafka_start 3		# sets KAFKA_BOOT (and prints it)
#	kafka_kill 2; kafka_restart 2
#
# Call these in the test's own shell, never in $(...): they keep the
# brokers' pids in shell variables.  Every JVM is stopped (SIGTERM, then
# SIGKILL) and its directory removed at exit, also when the test fails.
KAFKA_LIB=${KAFKA_LIB:-$CW_ROOT/${BUILD:-build}/kafka/lib}
# Small heaps, serial GC, no JIT's second tier: the machine has 2 cores,
# and a test broker moves kilobytes.
KAFKA_JVM_OPTS=${KAFKA_JVM_OPTS:--Xmx384m -Xms128m -XX:+UseSerialGC
	-XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true}
# Every JVM's temp files (the broker's compression codecs unpack their
# native libraries there, and a killed JVM leaves them) go to the test's
# own temp dir, removed at exit, never to /tmp.
KAFKA_JVM_TMP=-Djava.io.tmpdir=$T_TMP
KAFKA_DIR=$T_TMP/kafka
KAFKA_N=0 KAFKA_BOOT="" KAFKA_PIDS=() KAFKA_PORTS=()

# kafka_need: skip the test unless java and the jars are there.
kafka_need() {
	command -v java >/dev/null 2>&1 ||
		skip "java is not installed: run make deps"
	compgen -G "$KAFKA_LIB/kafka_2.13-*.jar" >/dev/null ||
		skip "no Apache Kafka jars in $KAFKA_LIB: run make deps"
	need_cmd kcat python3
}

# kafka_version: the version of the jars, as 4.4.0.
kafka_version() {
	local j
	j=$(compgen -G "$KAFKA_LIB/kafka_2.13-*.jar" | head -n 1)
	j=${j##*/kafka_2.13-}
	echo "${j%.jar}"
}

# kafka_java CLASS ARGS...: run a class from the jars with a small heap,
# logging warnings only (to stderr).
kafka_java() {
	# shellcheck disable=SC2086 # the options are words
	java $KAFKA_JVM_OPTS "$KAFKA_JVM_TMP" \
		-Dlog4j2.configurationFile="$KAFKA_DIR/tools-log4j2.properties" \
		-cp "$KAFKA_LIB/*" "$@"
}

# kafka_log4j FILE LEVEL: a log4j2 configuration printing LEVEL and up.
kafka_log4j() {
	cat >"$1" <<EOF
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_ERR
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $2
rootLogger.appenderRef.out.ref = out
EOF
}

# kafka_start N: N (1 or 3) brokers, node ids 1..N, each with its own two
# ports (clients, controllers) on 127.0.0.1 and its log directory under
# the test's temp dir; waits until the cluster serves (every broker in the
# metadata) and sets KAFKA_BOOT to the bootstrap list.  With 3: topics are
# made with 3 replicas and min.insync.replicas 2, the consumer offsets and
# transaction topics too.  Topics made on first use get 4 partitions, as
# on the embedded broker.
kafka_start() {
	local n=$1 i p ports voters="" cid rf isr
	case $n in 1 | 3) ;; *) fail "kafka_start: 1 or 3 brokers, not '$n'" ;; esac
	[ "$KAFKA_N" -eq 0 ] || fail "kafka_start: one broker set per test"
	kafka_need
	mkdir -p "$KAFKA_DIR"
	on_exit kafka_cleanup
	kafka_log4j "$KAFKA_DIR/tools-log4j2.properties" warn
	kafka_log4j "$KAFKA_DIR/broker-log4j2.properties" info
	KAFKA_N=$n
	rf=$n isr=$((n == 3 ? 2 : 1))
	ports=$(free_port "$n") || fail "no free ports for $n broker(s)"
	read -ra ports <<<"$ports"
	for ((i = 1; i <= n; i++)); do
		p=${ports[i - 1]}
		KAFKA_PORTS[i]=$p	# clients on p, controllers on p + 1
		voters+="${voters:+,}$i@127.0.0.1:$((p + 1))"
		KAFKA_BOOT+="${KAFKA_BOOT:+,}127.0.0.1:$p"
	done
	# A cluster id as Kafka makes them: never one starting with '-', which
	# the tools' argument parser would take for an option (1 in 64).
	cid=$(python3 -c 'import base64, uuid
while True:
    c = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not c.startswith("-"):
        break
print(c)')
	for ((i = 1; i <= n; i++)); do
		p=${KAFKA_PORTS[i]}
		mkdir -p "$KAFKA_DIR/$i"
		cat >"$KAFKA_DIR/$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$p
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DIR/$i/data
auto.create.topics.enable=true
num.partitions=4
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
# A crashed broker is fenced (and leaves the ISRs) in 3 s, not 9.
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
# The log cleaner (compacted topics: P.state) looks for work every 0.5 s,
# not 15, and keeps its offset map small: test topics hold kilobytes.
log.cleaner.threads=1
log.cleaner.backoff.ms=500
log.cleaner.dedupe.buffer.size=16777216
# Retention is checked every second from the start, not every 5 minutes
# after 30 s: a test cuts a topic's retention.ms and waits for it.
log.retention.check.interval.ms=1000
log.initial.task.delay.ms=0
EOF
		kafka_java kafka.tools.StorageTool format \
			--config "$KAFKA_DIR/$i/server.properties" --cluster-id "$cid" \
			>"$KAFKA_DIR/$i/format.log" 2>&1 ||
			fail "formatting broker $i's storage failed: $(cat "$KAFKA_DIR/$i/format.log")"
	done
	for ((i = 1; i <= n; i++)); do
		kafka_run "$i"
	done
	kafka_wait_brokers "$n"
	note "kafka $(kafka_version): $n broker(s) at $KAFKA_BOOT"
}

# kafka_run I: start broker I's JVM in the background (its log: server.log).
kafka_run() {
	local i=$1
	# shellcheck disable=SC2086
	java $KAFKA_JVM_OPTS "$KAFKA_JVM_TMP" \
		-Dlog4j2.configurationFile="$KAFKA_DIR/broker-log4j2.properties" \
		-Dkafka.logs.dir="$KAFKA_DIR/$i" -cp "$KAFKA_LIB/*" \
		kafka.Kafka "$KAFKA_DIR/$i/server.properties" \
		>>"$KAFKA_DIR/$i/server.log" 2>&1 &
	KAFKA_PIDS[i]=$!
}

# kafka_brokers: the ids of the brokers the metadata lists now, one a line
# (none when no broker answers).
kafka_brokers() {
	kcat -L -J -m 2 -b "$KAFKA_BOOT" 2>/dev/null | python3 -c '
import json, sys
try:
    md = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for b in md.get("brokers", []):
    print(b["id"])'
}

# kafka_wait_brokers COUNT [ID]: until the metadata lists COUNT brokers
# (and broker ID among them), while every broker started is alive.
kafka_wait_brokers() {
	local want=$1 id=${2:-} i j ids
	for i in $(seq 1 300); do
		for ((j = 1; j <= KAFKA_N; j++)); do
			[ -n "${KAFKA_PIDS[j]:-}" ] || continue
			kill -0 "${KAFKA_PIDS[j]}" 2>/dev/null ||
				fail "kafka broker $j exited: $(tail -n 30 "$KAFKA_DIR/$j/server.log")"
		done
		ids=$(kafka_brokers)
		if [ "$(grep -c . <<<"$ids")" -ge "$want" ] &&
			{ [ -z "$id" ] || grep -qx "$id" <<<"$ids"; }; then
			return 0
		fi
		sleep 0.2
	done
	fail "kafka: $want broker(s) never served at $KAFKA_BOOT (seen: $(echo $ids)): $(tail -n 30 "$KAFKA_DIR/1/server.log")"
}

# kafka_kill I: SIGKILL broker I (a crash) and reap it.
kafka_kill() {
	local pid=${KAFKA_PIDS[$1]:-}
	[ -n "$pid" ] || fail "kafka_kill: broker $1 is not running"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	KAFKA_PIDS[$1]=""
	note "kafka broker $1 killed (SIGKILL)"
}

# kafka_stop I [SECONDS]: stop broker I cleanly (SIGTERM; SIGKILL if it
# lingers past SECONDS, 10).
kafka_stop() {
	local pid=${KAFKA_PIDS[$1]:-} i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 1 $((${2:-10} * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	KAFKA_PIDS[$1]=""
}

# kafka_restart I: start broker I again on its log directory (after a
# kill or stop) and wait until the metadata lists it.
kafka_restart() {
	[ -z "${KAFKA_PIDS[$1]:-}" ] || kafka_stop "$1"
	kafka_run "$1"
	kafka_wait_brokers 1 "$1"
	note "kafka broker $1 back"
}

# A failure inside $(...) or a pipeline only ends that subshell, and its
# caller reads an empty answer (an end offset of 0, no partitions):
# kafka_fail ends the test itself too (its shell exits 1 once the
# command under way is done).
trap 'exit 1' USR1
kafka_fail() {
	echo "FAIL: $*" >&2
	[ "$BASHPID" = "$$" ] || kill -USR1 $$
	exit 1
}

# kafka_partitions_once TOPIC: kafka_partitions' answer from one metadata
# request; status 1 (and nothing) if there is none to read.
kafka_partitions_once() {
	local md
	md=$(kcat -L -J -m 5 -b "$KAFKA_BOOT" 2>"$KAFKA_DIR/metadata.err") ||
		return 1
	python3 -c '
import json, sys
try:
    md = json.load(sys.stdin)
except ValueError as e:
    sys.exit("kafka: metadata that is not JSON: %s" % e)
for t in md.get("topics", []):
    if t["topic"] != sys.argv[1] or t.get("error"):
        continue
    for p in sorted(t["partitions"], key=lambda p: p["partition"]):
        ids = lambda k: ",".join(str(r["id"]) for r in p.get(k, [])) or "-"
        print(p["partition"], p["leader"], ids("replicas"), ids("isrs"))' \
		"$1" <<<"$md" 2>>"$KAFKA_DIR/metadata.err"
}

# kafka_partitions TOPIC: one line per partition of TOPIC, as
# "PARTITION LEADER REPLICAS ISR" (replica lists comma-separated); nothing
# if the topic does not exist.  (It asks for every topic's metadata: a
# request naming the topic would make it, the brokers creating topics on
# first use.)  Metadata that cannot be read is asked for again, up to 5
# times; then the test fails.
kafka_partitions() {
	local i out
	for i in 1 2 3 4 5; do
		[ "$i" -eq 1 ] || sleep 0.5
		out=$(kafka_partitions_once "$1") || continue
		[ -z "$out" ] || echo "$out"
		return 0
	done
	kafka_fail "kafka: no metadata for $1 in 5 tries: $(tail -n 3 "$KAFKA_DIR/metadata.err")"
}

# kafka_end_offset TOPIC: the sum over TOPIC's partitions of their end
# offsets (high watermarks): how many records it has taken so far.  Each
# is asked for up to 5 times; then the test fails.
kafka_end_offset() {
	local p sum=0 off i
	for p in $(kafka_partitions "$1" | awk '{print $1}'); do
		for i in 1 2 3 4 5; do
			[ "$i" -eq 1 ] || sleep 0.5
			off=$(kcat -Q -m 5 -b "$KAFKA_BOOT" -t "$1:$p:-1" \
				2>"$KAFKA_DIR/offset.err" |
				sed -n 's/.*offset \([0-9-]*\).*/\1/p')
			[ -n "$off" ] && [ "$off" -ge 0 ] && break
		done
		[ -n "$off" ] && [ "$off" -ge 0 ] ||
			kafka_fail "kafka: no end offset for $1 [$p] in 5 tries: $(tail -n 3 "$KAFKA_DIR/offset.err")"
		sum=$((sum + off))
	done
	echo "$sum"
}

# kafka_wait_isr TOPIC COUNT: until every partition of TOPIC has COUNT
# replicas in sync.
kafka_wait_isr() {
	local i
	for i in $(seq 1 300); do
		kafka_partitions_once "$1" | awk -v n="$2" '
			{ split($4, a, ","); if (length(a) < n) bad = 1; seen = 1 }
			END { exit !(seen && !bad) }' && return 0
		sleep 0.2
	done
	fail "kafka: $1 never had $2 replicas in sync: $(kafka_partitions "$1")"
}

# kafka_wait_all_isr: until every partition of every topic the brokers
# hold (the internal ones too) has all its replicas in sync.
kafka_wait_all_isr() {
	local i
	for i in $(seq 1 600); do
		kcat -L -J -m 5 -b "$KAFKA_BOOT" 2>/dev/null | python3 -c '
import json, sys
md = json.load(sys.stdin)
ok = bool(md.get("topics"))
for t in md.get("topics", []):
    for p in t.get("partitions", []):
        if len(p.get("isrs", [])) < len(p.get("replicas", [])) or p["leader"] < 0:
            ok = False
sys.exit(not ok)' && return 0
		sleep 0.2
	done
	fail "kafka: some replicas never came back in sync"
}

# kafka_topic_create TOPIC [kafka-topics options...]: make TOPIC now
# (e.g. --partitions 4, or --replica-assignment 1:2:3,1:3:2 to choose
# each partition's leader: the first id of its list).
kafka_topic_create() {
	local t=$1
	shift
	# --if-not-exists: the admin client retries a request that timed out
	# on a busy machine, and the retry finds what the first one made.
	kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server \
		"$KAFKA_BOOT" --create --if-not-exists --topic "$t" "$@" \
		>"$KAFKA_DIR/topic.log" 2>&1 ||
		fail "kafka: unable to create $t: $(cat "$KAFKA_DIR/topic.log")"
	[ -n "$(kafka_partitions "$t")" ] ||
		fail "kafka: $t was not created: $(cat "$KAFKA_DIR/topic.log")"
}

# kafka_topic_config TOPIC KEY: KEY's value in TOPIC's configuration as
# the brokers hold it (the topic's own or the default it takes).
kafka_topic_config() {
	kafka_java org.apache.kafka.tools.ConfigCommand --bootstrap-server \
		"$KAFKA_BOOT" --entity-type topics --entity-name "$1" \
		--describe --all 2>"$KAFKA_DIR/configs.err" |
		awk -v k="$2" '{ sub(/^ +/, "") } index($0, k "=") == 1 {
			v = substr($0, length(k) + 2); sub(/ sensitive=.*/, "", v)
			print v; exit }'
}

# kafka_topic_alter TOPIC KEY=VALUE[,KEY=VALUE...]: set TOPIC's own
# settings on the brokers, as `kafka-configs --alter --add-config` does.
kafka_topic_alter() {
	kafka_java org.apache.kafka.tools.ConfigCommand --bootstrap-server \
		"$KAFKA_BOOT" --entity-type topics --entity-name "$1" \
		--alter --add-config "$2" >"$KAFKA_DIR/alter.log" 2>&1 ||
		fail "kafka: unable to set $2 on $1: $(cat "$KAFKA_DIR/alter.log")"
}

# kafka_records TOPIC [KEY_PREFIX]: how many records TOPIC holds now over
# its partitions (whose key starts with KEY_PREFIX): compaction and
# retention make it less than kafka_end_offset.
kafka_records() {
	kcat -C -q -e -o beginning -m 10 -b "$KAFKA_BOOT" -t "$1" -f '%k\n' \
		>"$KAFKA_DIR/records.out" 2>"$KAFKA_DIR/records.err" ||
		fail "kafka: unable to read $1: $(cat "$KAFKA_DIR/records.err")"
	grep -c "^${2:-}" "$KAFKA_DIR/records.out" || true
}

# kafka_cleanup: stop every broker (SIGTERM together, SIGKILL after 10 s),
# keep their logs in $BUILD/test-logs/TEST.kafka/ for a post-mortem and
# remove their directories.  Registered by kafka_start.
kafka_cleanup() {
	local i j pid alive pids=() logs
	for ((i = 1; i <= KAFKA_N; i++)); do
		[ -n "${KAFKA_PIDS[i]:-}" ] && pids+=("${KAFKA_PIDS[i]}")
	done
	if [ ${#pids[@]} -gt 0 ]; then
		kill -TERM "${pids[@]}" 2>/dev/null
		for j in $(seq 1 100); do
			alive=0
			for pid in "${pids[@]}"; do
				kill -0 "$pid" 2>/dev/null && alive=1
			done
			[ $alive -eq 1 ] || break
			sleep 0.1
		done
		kill -9 "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	fi
	logs=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).kafka
	rm -rf "$logs"
	for ((i = 1; i <= KAFKA_N; i++)); do
		mkdir -p "$logs/$i"
		cp "$KAFKA_DIR/$i"/*.log "$KAFKA_DIR/$i/server.properties" \
			"$logs/$i/" 2>/dev/null
	done
	# The agents' and correlators' logs and summaries too.
	cp "$T_TMP"/*.log "$T_TMP"/*.txt "$logs/" 2>/dev/null
	rm -rf "$KAFKA_DIR"
}

# ---- agents publishing to the brokers ---------------------------------

# kafka_agent NS HOSTID [agent options...]: `causeway agent` scoped to
# test host NS, publishing to KAFKA_BOOT (spool and log under $T_TMP);
# waits until it runs and sets AGENT_<HOSTID> to its pid.
kafka_agent() {
	local ns=$1 host=$2 pid run=() in=KAFKA_IN_$2
	shift 2
	# KAFKA_IN_<HOSTID>: the test host the agent's own process runs in
	# (kafka_uplink), when not the machine's namespace; and its librdkafka
	# properties in $T_TMP/agent-HOSTID.properties, if there.
	[ -n "${!in:-}" ] && run=(nsenter "--net=/run/netns/${!in}")
	[ -f "$T_TMP/agent-$host.properties" ] &&
		set -- --kafka-config "$T_TMP/agent-$host.properties" "$@"
	"${run[@]}" "$CW" agent --netns "$(ns_inode "$ns")" --host "$host" --interval 300ms \
		--samples-every 0 --kafka "$KAFKA_BOOT" \
		--spool "$T_TMP/spool-$host" "$@" 2>"$T_TMP/agent-$host.log" &
	pid=$!
	bg_pid $pid
	printf -v "AGENT_$host" %s $pid
	for _ in $(seq 1 200); do
		grep -qs "agent on host" "$T_TMP/agent-$host.log" && return 0
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	fail "agent $host did not start: $(cat "$T_TMP/agent-$host.log")"
}

# kafka_uplink NAME: a test host NAME whose processes reach the brokers
# only across its veth: relays (tests/kafka/relay.py) take the brokers'
# advertised 127.0.0.1:PORT on NAME's loopback across the veth to a
# second test host, and from there to the brokers.  Sets UPLINK_NS (the
# host, for KAFKA_IN_<HOSTID>) and UPLINK_DEV, UPLINK_GW_NS, UPLINK_GW_DEV:
# the veth's two ends, which kafka_cut and kafka_heal drop on.
kafka_uplink() {
	local i ports=() relay=$CW_ROOT/tests/kafka/relay.py
	UPLINK_NS=$(ns_create "$1")
	UPLINK_GW_NS=$(ns_create "$1-gw")
	ns_link "$UPLINK_NS" "$UPLINK_GW_NS" 10.77.9.1 10.77.9.2
	UPLINK_DEV=$LINK_A UPLINK_GW_DEV=$LINK_B
	for ((i = 1; i <= KAFKA_N; i++)); do
		ports+=("${KAFKA_PORTS[i]}")
	done
	python3 "$relay" "$UPLINK_GW_NS" 10.77.9.2 - 127.0.0.1 \
		"$T_TMP/relay-gw.ready" "${ports[@]}" 2>"$T_TMP/relay-gw.log" &
	bg_pid $!
	python3 "$relay" "$UPLINK_NS" 127.0.0.1 "$UPLINK_NS" 10.77.9.2 \
		"$T_TMP/relay-host.ready" "${ports[@]}" 2>"$T_TMP/relay-host.log" &
	bg_pid $!
	wait_file "$T_TMP/relay-gw.ready"
	wait_file "$T_TMP/relay-host.ready"
	nsenter "--net=/run/netns/$UPLINK_NS" kcat -L -m 5 -b "$KAFKA_BOOT" \
		>/dev/null 2>&1 ||
		fail "the brokers cannot be reached from $UPLINK_NS: $(cat "$T_TMP"/relay-*.log)"
}

# kafka_cut: drop every packet arriving at either end of the uplink's
# veth (a network cut: nothing is refused, packets vanish).
kafka_cut() {
	ip netns exec "$UPLINK_NS" iptables -A INPUT -i "$UPLINK_DEV" -j DROP &&
		ip netns exec "$UPLINK_GW_NS" iptables -A INPUT -i "$UPLINK_GW_DEV" -j DROP ||
		fail "unable to cut $UPLINK_NS off"
}

# kafka_heal: the uplink carries packets again; prints how many the cut
# dropped.
kafka_heal() {
	local n=0 ns dev c
	for ns in "$UPLINK_NS:$UPLINK_DEV" "$UPLINK_GW_NS:$UPLINK_GW_DEV"; do
		dev=${ns#*:} ns=${ns%%:*}
		c=$(ip netns exec "$ns" iptables -L INPUT -v -n -x |
			awk -v d="$dev" '$3 == "DROP" && $6 == d { print $1 }')
		n=$((n + ${c:-0}))
		ip netns exec "$ns" iptables -D INPUT -i "$dev" -j DROP ||
			fail "unable to heal $ns"
	done
	echo "$n"
}

# kafka_agents_stop HOSTID...: stop the agents (SIGTERM), expect exit 0,
# and check that each delivered every record it made and lost none: with
# no delivery failed, delivered = produced; after an outage (records
# spooled), every spooled record was replayed and the spool is empty with
# nothing evicted or lost.  (`produced` counts the replays too, and the
# summary does not say how many deliveries failed: then the fleet graph's
# bytes are the exact check.)  Sets KAFKA_SPOOLED to the records spooled.
kafka_agents_stop() {
	local h line produced delivered lost spooled replayed holds evicted pids=()
	for h in "$@"; do
		pids+=("$(eval echo "\$AGENT_$h")")
	done
	kill -TERM "${pids[@]}"
	for h in "$@"; do
		wait "$(eval echo "\$AGENT_$h")" ||
			fail "agent $h failed: $(cat "$T_TMP/agent-$h.log")"
	done
	KAFKA_SPOOLED=0
	for h in "$@"; do
		line=$(grep "kafka: [0-9]* produced" "$T_TMP/agent-$h.log" | tail -n 1)
		[ -n "$line" ] ||
			fail "agent $h printed no kafka summary: $(cat "$T_TMP/agent-$h.log")"
		note "agent $h: ${line#*kafka: }"
		read -r produced delivered spooled replayed lost holds evicted <<<"$(sed -n 's/.*kafka: \([0-9]*\) produced, \([0-9]*\) delivered, \([0-9]*\) spooled, \([0-9]*\) replayed, \([0-9]*\) lost; spool holds \([0-9]*\) records, evicted \([0-9]*\).*/\1 \2 \3 \4 \5 \6 \7/p' <<<"$line")"
		[ "${produced:-0}" -gt 0 ] || fail "agent $h produced nothing"
		check_eq "agent $h: records lost" "$lost" 0
		check_eq "agent $h: records left in the spool" "$holds" 0
		check_eq "agent $h: records evicted from the spool" "$evicted" 0
		if [ "$spooled" -eq 0 ]; then
			check_eq "agent $h: delivered = produced" "$delivered" "$produced"
		else
			[ "$replayed" -ge "$spooled" ] ||
				fail "agent $h: $spooled records spooled, $replayed replayed"
		fi
		KAFKA_SPOOLED=$((KAFKA_SPOOLED + spooled))
	done
}

# kafka_correlate OUT: `causeway correlate` over everything the brokers
# hold, until idle, with its graph in OUT (its log in OUT.log) and the
# options in KAFKA_CORRELATE_OPTS; it must have applied every record
# causeway.conns holds.
kafka_correlate() {
	local total
	total=$(kafka_end_offset causeway.conns)
	# shellcheck disable=SC2086 # the options are words
	"$CW" correlate --kafka "$KAFKA_BOOT" --from-beginning --idle 4s -o "$1" \
		${KAFKA_CORRELATE_OPTS:-} >"$1.txt" 2>"$1.log" ||
		fail "correlate failed: $(cat "$1.log")"
	head -n 12 "$1.txt"
	grep "state:" "$1.log" || true
	check_eq "correlator: records applied (all causeway.conns holds)" \
		"$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"]["applied"])' "$1/edges.json")" \
		"$total"
}

# kafka_member NAME GROUP IDLE [correlate options...]: a correlator member
# of GROUP in the background (with $T_TMP/kafka.properties, if there),
# its graph in $T_TMP/NAME and its log in $T_TMP/NAME.log; its pid in
# KAFKA_LAST.
kafka_member() {
	local name=$1 group=$2 idle=$3 props=()
	shift 3
	[ -f "$T_TMP/kafka.properties" ] &&
		props=(--kafka-config "$T_TMP/kafka.properties")
	"$CW" correlate --kafka "$KAFKA_BOOT" "${props[@]}" --group "$group" \
		--no-paths --idle "$idle" --snapshot-every 300ms \
		-o "$T_TMP/$name" "$@" >/dev/null 2>"$T_TMP/$name.log" &
	KAFKA_LAST=$!
	bg_pid $KAFKA_LAST
}

# kafka_member_owns NAME N: until member NAME (the last started) has been
# given N partitions of causeway.conns.
kafka_member_owns() {
	local i
	for i in $(seq 1 600); do
		[ "$(grep -cs 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
			"$T_TMP/$1.log")" -ge "$2" ] 2>/dev/null && return 0
		kill -0 "$KAFKA_LAST" 2>/dev/null || break
		sleep 0.05
	done
	fail "member $1 got no partitions: $(cat "$T_TMP/$1.log")"
}

# kafka_member_settle NAME PID: until member NAME (pid PID) has applied
# every record causeway.conns holds; then stop it (SIGINT), expecting
# exit 0.
kafka_member_settle() {
	local total
	total=$(kafka_end_offset causeway.conns)
	for _ in $(seq 1 900); do
		[ "$(kafka_member_stat "$1" applied 2>/dev/null)" = "$total" ] && break
		kill -0 "$2" 2>/dev/null || fail "member $1 exited: $(cat "$T_TMP/$1.log")"
		sleep 0.1
	done
	check_eq "$1: records applied" "$(kafka_member_stat "$1" applied)" "$total"
	kill -INT "$2"
	wait "$2" || fail "member $1 failed: $(cat "$T_TMP/$1.log")"
	grep "state:" "$T_TMP/$1.log" || true
}

# kafka_member_stat NAME KEY: a counter of member NAME's edges.json.
kafka_member_stat() {
	python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"][sys.argv[2]])' \
		"$T_TMP/$1/edges.json" "$2"
}

# kafka_echo_start PHASES PHASE_BYTES: the echo workload of two test hosts
# (two_hosts), an agent on each publishing to the brokers (cli, srv), an
# echo server on SRV and the client's long connection waiting to move
# PHASE_BYTES each way in each of PHASES phases (kafka_phase runs one);
# the client's pid in KAFKA_LONG_PID.
kafka_echo_start() {
	two_hosts
	ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7300 &
	bg_pid $!
	wait_port "$SRV" 7300
	kafka_agent "$CLI" cli
	kafka_agent "$SRV" srv
	ip netns exec "$CLI" $TRAFFIC phases "$SRV_IP" 7300 "$T_TMP/go" "$1" \
		"$2" >"$T_TMP/phases.json" &
	bg_pid $!
	wait_file "$T_TMP/phases.json"
	KAFKA_LONG_PID=$(json_get "$(cat "$T_TMP/phases.json")" pid)
}

# kafka_phase N [PAUSE]: run phase N of the long connection, then let the
# agents publish for PAUSE seconds (0.7).
kafka_phase() {
	touch "$T_TMP/go.$1"
	wait_file "$T_TMP/go.$1.done"
	sleep "${2:-0.7}"
}

# kafka_short_check JSON N BYTES: the short connections' client (its
# result JSON) sent and received N * BYTES.
kafka_short_check() {
	check_eq "short connections: bytes the client sent" \
		"$(json_get "$1" sent)" $(($2 * $3))
	check_eq "short connections: bytes the client received" \
		"$(json_get "$1" received)" $(($2 * $3))
}

# kafka_check_edge OUT WHAT CLIENT_PID CONNS C2S S2C: the edge of the
# client process CLIENT_PID in OUT's graph has CONNS connections, all
# paired, and exactly C2S and S2C bytes.
kafka_check_edge() {
	local conns c2s s2c paired
	read -r conns c2s s2c paired <<<"$(edge "$1" --client-pid "$3" \
		conns bytes_c2s bytes_s2c paired)"
	check_eq "$2: connections" "$conns" "$4"
	check_eq "$2: paired" "$paired" "$4"
	check_eq "$2: bytes client -> server" "$c2s" "$5"
	check_eq "$2: bytes server -> client" "$s2c" "$6"
}

# kafka_check_echo_edges OUT LABEL LONG_PID LONG_BYTES SHORT_PID SHORT_N
# SHORT_BYTES: OUT's graph of an echo workload: one long connection of
# client LONG_PID moving LONG_BYTES each way, and SHORT_N connections of
# client SHORT_PID moving SHORT_BYTES each way apiece, all paired.
kafka_check_echo_edges() {
	kafka_check_edge "$1" "${2}long connection" "$3" 1 "$4" "$4"
	kafka_check_edge "$1" "${2}short connections" "$5" "$6" \
		$(($6 * $7)) $(($6 * $7))
}

# kafka_check_echo_graph LONG_PID LONG_BYTES SHORT_PID SHORT_N SHORT_BYTES:
# correlate what the brokers hold (into $T_TMP/corr) and check the graph
# as kafka_check_echo_edges does.
kafka_check_echo_graph() {
	kafka_correlate "$T_TMP/corr"
	kafka_check_echo_edges "$T_TMP/corr" "" "$@"
}
