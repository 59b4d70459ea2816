#!/bin/bash
# Bad input to causeway paths: a malformed row (the error names file and
# line), timestamps going back on a node (refused, not sorted), empty
# input, an unknown --root, a missing file, bad options.  Each gives one
# "causeway: error: ..." line on stderr, nothing on stdout, a non-zero exit.
. "$(dirname "$0")/lib.sh"

D=$T_TMP
printf 'ts_ns,node,peer,dir\n1,a,b,out\n2,b,a,in\n3,b,c,sideways\n' >$D/bad.csv
expect_error - "'$D/bad.csv' line 4" "$CW" paths $D/bad.csv
printf 'ts_ns,node,peer,dir\n1,a,b,out\nx,b,a,in\n' >$D/badts.csv
expect_error - "line 3: bad ts_ns" "$CW" paths $D/badts.csv
printf 'ts_ns,node,peer,dir\n1,a,b,out\n2,a,c\n' >$D/short.csv
expect_error - "line 3: 3 fields" "$CW" paths $D/short.csv
printf 'ts_ns,node,peer,dir,conn\n1,a,b,out,7\n2,b,a,in,-1\n' >$D/badconn.csv
expect_error - "line 3: bad conn '-1'" "$CW" paths $D/badconn.csv
printf 'ts_ns,node,peer,dir\n5,a,b,out\n9,b,a,in\n4,a,c,out\n' >$D/unsorted.csv
expect_error - "line 4: timestamp 4 goes back in time for node 'a'" \
	"$CW" paths $D/unsorted.csv
: >$D/empty.csv
expect_error - "empty input" "$CW" paths $D/empty.csv
printf 'ts_ns,node,peer,dir\n' >$D/header.csv
expect_error - "no messages" "$CW" paths $D/header.csv
printf 'when,who\n1,a\n' >$D/header2.csv
expect_error - "no 'ts_ns' column" "$CW" paths $D/header2.csv
"$CW" paths --synthetic tiers:n=50 >$D/ok.csv || fail "synthetic"
expect_error - "unknown --root 'nosuch'" \
	"$CW" paths --root nosuch $D/ok.csv
expect_error - "unable to open '$D/none.csv'" "$CW" paths $D/none.csv
expect_error - "\-\-bin '10parsecs'" "$CW" paths --bin 10parsecs $D/ok.csv
# More lags than any transform holds: refused before the sizes are added
# (it once overflowed the FFT size and spun for ever).
expect_error - "at most 8388607 fit" \
	"$CW" paths --bin 1ns --max-delay 9223372036854775808ns $D/ok.csv
expect_error - "spans .* bins of 1ns: too long" \
	"$CW" paths --bin 1ns --max-delay 8ms $D/ok.csv
expect_error - "\-\-method 'guess'" "$CW" paths --method guess $D/ok.csv
expect_error - "no input" "$CW" paths
printf 'TraceID,SpanID\n' >$D/spans.csv
expect_error - "no 'ParentID' column" "$CW" paths --truth $D/spans.csv
printf '\xd4\xc3\xb2\xa1garbage' >$D/bad.pcap
expect_error - "unable to read pcap" "$CW" paths $D/bad.pcap

# A good file with a known root still works.
"$CW" paths --root web $D/ok.csv >/dev/null || fail "--root web failed"

# An outside client seen only as a peer (rows "web,client,in", none with
# client as the node) is a default root, as the help says.
"$CW" paths --synthetic tiers:seed=7,n=1000,rate=300,d1=2ms,d2=5ms \
	>$D/tiers.csv || fail "synthetic"
awk -F, '$2 != "client"' $D/tiers.csv >$D/peer.csv
grep -q ',web,client,' $D/peer.csv && ! grep -q '^[0-9]*,client,' $D/peer.csv ||
	fail "client should be a peer only"
for m in convolution nesting; do
	"$CW" paths --method $m $D/peer.csv >$D/peer.txt || fail "$m: peer.csv"
	grep -q '^path 1 from client:' $D/peer.txt ||
		{ cat $D/peer.txt; fail "$m: no path from the peer-only client"; }
	grep -q 'app -> db' $D/peer.txt || fail "$m: app -> db not found"
	note "$m: peer-only client is a root ($(grep -c -- '->' $D/peer.txt) hops)"
done
