#!/usr/bin/env bash
# cross/sysroot.sh ARCH DIR: the target's libraries for a cross build of boardlab-kern (liblzma, bzip2, zstd, expat,
# zlib, OpenSSL: -dev packages and their runtime libraries) unpacked from Debian's repository into DIR.
#
# Why a private sysroot and not multiarch (dpkg --add-architecture + apt-get install libssl-dev:armhf): a
# multiarch -dev package must have exactly the host's version of its library, so it cannot be installed while
# a security update has reached the host's architecture and not the target's on the mirror (the case on the
# machine this was written on), and a failing foreign index then makes every `apt-get update` fail. This uses
# apt with its own lists and no root, and touches nothing outside DIR.
set -euo pipefail
arch=${1:?usage: sysroot.sh ARCH DIR}
dir=${2:?usage: sysroot.sh ARCH DIR}
mirror=$("$(dirname "$0")/mirror.sh")  # this machine's apt mirror, or DEBIAN_MIRROR
suite=${DEBIAN_SUITE:-bookworm}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# (the stamp holds this list and the layout version: a change rebuilds the sysroot)
pkgs="v2 liblzma-dev liblzma5 libbz2-dev libbz2-1.0 libzstd-dev libzstd1 zlib1g-dev zlib1g libssl-dev libssl3 libexpat1-dev libexpat1"
case $arch in armhf | arm64) ;; *) echo "sysroot.sh: ARCH must be armhf or arm64, got '$arch'" >&2; exit 2 ;; esac
stamp="$dir/.boardlab-sysroot-ok"
if [ -e "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then echo "sysroot: $dir ready (cached)"; exit 0; fi
for tool in apt-get dpkg-deb; do command -v $tool >/dev/null || { echo "sysroot.sh: $tool missing (Debian only)" >&2; exit 1; }; done
[ -r $keyring ] || { echo "sysroot.sh: $keyring missing: apt-get install debian-archive-keyring" >&2; exit 1; }
tmp="$dir.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/apt/parts" "$tmp/debs"
: > "$tmp/apt/status"
printf 'deb [arch=%s signed-by=%s] %s %s main\ndeb [arch=%s signed-by=%s] %s %s-updates main\n' \
  "$arch" $keyring "$mirror" "$suite" "$arch" $keyring "$mirror" "$suite" > "$tmp/apt/sources.list"
apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::State=$tmp/apt"
  -o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::State::status=$tmp/apt/status" -o "Dir::Cache=$tmp/apt/cache"
  -o "Dir::Etc::SourceList=$tmp/apt/sources.list" -o "Dir::Etc::SourceParts=$tmp/apt/parts"
  -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
echo "sysroot: fetching $arch libraries from $mirror into $dir"
apt-get "${apt_opts[@]}" -qq update
(cd "$tmp/debs" && apt-get "${apt_opts[@]}" -qq download ${pkgs#v2 })
mkdir -p "$tmp/root"
for deb in "$tmp/debs"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
# Absolute links (usr/lib/T/liblzma.so -> /lib/T/liblzma.so.5) would point into the host: make them relative
# to the sysroot, or the linker silently falls back to the static archive.
find "$tmp/root" -type l -lname '/*' | while read -r link; do
  target=$(readlink "$link")
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$tmp/root$target")" "$link"
done
rm -rf "$dir"
mv "$tmp/root" "$dir"
rm -rf "$tmp"
echo "$pkgs" > "$stamp"
echo "sysroot: $dir ready"
