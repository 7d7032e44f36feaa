#!/bin/sh
# cross/system-guest.sh: the init (PID 1) of the booted ARM guest of `make test-arm-system` (cross/system.sh
# puts it at /root/boardlab-guest.sh with boardlab-guest.conf beside it). It runs a board's first session with
# the bundle: install.sh, info, list, a cut quick campaign, report, export, restore; times `boardlab --help`
# and `boardlab info`; captures the fixture tree (tests/capture_tree.py); then writes everything, each step's
# exit code and times included, as a tar onto the second disk (virtio serial "boardlab-out") and powers off.
# Nothing here decides whether the session passed: the host reads the tar and checks (tests/system/).
# Not `set -e`: a failing step is recorded and the next one still runs.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb
# the initramfs has moved /proc, /sys and /dev onto the root already; a kernel booted without one has not
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
hostname boardlab-guest

con=/dev/console
off() { sync; echo o > /proc/sysrq-trigger; sleep 30; }
. /root/boardlab-guest.conf  # ARCH, RUN_ARGS, GUEST_DEADLINE_S
# The guest's own deadline, below the host's: power off whatever is still running.
( sleep "$GUEST_DEADLINE_S"; echo "boardlab-guest: deadline of $GUEST_DEADLINE_S s reached, powering off" > $con; off ) &

out=/root/out
mkdir -p $out
# step NAME CMD...: runs CMD with stdout/stderr in NAME.out/NAME.err; "NAME RC T0 T1" into steps.txt.
step() {
  name=$1; shift
  echo "boardlab-guest: $name ..." > $con
  t0=$(date +%s.%N)
  "$@" > $out/$name.out 2> $out/$name.err
  rc=$?
  t1=$(date +%s.%N)
  echo "$name $rc $t0 $t1" >> $out/steps.txt
  echo "boardlab-guest: $name exit $rc" > $con
}

cd /root
{ uname -a; cat /proc/cmdline; nproc; } > $out/uname.txt
echo "boardlab-guest: $(uname -r) $(uname -m), $(nproc) CPUs" > $con
step no_compiler sh -c '! command -v gcc && ! command -v cc && ! command -v clang'
step unpack tar xzf "boardlab-$ARCH.tar.gz"
step install sh "boardlab-$ARCH/install.sh"
# the first --help pays the cold page cache; the second is the one written in docs/boards.md
step help_cold boardlab --help
step help boardlab --help
step info boardlab info
step info_json boardlab info --json
step list boardlab list
# shellcheck disable=SC2086  # RUN_ARGS is a list of options
step run boardlab run --preset quick --db /root/results.db $RUN_ARGS
step report boardlab report --db /root/results.db -o $out/report.html
step report_text boardlab report --db /root/results.db --format text
step export boardlab export --db /root/results.db --format json -o $out/export.json
step restore boardlab restore --json
step capture /opt/boardlab/bin/python /root/capture_tree.py $out/tree
cp /root/results.db $out/ 2>/dev/null
# What is still running besides this script (its forks share PID 1's cmdline), the watchdog's sleep and the
# kernel's threads (no cmdline).
init_cmd=$(tr '\0' ' ' < /proc/1/cmdline)
for p in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)
  case $cmd in "" | "$init_cmd" | "sleep $GUEST_DEADLINE_S ") continue ;; esac
  echo "${p#/proc/} $cmd"
done > $out/leftover.txt
echo done > $out/finished

disk=
for d in /sys/block/vd*; do
  [ "$(cat "$d/serial" 2>/dev/null)" = boardlab-out ] && disk=/dev/${d##*/}
done
if [ -n "$disk" ]; then
  tar -cf "$disk" -C $out . && echo "boardlab-guest: results written to $disk" > $con
else
  echo "boardlab-guest: no disk with serial boardlab-out: results lost" > $con
fi
off
