#!/usr/bin/env bash
# cross/binfmt.sh NAME...: make the kernel run foreign binaries (qemu-NAME) through qemu-user-static's binfmt
# entries, mounting binfmt_misc if needed. Root only; registering an entry that exists is a no-op.
set -euo pipefail
mnt=/proc/sys/fs/binfmt_misc
[ -e $mnt/register ] || mount -t binfmt_misc binfmt_misc $mnt
for name in "$@"; do
  [ -e "$mnt/qemu-$name" ] && continue
  conf=/usr/lib/binfmt.d/qemu-$name.conf
  [ -r "$conf" ] || { echo "binfmt: $conf missing: apt-get install qemu-user-static" >&2; exit 1; }
  cat "$conf" > $mnt/register
done
