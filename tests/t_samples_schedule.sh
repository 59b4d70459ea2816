#!/bin/bash
# The agent records sample runs on its own schedule: at the next
# wall-clock multiple of --samples-every, a 10 ms run of 2,000 bins (the
# first of the 10 ms / 1 ms / 100 us rotation) on every non-loopback
# interface of its namespace, stored where --samples-store says, with the
# tc hooks removed afterwards.  Runs inside a test host, so the only
# interface it touches is the test's veth.  Takes up to a minute.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 tc

two_hosts
store=$T_TMP/store
ip netns exec "$CLI" "$CW" agent --samples-every 30s --samples-store "$store" \
	--netns "$(ns_inode "$CLI")" -o "$T_TMP/records.jsonl" 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
# Traffic through the veth for the run to count.
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7400 &
bg_pid $!
wait_port "$SRV" 7400
for _ in $(seq 1 650); do
	ls "$store"/*.cws >/dev/null 2>&1 && break
	ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 2 20000 >/dev/null 2>&1
	sleep 0.1
done
ls "$store"/*.cws >/dev/null 2>&1 || fail "no scheduled run was stored: $(cat "$T_TMP/agent.log")"
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?"
"$CW" samples list --store "$store"
run=$(ls "$store"/*.cws | head -n 1)
"$CW" samples export "$run" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("interval", r["interval_ns"], "bins", r["nbins"], "bytes in",
      r["totals"]["bytes_in"] + r["totals"]["bytes_in_x"])
assert r["interval_ns"] == 10000000, r["interval_ns"]
assert r["nbins"] == 2000, r["nbins"]
assert r["totals"]["bytes_in"] + r["totals"]["bytes_in_x"] > 0
' || fail "the scheduled run is not a full 10 ms run with traffic"
ip netns exec "$CLI" tc filter show dev "$LINK_A" ingress | grep -q . &&
	fail "tc filters left on $LINK_A after the run"
echo ok
