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


def open_user_file(
    path: str | Path, *, what: str, give: str, missing: str = "", option: str = ""
) -> BinaryIO:
    """`path` open for reading when it is a regular file, never waiting on a FIFO; else InputError naming
    the path, what it is and what to give instead. `what` is the kind of file ("plan"), `give` what the user
    should give ("a TOML file"), `missing` what the message adds when there is no such file, `option` the
    command-line option that named the file ("--bundle"), which then starts every message."""
    where = _where(path, option)
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise InputError(f"{where}: no such {what} file{missing}") from None
    except OSError as exc:
        raise _os_error(exc, where, what, option) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a directory naming the fd, not the path
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        raise InputError(f"{where}: {kind}, not a {what} file; give {give}")
    return os.fdopen(fd, "rb")


def read_user_file(
    path: str | Path, *, what: str, give: str, max_bytes: int, missing: str = "", option: str = ""
) -> bytes:
    """The bytes of `open_user_file(path, ...)`, at most `max_bytes` of them (else InputError)."""
    where = _where(path, option)
    with open_user_file(path, what=what, give=give, missing=missing, option=option) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise _os_error(exc, where, what, option) from None
    if len(data) > max_bytes:
        size = f"{max_bytes} bytes ({max_bytes >> 20} MiB)"
        raise InputError(f"{where}: larger than the {size} a {what} may have; give {give}")
    return data


def _where(path: str | Path, option: str) -> str:
    """How a message names the file: after the option that named it, when there is one."""
    return f"{option} {path}" if option else str(path)


def _os_error(exc: OSError, where: str, what: str, option: str) -> BoardlabError:
    """errors.os_error's message, which starts with what the file is unless an option already names it."""
    return os_error(exc, where, "" if option else what)


def head_of_regular_file(path: str | Path, n_bytes: int) -> bytes | None:
    """The first `n_bytes` of `path` when `open_user_file` opens it and it can be read, else None (what to
    make of it is the caller's: it names the problem when it reads the file for real)."""
    try:
        with open_user_file(path, what="", give="") as f:
            return f.read(n_bytes)
    except (BoardlabError, OSError):
        return None
