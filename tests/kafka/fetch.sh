#!/bin/bash
# Fetch Apache Kafka (the broker, its tools and their runtime jars) from
# Maven Central into $BUILD/kafka/lib for the tests that run real brokers
# (tests/lib/kafka.sh).  `make deps` calls it; it does nothing when the jars
# of this pom are already there, so it is safe to run again.
#
#   BUILD=build-x tests/kafka/fetch.sh     (BUILD defaults to build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
lib=$build/kafka/lib
pom=$here/pom.xml
# The jars are those of this exact pom: a changed pom fetches again.
want=$(sha256sum "$pom" | cut -d' ' -f1)
if [ -f "$lib/.pom.sha256" ] && [ "$(cat "$lib/.pom.sha256")" = "$want" ]; then
	exit 0
fi
command -v mvn >/dev/null || { echo "fetch.sh: mvn is not installed" >&2; exit 1; }
mkdir -p "$build/kafka"
tmp=$(mktemp -d "$build/kafka/lib.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# mvn -q says nothing but errors (and colour codes): keep its words for
# a failure only.
if ! mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
	-DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1; then
	sed 's/\x1b\[[0-9;]*m//g' "$tmp/mvn.log" >&2
	echo "fetch.sh: mvn failed to fetch Apache Kafka" >&2
	exit 1
fi
rm -f "$tmp/mvn.log"
ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 ||
	{ echo "fetch.sh: no kafka_2.13 jar was fetched" >&2; exit 1; }
echo "$want" >"$tmp/.pom.sha256"
rm -rf "$lib"
mv "$tmp" "$lib"
echo "fetch.sh: Apache Kafka $(ls "$lib"/kafka_2.13-*.jar | sed 's/.*kafka_2.13-\(.*\)\.jar/\1/') in $lib ($(ls "$lib" | wc -l) jars)"
