"""The page cache: drop all of it (root), or evict the pages of given files (any user who can read them).

Neither is a setting: nothing is journaled, because nothing needs restoring.
"""

from __future__ import annotations

import os

from boardlab.platform.sysroot import RootLike, SysRoot

DROP_CACHES = "proc/sys/vm/drop_caches"


def drop_unsupported(root: RootLike) -> str | None:
    """Why the page cache cannot be dropped here, or None when it can."""
    sr = SysRoot.of(root)
    if not sr.exists(DROP_CACHES):
        return f"no {sr.show(DROP_CACHES)}"
    if not sr.writable(DROP_CACHES):
        return f"{sr.show(DROP_CACHES)} is not writable by this user (needs root)"
    return None


def drop_page_cache(root: RootLike) -> None:
    """sync, then drop clean page cache, dentries and inodes (echo 3 > /proc/sys/vm/drop_caches)."""
    os.sync()  # drop_caches frees only clean pages: write the dirty ones back first
    SysRoot.of(root).write_text(DROP_CACHES, "3")


def evict_file(path: str | os.PathLike[str]) -> None:
    """Writes back the file's dirty pages, then asks the kernel to drop its cached pages
    (posix_fadvise POSIX_FADV_DONTNEED, which skips dirty pages: hence the fsync). Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # never blocks on a FIFO
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
