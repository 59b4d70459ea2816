#!/bin/bash
# --truth names services as the data names them: movie-id-service and
# movie-review-service stay two services (cutting "replica suffixes" made
# both "movie").  --fold-replicas cuts a pod's replica suffix only where it
# is one (a Deployment's -<hash>-<5 random>, a StatefulSet's -<n>).
. "$(dirname "$0")/lib.sh"
need_cmd python3
GEN=$CW_ROOT/tests/testbed/spangen.py
D=$T_TMP

names() {
	grep -o '"service.name","value":{"stringValue":"[^"]*"' "$1" |
		sed 's/.*"stringValue":"//; s/"$//' | sort -u | tr '\n' ' '
}
python3 "$GEN" gen 50 5 --names movie-id-service movie-review-service >$D/m.csv
"$CW" traces --truth $D/m.csv -o $D/m.json >/dev/null 2>$D/err ||
	fail "traces --truth failed: $(cat $D/err)"
got=$(names $D/m.json)
[ "$got" = "movie-id-service movie-review-service web-6b7c8d9f5-x7tqz " ] ||
	fail "services named '$got'"
note "as named: $got"
python3 "$GEN" gen 50 5 --names movie-id-service db-0 >$D/f.csv
"$CW" traces --truth $D/f.csv --fold-replicas -o $D/f.json >/dev/null 2>$D/err ||
	fail "traces --truth --fold-replicas failed: $(cat $D/err)"
got=$(names $D/f.json)
[ "$got" = "db movie-id-service web " ] ||
	fail "--fold-replicas named '$got'"
note "folded: $got"
echo PASS
