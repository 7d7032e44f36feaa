"""The one place where boardlab reads and writes /proc, /sys and /dev.

A `SysRoot` is a directory that looks like "/" ("/" itself on the live system, a fixture tree in tests, a
copy fetched from a board). Paths given to it are relative ("sys/devices/system/cpu/online").
Reading a missing or unreadable file gives None: an absent attribute means "this kernel does not expose it",
which callers turn into a recorded reason. A file that exists but holds text of the wrong shape raises
`InputError` naming the file and what was expected, because it means the tree is not what we think it is.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TypeAlias

from boardlab.errors import InputError, MeasurementError

_CPU_RANGE = re.compile(r"(\d+|N)(?:-(\d+|N)(?::(\d+)/(\d+))?)?")
_NATURAL = re.compile(r"(\d+)")


# A tree written by the governor lab's SoC simulator marks itself here: conditions and the daemon accept it in
# place of the hardware (the CCI PMU, userspace frequency control) that it simulates.
SIM_MARKER = "run/boardlab-sim/soc"


def is_sim_root(root: os.PathLike | str) -> str | None:
    """The simulated SoC's name when `root` is a simulator tree, else None."""
    try:
        return (Path(root) / SIM_MARKER).read_text().strip()
    except OSError:
        return None


def natural_key(name: str) -> tuple:
    """Sort key that puts policy2 before policy10."""
    return tuple(int(tok) if tok.isdigit() else tok for tok in _NATURAL.split(name))


def parse_cpulist(text: str, *, last_cpu: int | None = None) -> tuple[int, ...]:
    """Parses a kernel cpulist ("0-3,5", "0-7:2/4", "N" = last CPU); empty and "(null)" mean no CPU.

    Whitespace also separates entries: cpufreq's affected_cpus and related_cpus print "0 1 2 3".
    """
    text = text.strip()
    if text in ("", "(null)"):
        return ()
    cpus: set[int] = set()

    def number(tok: str) -> int:
        if tok == "N":
            if last_cpu is None:
                raise ValueError("'N' (the last CPU) needs the number of CPUs")
            return last_cpu
        return int(tok)

    for part in re.split(r"[,\s]+", text):
        m = _CPU_RANGE.fullmatch(part.strip())
        if m is None:
            raise ValueError(f"{part.strip()!r} is not a CPU number or range")
        first = number(m[1])
        last = number(m[2]) if m[2] else first
        if last < first:
            raise ValueError(f"{part.strip()!r} is a descending range")
        if m[3]:
            used, group = int(m[3]), int(m[4])
            if not 0 < used <= group:
                raise ValueError(f"{part.strip()!r}: the used/group size must satisfy 0 < used <= group")
            for start in range(first, last + 1, group):
                cpus.update(range(start, min(start + used, last + 1)))
        else:
            cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpulist(cpus: Iterable[int]) -> str:
    """The inverse of parse_cpulist: (0, 1, 2, 3, 5) -> "0-3,5"."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_bracketed(text: str) -> tuple[str | None, tuple[str, ...]]:
    """Parses a kernel choice list: "always [madvise] never" -> ("madvise", ("always", "madvise",
    "never"))."""
    chosen = None
    options = []
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            chosen = word
        options.append(word)
    return chosen, tuple(options)


class SysRoot:
    """Read (and, for conditions, write) kernel files below `root`."""

    __slots__ = ("root",)

    def __init__(self, root: os.PathLike[str] | str = "/") -> None:
        self.root = Path(root)

    @classmethod
    def of(cls, root: SysRoot | os.PathLike[str] | str) -> SysRoot:
        return root if isinstance(root, SysRoot) else cls(root)

    def __repr__(self) -> str:
        return f"SysRoot({str(self.root)!r})"

    @property
    def live(self) -> bool:
        """True when root is this running system, so probing the current process means probing the board."""
        return os.path.realpath(self.root) == os.path.realpath("/")

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def show(self, rel: str) -> str:
        """The path as the user should read it in a message."""
        return str(self.path(rel))

    def require_board_tree(self) -> None:
        """Raises InputError unless root is a directory holding proc/cpuinfo or sys/devices/system/cpu."""
        if not self.root.is_dir():
            what = "is not a directory" if self.root.exists() else "does not exist"
            raise InputError(f"root {self.root} {what}: expected a directory laid out like / (proc/, sys/)")
        if not (self.path("proc/cpuinfo").is_file() or self.path("sys/devices/system/cpu").is_dir()):
            raise InputError(
                f"root {self.root} is not a board tree: expected {self.show('proc/cpuinfo')} "
                f"or {self.show('sys/devices/system/cpu')}"
            )

    # -- reading -------------------------------------------------------------------------------------------

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.path(rel))

    def is_dir(self, rel: str) -> bool:
        return self.path(rel).is_dir()

    def writable(self, rel: str) -> bool:
        return os.access(self.path(rel), os.W_OK)

    def listdir(self, rel: str, pattern: str | None = None) -> list[str]:
        """Entry names in natural order, filtered by a regex that must match the whole name; [] if absent."""
        try:
            names = os.listdir(self.path(rel))
        except OSError:
            return []
        if pattern is not None:
            rx = re.compile(pattern)
            names = [n for n in names if rx.fullmatch(n)]
        return sorted(names, key=natural_key)

    def read_text(self, rel: str) -> str | None:
        """The file's text, or None when it is absent or the kernel refuses the read (EACCES, EIO,
        ENODATA)."""
        try:
            with open(self.path(rel), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def read_bytes(self, rel: str) -> bytes | None:
        try:
            with open(self.path(rel), "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def unreadable_reason(self, rel: str) -> str | None:
        """Why read_text returned None ("Permission denied"), or None when the file reads fine."""
        try:
            with open(self.path(rel), "rb") as fh:
                fh.read(1)
        except OSError as exc:
            return exc.strerror or type(exc).__name__
        return None

    def read_str(self, rel: str) -> str | None:
        """The stripped text, None when absent; NUL-terminated device-tree strings lose their NULs."""
        text = self.read_text(rel)
        return None if text is None else text.replace("\0", "").strip()

    def read_int(self, rel: str, what: str = "an integer") -> int | None:
        text = self.read_str(rel)
        if text is None:
            return None
        try:
            return int(text, 0) if text.lower().startswith(("0x", "-0x")) else int(text)
        except ValueError:
            raise self._malformed(rel, what, text) from None

    def read_ints(self, rel: str, what: str = "integers separated by spaces") -> tuple[int, ...] | None:
        text = self.read_str(rel)
        if text is None:
            return None
        try:
            return tuple(int(tok) for tok in text.split())
        except ValueError:
            raise self._malformed(rel, what, text) from None

    def read_words(self, rel: str) -> tuple[str, ...] | None:
        text = self.read_str(rel)
        return None if text is None else tuple(text.split())

    def read_cpulist(self, rel: str, *, last_cpu: int | None = None) -> tuple[int, ...] | None:
        text = self.read_str(rel)
        if text is None:
            return None
        try:
            return parse_cpulist(text, last_cpu=last_cpu)
        except ValueError as exc:
            raise self._malformed(rel, f"a CPU list such as 0-3,5 ({exc})", text) from None

    def read_bracketed(self, rel: str) -> tuple[str | None, tuple[str, ...]]:
        text = self.read_str(rel)
        return (None, ()) if text is None else parse_bracketed(text)

    def read_table(
        self, rel: str, what: str = "lines of '<integer> <integer>'"
    ) -> tuple[tuple[int, int], ...] | None:
        """Two-column integer tables such as cpufreq stats/time_in_state."""
        text = self.read_text(rel)
        if text is None:
            return None
        rows = []
        for line in text.splitlines():
            if not line.strip():
                continue
            fields = line.split()
            try:
                if len(fields) != 2:
                    raise ValueError
                rows.append((int(fields[0]), int(fields[1])))
            except ValueError:
                raise self._malformed(rel, what, line) from None
        return tuple(rows)

    def link_name(self, rel: str) -> str | None:
        """The last component of the symlink's target ("0-0040" for hwmon0/device), None when not a link."""
        try:
            return os.path.basename(os.readlink(self.path(rel)).rstrip("/")) or None
        except OSError:
            return None

    def _malformed(self, rel: str, what: str, text: str) -> InputError:
        shown = text if len(text) <= 60 else text[:57] + "..."
        return InputError(f"{self.show(rel)}: expected {what}, found {shown!r}")

    # -- writing (conditions) ------------------------------------------------------------------------------

    def confined_path(self, rel: str) -> Path:
        """The directory a write to `rel` must stay inside: the whole tree for a fixture root, the top
        directory (/sys, /proc, /dev) on the live system, so a symlink cannot turn a write to a kernel
        attribute into a write to an ordinary file."""
        top = rel.lstrip("/").split("/", 1)[0]
        return self.path(top) if self.live else self.root

    def open_for_write(self, rel: str, *, truncate: bool = True) -> int:
        """Opens `rel` for writing without ever leaving confined_path(rel): openat2(RESOLVE_BENEATH) where
        the kernel has it (5.6+), else a realpath check with O_NOFOLLOW and a re-check of what was opened.
        Raises InputError naming the path when a symlink leads outside; OSError for the rest."""
        base = self.confined_path(rel)
        target = self.path(rel)
        inside = os.path.relpath(target, base)
        flags = os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
        fd = _openat2_beneath(base, inside, flags)
        if fd is None:  # no openat2: resolve, check, open the resolved path, check what was opened
            real_base = os.path.realpath(base)
            real = os.path.realpath(target)
            if os.path.commonpath([real, real_base]) != real_base:
                raise self._escapes(target, base, real)
            fd = os.open(real, flags | os.O_NOFOLLOW)
            try:
                opened = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                opened = real
            if os.path.commonpath([opened, real_base]) != real_base:
                os.close(fd)
                raise self._escapes(target, base, opened)
        elif fd < 0:
            raise self._escapes(target, base, None)
        if truncate:
            with contextlib.suppress(OSError):  # sysfs and procfs attributes need none and may refuse it
                if stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_size:
                    os.ftruncate(fd, 0)
        return fd

    @staticmethod
    def _escapes(target: Path, base: Path, real: str | None) -> InputError:
        where = f" (it resolves to {real})" if real else ""
        return InputError(
            f"{target}: refusing to write: a symlink leads outside {base}{where}; "
            "fix the tree (or --root) so the attribute is a file inside it"
        )

    def write_text(self, rel: str, text: str) -> None:
        """Writes a kernel attribute in one write(2), as the kernel expects; raises MeasurementError on
        refusal and InputError when a symlink would take the write outside the tree."""
        target = self.path(rel)
        try:
            fd = self.open_for_write(rel)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            raise MeasurementError(
                f"cannot write {text.strip()!r} to {target}: {exc.strerror or exc}"
            ) from exc


_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)


@functools.cache  # the running kernel's answer: it does not change while this process runs
def _openat2_missing() -> bool:
    """Whether openat2 is missing (ENOSYS: an older kernel, or a seccomp filter): then the fallback checks."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(-1), None, None, ctypes.c_size_t(0))
    if fd >= 0:
        os.close(fd)
    return fd < 0 and ctypes.get_errno() == errno.ENOSYS


def _openat2_beneath(base: Path, rel: str, flags: int) -> int | None:
    """openat2(dirfd=base, rel, RESOLVE_BENEATH): the kernel refuses (EXDEV) any resolution that leaves
    base, symlinks and ".." included. Returns the fd, -1 when it would leave base, None without openat2."""
    if _openat2_missing():
        return None
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    libc = ctypes.CDLL(None, use_errno=True)
    dirfd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        how = OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        fd = libc.syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(os.fsencode(rel)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err == errno.ENOSYS:  # an older kernel (or a seccomp filter): the fallback checks instead
            return None
        if err == errno.EPERM:  # some container filters answer EPERM to an unknown syscall: let the
            return None  # fallback open the file, which then reports the file's own error if any
        if err == errno.EXDEV:
            return -1
        raise OSError(err, os.strerror(err), str(base / rel))
    finally:
        os.close(dirfd)


RootLike: TypeAlias = SysRoot | os.PathLike[str] | str
