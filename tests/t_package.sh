#!/bin/bash
# The Debian package, as an operator gets it: `make deb` builds it and
# lintian finds nothing (pedantic and info tags included); in a fresh
# Debian chroot (debootstrap, cached as a tarball under the build folder)
# apt installs it with the dependencies dpkg-shlibdeps gave it, the units
# pass `systemd-analyze verify`, their `systemd-analyze security` scores
# are the ones docs/deploy.md gives; then each unit's ExecStart runs as
# the unit would run it (its user, its config files, its bounding set,
# no_new_privs; PID 1 here is not systemd) against `causeway broker`:
# the agent publishes, correlate@1 writes the graph, serve answers on
# its port and shows the same edges; SIGTERM stops each with status 0;
# purge leaves none of the package's files, configs or state behind.
#
# Everything runs in a mount namespace of its own, so proc, sysfs and
# bpffs in the chroot go with it however the test ends.
if [ -z "${CW_PKG_UNSHARED:-}" ] && [ "$(id -u)" -eq 0 ]; then
	CW_PKG_UNSHARED=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dpkg-buildpackage dh lintian pandoc debootstrap curl setpriv
BUILD=${BUILD:-build}
CACHE=$CW_ROOT/$BUILD/pkg-chroot
DEB_DIR=$CW_ROOT/$BUILD/deb

note "make deb"
make -C "$CW_ROOT" --no-print-directory BUILD="$BUILD" deb >"$T_TMP/make.log" 2>&1 ||
	fail "make deb failed: $(tail -n 20 "$T_TMP/make.log")"
DEB=$(ls "$DEB_DIR"/causeway_*.deb) || fail "make deb made no package"
note "$(dpkg-deb -f "$DEB" Package Version Architecture | xargs): $(du -h "$DEB" | cut -f1)"
note "Depends: $(dpkg-deb -f "$DEB" Depends)"

# lintian: nothing at all, pedantic and info tags included.
lintian --pedantic --info --display-experimental "$DEB" >"$T_TMP/lintian" 2>&1
grep -E '^[EWIPXO]: ' "$T_TMP/lintian" >"$T_TMP/tags"
[ -s "$T_TMP/tags" ] && fail "lintian: $(cat "$T_TMP/tags")"
note "lintian: no tags"

# ---- a Debian chroot ---------------------------------------------------

# The base: debootstrap from the mirror apt uses here, with systemd (for
# systemd-analyze and deb-systemd-helper) and man-db (Documentation=).
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
	head -n 1)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$MIRROR" ] || skip "no Debian mirror in apt's sources"
BASE=$CACHE/base-$SUITE.tar
mkdir -p "$CACHE/archives"
if [ ! -s "$BASE" ]; then
	note "debootstrap $SUITE (cached in $BASE)"
	rm -rf "$CACHE/boot"
	debootstrap --variant=minbase "$SUITE" "$CACHE/boot" "$MIRROR" \
		>"$CACHE/debootstrap.log" 2>&1 ||
		{ rm -rf --one-file-system "$CACHE/boot"
		  skip "debootstrap failed: $(tail -n 3 "$CACHE/debootstrap.log")"; }
	cp /etc/apt/sources.list.d/*.sources "$CACHE/boot/etc/apt/sources.list.d/" 2>/dev/null
	cp /etc/resolv.conf "$CACHE/boot/etc/resolv.conf"
	mount -t proc proc "$CACHE/boot/proc"
	chroot "$CACHE/boot" sh -c 'apt-get update -q &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends systemd man-db && apt-get clean' \
		>>"$CACHE/debootstrap.log" 2>&1
	rc=$?
	umount "$CACHE/boot/proc"
	[ $rc -eq 0 ] || { rm -rf --one-file-system "$CACHE/boot"
		fail "apt in the chroot failed: $(tail -n 5 "$CACHE/debootstrap.log")"; }
	tar -C "$CACHE/boot" -cf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE" ||
		fail "unable to write $BASE"
	rm -rf --one-file-system "$CACHE/boot"
fi

R=$CACHE/root-$$
on_exit "rm -rf --one-file-system '$R'"
mkdir -p "$R"
tar -C "$R" -xf "$BASE" || fail "unable to unpack $BASE"
for m in proc:proc sysfs:sys; do
	mount -t "${m%:*}" "${m%:*}" "$R/${m#*:}" ||
		fail "unable to mount ${m%:*} in the chroot"
	on_exit "umount -l '$R/${m#*:}'"
done
# As systemd mounts it at boot: the agent pins its maps there.
mount -t bpf bpf "$R/sys/fs/bpf" || fail "unable to mount bpffs in the chroot"
on_exit "umount -l '$R/sys/fs/bpf'"
# Downloaded dependencies are kept between runs.
mount --bind "$CACHE/archives" "$R/var/cache/apt/archives"
on_exit "umount -l '$R/var/cache/apt/archives'"
# Run in the chroot with a clean environment, as systemd does.  Not a
# function, so that $! of "${IN_ROOT[@]}" CMD & is CMD itself (chroot,
# env, bash and setpriv all exec).
IN_ROOT=(chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
in_root() { "${IN_ROOT[@]}" "$@"; }
# Whatever still runs in the chroot goes first, before its mounts.
on_exit "for p in /proc/[0-9]*; do [ \"\$(readlink \$p/root)\" = '$R' ] &&
	kill -9 \${p#/proc/}; done; sleep 0.2"

cp "$DEB" "$R/tmp/"
note "apt-get install ./${DEB##*/}"
in_root sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends /tmp/causeway_*.deb' \
	>"$T_TMP/install.log" 2>&1 || fail "install failed: $(tail -n 20 "$T_TMP/install.log")"
note "$(grep -E '^[0-9]+ upgraded' "$T_TMP/install.log")"
check_eq "status" "$(in_root dpkg-query -W -f '${Status}' causeway)" "install ok installed"
in_root dpkg -L causeway >"$T_TMP/files" || fail "dpkg -L failed"
check_eq "causeway --version" "$(in_root causeway --version)" \
	"causeway $(dpkg-deb -f "$DEB" Version)"
user=$(in_root getent passwd causeway) || fail "no causeway user"
IFS=: read -r _ _ uid _ _ home shell <<<"$user"
[ "$uid" -lt 1000 ] || fail "causeway is not a system user: $user"
case $shell in */nologin | */false) ;; *) fail "causeway has a login shell: $user" ;; esac
note "user: $user"
for page in causeway causeway-agent causeway-correlate causeway-serve causeway-place; do
	in_root man -w "$page" >/dev/null 2>&1 || fail "no man page '$page'"
done
check_eq "man pages" "$(grep -c '/man1/.*\.1\.gz$' "$T_TMP/files")" \
	"$(ls "$CW_ROOT"/docs/causeway*.md | wc -l)"

# ---- systemd-analyze -----------------------------------------------------

UNITS="causeway-agent.service causeway-correlate@1.service causeway-serve.service"
in_root systemd-analyze verify $UNITS >"$T_TMP/verify" 2>&1 ||
	fail "systemd-analyze verify: $(cat "$T_TMP/verify")"
[ -s "$T_TMP/verify" ] && fail "systemd-analyze verify: $(cat "$T_TMP/verify")"
note "systemd-analyze verify: clean ($(in_root systemd-analyze --version | head -n 1))"
for u in $UNITS; do
	got=$(in_root systemd-analyze security --offline=yes --no-pager "$u" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
	[ -n "$got" ] || fail "no security score for $u"
	doc=$(sed -n "s/^| \`${u/@1/@}\` | \([0-9.]*\) .*/\1/p" "$CW_ROOT/docs/deploy.md")
	check_eq "systemd-analyze security $u (docs/deploy.md: $doc)" "$got" "$doc"
done

# ---- the units' commands, as systemd would run them ----------------------

# unit_start NAME UNIT [INSTANCE]: run UNIT's ExecStart in the chroot as
# systemd would: env files read in order (a leading - allows a missing
# one), %i expanded, StateDirectory made and given to User=, then
# User=, CapabilityBoundingSet= and NoNewPrivileges= applied by setpriv.
# Sets the PID variable named NAME_PID; output in $T_TMP/NAME.log.
unit_start() {
	local name=$1 unit=/lib/systemd/system/$2 inst=${3:-} key val envs="" \
		user="" group="" caps="" nnp="" states="" mode=0755 exec="" c d args
	[ -f "$R$unit" ] || fail "no unit $unit"
	while IFS='=' read -r key val; do
		val=${val//%i/$inst}
		case $key in
		EnvironmentFile)
			if [ "${val#-}" != "$val" ]; then
				envs+=" [ -f ${val#-} ] && . ${val#-};"
			else
				envs+=" . $val;"
			fi ;;
		User) user=$val ;;
		Group) group=$val ;;
		CapabilityBoundingSet) caps=$val ;;
		NoNewPrivileges) [ "$val" = yes ] && nnp=--no-new-privs ;;
		StateDirectory) states=$val ;;
		StateDirectoryMode) mode=$val ;;
		ExecStart) exec=$val ;;
		esac
	done <"$R$unit"
	[ -n "$exec" ] || fail "$unit has no ExecStart"
	for d in $states; do
		mkdir -p "$R/var/lib/$d"
		chmod "$mode" "$R/var/lib/$d"
		[ -n "$user" ] && in_root chown "$user:${group:-$user}" "/var/lib/$d"
	done
	args="--bounding-set=-all"
	for c in $caps; do
		c=${c#CAP_}
		args+=",+${c,,}"
	done
	[ -n "$user" ] && args+=" --reuid=$user --regid=${group:-$user} --init-groups"
	"${IN_ROOT[@]}" bash -c "set -ea;$envs set +a; eval exec setpriv $args $nnp -- $exec" \
		>"$T_TMP/$name.log" 2>&1 &
	printf -v "${name}_PID" %s $!
	bg_pid $!
}

# unit_stop NAME: SIGTERM, as systemd stops a unit; it must exit 0.
unit_stop() {
	local pid_var=${1}_PID rc
	kill -TERM "${!pid_var}" || fail "$1 is not running"
	wait "${!pid_var}"
	rc=$?
	[ $rc -eq 0 ] || fail "$1 exited $rc on SIGTERM: $(tail -n 5 "$T_TMP/$1.log")"
	note "$1: stopped by SIGTERM, status 0"
}

# wait_log NAME PATTERN: until NAME's output has PATTERN (it must live).
wait_log() {
	local pid_var=${1}_PID i
	for i in $(seq 1 600); do
		grep -q "$2" "$T_TMP/$1.log" 2>/dev/null && return 0
		kill -0 "${!pid_var}" 2>/dev/null ||
			fail "$1 exited: $(tail -n 5 "$T_TMP/$1.log")"
		sleep 0.1
	done
	fail "$1 never said '$2': $(tail -n 5 "$T_TMP/$1.log")"
}

# status_of NAME FIELD: a field of the process's /proc status.
status_of() {
	local pid_var=${1}_PID pid
	pid=$(pgrep -P "${!pid_var}" -x causeway || echo "${!pid_var}")
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$pid/status"
}

# An embedded broker, and the configs pointed at it as an operator would.
"${IN_ROOT[@]}" causeway broker >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
bg_pid $!
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
SERVE_PORT=$(free_port)
METRICS_PORT=$((SERVE_PORT + 1))
sed -i "s/^CAUSEWAY_KAFKA=.*/CAUSEWAY_KAFKA=$BOOT/" "$R/etc/causeway/kafka.conf"
sed -i "s/^CAUSEWAY_SERVE_OPTS=.*/CAUSEWAY_SERVE_OPTS=\"--listen 127.0.0.1:$SERVE_PORT\"/" \
	"$R/etc/causeway/serve.conf"
sed -i "s/--metrics [0-9]*/--metrics $METRICS_PORT/" "$R/etc/causeway/agent.conf"
printf 'CAUSEWAY_CORRELATE_OPTS="--snapshot-every 1s --from-beginning"\n' \
	>"$R/etc/causeway/correlate-1.conf"

unit_start agent causeway-agent.service
unit_start correlate causeway-correlate@.service 1
unit_start serve causeway-serve.service
wait_log agent "agent on host"
wait_log correlate "starting at offset"
wait_log serve "serving on"
check_eq "agent CapBnd" "$(status_of agent CapBnd)" "0000000000000000"
check_eq "agent NoNewPrivs" "$(status_of agent NoNewPrivs)" 1
check_eq "correlate uid" "$(status_of correlate Uid)" "$uid"
check_eq "serve uid" "$(status_of serve Uid)" "$uid"
check_eq "serve CapBnd" "$(status_of serve CapBnd)" "0000000000000000"

# Traffic for the agent to see: serve's own page, over loopback.
for i in $(seq 1 20); do
	curl -fsS "http://127.0.0.1:$SERVE_PORT/metrics" >/dev/null ||
		fail "serve does not answer on $SERVE_PORT: $(tail -n 5 "$T_TMP/serve.log")"
done
curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" >"$T_TMP/agent.metrics" ||
	fail "the agent's metrics do not answer on $METRICS_PORT"
# The agent's records reach both: correlate@1's graph in its state folder
# and serve's API name the same client and server.
OUT=$R/var/lib/causeway/correlate/1
# curl_edge: edges.json has an edge from a curl to serve's process.
curl_edge() {
	python3 - "$OUT/edges.json" "$serve_PID" <<'PY' 2>/dev/null
import json, sys
g = json.load(open(sys.argv[1]))
node = {n["id"]: n for n in g["nodes"]}
sys.exit(not any(node[e["client"]].get("comm") == "curl" and
                 node[e["server"]].get("pid") == int(sys.argv[2])
                 for e in g["edges"]))
PY
}
# serve_edge: serve's API has an edge from a curl to serve's process.
serve_edge() {
	curl -fsS "http://127.0.0.1:$SERVE_PORT/api/graph" 2>/dev/null |
		python3 -c '
import json, sys
g = json.load(sys.stdin)
node = {n["id"]: n for n in g["nodes"]}
sys.exit(not any(node[e["from"]]["comm"] == "curl" and
                 node[e["to"]]["name"].startswith("causeway[%s]" % sys.argv[1])
                 for e in g["edges"]))' "$serve_PID"
}
for i in $(seq 1 600); do
	curl_edge && serve_edge && break
	kill -0 "$agent_PID" "$correlate_PID" "$serve_PID" ||
		fail "a unit exited: $(tail -n 3 "$T_TMP"/{agent,correlate,serve}.log)"
	curl -fsS "http://127.0.0.1:$SERVE_PORT/metrics" >/dev/null
	sleep 0.1
done
curl_edge ||
	fail "correlate@1 wrote no edge of curl to serve: $(ls -l "$OUT";
		tail -n 4 "$T_TMP"/{agent,correlate,serve}.log)"
serve_edge || fail "serve's API shows no edge from curl to serve"
check_eq "correlate@1's folder owner" "$(in_root stat -c %U /var/lib/causeway/correlate/1)" causeway
note "agent -> broker -> correlate@1 and serve: the edge curl -> serve in both"

unit_stop agent
unit_stop correlate
unit_stop serve

# ---- purge ---------------------------------------------------------------

in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q causeway' \
	>"$T_TMP/purge.log" 2>&1 || fail "purge failed: $(tail -n 20 "$T_TMP/purge.log")"
in_root dpkg-query -W -f '${Status}' causeway >"$T_TMP/status" 2>&1
grep -q 'installed\|config-files' "$T_TMP/status" && fail "still there: $(cat "$T_TMP/status")"
left=""
while read -r f; do
	[ -d "$R$f" ] && continue
	[ -e "$R$f" ] && left+=" $f"
done <"$T_TMP/files"
[ -z "$left" ] || fail "purge left:$left"
for d in /etc/causeway /var/lib/causeway; do
	[ -e "$R$d" ] && fail "purge left $d: $(ls -A "$R$d")"
done
note "purged: no file of the package, no /etc/causeway, no /var/lib/causeway"
