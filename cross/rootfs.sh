#!/usr/bin/env bash
# cross/rootfs.sh ARCH DIR [PKG,...]: a Debian bookworm root filesystem for ARCH (armhf, arm64) in DIR, built with
# debootstrap from Debian's package repository and run through qemu-user binfmt. Root only. Idempotent: a
# finished tree (DIR/.boardlab-rootfs-ok) is reused, an unfinished one is rebuilt.
# It holds what a fresh Debian board has plus python3-venv (and PKG,... if given); without extra packages it
# has no compiler, so a test inside it shows the bundle installs without one.
# INITRAMFS_MODULES="mod ...": the tree is for one known machine (a qemu virt board): its kernel's initramfs holds
# these modules and what they need (MODULES=list), configured before the packages are, instead of Debian's
# "most" (~35 MB, every storage driver), which costs ~15 minutes per build under emulation and is built twice
# (the kernel's postinst, then the initramfs trigger). What boots from it is the distribution's kernel as is.
set -euo pipefail
arch=${1:?usage: rootfs.sh ARCH DIR}
dir=${2:?usage: rootfs.sh ARCH DIR [PKG,...]}
extra=${3:+,$3}
mirror=$("$(dirname "$0")/mirror.sh")  # this machine's apt mirror, or DEBIAN_MIRROR
suite=${DEBIAN_SUITE:-bookworm}
case $arch in
  armhf) qemu=arm ;;
  arm64) qemu=aarch64 ;;
  *) echo "rootfs.sh: ARCH must be armhf or arm64, got '$arch'" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "rootfs.sh: debootstrap and chroot need root" >&2; exit 2; }
"$(dirname "$0")/binfmt.sh" "$qemu"
[ -e "$dir/.boardlab-rootfs-ok" ] && { echo "rootfs: $dir ready (cached)"; exit 0; }
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
echo "rootfs: debootstrap $suite $arch into $dir (several minutes under emulation, once)"
include=python3,python3-venv,ca-certificates$extra
if [ -z "${INITRAMFS_MODULES:-}" ]; then
  debootstrap --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" "$mirror" > "$dir.log" 2>&1 \
    || { tail -20 "$dir.log" >&2; exit 1; }
else
  # first stage (unpack, on the host), the initramfs configuration, then the second stage (configure,
  # emulated) in which the kernel's postinst reads it
  debootstrap --foreign --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" "$mirror" \
    > "$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
  mkdir -p "$dir/etc/initramfs-tools/conf.d" "$dir/usr/share/initramfs-tools/modules.d"
  printf 'MODULES=list\nCOMPRESS=gzip\n' > "$dir/etc/initramfs-tools/conf.d/boardlab-machine"
  printf '%s\n' $INITRAMFS_MODULES > "$dir/usr/share/initramfs-tools/modules.d/boardlab-machine"
  chroot "$dir" /debootstrap/debootstrap --second-stage >> "$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
fi
touch "$dir/.boardlab-rootfs-ok"
echo "rootfs: $dir ready"
