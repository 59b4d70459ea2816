#!/bin/bash
# A real Prometheus scrapes `causeway agent --metrics`: an agent scoped to
# a test host publishes to its embedded broker while a client there opens
# N connections; once the agent's counters stand still, PromQL over the
# Prometheus HTTP API gives the agent's records, losses and Kafka
# deliveries, and they equal what the agent itself reports when it stops
# (its "stopped:" and "kafka:" lines; the one record more it produces at
# stop is its last host metadata).  Then `causeway run --metrics` serves
# the same counters while it runs.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl python3 prometheus
N=10

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7600 &
bg_pid $!
wait_port "$SRV" 7600

aport=$(free_port) || fail "no free port"
pport=$((aport + 1))
fleet_agent "$T_TMP" "$CLI" metrics-host --hooks always --meta-every 0 \
	--kafka embedded --metrics "$aport"
AGENT=$FLEET_AGENT_PID
LOG=$T_TMP/agent-metrics-host.log
grep -q "metrics at http://127.0.0.1:$aport/metrics" "$LOG" ||
	fail "agent did not serve metrics: $(cat "$LOG")"
# Loopback by default: a bare port binds 127.0.0.1 only.
ss -Htln "sport = :$aport" | grep -q "127.0.0.1:$aport" ||
	fail "the metrics port is not on loopback: $(ss -Htln "sport = :$aport")"

prometheus_start $pport $aport 1s agent

ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7600 $N 1000 >"$T_TMP/client.out" ||
	fail "client failed"

# metric NAME [HOST]: the agent's own value, read directly.
metric() {
	curl -sf "http://127.0.0.1:$aport/metrics" |
		sed -n "s/^$1{host=\"${2:-metrics-host}\"} \([0-9]*\)$/\1/p"
}
# Wait (a bound, not a measurement) until the counters stand still for
# ten collection periods.
last="" same=0
for _ in $(seq 1 200); do
	now="$(metric causeway_agent_records_total) $(metric causeway_agent_kafka_delivered_total)"
	[ "$now" = "$last" ] && same=$((same + 1)) || same=0
	last=$now
	[ $same -ge 10 ] && break
	sleep 0.3
done
[ $same -ge 10 ] || fail "the agent's counters never stood still: $last"
read -r records delivered <<<"$last"
[ "$records" -ge $N ] || fail "agent counted $records records for $N connections"
note "agent: $records records, $delivered delivered (direct)"

cat >"$T_TMP/check.py" <<'EOF'
import json, sys, time, urllib.parse, urllib.request
prom, want_records = sys.argv[1], int(sys.argv[2])

def promql(q):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=10) as r:
        res = json.loads(r.read())
    assert res["status"] == "success", res
    return res["data"]["result"]

for i in range(300):
    try:
        res = promql("causeway_agent_records_total")
    except OSError:
        res = []
    if res and int(float(res[0]["value"][1])) == want_records:
        break
    time.sleep(0.2)
else:
    raise SystemExit("Prometheus never scraped %d records: %s" % (want_records, res))
assert res[0]["metric"]["host"] == "metrics-host", res[0]["metric"]
names = ["records", "close_lost", "storage_failures", "udp_map_full",
         "kafka_produced", "kafka_delivered", "kafka_lost", "kafka_spooled",
         "spool_records"]
out = {}
for n in names:
    m = "causeway_agent_%s" % n
    res = promql(m + "_total") or promql(m)
    assert len(res) == 1, (m, res)
    out[n] = int(float(res[0]["value"][1]))
print(" ".join("%s=%d" % (n, out[n]) for n in names))
EOF
prom=$(python3 "$T_TMP/check.py" "http://127.0.0.1:$pport" "$records") ||
	fail "PromQL: $prom $(tail -3 "$T_TMP/prom.log")"
note "PromQL: $prom"
eval "$prom"

kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$LOG")"
read -r a_records a_lost a_storage a_udp <<<"$(sed -n \
	's/.*stopped: \([0-9]*\) records in [0-9]* collections; lost \([0-9]*\) close records, \([0-9]*\) storage failures, \([0-9]*\) UDP map full.*/\1 \2 \3 \4/p' \
	"$LOG")"
read -r a_produced a_delivered a_spooled a_lost_k <<<"$(sed -n \
	's/.*kafka: \([0-9]*\) produced, \([0-9]*\) delivered, \([0-9]*\) spooled, [0-9]* replayed, \([0-9]*\) lost.*/\1 \2 \3 \4/p' \
	"$LOG")"
[ -n "$a_records" ] && [ -n "$a_produced" ] ||
	fail "the agent reported no counters: $(tail -n 5 "$LOG")"
check_eq "records: Prometheus and the agent" "$records" "$a_records"
check_eq "close records lost" "$close_lost" "$a_lost"
check_eq "storage failures" "$storage_failures" "$a_storage"
check_eq "UDP map full" "$udp_map_full" "$a_udp"
check_eq "records spooled" "$kafka_spooled" "$a_spooled"
check_eq "records lost by Kafka" "$kafka_lost" "$a_lost_k"
# At stop: one more host metadata record, after the last scrape.
check_eq "produced: Prometheus + the host metadata at stop" \
	$((kafka_produced + 1)) "$a_produced"
check_eq "delivered, as scraped: everything produced" "$kafka_delivered" "$kafka_produced"
check_eq "delivered at stop" "$a_delivered" "$a_produced"

note "causeway run --metrics"
"$CW" run --netns "$(ns_inode "$CLI")" --duration 6s --interval 300ms \
	--metrics "127.0.0.1:$aport" >"$T_TMP/run.out" 2>"$T_TMP/run.log" &
RUN=$!
bg_pid $RUN
for _ in $(seq 1 200); do
	grep -qs "watching with" "$T_TMP/run.log" && break
	sleep 0.05
done
ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7600 3 1000 >/dev/null ||
	fail "client failed"
got=""
for _ in $(seq 1 50); do
	got=$(metric causeway_agent_records_total "$(cat /etc/machine-id)")
	[ -n "$got" ] && [ "$got" -ge 3 ] && break
	sleep 0.1
done
[ -n "$got" ] && [ "$got" -ge 3 ] ||
	fail "run --metrics gave '$got' records: $(cat "$T_TMP/run.log")"
wait $RUN || fail "run failed: $(cat "$T_TMP/run.log")"
final=$(sed -n 's/.*causeway: \([0-9]*\) records, .*/\1/p' "$T_TMP/run.log")
[ -n "$final" ] && [ "$got" -le "$final" ] ||
	fail "run served $got records, reported '$final'"
note "run: $got records served while running, $final at the end"
echo ok
