#!/bin/bash
# Test runner: unit test binaries, fuzz smoke runs and the shell tests that
# drive the real BPF programs, servers and namespaces.  Each test exits 0
# (pass), 77 (skip: its last "SKIP:" line says why) or anything else (fail).
# Ends with "N passed, N failed, N skipped" and exits non-zero on a failure.
#
#   tests/run.sh [PATTERN...]    run the tests whose names match a pattern
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD CW="$PWD/$BUILD/causeway" CW_ROOT="$PWD"
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"
HANG_GUARD=${HANG_GUARD:-900}	# a hung test is killed, not timed

tests=()
for f in "$BUILD"/tests/*; do
	[ -x "$f" ] && [ -f "$f" ] && tests+=("unit:$f")
done
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] && tests+=("fuzz:$f")
done
for f in tests/t_*.sh; do
	[ -f "$f" ] && tests+=("sh:$f")
done

match() {
	local name=$1 p
	[ $# -eq 1 ] && [ -z "${PATTERNS:-}" ] && return 0
	for p in $PATTERNS; do
		case $name in *$p*) return 0 ;; esac
	done
	return 1
}
PATTERNS="$*"

pass=0 fail=0 skip=0 failed=()
for t in "${tests[@]}"; do
	kind=${t%%:*} path=${t#*:} name=$(basename "$path" .sh)
	[ -n "$PATTERNS" ] && ! match "$name" && continue
	log=$LOGS/$name.log
	start=$(date +%s)
	case $kind in
	unit) timeout -k 10 "$HANG_GUARD" "$path" >"$log" 2>&1 ;;
	fuzz) corpus=tests/fuzz/corpus/${name#fuzz_}
	      mkdir -p "$BUILD/fuzz-work/$name"
	      timeout -k 10 "$HANG_GUARD" "$path" -runs=20000 -seed=1 \
		-max_len=4096 "$BUILD/fuzz-work/$name" \
		$( [ -d "$corpus" ] && echo "$corpus" ) >"$log" 2>&1 ;;
	sh)   timeout -k 10 "$HANG_GUARD" bash "$path" >"$log" 2>&1 ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); printf 'PASS %-32s (%ss)\n' "$name" "$secs"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1))
		why=$(grep '^SKIP:' "$log" | tail -n 1)
		printf 'SKIP %-32s %s\n' "$name" "${why#SKIP: }"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL %-32s (exit %s, %ss) log: %s\n' "$name" "$rc" "$secs" "$log"
		tail -n 25 "$log" | sed 's/^/    | /'
	fi
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
