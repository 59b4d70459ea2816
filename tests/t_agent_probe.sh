#!/bin/bash
# `causeway probe` tells what the kernel allows and auto picks the cheapest
# variant that works: fentry, else kprobe, else tracepoints.  Asking for
# kprobes on a kernel without them fails with one line that says so.
. "$(dirname "$0")/lib.sh"
need_root
"$CW" probe || fail "probe failed"
p=$("$CW" probe --json) || fail "probe --json failed"
fentry=$(json_get "$p" fentry) kp=$(json_get "$p" kprobe_attach)
kpl=$(json_get "$p" kprobe_load) tp=$(json_get "$p" tp_btf)
want=none
if [ "$fentry" = True ]; then want=fentry
elif [ "$kp" = True ] && [ "$kpl" = True ]; then want=kprobe
elif [ "$tp" = True ]; then want=tracepoint
fi
check_eq "auto picks" "$(json_get "$p" auto)" "$want"
# This machine kind: no kprobes, fentry refused, so tracepoints.
if [ ! -e /sys/bus/event_source/devices/kprobe ]; then
	check_eq "kprobe attach possible" "$kp" False
	"$CW" run --attach kprobe -d 1s >"$T_TMP/out" 2>"$T_TMP/err" &&
		fail "--attach kprobe succeeded on a kernel without kprobes"
	check_eq "error lines" "$(wc -l <"$T_TMP/err")" 1
	grep -q "kernel has no kprobes" "$T_TMP/err" ||
		fail "error does not say the kernel has no kprobes: $(cat "$T_TMP/err")"
	note "$(cat "$T_TMP/err")"
fi
echo ok
