#!/bin/bash
# The correlator's ingest per core on one real Apache Kafka broker (KRaft,
# fetched by `make deps` into $BUILD/kafka), beside its floor: the same
# streams, modes and rounds as bench_correlate.sh on the embedded broker,
# printed as a section of its own so that bench/run.sh keeps both.
#
# Longer streams and more rounds than the embedded broker's by default:
# the per-record figure is the difference of two streams' CPU over their
# records' difference, and the group join, the final graph and the idling
# (a few tenths of a second that move by a tenth from run to run) weigh on
# it less the more records the two streams differ by.  Eight hours of
# churn (about 620,000 records, its first quarter 160,000) and 800 s of
# steady ends (about 810,000 and 200,000): about 11 minutes in all.
: "${ROUNDS:=5}" "${SPAN:=8h}" "${SSPAN:=800s}"
export ROUNDS SPAN SSPAN
BROKER=real exec bash "$(dirname "$0")/bench_correlate.sh" "$@"
