"""What a worker process reads about itself: its peak resident memory (docs/method.md: peak memory comes from
the worker's own VmHWM, not from the parent's ru_maxrss); what an installed tool answers when asked; and the
processes a tool left behind, found by a path of the caller's in their arguments."""

from __future__ import annotations

import os

from boardlab.platform.sysroot import RootLike, SysRoot


def peak_rss_kib(root: RootLike = "/") -> int | None:
    """This process's peak resident set size (VmHWM of /proc/self/status) in KiB; None where absent."""
    text = SysRoot.of(root).read_text("proc/self/status")
    for line in (text or "").splitlines():
        if line.startswith("VmHWM:"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def tool_answer(argv: list[str], timeout_s: float) -> str | None:
    """What a tool prints (stdout, then stderr) to a short question such as --version or --help, whatever its
    exit status; None when it cannot be run or does not answer within `timeout_s`."""
    import subprocess

    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout + p.stderr


def pids_naming(root: RootLike, text: str) -> list[int]:
    """This user's processes with an argument that contains `text`, a path only the caller made (its private
    directory): found so, what a tool it ran left in a session of its own (labgrid's `ssh -f` master, which
    outlives a SIGKILLed caller) is found and nothing else."""
    sr = SysRoot.of(root)
    uid, want = os.getuid(), text.encode()
    found = []
    for name in sr.listdir("proc", r"[0-9]+"):
        if name == str(os.getpid()) or not _owned(sr, name, uid):
            continue
        raw = sr.read_bytes(f"proc/{name}/cmdline") or b""
        if any(want in arg for arg in raw.split(b"\0")):
            found.append(int(name))
    return found


def _owned(sr: SysRoot, pid: str, uid: int) -> bool:
    try:
        return os.stat(sr.path(f"proc/{pid}")).st_uid == uid
    except OSError:
        return False
