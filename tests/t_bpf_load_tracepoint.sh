#!/bin/bash
# Load-verify every program of the tracepoint variant in the running kernel
# (nothing is attached).  A kernel that refuses the variant is a skip that
# says why; where the kernel has what the variant needs, refusal fails.
. "$(dirname "$0")/lib.sh"
need_root
load_variant tracepoint
[ "$(json_get "$PROBE" tracepoints)" = True ] &&
	fail "the kernel has the sock tracepoints but refused the programs"
skip "$LOAD_WHY"
