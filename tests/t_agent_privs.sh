#!/bin/bash
# Least privilege: an agent started as root with --user nobody runs, once
# attached, as nobody in every thread (the Kafka ones too), with exactly
# CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN, an empty bounding and ambient
# set and NO_NEW_PRIVS -- read from /proc/PID/task/*/status -- and still
# counts a connection's bytes as the client sent them.  The spool folder
# belongs to nobody.  Without --user it stays uid 0 with the same limits.
# (test_agent_caps checks that such a process cannot open a root-only file
# and that an exec regains nothing.)
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3
getent passwd nobody >/dev/null || skip "no user 'nobody'"

# status_check PID UID: every thread of PID has these credentials.
status_check() {
	python3 - "$1" "$2" <<'PY'
import glob, sys
pid, uid = sys.argv[1], sys.argv[2]
want_caps = (1 << 39) | (1 << 38) | (1 << 12)  # BPF, PERFMON, NET_ADMIN
tasks = glob.glob("/proc/%s/task/*/status" % pid)
assert tasks, "no threads"
for t in tasks:
    f = dict(l.split(":", 1) for l in open(t).read().splitlines() if ":" in l)
    assert f["Uid"].split() == [uid] * 4, (t, f["Uid"])
    for k in ("CapPrm", "CapEff"):
        assert int(f[k], 16) == want_caps, (t, k, f[k])
    for k in ("CapInh", "CapBnd", "CapAmb"):
        assert int(f[k], 16) == 0, (t, k, f[k])
    assert f["NoNewPrivs"].strip() == "1", (t, f["NoNewPrivs"])
print("%d threads: uid %s, caps %x, bounding set empty, no_new_privs" %
      (len(tasks), uid, want_caps))
PY
}

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7600 &
bg_pid $!
wait_port "$SRV" 7600

mkdir -p "$T_TMP/spool"
ip netns exec "$CLI" "$CW" agent --kafka embedded --spool "$T_TMP/spool" \
	--netns "$(ns_inode "$CLI")" --host cli-host --interval 200ms \
	--samples-every 0 --user nobody 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 200); do
	grep -qs "agent on host" "$T_TMP/agent.log" && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.05
done
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent.log")
[ -n "$BOOT" ] || fail "no embedded broker: $(cat "$T_TMP/agent.log")"
status_check $AGENT 65534 || fail "agent credentials: $(cat "$T_TMP/agent.log")"
check_eq "spool owner" "$(stat -c %U "$T_TMP/spool")" nobody

# Still an agent: one connection's bytes, as the client counted them.
ip netns exec "$CLI" $TRAFFIC phases "$SRV_IP" 7600 "$T_TMP/go" 1 30000 \
	>"$T_TMP/client.out" &
bg_pid $!
wait_file "$T_TMP/client.out"
LPORT=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["lport"])' "$T_TMP/client.out")
touch "$T_TMP/go.1"
wait_file "$T_TMP/go.1.done"
sleep 1
ip netns exec "$CLI" "$CW" dump --kafka "$BOOT" --from-beginning \
	--timeout 5s >"$T_TMP/conns.jsonl" 2>"$T_TMP/dump.log" &
DUMP=$!
bg_pid $DUMP
sleep 6
status_check $AGENT 65534 || fail "agent credentials changed while running"
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent.log")"
wait $DUMP || fail "dump exit status $?: $(cat "$T_TMP/dump.log")"
python3 - "$T_TMP/conns.jsonl" "$LPORT" <<'PY' ||
import json, sys
ends = [json.loads(l) for l in open(sys.argv[1])]
mine = [e for e in ends if e.get("lport") == int(sys.argv[2])]
assert mine, "no record of the client's connection"
last = max(mine, key=lambda e: e["seq"])
assert last["bytes_out"] == 30000 and last["bytes_in"] == 30000, last
print("client end: %d bytes out, %d in" % (last["bytes_out"], last["bytes_in"]))
PY
	fail "the agent, as nobody, did not count the connection"

# Without --user: root, but with the same limits.
"$CW" agent -o "$T_TMP/out.jsonl" --samples-every 0 -d 3s \
	2>"$T_TMP/agent2.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 100); do
	grep -qs "agent on host" "$T_TMP/agent2.log" && break
	sleep 0.05
done
status_check $AGENT 0 || fail "agent (root) credentials: $(cat "$T_TMP/agent2.log")"
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent2.log")"
echo ok
