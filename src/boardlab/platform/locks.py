"""Who holds a lock on a file: /proc/locks names the PID of every flock(2) holder, so a refused second
`boardlab run` can say which process has the database, without a sidecar file that a crash could leave."""

from __future__ import annotations

import os

from boardlab.platform.sysroot import RootLike, SysRoot


def flock_holders(root: RootLike, path: str | os.PathLike[str]) -> list[tuple[int, str]]:
    """(pid, command line) of every process holding a FLOCK on `path` (by device and inode)."""
    sr = SysRoot.of(root)
    try:
        st = os.stat(path)
    except OSError:
        return []
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    text = sr.read_text("proc/locks") or ""
    holders: list[tuple[int, str]] = []
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after the number
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            pid = int(fields[4])
            major, minor, ino = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(ino))
        except ValueError:
            continue
        if key != want or any(pid == p for p, _ in holders):
            continue
        raw = sr.read_bytes(f"proc/{pid}/cmdline") or b""
        cmd = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
        holders.append((pid, cmd or "?"))
    return holders
