#!/bin/bash
# causeway serve refuses bad usage with one line and exit 2, bad inputs
# with one line naming the file and exit 1, and answers every bad request
# with a 4xx and a JSON error naming what was wrong, without dying: unknown
# projection, bad and huge ranges, malformed query strings, repeated and
# unknown parameters, paths outside the assets, other methods, a plan file
# that is not a placement plan (at start an error; later a 500, serve
# lives on).  A record
# file that goes bad later keeps the last good graph and says so in stats.
. "$(dirname "$0")/lib.sh"
need_cmd curl python3
cd "$T_TMP"

"$CW" simulate --hosts 3 --conns 10 -o fleet.jsonl --units-out u.csv \
	--hosts-out h.csv || fail "simulate failed"
printf '{"host": "h", "cookie": 1}\n' >bad.jsonl

expect_error 2 "no input" "$CW" serve
expect_error 2 "unknown option '--bogus'" "$CW" serve --bogus fleet.jsonl
expect_error 2 "takes no INPUT" "$CW" serve --kafka 127.0.0.1:1 fleet.jsonl
expect_error 2 "\-\-window" "$CW" serve --window 0 fleet.jsonl
expect_error 1 "\-\-listen 'nowhere'" "$CW" serve --listen nowhere fleet.jsonl
expect_error 1 "not an IP address" "$CW" serve --listen host:80 fleet.jsonl
expect_error 1 "bad.jsonl' line 1" "$CW" serve --listen 127.0.0.1:0 bad.jsonl
# A --plan or --paths file that is bad at start is an error (read again at
# each request after, where a bad one is a 500: below).
echo '{"chosen": "ga", "plans": [{"method": "ga", "units": []}]}' >badplan.json
printf 'not JSON \001\377 {[\n' >garbage.bin # fixed bytes: random ones may parse
expect_error 1 "'badplan.json': not a placement plan (hosts_used)" \
	"$CW" serve --listen 127.0.0.1:0 --plan badplan.json fleet.jsonl
expect_error 1 "unable to read 'garbage.bin' as JSON" \
	"$CW" serve --listen 127.0.0.1:0 --plan garbage.bin fleet.jsonl
expect_error 1 "'garbage.bin' line 1: not a JSON object" \
	"$CW" serve --listen 127.0.0.1:0 --paths garbage.bin fleet.jsonl
expect_error 1 "unable to open 'nopaths.json': No such file" \
	"$CW" serve --listen 127.0.0.1:0 --paths nopaths.json fleet.jsonl
# A run folder with no conns.jsonl (yet) is served, and said to be empty.
mkdir runfolder
timeout 2 "$CW" serve --listen 127.0.0.1:0 runfolder/ 2>folder.err
grep -q "warning: 'runfolder/' has no conns.jsonl yet" folder.err ||
	fail "an empty run folder served without a word: $(cat folder.err)"

port=$(free_port) || fail "no free port"
cp fleet.jsonl live.jsonl
mkdir store
"$CW" place -H h.csv -U u.csv --format json -o plan.json fleet.jsonl ||
	fail "place failed"
serve_start $port --samples store --plan plan.json live.jsonl
# Good at start, bad later: a 500 at /api/plan below, serve lives on.
cp badplan.json plan.json

# The same port again: taken.
expect_error 1 "unable to listen on '127.0.0.1:$port'" \
	"$CW" serve --listen 127.0.0.1:$port fleet.jsonl

long=$(head -c 300 /dev/zero | tr '\0' a)
while IFS='|' read -r code pat url; do
	[ -n "$code" ] || continue
	got=$(curl -s --path-as-is -o body -w '%{http_code}' "http://127.0.0.1:$port$url") ||
		fail "no answer to $url: is serve alive? $(cat serve.err)"
	[ "$got" = "$code" ] || fail "$url: HTTP $got, want $code: $(cat body)"
	python3 -c '
import json, sys
e = json.load(open("body"))
assert e["status"] == int(sys.argv[1]) and sys.argv[2] in e["error"], e
' "$code" "$pat" || fail "$url: not the JSON error wanted ('$pat'): $(cat body)"
	note "$url -> $got $(cat body)"
done <<EOF
400|unknown projection|/api/graph?by=namespace
400|unknown projection|/api/matrix?by=
400|'since': want seconds|/api/graph?since=yesterday
400|not before 'until'|/api/graph?since=-1h&until=-2h
400|before 2000|/api/graph?since=0&until=now
400|more than a day from now|/api/graph?since=1700000000&until=99999999999
400|longer than 31 days|/api/graph?since=-40d
400|longer than 31 days|/api/graph?since=1600000000&until=1700000000
400|'until' without 'since'|/api/graph?until=now
400|given twice|/api/graph?by=host&by=host
400|unknown parameter|/api/graph?bogus=1
400|not two hex digits|/api/graph?%zz=1
400|cut short|/api/graph?by=%4
400|NUL byte|/api/graph?node=a%00b
400|has no value|/api/graph?by
400|from 0 to 1|/api/graph?min_share=nan
400|from 0 to 1|/api/graph?min_share=1.5
400|too long|/api/graph?node=$long
400|does not apply|/api/paths?by=host
400|does not apply|/api/matrix?node=x
400|takes no query|/metrics?x=1
400|is required|/api/samples.svg
404|no such node|/api/graph?node=nosuch
404|no such asset|/assets/../../etc/passwd
404|no such asset|/assets/..%2f..%2fetc%2fpasswd
404|no such asset|/assets/app.js.bak
404|no such page|/etc/passwd
404|no such page|/../../etc/passwd
404|no such endpoint|/api/nothing
400|not a path|/api/samples?run=../../etc/passwd
400|not a path|/api/samples.svg?run=/etc/passwd
404|no run 'nosuch'|/api/samples?run=nosuch
400|does not apply|/api/plan?by=host
500|not a placement plan (hosts_used)|/api/plan
EOF
# The plan is read at each request: a file gone is an error, not a crash.
mv plan.json plan.gone
got=$(curl -s -o body -w '%{http_code}' "http://127.0.0.1:$port/api/plan")
[ "$got" = 500 ] && grep -q "unable to read 'plan.json' as JSON" body ||
	fail "a missing plan: HTTP $got: $(cat body)"
note "missing plan -> $got $(cat body)"

for m in POST PUT DELETE; do
	got=$(curl -s -X $m -o body -w '%{http_code}' -d x=1 "http://127.0.0.1:$port/api/graph")
	[ "$got" = 405 ] && grep -q read-only body || fail "$m: HTTP $got: $(cat body)"
done
note "POST, PUT, DELETE -> 405"

# Still alive and still right after all that.
kill -0 $SERVE_PID || fail "serve died: $(cat serve.err)"
curl -sf "http://127.0.0.1:$port/api/graph" >good.json || fail "no graph after bad requests"

# A rewrite that breaks the file keeps the last good graph, and says so.
# Whole, by a rename: serve looks at it every second, and one caught
# truncated and not yet written is an empty file, a good (empty) graph.
printf 'not json\n' >live.jsonl.new
mv live.jsonl.new live.jsonl
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/api/stats" >stats.json
	grep -q '"load_errors":[1-9]' stats.json && break
	sleep 0.1
done
grep -q '"load_errors":[1-9]' stats.json || fail "a broken input was not noticed: $(cat stats.json)"
curl -sf "http://127.0.0.1:$port/api/graph" >after.json || fail "no graph after a bad reload"
cmp -s good.json after.json || fail "a bad reload changed the graph"
note "bad reload: $(cat stats.json)"
grep -q "live.jsonl' line 1" serve.err || fail "the log does not name the bad file: $(cat serve.err)"
kill -0 $SERVE_PID || fail "serve died"
