"""`boardlab-kern launch`, the runner's program launcher, as the board's build runs it (`make test-arm-kern`
runs this file against the armhf and arm64 builds under qemu-user): the protocol's replies, a program's
exit code, rusage and stderr's end, its group killed at the timeout, and a malformed request refused.
tests/unit/test_program_starters.py tests the launcher's behaviour in depth, natively."""

from __future__ import annotations

import os
import signal
import struct
import subprocess

import pytest

from boardlab.native import kern_path
from boardlab.platform.launcher import PROTOCOL, Launcher
from boardlab.platform.spawn import direct_spawn_reason

from helpers import under_qemu_user

pytestmark = pytest.mark.skipif(direct_spawn_reason() is not None, reason=str(direct_spawn_reason()))


@pytest.fixture
def launcher():
    launcher = Launcher(kern_path(), dict(os.environb))
    yield launcher
    launcher.close()


def test_a_program_s_exit_code_rusage_and_stderr_come_back(launcher):
    p = launcher.spawn(["sh", "-c", "echo the disk is full >&2; exit 4"], None, 60)
    ex = launcher.wait(p)
    assert ex.exit_code == 4 and ex.stderr == "the disk is full\n" and not ex.timed_out
    assert ex.wall_ns > 0 and ex.rusage["maxrss_kib"] > 0
    p = launcher.spawn(["true"], {min(os.sched_getaffinity(0))}, 60)  # the next run, by the same launcher
    assert launcher.wait(p).exit_code == 0


def test_a_hang_is_killed_with_its_group_at_the_timeout(launcher):
    p = launcher.spawn(["sleep", "30"], None, 0.5)
    ex = launcher.wait(p)
    assert ex.timed_out and ex.exit_code == -signal.SIGKILL and 0.5e9 <= ex.wall_ns < 10e9


@pytest.mark.skipif(
    under_qemu_user(),
    reason="qemu-user emulates posix_spawn's vfork as a fork, so an exec's error reaches the child's exit "
    "status (127), not the launcher: tested natively",
)
def test_a_program_that_cannot_start_is_told_by_its_errno(launcher):
    p = launcher.spawn(["/nonexistent/boardlab-program"], None, 5)
    assert launcher.wait(p).start_error == os.strerror(2)


def test_a_malformed_request_is_refused_with_exit_2():
    proc = subprocess.Popen(
        [str(kern_path()), "launch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(b"R" + struct.pack("=I", 8) + b"\0" * 8, timeout=60)
    assert out == b"L" + struct.pack("=I", PROTOCOL)
    assert proc.returncode == 2 and b"malformed request" in err
