#!/bin/bash
# Load-verify every program of the kprobe variant in the running kernel
# (nothing is attached).  A kernel that refuses the variant is a skip that
# says why; where the kernel has what the variant needs, refusal fails.
. "$(dirname "$0")/lib.sh"
need_root
load_variant kprobe
skip "$LOAD_WHY"
