#!/bin/bash
# The Kubernetes manifests of deploy/kubernetes and the output of causeway
# place --format k8s, checked strictly against the Kubernetes API's JSON
# schemas (the kubernetes-validate package from PyPI, in a venv under the
# build folder) at the oldest and newest versions we claim; the checker
# must reject a manifest broken on purpose; kustomization.yaml names
# every manifest; the agent's capabilities are the ones agent/caps.c
# keeps, plus CAP_SETPCAP, in the DaemonSet and the systemd unit alike.
. "$(dirname "$0")/lib.sh"
need_cmd python3
K8S=$CW_ROOT/deploy/kubernetes
VERSIONS=(--version 1.28.0 --version 1.34.0)
KV=${KV:-$CW_ROOT/${BUILD:-build}/k8s-validate}
if [ ! -x "$KV/bin/python" ] ||
	! "$KV/bin/python" -c 'import kubernetes_validate' 2>/dev/null; then
	rm -rf "$KV"
	python3 -m venv "$KV" >"$T_TMP/venv.log" 2>&1 ||
		skip "python3 cannot make a venv: $(tail -n 1 "$T_TMP/venv.log")"
	"$KV/bin/pip" install -q kubernetes-validate==1.34.1 >"$KV/pip.log" 2>&1 ||
		skip "pip could not install kubernetes-validate (see $KV/pip.log)"
fi
check() { "$KV/bin/python" "$CW_ROOT/tests/lib/k8s_validate.py" "${VERSIONS[@]}" "$@"; }

# kustomization.yaml lists exactly the manifests beside it.
"$KV/bin/python" - "$K8S" <<'PY' || fail "kustomization.yaml does not match the folder"
import os, sys, yaml
d = sys.argv[1]
k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
assert k["kind"] == "Kustomization", k["kind"]
listed = set(k["resources"])
there = {f for f in os.listdir(d) if f.endswith(".yaml") and f != "kustomization.yaml"}
assert listed == there, ("listed", sorted(listed), "there", sorted(there))
print("-- kustomization: %d manifests, namespace %s" % (len(listed), k["namespace"]))
PY

manifests=()
for f in "$K8S"/*.yaml; do
	[ "${f##*/}" = kustomization.yaml ] || manifests+=("$f")
done
check "${manifests[@]}" >"$T_TMP/manifests.out" 2>&1
rc=$?
sed 's/^/-- /' "$T_TMP/manifests.out"
[ $rc -eq 0 ] || fail "the manifests do not validate"
note "$(grep -c '^ok' "$T_TMP/manifests.out") object-versions valid"

# The checker can fail: an unknown field and a wrong type are both caught.
sed -e 's/^      hostPID: true/      hostPid: true/' \
	-e 's/^              memory: 512Mi/              memory: [512Mi]/' \
	"$K8S/agent.yaml" >"$T_TMP/broken.yaml"
cmp -s "$K8S/agent.yaml" "$T_TMP/broken.yaml" && fail "the breakage did not apply"
check "$T_TMP/broken.yaml" >"$T_TMP/broken.out" 2>&1 &&
	fail "a broken DaemonSet validated: $(cat "$T_TMP/broken.out")"
grep -q "hostPid" "$T_TMP/broken.out" || fail "unknown field not named: $(cat "$T_TMP/broken.out")"
grep -q "memory" "$T_TMP/broken.out" || fail "wrong type not named: $(cat "$T_TMP/broken.out")"
note "broken DaemonSet refused: $(grep -c '^error' "$T_TMP/broken.out") errors"

# The agent's capabilities: agent/caps.c's steady set, plus CAP_SETPCAP
# to empty its bounding set, in the DaemonSet and in the unit.
steady=$(sed -n 's/.*steady\[\] = {\(.*\)};/\1/p' "$CW_ROOT/agent/caps.c" |
	tr -d ' ' | tr ',' '\n' | sed 's/^CAP_//')
[ -n "$steady" ] || fail "no steady set found in agent/caps.c"
want=$(printf '%s\nSETPCAP\n' "$steady" | sort | xargs)
ds=$("$KV/bin/python" -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
c = d["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]
assert c["drop"] == ["ALL"], c
print(" ".join(sorted(c["add"])))' "$K8S/agent.yaml") || fail "no capabilities in agent.yaml"
check_eq "DaemonSet capabilities" "$ds" "$want"
unit=$(sed -n 's/^CapabilityBoundingSet=//p' \
	"$CW_ROOT/deploy/systemd/causeway-agent.service" | tr ' ' '\n' |
	sed 's/^CAP_//' | sort | xargs)
check_eq "agent unit's bounding set" "$unit" "$want"

# causeway place --format k8s on a simulated fleet, per kind of unit.  Its
# documents are fragments to merge into workloads (docs/causeway-place.md):
# checked laid over the smallest valid object, and as they stand for the
# record (not a failure: they are not meant to stand alone).
cd "$T_TMP"
"$CW" simulate -H 8 -c 20 -p 4 -o f.jsonl --units-out u.csv \
	--hosts-out h.csv >/dev/null 2>&1 || fail "simulate failed"
"$CW" graph --by container --format json -o g.json f.jsonl || fail "graph failed"
for unit in workload pod container; do
	"$CW" place -H h.csv -U u.csv --unit $unit --format k8s -o "place-$unit.yaml" \
		g.json || fail "place --unit $unit --format k8s failed"
	check --as-patch "place-$unit.yaml" >"place-$unit.out" 2>&1
	rc=$?
	note "place --unit $unit: $(grep -c '^ok' "place-$unit.out") object-versions valid as patches"
	[ $rc -eq 0 ] || fail "place --unit $unit: $(grep '^error' "place-$unit.out" | head -n 5)"
	check "place-$unit.yaml" >"raw-$unit.out" 2>&1
	note "  as they stand: $(grep '^error' "raw-$unit.out" |
		sed 's/^error [^ ]* v[0-9.]*: //' | sort | uniq -c | xargs)"
	# Label values: at most 63 characters (the API server checks it, the
	# schemas do not); noted here for place's owner, not failed.
	long=$(grep -Ec '^ +app: "?[^" ]{64,}' "place-$unit.yaml")
	[ "$long" -eq 0 ] || note "  $long label values over 63 characters (the API would refuse them)"
done
exit 0
