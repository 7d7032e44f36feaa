"""A file a user names (a plan, a governor step's JSON, a hyperfine export, a board bundle), opened so
that a wrong path costs nothing: only a regular file, opened without blocking (a FIFO given by mistake would
wait for a writer for ever), and a small one read up to a bound (/dev/zero has no end; a results database
named where a plan belongs is hundreds of MB)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from boardlab.errors import BoardlabError, InputError, os_error

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def open_user_file(path: str | Path, *, what: str, give: str, missing: str = "") -> BinaryIO:
    """`path` open for reading when it is a regular file, never waiting on a FIFO; else InputError naming
    the path, what it is and what to give instead. `what` is the kind of file ("plan"), `give` what the user
    should give ("a TOML file"), `missing` what the message adds when there is no such file."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what} file{missing}") from None
    except OSError as exc:
        raise os_error(exc, path, what) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a directory naming the fd, not the path
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        raise InputError(f"{path}: {kind}, not a {what} file; give {give}")
    return os.fdopen(fd, "rb")


def read_user_file(path: str | Path, *, what: str, give: str, max_bytes: int, missing: str = "") -> bytes:
    """The bytes of `open_user_file(path, ...)`, at most `max_bytes` of them (else InputError)."""
    with open_user_file(path, what=what, give=give, missing=missing) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise os_error(exc, path, what) from None
    if len(data) > max_bytes:
        size = f"{max_bytes} bytes ({max_bytes >> 20} MiB)"
        raise InputError(f"{path}: larger than the {size} a {what} may have; give {give}")
    return data


def head_of_regular_file(path: str | Path, n_bytes: int) -> bytes | None:
    """The first `n_bytes` of `path` when `open_user_file` opens it and it can be read, else None (what to
    make of it is the caller's: it names the problem when it reads the file for real)."""
    try:
        with open_user_file(path, what="", give="") as f:
            return f.read(n_bytes)
    except (BoardlabError, OSError):
        return None
