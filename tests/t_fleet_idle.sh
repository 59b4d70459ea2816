#!/bin/bash
# `correlate --idle D` means D holding partitions with no record, not D
# since the start: a member that joins a group whose rebalance takes
# longer than D (here the other member is stopped, so the group waits out
# its session timeout) must stay, be given the partitions, restore them
# and read them to the end.  Before, it stopped after D with nothing and
# exit status 0, and the stopped member's partitions went unread.  The
# records are `causeway simulate --churn`'s, through the embedded broker;
# the graph the late member prints must pair every connection and carry
# every byte of the same run written to a file.
. "$(dirname "$0")/lib.sh"
need_cmd python3

churn_published --churn -H 12 -L 4 --lifetime 1m -i 30s -d 20m -s 5

printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"
# member NAME IDLE: a correlator of group g in the background, pid in $LAST.
member() {
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group g --from-beginning --no-paths --idle "$2" \
		--snapshot-every 300ms --json -o "$T_TMP/$1" \
		>"$T_TMP/$1.json" 2>"$T_TMP/$1.log" &
	LAST=$!
	bg_pid $LAST
}
owns() {	# NAME: partitions NAME was given so far
	grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
		"$T_TMP/$1.log"
}
member a 120s
A=$LAST
for _ in $(seq 1 600); do
	[ "$(owns a)" -gt 0 ] && break
	sleep 0.05
done
[ "$(owns a)" -gt 0 ] || fail "member a got no partitions: $(cat "$T_TMP/a.log")"
# a stops answering: the group cannot finish b's join until a's session
# has expired, about 6 s, three times b's idle limit.
kill -STOP $A
member b 2s
B=$LAST
wait $B || fail "member b failed: $(cat "$T_TMP/b.log")"
kill -CONT $A
kill $A
wait $A 2>/dev/null
n=$(owns b)
note "member b was given $n partitions after a's session expired"
[ "$n" -gt 0 ] || fail "member b stopped before it held a partition: $(cat "$T_TMP/b.log")"
python3 - "$CONNS" "$C2S" "$S2C" "$T_TMP/b.json" <<'EOF' ||
import json, sys
conns, c2s, s2c = map(int, sys.argv[1:4])
d = json.loads(open(sys.argv[4]).read())
st = d["stats"]
got = (st["ends"], st["paired"], st["unpaired"])
assert got == (2 * conns, conns, 0), "ends, paired, unpaired: %s" % (got,)
b = (sum(e["bytes_c2s"] for e in d["edges"]), sum(e["bytes_s2c"] for e in d["edges"]))
assert b == (c2s, s2c), "edge bytes %s, the ends' %s" % (b, (c2s, s2c))
print("b's graph: %d connections paired, bytes as published" % conns)
EOF
	fail "member b's graph is not the whole stream's"
echo PASS
