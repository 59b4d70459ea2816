#!/bin/bash
# Sample runs are published to Kafka as they complete: an agent inside a
# test host, with its sampler schedule on and the embedded broker, stores
# its first scheduled run (10 ms x 2,000 bins on the host's veth) and
# publishes it to causeway.samples.  `causeway dump` of that topic shows
# the run, and its header and every bin equal those of the run file in the
# agent's local store.  Takes up to a minute (the schedule's next multiple
# of 30 s, then 20 s of bins).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 tc

two_hosts
store=$T_TMP/store
ip netns exec "$CLI" "$CW" agent --samples-every 30s --samples-store "$store" \
	--netns "$(ns_inode "$CLI")" --host cli-host --kafka embedded \
	--spool "$T_TMP/spool" 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 200); do
	grep -qs "embedded broker at" "$T_TMP/agent.log" && break
	sleep 0.05
done
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent.log")
[ -n "$BOOT" ] || fail "no embedded broker: $(cat "$T_TMP/agent.log")"
note "embedded broker at $BOOT (inside $CLI)"

# Traffic through the veth for the run to count.
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7400 &
bg_pid $!
wait_port "$SRV" 7400
for _ in $(seq 1 650); do
	ls "$store"/*.cws >/dev/null 2>&1 && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 2 20000 >/dev/null 2>&1
	sleep 0.1
done
run=$(ls "$store"/*.cws 2>/dev/null | head -n 1)
[ -n "$run" ] || fail "no scheduled run was stored: $(cat "$T_TMP/agent.log")"
note "stored $(basename "$run")"

# The broker lives in the agent: read the topic while it runs.
ip netns exec "$CLI" "$CW" dump --kafka "$BOOT" --topic samples \
	--from-beginning --count 1 --timeout 20s >"$T_TMP/dump.jsonl" \
	2>"$T_TMP/dump.log" || fail "dump failed: $(cat "$T_TMP/dump.log")"
check_eq "runs on causeway.samples" "$(wc -l <"$T_TMP/dump.jsonl")" 1
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent.log")"
grep -q "samples: 1 runs published" "$T_TMP/agent.log" ||
	fail "the agent did not count the run published: $(tail -n 5 "$T_TMP/agent.log")"

"$CW" samples export "$run" --format json >"$T_TMP/file.json" ||
	fail "unable to export $run"
python3 - "$T_TMP/dump.jsonl" "$T_TMP/file.json" <<'PY' ||
import json, sys
k = json.loads(open(sys.argv[1]).readline())
f = json.load(open(sys.argv[2]))
assert k["kind"] == "samples", k["kind"]
assert k["host"] == "cli-host" and k["seq"] == 1, (k["host"], k["seq"])
for field in ("host", "dev", "start_ns", "interval_ns", "samples", "nbins",
              "link_speed_bps", "ncpus", "interrupted", "past_end",
              "seq_map_full", "totals"):
    assert k[field] == f[field], (field, k[field], f[field])
assert k["interval_ns"] == 10000000 and k["nbins"] == 2000, k["nbins"]
assert len(k["bins"]) == len(f["bins"]) == 2000
diff = [i for i, (a, b) in enumerate(zip(k["bins"], f["bins"])) if a != b]
assert not diff, "bins differ, first at %d: %s vs %s" % (
    diff[0], k["bins"][diff[0]], f["bins"][diff[0]])
busy = sum(1 for b in k["bins"] if b["bytes_in"] + b["bytes_in_x"])
total = k["totals"]["bytes_in"] + k["totals"]["bytes_in_x"]
assert total > 0, "the run counted no traffic"
print("dev %s: %d bins equal to the run file's; %d bins with traffic, "
      "%d bytes in" % (k["dev"], len(k["bins"]), busy, total))
PY
	fail "the published run differs from the stored one"
echo ok
