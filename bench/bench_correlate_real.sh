#!/bin/bash
# The correlator's ingest per core on one real Apache Kafka broker (KRaft,
# fetched by `make deps` into $BUILD/kafka), beside its floor: the same
# streams, modes and rounds as bench_correlate.sh on the embedded broker,
# printed as a section of its own so that bench/run.sh keeps both.
BROKER=real exec bash "$(dirname "$0")/bench_correlate.sh" "$@"
