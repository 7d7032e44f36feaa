"""The source tree's own path on a 32-bit ARM board: `make install` in a Debian armhf root filesystem that
has a compiler and the -dev packages (what `make setup` installs as root), run through qemu-user binfmt.

PyPI has no armv7 wheels for numpy, scipy, pyarrow, onnxruntime or ai-edge-litert, so the Makefile must take
numpy/scipy from Debian through a venv with the system's site packages and leave the rest out; the AI
workload then says it is unsupported, with a fix that works there. `make test-arm` runs it (it needs PyPI for
meson and meson-python, and compiles boardlab-kern under emulation: several minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOTFS = os.environ.get("BOARDLAB_ARM_ROOTFS_DEV")
REPO = Path(__file__).resolve().parents[2]

INSIDE = """\
set -eu
cd /root/boardlab
make install
.venv/bin/python -c "import numpy, scipy; print('numpy from', numpy.__file__)"
.venv/bin/boardlab info > /root/info.txt
.venv/bin/boardlab list > /root/list.txt
.venv/bin/boardlab kern mibench.crc32 --param bytes=4096 --iterations 2 --warmup-max-iterations 0 --json \\
  > /root/crc32.json
echo "== inside: done"
"""


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    if not ROOTFS:
        pytest.skip("run by `make test-arm` (needs BOARDLAB_ARM_ROOTFS_DEV)")
    if os.geteuid() != 0:
        pytest.skip("needs root (overlay mount, chroot)")
    if not Path(ROOTFS, ".boardlab-rootfs-ok").exists():
        pytest.skip(f"{ROOTFS} is not a finished root filesystem (cross/rootfs.sh)")
    if not shutil.which("git"):
        pytest.skip("git is needed to list the source tree's files")
    work = tmp_path_factory.mktemp("armhf-dev")
    upper, ovl, merged = work / "upper", work / "ovl-work", work / "merged"
    src = upper / "root" / "boardlab"
    for d in (src, ovl, merged):
        d.mkdir(parents=True)
    # The working tree's tracked files (with uncommitted edits), as a user's clone has them.
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        rel = name.decode()
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    (upper / "root" / "inside.sh").write_text(INSIDE)
    # pip in the tree trusts what this machine's pip trusts (a site may reach PyPI through a TLS proxy).
    host_ca = (
        os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    )
    ca_env = ""
    if Path(host_ca).is_file():
        (upper / "etc" / "ssl").mkdir(parents=True, exist_ok=True)
        shutil.copy(host_ca, upper / "etc" / "ssl" / "host-ca.crt")
        ca_env = "PIP_CERT=/etc/ssl/host-ca.crt SSL_CERT_FILE=/etc/ssl/host-ca.crt "
    setup = (
        f"mount -t overlay overlay -o lowerdir={ROOTFS},upperdir={upper},workdir={ovl} {merged} && "
        f"mount -t proc proc {merged}/proc && mount --rbind /sys {merged}/sys && "
        f"mount --rbind /dev {merged}/dev && "
        f"exec chroot {merged} /usr/bin/env -i HOME=/root LANG=C.UTF-8 {ca_env}"
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin /bin/sh /root/inside.sh"
    )
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", setup],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return upper / "root", proc.stdout + proc.stderr


def test_make_install_builds_on_armv7_with_debian_numpy(board):
    root, out = board
    assert "setup: boardlab" in out and "installed in .venv" in out
    assert "numpy from /usr/lib/python3/dist-packages/" in out  # Debian's, through the system site packages


def test_the_board_built_binary_runs_natively_and_verifies(board):
    import json

    root, _ = board
    res = json.loads((root / "crc32.json").read_text())
    assert res["ok"] is True and res["verified"] is True
    info = (root / "info.txt").read_text()
    assert "machine      armv7l" in info and "for arm (32-bit)" in info


def test_the_ai_workload_is_unsupported_with_the_reason_and_a_fix_that_works_on_armv7(board):
    root, _ = board
    listing = (root / "list.txt").read_text()
    block = listing[listing.index("ai.inference") :]
    assert "unsupported" in block.splitlines()[0]
    assert "onnxruntime publishes no wheel for armv7l" in block
