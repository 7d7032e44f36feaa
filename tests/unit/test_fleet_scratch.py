"""The fleet's workers' TMPDIR (fleet/controller.py `_ssh_scratch`): a new private directory below a TMPDIR
short enough for labgrid's ssh control socket below it (a Unix socket's path holds 107 bytes), else below
/tmp."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from boardlab.fleet.controller import _ssh_scratch

# what labgrid and ssh put below it: lg-ssh-XXXXXXXX/control-ADDRESS and ssh's 17-byte suffix while it binds
SOCKET_TAIL = len("/lg-ssh-12345678/control-") + 17
IPV6_LITERAL = 39


def _made_below(parent: str) -> Path:
    saved = tempfile.tempdir
    tempfile.tempdir = parent
    try:
        return _ssh_scratch()
    finally:
        tempfile.tempdir = saved


def _short_dir() -> Path:
    """A new directory of at most 12 bytes' path (/tmp/sNNNNNN), as /var/tmp or /dev/shm."""
    for i in range(1000):
        path = Path(f"/tmp/s{(os.getpid() * 1000 + i) % 1_000_000}")
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
    raise AssertionError("no free /tmp/sNNNNNN")


def test_a_short_tmpdir_is_used_and_leaves_room_for_an_ipv6_address():
    short = _short_dir()
    try:
        made = _made_below(str(short))
        assert made.parent == short and stat.S_IMODE(made.stat().st_mode) == 0o700
        assert len(str(made)) + SOCKET_TAIL + IPV6_LITERAL <= 107
    finally:
        shutil.rmtree(short)


def test_a_long_tmpdir_gives_way_to_tmp(tmp_path):
    long = tmp_path / ("x" * 40)
    long.mkdir()
    made = _made_below(str(long))
    try:
        assert made.parent == Path("/tmp") and list(long.iterdir()) == []
        assert len(str(made)) + SOCKET_TAIL + IPV6_LITERAL <= 107
    finally:
        made.rmdir()
