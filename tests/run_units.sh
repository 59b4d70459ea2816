#!/bin/bash
# run_units.sh DIR: run every unit test binary in DIR (exit 77: a skip);
# one line each, then
# "core units: N passed, N failed, N skipped"; exits 1 on any failure.
set -u
dir=$1 pass=0 fail=0 skip=0
for t in "$dir"/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	"$t" >"$t.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $(basename "$t") (core build)"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1))
		echo "SKIP $(basename "$t") (core build) $(grep '^SKIP:' "$t.log" | tail -n 1)"
	else
		fail=$((fail + 1)); echo "FAIL $(basename "$t") (core build), log: $t.log"
		tail -n 15 "$t.log" | sed 's/^/    | /'
	fi
done
echo "core units: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
