"""What a worker process reads about itself: its peak resident memory (docs/method.md: peak memory comes from
the worker's own VmHWM, not from the parent's ru_maxrss); and what an installed tool answers when asked."""

from __future__ import annotations

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
