#!/bin/bash
# The long-running agent: after attaching it keeps only CAP_BPF,
# CAP_PERFMON and CAP_NET_ADMIN; SIGTERM flushes what is pending (a
# connection made just before it shows in the output though no interval
# has passed), detaches everything and exits 0.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 bpftool

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7200 &
bg_pid $!
wait_port "$SRV" 7200

cw_prog_ids() { bpftool prog show | sed -n 's/^\([0-9]*\): .* name cw_.*/\1/p' | sort; }
# The programs a process holds open (each program fd's fdinfo names its
# id), so other tests' or agents' programs loaded meanwhile do not count.
prog_ids_of() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' |
		sort -u
}
"$CW" agent --interval 1h --samples-every 0 -o "$T_TMP/records.jsonl" 2>"$T_TMP/stderr" &
AGENT=$!
bg_pid $AGENT
for i in $(seq 1 100); do
	grep -q "agent on host" "$T_TMP/stderr" && break
	sleep 0.05
done
grep -q "agent on host" "$T_TMP/stderr" || fail "agent did not start: $(cat "$T_TMP/stderr")"

caps=$(awk '/^CapEff/ {print $2}' "/proc/$AGENT/status")
# bit 12 CAP_NET_ADMIN, 38 CAP_PERFMON, 39 CAP_BPF
check_eq "effective capabilities" "$caps" 000000c000001000
check_eq "permitted capabilities" \
	"$(awk '/^CapPrm/ {print $2}' "/proc/$AGENT/status")" 000000c000001000
# The agent's own programs: those it holds (others may run too).
prog_ids_of $AGENT >"$T_TMP/mine"
[ -s "$T_TMP/mine" ] || fail "no programs held by the agent while it runs"

res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7200 3 4321) ||
	fail "client failed"
kill -TERM $AGENT
wait $AGENT
rc=$?
check_eq "exit status after SIGTERM" $rc 0
n=$(python3 -c 'import json,sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind"):  # host and process metadata
        continue
    if r["process"].get("pid") == int(sys.argv[2]) and r["bytes_out"] == 4321:
        n += 1
print(n)' "$T_TMP/records.jsonl" "$(json_get "$res" pid)")
check_eq "connections flushed at SIGTERM" "$n" 3
check_eq "the agent's programs left loaded" \
	"$(cw_prog_ids | comm -12 "$T_TMP/mine" - | wc -l)" 0
echo ok
