#!/bin/bash
# The fleet pipeline on one machine: four test hosts, one agent per host
# scoped to its namespace (each with its own host id), the embedded broker
# inside the first agent, and a correlator in another process reading
# Kafka.  The correlator's graph must show load -> nginx -> app -> redis
# across hosts, every connection paired from its two agents, with bytes
# each way within 0.5% of the kernel's own TCP counters (ss -ti).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx redis-server python3

three_tier

# One agent per host; the first runs the embedded broker.
fleet_agent "$T_TMP" "$LOAD" load --kafka embedded
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent-load.log")
[ -n "$BOOT" ] || fail "no embedded broker address"
note "embedded broker at $BOOT"
AGENT_LOAD=$FLEET_AGENT_PID
fleet_agent "$T_TMP" "$WEB" web --kafka "$BOOT"
fleet_agent "$T_TMP" "$APP" app --kafka "$BOOT"
fleet_agent "$T_TMP" "$DB" db --kafka "$BOOT"

ip netns exec "$LOAD" python3 "$CW_ROOT/examples/load.py" \
	http://10.77.0.11/api --clients 3 --duration 3s --linger 8 \
	--done "$T_TMP/load.done" >"$T_TMP/load.json" &
bg_pid $!
# The kernel's counters are read once the load has stopped sending and
# while its connections still linger (however slow the machine is).
for _ in $(seq 1 600); do
	[ -e "$T_TMP/load.done" ] && break
	sleep 0.1
done
[ -e "$T_TMP/load.done" ] || fail "the load did not finish in 60 s"
read -r lw_s lw_r <<<"$(ss_bytes "$LOAD" 10.77.0.11 80)"
read -r wa_s wa_r <<<"$(ss_bytes "$WEB" 10.77.0.12 8080)"
read -r ad_s ad_r <<<"$(ss_bytes "$APP" 10.77.0.13 6379)"
note "ss: load->web $lw_s/$lw_r web->app $wa_s/$wa_r app->db $ad_s/$ad_r"
[ "$lw_s" -gt 0 ] && [ "$wa_s" -gt 0 ] && [ "$ad_s" -gt 0 ] ||
	fail "the workload made no traffic"
sleep 1	# two agent intervals: the last counts are published

out=$T_TMP/corr
"$CW" correlate --kafka "$BOOT" --from-beginning --idle 4s -o "$out" \
	>"$T_TMP/corr.txt" 2>"$T_TMP/corr.log" || fail "correlate failed: $(cat "$T_TMP/corr.log")"
cat "$T_TMP/corr.txt"

check_tier() {	# WHAT CHOST CCOMM SHOST SCOMM SENT RECEIVED
	local c2s s2c paired conns
	read -r c2s s2c paired conns <<<"$(edge "$out" --client-host "$2" \
		--client-comm "$3" --server-host "$4" --server-comm "$5" \
		bytes_c2s bytes_s2c paired conns)"
	check_eq "$1: every connection paired" "$paired" "$conns"
	check_within "$1: bytes client -> server" "$c2s" "$6" 0.5
	check_within "$1: bytes server -> client" "$s2c" "$7" 0.5
}
check_tier "load -> nginx" load python3 web nginx "$lw_s" "$lw_r"
check_tier "nginx -> app" web nginx app python3 "$wa_s" "$wa_r"
check_tier "app -> redis" app python3 db redis-server "$ad_s" "$ad_r"
echo ok
