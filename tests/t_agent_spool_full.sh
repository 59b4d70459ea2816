#!/bin/bash
# The agent's spool on a disk smaller than --spool-max (issue #34): a
# 512 KiB tmpfs and an 8Mi bound.  During an outage the oldest records are
# evicted to make room, with one warning for the whole episode; when the
# brokers return the cursor is saved on the full disk, the used segments
# are deleted, and a restart replays nothing.  A read-only spool folder is
# refused at start with one error line.  The sizes are given as 1M and 8Mi.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

DISK=$T_TMP/disk RO=$T_TMP/ro
mkdir -p "$DISK" "$RO"
mount -t tmpfs -o size=512k,mode=755 tmpfs "$DISK" ||
	skip "unable to mount a tmpfs"
on_exit umount -l "$DISK"
mount -t tmpfs -o size=256k,mode=755,ro tmpfs "$RO" ||
	fail "unable to mount a read-only tmpfs"
on_exit umount -l "$RO"
SPOOL=$DISK/spool

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7300 &
bg_pid $!
wait_port "$SRV" 7300

broker_start
printf 'message.timeout.ms=1000\n' >"$T_TMP/kafka.properties"

agent_args=(--netns "$(ns_inode "$CLI")" --host cli --interval 100ms
	--samples-every 0 --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties")

note "a read-only spool folder is refused at start"
"$CW" agent "${agent_args[@]}" --spool "$RO" --spool-max 1M --duration 30s \
	>/dev/null 2>"$T_TMP/ro.log" && fail "the agent started on a read-only spool folder"
grep -q "spool '$RO' is not writable" "$T_TMP/ro.log" ||
	fail "no error about the read-only spool: $(cat "$T_TMP/ro.log")"
check_eq "error lines at the refused start" "$(grep -c 'error:' "$T_TMP/ro.log")" 1

start_agent() {	# LOG: an agent on the client's host, spooling on the tmpfs
	touch "$1"
	"$CW" agent "${agent_args[@]}" --spool "$SPOOL" --spool-max 8Mi "${@:2}" 2>"$1" &
	AGENT=$!
	bg_pid $AGENT
	for _ in $(seq 1 200); do
		grep -q "agent on host" "$1" && return 0
		kill -0 $AGENT 2>/dev/null || fail "agent did not start: $(cat "$1")"
		sleep 0.05
	done
	fail "agent did not start"
}
wait_log() {	# LOG PATTERN WHAT: wait for PATTERN in LOG
	for _ in $(seq 1 600); do
		grep -q "$2" "$1" && return 0
		sleep 0.1
	done
	fail "$3: $(tail -n 5 "$1")"
}

LOG=$T_TMP/agent.log
start_agent "$LOG"
note "brokers down; short connections until the spool's disk is full"
kill -USR1 $BROKER
for _ in $(seq 1 60); do
	ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 200 100 >/dev/null ||
		fail "short connections failed"
	grep -q "evicting the oldest records" "$LOG" && break
done
wait_log "$LOG" "evicting the oldest records" "the spool's disk never filled up"
# More records while the disk is full: still evicted, still one warning.
ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 400 100 >/dev/null
sleep 2	# past message.timeout.ms: they expire into the spool
# What eviction freed goes too: the cursor must be saved on a full disk.
dd if=/dev/zero of="$DISK/filler" bs=4k 2>/dev/null
df -k "$DISK" | sed 's/^/   /'

note "brokers up: the spool drains on a full disk"
kill -USR2 $BROKER
wait_log "$LOG" "delivering again" "the agent never delivered again"
for _ in $(seq 1 600); do
	ls "$SPOOL" | grep -q '^seg-' || break
	sleep 0.1
done
ls "$SPOOL" | grep -q '^seg-' &&
	fail "used segments were never deleted: $(ls -l "$SPOOL"; tail -n 5 "$LOG")"
kill -TERM $AGENT
wait $AGENT || fail "the agent failed: $(tail -n 5 "$LOG")"
grep "kafka:\|spool" "$LOG" | sed 's/^/   /'

line=$(grep "kafka: .* produced" "$LOG")
read -r spooled replayed lost held evicted full times <<<"$(sed -n 's/.* \([0-9]*\) spooled, \([0-9]*\) replayed, \([0-9]*\) lost; spool holds \([0-9]*\) records, evicted \([0-9]*\) (\([0-9]*\) for a full disk, \([0-9]*\) times full).*/\1 \2 \3 \4 \5 \6 \7/p' <<<"$line")"
[ -n "$times" ] || fail "no spool figures in the stop line: $line"
note "spooled $spooled, evicted $evicted (oldest first), replayed $replayed"
[ "$full" -gt 0 ] || fail "nothing was evicted for the full disk"
check_eq "evictions, all for the full disk" "$evicted" "$full"
check_eq "times the disk filled up" "$times" 1
check_eq "records lost (neither spooled nor delivered)" "$lost" 0
check_eq "records left in the spool" "$held" 0
check_eq "warnings about the full disk" "$(grep -c 'evicting the oldest' "$LOG")" 1
check_eq "lines about records the spool refused" "$(grep -c 'unable to append' "$LOG")" 0
[ "$replayed" -ge $((spooled - evicted)) ] ||
	fail "replayed $replayed of the $((spooled - evicted)) kept"

note "a restart on the same spool replays nothing"
LOG2=$T_TMP/agent2.log
start_agent "$LOG2" --duration 2s
wait $AGENT || fail "the restarted agent failed: $(tail -n 5 "$LOG2")"
grep "kafka:" "$LOG2" | sed 's/^/   /'
check_eq "records replayed after the restart" \
	"$(sed -n 's/.* \([0-9]*\) replayed.*/\1/p' "$LOG2")" 0
echo ok
