#!/bin/bash
# Record files as people hand them over.  A JSON-lines file that starts
# with a UTF-8 byte order mark (as some editors save) reads as the same
# file without it: before, its first line was "bad JSON".  A folder given
# where a record file goes is refused with one line that names it: before,
# "Input/output error".
. "$(dirname "$0")/lib.sh"
need_cmd python3

"$CW" simulate -H 3 -c 5 -s 4 -o "$T_TMP/plain.jsonl" 2>/dev/null ||
	fail "simulate failed"
{ printf '\xef\xbb\xbf'; cat "$T_TMP/plain.jsonl"; } >"$T_TMP/bom.jsonl"
"$CW" graph --format json "$T_TMP/plain.jsonl" >"$T_TMP/plain.json" \
	2>"$T_TMP/plain.log" || fail "graph failed: $(cat "$T_TMP/plain.log")"
"$CW" graph --format json "$T_TMP/bom.jsonl" >"$T_TMP/bom.json" \
	2>"$T_TMP/bom.log" || fail "graph of the BOM file failed: $(cat "$T_TMP/bom.log")"
cmp -s "$T_TMP/plain.json" "$T_TMP/bom.json" ||
	fail "the BOM file gives another graph"
note "with a byte order mark: the same graph ($(wc -c <"$T_TMP/bom.json") bytes)"
# Only at the start: a mark inside the file is a bad line, as before.
{ head -n 1 "$T_TMP/plain.jsonl"; printf '\xef\xbb\xbf'; tail -n +2 "$T_TMP/plain.jsonl"; } \
	>"$T_TMP/mid.jsonl"
expect_error - "mid.jsonl' line 2: bad JSON" "$CW" graph "$T_TMP/mid.jsonl"

mkdir "$T_TMP/runs"
expect_error - "'$T_TMP/runs' is a folder" "$CW" graph "$T_TMP/runs"
echo PASS
