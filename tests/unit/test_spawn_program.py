"""A program the runner starts itself (platform.spawn.spawn_program / wait_program): timed from its spawn to
its exit, reaped with its own rusage, its group killed at its end and at its timeout, its stderr's end kept,
and a stderr held open by a process outside its group read for a bounded time."""

from __future__ import annotations

import os
import signal
import time

import pytest

from boardlab.platform.spawn import (
    DRAIN_S,
    STDERR_KEEP_BYTES,
    direct_spawn_reason,
    spawn_program,
    wait_program,
)

from helpers import sleeping

pytestmark = [
    pytest.mark.skipif(direct_spawn_reason() is not None, reason=str(direct_spawn_reason())),
    pytest.mark.spawns,
]


def test_its_time_is_its_own_and_its_rusage_is_wait4s():
    p = spawn_program(["sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"])
    ex = wait_program(p, 60)
    assert ex.exit_code == 0 and not ex.timed_out and ex.start_error is None
    assert ex.rusage["utime_us"] + ex.rusage["stime_us"] > 0
    assert (
        ex.wall_ns >= (ex.rusage["utime_us"] + ex.rusage["stime_us"]) * 1000 * 0.9
    )  # one thread: wall >= CPU


def test_a_failure_keeps_the_end_of_its_stderr_and_no_more():
    script = "head -c 1048576 /dev/zero | tr '\\0' x >&2; echo >&2; echo the end >&2; exit 3"
    ex = wait_program(spawn_program(["sh", "-c", script]), 60)
    assert ex.exit_code == 3
    assert len(ex.stderr) == STDERR_KEEP_BYTES and ex.stderr.endswith("xxx\nthe end\n")


def test_a_hang_is_killed_with_its_group_at_the_timeout():
    marker = f"56.{os.getpid()}"
    t0 = time.monotonic()
    ex = wait_program(spawn_program(["sh", "-c", f"sleep {marker} & sleep {marker}"]), 0.5)
    assert ex.timed_out and ex.exit_code == -signal.SIGKILL
    assert 0.5 <= ex.wall_ns / 1e9 < 0.5 + DRAIN_S and time.monotonic() - t0 < 0.5 + DRAIN_S
    time.sleep(0.1)
    assert sleeping(marker) == []


def test_a_stderr_held_by_a_process_outside_its_group_is_read_for_drain_s_at_most(tmp_path):
    # the background sleep leaves the program's group (setsid, given 0.2 s to) and keeps its stderr open for
    # 30 s
    holder = tmp_path / "holder.pid"
    script = f"setsid sh -c 'echo $$ > {holder}; exec sleep 30' & sleep 0.2; echo started >&2"
    p = spawn_program(["sh", "-c", script])
    t0 = time.monotonic()
    try:
        ex = wait_program(p, 60)
        assert ex.exit_code == 0 and ex.stderr == "started\n"
        assert DRAIN_S <= time.monotonic() - t0 < DRAIN_S + 5
        assert 0.2e9 <= ex.wall_ns < DRAIN_S * 1e9  # its own end, not that of what held its stderr
    finally:
        os.kill(int(holder.read_text()), signal.SIGKILL)


def test_a_program_that_cannot_start_raises_the_exec_s_error():
    with pytest.raises(FileNotFoundError):
        spawn_program(["/nonexistent/boardlab-program"])
