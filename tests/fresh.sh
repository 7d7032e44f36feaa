#!/usr/bin/env bash
# tests/fresh.sh [--no-netns]: the README's two commands as a new user runs them on a fresh Debian 12 machine.
# A minimal bookworm root filesystem (debootstrap, with only git, make and python3 added) is made once and cached;
# each run works in an overlay on it, so every run starts from the same fresh machine and the cache stays clean.
# Inside: this repository's committed files cloned into root's 0700 home under a path with a space, `make demo`,
# then `make test`. The overlay is mounted on the chroot's root, so / is a mount point (`ip netns add` needs it,
# as on a real machine), with /proc, /sys and /dev bound in. --no-netns runs `make test` in a plain copy of the
# tree instead, whose / is no mount point: `ip netns` then fails as it does in a bare chroot or an unprivileged
# container, and the suite must pass with skips that name the reason (checked).
# Root only (debootstrap, mounts, chroot). Everything mounted lives in a private mount namespace and ends with
# it. Output: FRESH_LOG (default: /var/cache/boardlab-test/fresh.log); the summary lines go to stdout.
set -euo pipefail
netns=yes
[ "${1:-}" = --no-netns ] && netns=no
[ "$(id -u)" = 0 ] || { echo "fresh.sh: debootstrap, mounts and chroot need root" >&2; exit 2; }
for tool in debootstrap unshare git; do
  command -v $tool >/dev/null || { echo "fresh.sh: $tool missing (apt-get install debootstrap util-linux git)" >&2; exit 2; }
done
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${FRESH_CACHE:-/var/cache/boardlab-test}
rootfs=$cache/rootfs-bookworm-$(dpkg --print-architecture)
log=${FRESH_LOG:-$cache/fresh.log}
mkdir -p "$cache"
if [ ! -e "$rootfs/.boardlab-rootfs-ok" ]; then
  mirror=$("$repo/cross/mirror.sh")
  echo "fresh: debootstrap bookworm into $rootfs from $mirror (once; a few minutes)"
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include=git,make,python3,ca-certificates bookworm "$rootfs" "$mirror" \
    > "$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; exit 1; }
  touch "$rootfs/.boardlab-rootfs-ok"
fi
work=$(mktemp -d "$cache/fresh.XXXXXX")
root=$work/root
# On any exit (Ctrl-C included) nothing is left running in the fresh machine, and its tree is removed: the
# mounts belong to the private mount namespace and end with its last process.
cleanup() {
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/root" 2>/dev/null)" in "$root" | "$root"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
  done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$root"
if [ $netns = yes ]; then
  # an overlay on the cached tree, mounted on $root: the chroot's / is a mount point, as on a real machine
  mkdir -p "$work/upper" "$work/ovl"
  mount_root="mount -t overlay overlay -o lowerdir=$rootfs,upperdir=$work/upper,workdir=$work/ovl $root && "
  inside='make demo && make test'
else
  # a plain copy: the chroot's / is a directory, not a mount point, so `ip netns add` cannot bind-mount
  cp -a "$rootfs/." "$root/"
  mount_root=""
  inside='make test'
fi
# What a machine of this site is set up with before a user arrives: the certificate authorities it trusts (a
# proxy of the site's own) and its pip configuration (the index it uses), so the fresh machine reaches the same
# package registries as this one; nothing else of this machine goes in.
carry="mkdir -p $root/usr/local/share/ca-certificates && cp -a /usr/local/share/ca-certificates/. $root/usr/local/share/ca-certificates/ \
&& { [ ! -r /etc/pip.conf ] || cp /etc/pip.conf $root/etc/pip.conf; }"
pass_env=""
for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_CERT http_proxy https_proxy no_proxy; do
  [ -z "${!v:-}" ] || pass_env="$pass_env $v=${!v}"
done
setup="$mount_root mount -t proc proc $root/proc && mount --rbind /sys $root/sys && \
mount --rbind /dev $root/dev && mount -t tmpfs tmpfs $root/run && \
cp /etc/resolv.conf $root/etc/resolv.conf && $carry && \
mkdir -p -m 0700 '$root/root/my boards' && git clone -q --no-hardlinks '$repo' '$root/root/my boards/boardlab' && \
chmod 0700 $root/root && \
exec chroot $root /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  $pass_env /bin/bash -c 'set -eu; update-ca-certificates >/dev/null; cd \"/root/my boards/boardlab\"; $inside'"
echo "fresh: make demo and make test in a fresh bookworm (ip netns: $netns); log: $log"
start=$(date +%s)
set +e
# SIGINT back to its default first: started as a background job (`make test-fresh &`, nohup), this script has
# it ignored, and an ignored signal stays ignored through every exec down to the tests' own processes.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
  unshare --mount --propagation private --fork bash -c "$setup" > "$log" 2>&1
rc=$?
set -e
echo "fresh: exit $rc after $(($(date +%s) - start)) s"
# pytest's closing line, and the verdicts of the demo
grep -E '^(=+ )?[0-9]+ (passed|failed)|(passed|failed|error).* in [0-9.]+s' "$log" | tail -n 3 || true
[ $rc = 0 ] || { tail -40 "$log"; exit 1; }
if [ $netns = no ]; then
  # the suite must have skipped the namespace tests with the probe's reason, not passed them by luck
  grep -q "network namespaces do not work here" "$log" || {
    echo "fresh: --no-netns: no test skipped for want of network namespaces" >&2
    exit 1
  }
fi
