#!/bin/bash
# The documented way to share causeway serve: nginx in front, with TLS,
# basic authentication and a limit per client, as causeway-serve(1) gives
# it (the block is taken from docs/causeway-serve.md, only its port,
# files and serve's address changed).  On loopback: without a password,
# or with a wrong one, 401 and nothing of serve's; with the right one,
# over verified TLS, the page, /api/graph and /metrics as serve answers
# them directly.
. "$(dirname "$0")/lib.sh"
need_cmd curl python3 nginx openssl
cd "$T_TMP"

"$CW" simulate --hosts 3 --conns 10 -o fleet.jsonl || fail "simulate failed"
sport=$(free_port) || fail "no free port"
pport=$((sport + 1))
serve_start $sport fleet.jsonl

# The documented block, with this test's port, files and serve.
awk '/^    limit_conn_zone/ {on = 1} on {print substr($0, 5)} on && /^    }$/ {exit}' \
	"$CW_ROOT/docs/causeway-serve.md" >block.conf
grep -q auth_basic_user_file block.conf || fail "no nginx block in the docs: $(cat block.conf)"
sed -i -e "s#listen 443 ssl;#listen 127.0.0.1:$pport ssl;#" \
	-e "s#/etc/nginx/causeway\.#$T_TMP/causeway.#" \
	-e "s#http://127.0.0.1:8080;#http://127.0.0.1:$sport;#" block.conf
for want in "listen 127.0.0.1:$pport ssl" "$T_TMP/causeway.htpasswd" \
	"$T_TMP/causeway.crt" "$T_TMP/causeway.key" "127.0.0.1:$sport;"; do
	grep -qF "$want" block.conf || fail "the docs' block changed: no '$want' in $(cat block.conf)"
done

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 1 -subj /CN=causeway.example.com -keyout causeway.key \
	-out causeway.crt 2>openssl.err || fail "openssl: $(cat openssl.err)"
printf 'ops:%s\n' "$(openssl passwd -apr1 s3cret)" >causeway.htpasswd

mkdir nginx
cat >nginx.conf <<EOF
worker_processes 1;
pid $T_TMP/nginx/nginx.pid;
error_log $T_TMP/nginx/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $T_TMP/nginx;
    proxy_temp_path $T_TMP/nginx;
    fastcgi_temp_path $T_TMP/nginx;
    uwsgi_temp_path $T_TMP/nginx;
    scgi_temp_path $T_TMP/nginx;
$(cat block.conf)
}
EOF
nginx -t -c "$T_TMP/nginx.conf" >nginx.t 2>&1 || fail "nginx refuses the block: $(cat nginx.t)"
nginx -c "$T_TMP/nginx.conf" -g 'daemon off;' &
bg_pid $!
for _ in $(seq 100); do
	ss -Htln "sport = :$pport" | grep -q . && break
	sleep 0.05
done

# through PATH [USER:PASS]: the status and body (in "body") via nginx.
through() {
	curl -s -o body -w '%{http_code}' --cacert causeway.crt \
		--resolve "causeway.example.com:$pport:127.0.0.1" \
		${2:+-u "$2"} "https://causeway.example.com:$pport$1"
}

got=$(through /api/graph)
[ "$got" = 401 ] || fail "no password: HTTP $got: $(head -c 300 body)"
grep -q '"nodes"' body && fail "no password, yet the graph"
got=$(through /metrics ops:wrong)
[ "$got" = 401 ] || fail "a wrong password: HTTP $got"
note "no or a wrong password: 401"

got=$(through /api/graph ops:s3cret)
[ "$got" = 200 ] || fail "the right password: HTTP $got: $(head -c 300 body) $(cat nginx/error.log)"
curl -sf "http://127.0.0.1:$sport/api/graph" >direct.json || fail "serve did not answer directly"
cmp -s body direct.json || fail "the graph through nginx differs from serve's"
got=$(through /metrics ops:s3cret)
[ "$got" = 200 ] && grep -q '^# TYPE causeway_edge_bytes_total counter' body ||
	fail "/metrics through nginx: HTTP $got: $(head -c 300 body)"
got=$(through / ops:s3cret)
[ "$got" = 200 ] && grep -qi '<html' body || fail "the page through nginx: HTTP $got"
note "the right password over TLS: the page, /api/graph (as serve's), /metrics"
echo ok
