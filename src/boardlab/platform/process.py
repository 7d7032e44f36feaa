"""What a worker process reads about itself: its peak resident memory (docs/method.md: peak memory comes from
the worker's own VmHWM, not from the parent's ru_maxrss)."""

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
