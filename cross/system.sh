#!/usr/bin/env bash
# cross/system.sh ARCH ROOTFS BUNDLE WORKDIR [DEADLINE_S]: boots the Debian root filesystem ROOTFS (made by
# cross/rootfs.sh with the distribution's kernel) in a full-system qemu with KVM off, the board bundle BUNDLE
# and cross/system-guest.sh as its init, and leaves in WORKDIR/out what the guest wrote (each step's output
# and exit code, the report, the fixture tree), the serial console in WORKDIR/console.log. Root only (the tree
# holds root's files). ROOTFS is not changed: the disk image is made from a copy (mke2fs -d, no loop mount).
#   arm64: qemu-system-aarch64 -M virt -cpu cortex-a72,pmu=on     armhf: qemu-system-arm -M virt -cpu cortex-a15
# No network device; qemu is killed at DEADLINE_S (default 1800) and on every exit of this script.
# RUN_ARGS: the options of the guest's `boardlab run --preset quick` (plan options that cut it down).
set -euo pipefail
arch=${1:?usage: system.sh ARCH ROOTFS BUNDLE WORKDIR [DEADLINE_S]}
rootfs=${2:?usage: system.sh ARCH ROOTFS BUNDLE WORKDIR [DEADLINE_S]}
bundle=${3:?usage: system.sh ARCH ROOTFS BUNDLE WORKDIR [DEADLINE_S]}
work=${4:?usage: system.sh ARCH ROOTFS BUNDLE WORKDIR [DEADLINE_S]}
deadline=${5:-1800}
here=$(cd "$(dirname "$0")" && pwd)
case $arch in
  arm64) qemu=qemu-system-aarch64; cpu=cortex-a72,pmu=on ;;
  armhf) qemu=qemu-system-arm; cpu=cortex-a15 ;;
  *) echo "system.sh: ARCH must be armhf or arm64, got '$arch'" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "system.sh: needs root (the root filesystem's files belong to root)" >&2; exit 2; }
command -v "$qemu" >/dev/null || { echo "system.sh: $qemu missing: apt-get install qemu-system-arm" >&2; exit 2; }
command -v mke2fs >/dev/null || { echo "system.sh: mke2fs missing: apt-get install e2fsprogs" >&2; exit 2; }
[ -e "$rootfs/.boardlab-rootfs-ok" ] || { echo "system.sh: $rootfs is not a finished root filesystem (cross/rootfs.sh)" >&2; exit 2; }
kernel=$(ls "$rootfs"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
[ -n "$kernel" ] || { echo "system.sh: no kernel in $rootfs/boot: make it with cross/rootfs.sh $arch DIR linux-image-..." >&2; exit 2; }
initrd=$rootfs/boot/initrd.img-${kernel##*/vmlinuz-}
[ -e "$initrd" ] || { echo "system.sh: $initrd missing: the kernel's initramfs was not made" >&2; exit 2; }

mkdir -p "$work"
stage=$work/stage
rm -rf "$stage" "$work/out" "$work/root.img" "$work/out.img"
trap 'rm -rf "$stage"' EXIT
# the tree without what a mounted /proc, /sys or /dev would add (debootstrap mounts /proc while it works)
mkdir -p "$stage"
tar -C "$rootfs" --one-file-system --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -cf - . | tar -C "$stage" -xf -
cp "$bundle" "$stage/root/boardlab-$arch.tar.gz"
install -m 0755 "$here/system-guest.sh" "$stage/root/boardlab-guest.sh"
cp "$here/../tests/capture_tree.py" "$stage/root/capture_tree.py"
guest_deadline=$((deadline - 60))
printf 'ARCH=%s\nRUN_ARGS="%s"\nGUEST_DEADLINE_S=%s\n' "$arch" "${RUN_ARGS:-}" "$guest_deadline" > "$stage/root/boardlab-guest.conf"
# room for the venv, the results and the captured tree
size_mb=$(( $(du -sm "$stage" | cut -f1) + 1024 ))
truncate -s "${size_mb}M" "$work/root.img"
mke2fs -q -t ext4 -L boardlab-root -d "$stage" "$work/root.img"
rm -rf "$stage"
truncate -s 256M "$work/out.img"

echo "system: booting $arch ($(basename "$kernel")) under $qemu -cpu $cpu, deadline ${deadline}s"
# timeout kills qemu at the deadline; the trap kills timeout (which passes the signal on to qemu) on any
# other exit of this script, by its PID.
timeout --kill-after=15 "$deadline" "$qemu" -M virt -cpu "$cpu" -m 1024 -smp 2 -nographic -monitor none \
  -serial "file:$work/console.log" -no-reboot -nic none \
  -kernel "$kernel" -initrd "$initrd" \
  -append "root=LABEL=boardlab-root rw rootwait console=ttyAMA0 init=/root/boardlab-guest.sh panic=-1" \
  -drive if=none,id=root,format=raw,file="$work/root.img" -device virtio-blk-device,drive=root \
  -drive if=none,id=out,format=raw,file="$work/out.img" -device virtio-blk-device,drive=out,serial=boardlab-out \
  -device virtio-rng-device &
qpid=$!
trap 'kill $qpid 2>/dev/null; wait $qpid 2>/dev/null; rm -rf "$stage"' EXIT
t0=$(date +%s)
rc=0
wait $qpid || rc=$?
trap - EXIT
echo "system: qemu exited $rc after $(( $(date +%s) - t0 ))s"
[ $rc = 124 ] && echo "system: the guest did not power off within ${deadline}s (killed): see $work/console.log" >&2
rm -f "$work/root.img"
mkdir -p "$work/out"
tar -xf "$work/out.img" -C "$work/out" 2>/dev/null || echo "system: no results on the output disk: see $work/console.log" >&2
rm -f "$work/out.img"
[ -e "$work/out/finished" ] || { echo "system: the guest did not finish: see $work/console.log" >&2; exit 1; }
echo "system: results in $work/out"
