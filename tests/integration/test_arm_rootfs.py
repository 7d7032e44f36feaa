"""A board bundle in a Debian armhf root filesystem (debootstrap, run through qemu-user binfmt): it installs
with no compiler and no network, and the installed boardlab inventories, runs a two-workload campaign and
writes a report. Under emulation only correctness is checked: its timings mean nothing.

`make test-arm` runs it (BOARDLAB_ARM_ROOTFS: the tree cross/rootfs.sh made; BOARDLAB_ARM_KERN: the
cross-built armhf boardlab-kern). Each run works in an overlay on the cached tree, inside its own mount and
network namespaces: the tree stays clean, every mount ends with the namespace, and there is no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from helpers import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOTFS = os.environ.get("BOARDLAB_ARM_ROOTFS")
KERN = os.environ.get("BOARDLAB_ARM_KERN")
REPO = Path(__file__).resolve().parents[2]

PLAN = """\
name = "two-on-armhf"
description = "two workloads in an armhf root filesystem under qemu-user"
[runs]
repetitions = 2
iterations = 2
[gates]
idle_window_s = 0.1
timeout_s = 5
[[workloads]]
name = "mibench.crc32"
params = { bytes = 65536 }
[[workloads]]
name = "compress.zlib"
params = { bytes = 65536 }
"""

INSIDE = """\
set -eu
cd /root
echo "== no compiler:"; for cc in gcc cc clang; do ! command -v $cc; done; echo none
python3 -c "import socket; socket.create_connection(('$MIRROR_HOST', $MIRROR_PORT), timeout=5)" 2>/dev/null \
  && echo "== network reachable" || echo "== offline"
tar xzf /tmp/boardlab-armhf.tar.gz
sh boardlab-armhf/install.sh
boardlab --help > help.txt
boardlab info > info.txt
boardlab info --json > info.json
boardlab list > list.txt
boardlab run plan.toml --db results.db --quiet
boardlab report --db results.db -o report.html
boardlab report --db results.db --format text > report.txt
echo "== inside: done"
"""


def mirror_address() -> tuple[str, int]:
    """The host and port of the package mirror this machine's apt uses (cross/mirror.sh): the one the board
    would reach if its network were not cut, so "offline" is checked against a real destination."""
    out = subprocess.run([str(REPO / "cross" / "mirror.sh")], capture_output=True, text=True)
    url = urlsplit(out.stdout.strip())
    return url.hostname or "localhost", url.port or (443 if url.scheme == "https" else 80)


def _skip_reason() -> str | None:
    if not ROOTFS or not KERN:
        return "run by `make test-arm` (needs BOARDLAB_ARM_ROOTFS and BOARDLAB_ARM_KERN)"
    if os.geteuid() != 0:
        return "needs root (overlay mount, chroot)"
    if not Path(ROOTFS, ".boardlab-rootfs-ok").exists():
        return f"{ROOTFS} is not a finished root filesystem: run cross/rootfs.sh armhf {ROOTFS}"
    if not Path("/proc/sys/fs/binfmt_misc/qemu-arm").exists():
        return "qemu-arm binfmt is not registered: run cross/binfmt.sh arm"
    if not shutil.which("unshare"):
        return "unshare (util-linux) missing"
    return None


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """Installs the bundle in an overlay of the armhf tree and runs the user's path there; returns the
    overlay's upper directory (what the board wrote) and the session's output."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("armhf")
    bundle = work / "boardlab-armhf.tar.gz"
    made = run_cli("bundle", "--arch", "armhf", "--kern", KERN, "--out", str(bundle))
    assert made.returncode == 0, made.stderr
    upper, ovl, merged = work / "upper", work / "ovl-work", work / "merged"
    for d in (upper / "tmp", upper / "root", ovl, merged):
        d.mkdir(parents=True)
    shutil.copy(bundle, upper / "tmp" / bundle.name)
    (upper / "root" / "plan.toml").write_text(PLAN)
    host, port = mirror_address()
    (upper / "root" / "inside.sh").write_text(f"MIRROR_HOST={host}\nMIRROR_PORT={port}\n" + INSIDE)
    setup = (
        f"mount -t overlay overlay -o lowerdir={ROOTFS},upperdir={upper},workdir={ovl} {merged} && "
        f"mount -t proc proc {merged}/proc && mount --rbind /sys {merged}/sys && "
        f"mount --rbind /dev {merged}/dev && "
        f"exec chroot {merged} /usr/bin/env -i HOME=/root LANG=C.UTF-8 "
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin /bin/sh /root/inside.sh"
    )
    # A new mount namespace (the mounts die with it) and a network namespace with loopback only.
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--net", "--fork", "sh", "-c", setup],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    print(proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return upper / "root", proc.stdout + proc.stderr


def test_the_bundle_installs_without_compiler_or_network(board):
    root, out = board
    assert "== no compiler:\nnone" in out
    assert "installed in /opt/boardlab" in out
    assert "== offline" in out  # pip could not have reached a package index
    assert "usage: boardlab" in (root / "help.txt").read_text()


def test_info_on_the_board_shows_the_bundled_binary_and_how_it_was_built(board):
    import json

    root, _ = board
    text = (root / "info.txt").read_text()
    assert "/opt/boardlab/bin/boardlab-kern" in text
    assert "-mcpu=cortex-a8 -mfpu=neon -mfloat-abi=hard" in text and "cross-compiled" in text
    doc = json.loads((root / "info.json").read_text())
    assert doc["machine"] == "armv7l"  # qemu-arm reports an ARMv7 CPU
    # ... while /proc/cpuinfo is the host's: boardlab says its timings come from an emulator.
    assert doc["virtualization"]["hypervisor"] == "qemu-user"
    assert any("user-mode emulation" in e for e in doc["virtualization"]["evidence"])
    assert doc["kern"]["build"]["arch"] == "arm" and doc["kern"]["build"]["pointer_bits"] == 32
    assert "neon" in doc["kern"]["build"]["simd"]
    assert doc["kern"]["unsupported"] == {} or all(doc["kern"]["unsupported"].values())


def test_a_two_workload_campaign_runs_and_reports_on_the_board(board):
    root, _ = board
    assert (root / "results.db").stat().st_size > 0
    report = (root / "report.html").read_text()
    text = (root / "report.txt").read_text()
    for workload in ("mibench.crc32", "compress.zlib"):
        assert workload in report and workload in text
    assert "<svg" in report


def test_a_workload_without_its_runtime_on_armv7_says_why_and_the_fix_that_works_there(board):
    root, _ = board
    listing = (root / "list.txt").read_text()
    block = listing[listing.index("ai.inference") :]
    assert "unsupported" in block.splitlines()[0]
    assert "PyPI has no numpy wheel for armv7l: apt-get install python3-numpy" in block
