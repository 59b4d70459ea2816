#!/bin/bash
# Load-verify every program of the fentry variant in the running kernel
# (nothing is attached).  A kernel that refuses the variant is a skip that
# says why; where the kernel has what the variant needs, refusal fails.
. "$(dirname "$0")/lib.sh"
need_root
load_variant fentry
# fentry is refused at load on some kernels (EPERM here): that is the
# kernel's word, so the variant is skipped, and auto must not pick it.
[ "$(json_get "$PROBE" auto)" = fentry ] &&
	fail "auto picks fentry though fentry programs do not load"
skip "$LOAD_WHY"
