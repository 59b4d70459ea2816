#!/bin/bash
# Bad input: one clear line on stderr, a non-zero exit, nothing written.
. "$(dirname "$0")/lib.sh"
need_root

expect_error 2 "unknown option '--bogus'" "$CW" run --bogus
expect_error 2 "unknown command 'runn'" "$CW" runn
expect_error 2 "needs a value" "$CW" run -d
expect_error 2 "\-\-duration '10x'" "$CW" run --duration 10x
expect_error 2 "\-\-duration '0'" "$CW" run --duration 0
expect_error 2 "\-\-interval '-1s'" "$CW" run --interval -1s
expect_error 2 "\-\-attach 'ebpf'" "$CW" run --attach ebpf
expect_error 2 "\-\-netns 'nosuchns'" "$CW" run --netns nosuchns
expect_error 2 "unexpected argument 'extra'" "$CW" run extra
touch "$T_TMP/afile"
expect_error 1 "afile" "$CW" run -d 1s -o "$T_TMP/afile/sub"
mkdir -p "$T_TMP/ro" && chmod 555 "$T_TMP/ro"
# root ignores modes: make the folder unwritable with a read-only mount.
mount --bind -o ro "$T_TMP/ro" "$T_TMP/ro" 2>/dev/null &&
	mount -o remount,bind,ro "$T_TMP/ro" 2>/dev/null &&
	on_exit umount "$T_TMP/ro" &&
	expect_error 1 "not writable" "$CW" run -d 1s -o "$T_TMP/ro"

# Not enough privilege: the same command as an unprivileged user.
out=$T_TMP/unpriv
mkdir -p "$out" && chmod 777 "$out"
expect_error 1 "not enough privilege" \
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$CW" run -d 1s -o "$out"
[ -z "$(ls -A "$out")" ] || fail "a failed run left files: $(ls "$out")"

# A kernel without BTF: hide /sys/kernel/btf in a private mount namespace.
expect_error 1 "no BTF" unshare -m sh -c \
	"mount -t tmpfs none /sys/kernel/btf && exec '$CW' run -d 1s"
echo ok
