"""Who holds a lock on a file: /proc/locks names the PID of every flock(2) holder, so a refused second
`boardlab run` can say which process has the database, without a sidecar file that a crash could leave.
Whether a held lock still guards what its path names (`same_file`), and the error for a filesystem that cannot
lock at all (`lock_unsupported`, naming the filesystem from /proc/self/mountinfo)."""

from __future__ import annotations

import errno
import os

from boardlab.errors import InputError
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


# flock(2) on a filesystem that cannot lock: NFS without lockd (ENOLCK), some FUSE and network filesystems
# (EINVAL, EOPNOTSUPP; ENOTSUP is the same number on Linux)
LOCK_UNSUPPORTED = frozenset({errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP})


def same_file(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether `path` still names the file open as `fd` (same device and inode): a lock held on a file that
    was removed, or replaced by another, no longer keeps anyone from locking what the path names now."""
    try:
        held, now = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def filesystem_type(root: RootLike, path: str | os.PathLike[str]) -> str:
    """The type of the filesystem holding `path` (nfs4, ext4, fuse.sshfs, ...) from proc/self/mountinfo,
    matched by device number; "" when it cannot be told."""
    try:
        st = os.stat(path)
    except OSError:
        try:
            st = os.stat(os.path.dirname(os.path.abspath(path)))
        except OSError:
            return ""
    want = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for line in (SysRoot.of(root).read_text("proc/self/mountinfo") or "").splitlines():
        # "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": optional fields end at " - "
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if sep and len(fields) >= 3 and fields[2] == want and tail.split():
            return tail.split()[0]
    return ""


def lock_unsupported(exc: OSError, path: str | os.PathLike[str], what: str) -> InputError | None:
    """The error for a flock(2) the filesystem refuses (None for any other error): it names the path and the
    filesystem, and what to do."""
    if exc.errno not in LOCK_UNSUPPORTED:
        return None
    fs = filesystem_type("/", path)
    on = f"a {fs} filesystem" if fs else "this filesystem"
    return InputError(
        f"{what} {path}: cannot be locked on {on} (flock: "
        f"{exc.strerror or errno.errorcode.get(exc.errno, '?')}); boardlab locks it so that no two campaigns "
        "use it at once: put it on a local filesystem, or enable file locking there (NFS: the lock daemon, "
        "rpc.statd/lockd)"
    )
