#!/usr/bin/env bash
# Runs a command with TMPDIR on a disk of its own: a sparse ext4 file of
# SIZE behind a loop device, unmounted and removed when the command ends,
# whatever its outcome. Needs root.
#
# Why: end-to-end test nodes keep their files under TMPDIR (containerd's
# images and snapshots, the agent's root_dir, pod logs), and the kubelet's
# disk defaults are shares of that filesystem (imagefs.available<15%, image
# GC from 85% use). On the machine's own disk they act on how full it
# happens to be: a CI machine's disk was 86% full and every pod of the tests
# that keep those defaults was rejected for DiskPressure. On a disk of their
# own the tests see only what they write.
#
# Usage: hack/e2e-disk.sh SIZE COMMAND [ARG...]   (SIZE as truncate takes it: 32G)
set -euo pipefail

backing="" mnt="" loop=""

cleanup() {
	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then
		# A mount a test left below the disk is the test's bug, reported by
		# the test; it must not keep the disk.
		umount -R "$mnt" 2>/dev/null || umount -R -l "$mnt" || echo "e2e-disk: cannot unmount $mnt" >&2
	fi
	if [ -n "$loop" ]; then
		# On a device still in use (a lazy unmount) the kernel defers the
		# detach to its last user.
		losetup -d "$loop" || echo "e2e-disk: cannot detach $loop" >&2
	fi
	[ -z "$backing" ] || rm -f "$backing"
	[ -z "$mnt" ] || rmdir "$mnt" 2>/dev/null || true
}

main() {
	if (($# < 2)); then
		echo "usage: $0 SIZE COMMAND [ARG...]" >&2
		return 2
	fi
	local size=$1
	shift
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	backing=$(mktemp /var/tmp/microlet-e2e-disk.XXXXXX)
	mnt=$(mktemp -d /tmp/mld.XXXXXX) # short: unix socket paths live below it
	truncate -s "$size" "$backing"
	# No reserved blocks: available is free, as on the nodes the defaults are for.
	mkfs.ext4 -q -m 0 -E nodiscard "$backing"
	# Direct I/O: the backing file's pages are not cached a second time, which
	# memory-pressure tests running beside would see.
	loop=$(losetup --find --show --direct-io=on "$backing")
	mount "$loop" "$mnt"
	chmod 1777 "$mnt"
	echo "e2e-disk: TMPDIR=$mnt, $size ext4 on $loop"
	TMPDIR=$mnt "$@"
}

# Parsed whole before it runs: editing this file while a run waits on its
# command cannot change what the run does next.
main "$@"
exit
