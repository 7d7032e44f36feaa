"""The two ways the runner starts a program itself behave alike: boardlab-kern's launcher (platform.launcher,
one process per campaign that spawns, waits and times in C) and the in-process starter it falls back to
(platform.spawn.InProcessStarter). Each: wall time from the spawn to the exit, wait4's rusage, pinned to the
CPUs asked for, the end of its stderr kept, its group killed at its end and at its timeout, a start error
told by strerror, the monitor's first sample asked for only when the program outlives it. Then what is the
launcher's alone: the program reaped as it ends with no exchange in the middle of a run, the runner's end
kills the program, and a boardlab-kern without the launcher is refused with its reason."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from boardlab.native import kern_path
from boardlab.platform.launcher import Launcher, LauncherUnavailable
from boardlab.platform.spawn import STDERR_KEEP_BYTES, InProcessStarter, direct_spawn_reason

from helpers import sleeping

pytestmark = [
    pytest.mark.skipif(direct_spawn_reason() is not None, reason=str(direct_spawn_reason())),
    pytest.mark.spawns,
]
CPU = max(os.sched_getaffinity(0))


@pytest.fixture(params=["launcher", "in-process"])
def starter(request):
    env = dict(os.environb)
    s = Launcher(kern_path(), env) if request.param == "launcher" else InProcessStarter(env)
    yield s
    s.close()


def _run(starter, argv, timeout_s=60.0, cpus=None, running_after=None):
    p = starter.spawn(argv, cpus, timeout_s)
    assert not isinstance(p, str), p
    return starter.wait(p, running_after=running_after)


def test_its_time_is_its_own_its_rusage_wait4s_and_it_runs_on_the_cpus_asked_for(starter, tmp_path):
    out = tmp_path / "cpus"
    busy = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"
    ex = _run(
        starter, ["sh", "-c", f"{busy}; grep Cpus_allowed_list /proc/self/status > '{out}'"], cpus={CPU}
    )
    assert ex.exit_code == 0 and not ex.timed_out and ex.start_error is None and ex.stderr == ""
    cpu_us = ex.rusage["utime_us"] + ex.rusage["stime_us"]
    assert cpu_us > 0 and ex.rusage["maxrss_kib"] > 0 and ex.rusage["minflt"] > 0
    assert ex.wall_ns >= cpu_us * 1000 * 0.9  # one thread: wall >= CPU
    assert out.read_text().split()[-1] == str(CPU)


def test_a_failure_keeps_the_end_of_its_stderr_and_its_exit_code(starter):
    script = "head -c 1048576 /dev/zero | tr '\\0' x >&2; echo >&2; echo the end >&2; exit 3"
    ex = _run(starter, ["sh", "-c", script])
    assert ex.exit_code == 3
    assert len(ex.stderr) == STDERR_KEEP_BYTES and ex.stderr.endswith("xxx\nthe end\n")


def test_a_hang_is_killed_with_its_group_at_the_timeout(starter):
    marker = _marker(57)
    t0 = time.monotonic()
    ex = _run(starter, ["sh", "-c", f"sleep {marker} & sleep {marker}"], timeout_s=0.5)
    assert ex.timed_out and ex.exit_code == -signal.SIGKILL
    assert 0.5 <= ex.wall_ns / 1e9 < 1.5 and time.monotonic() - t0 < 1.5
    time.sleep(0.1)
    assert sleeping(marker) == []


def test_what_it_leaves_running_in_its_group_is_killed_at_its_end(starter):
    marker = _marker(55)
    ex = _run(starter, ["sh", "-c", f"sleep {marker} & echo started"])
    assert ex.exit_code == 0 and not ex.timed_out and ex.wall_ns < 5e9
    time.sleep(0.1)
    assert sleeping(marker) == []


def test_a_program_that_cannot_start_is_told_by_strerror(starter):
    assert starter.spawn(["/nonexistent/boardlab-program"], None, 5) == os.strerror(2)


def test_the_monitor_s_first_sample_is_asked_for_only_when_the_program_outlives_it(starter):
    calls: list[float] = []
    _run(starter, ["true"], running_after=(0.2, lambda: calls.append(time.monotonic())))
    assert calls == []
    t0 = time.monotonic()
    ex = _run(starter, ["sleep", "0.5"], running_after=(0.2, lambda: calls.append(time.monotonic() - t0)))
    assert ex.exit_code == 0 and len(calls) == 1 and 0.15 <= calls[0] < 0.45


def test_a_stop_interrupts_the_program_s_group(starter, tmp_path):
    got = tmp_path / "got"
    p = starter.spawn(["sh", "-c", f"trap 'echo INT > {got}; exit 5' INT; sleep 30 & wait"], None, 60)
    time.sleep(0.3)  # the trap is set
    t0 = time.monotonic()
    starter.stop(p)
    assert time.monotonic() - t0 < 2 and got.read_text() == "INT\n"
    assert not _alive(p.pid)


def test_the_launcher_reaps_the_program_as_it_ends_and_its_reply_waits_for_the_runner():
    """No exchange in the middle of a run: the launcher never waits for the runner to read its replies."""
    launcher = Launcher(kern_path(), dict(os.environb))
    try:
        p = launcher.spawn(["true"], None, 5)
        time.sleep(0.2)  # `true` has ended, and been reaped, before the runner asks for its end
        assert _state(p.pid) is None
        t0 = time.monotonic()
        ex = launcher.wait(p)
        assert ex.exit_code == 0 and 0 < ex.wall_ns < 0.2e9 and time.monotonic() - t0 < 0.05
    finally:
        launcher.close()


def test_a_sigkilled_runner_s_launcher_kills_its_program_and_exits():
    """The runner's death closes the launcher's stdin: the launcher kills the running program's group."""
    marker = _marker(54)
    runner = (
        "import os, sys, time\n"
        "from boardlab.native import kern_path\n"
        "from boardlab.platform.launcher import Launcher\n"
        "launcher = Launcher(kern_path(), dict(os.environb))\n"
        f"p = launcher.spawn(['sh', '-c', 'sleep {marker} & sleep {marker}'], None, 60)\n"
        "print(launcher._proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    launcher_pid = int(proc.stdout.readline())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(sleeping(marker)) < 2:
        time.sleep(0.05)
    assert len(sleeping(marker)) == 2
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (sleeping(marker) or _alive(launcher_pid)):
        time.sleep(0.05)
    assert sleeping(marker) == [] and not _alive(launcher_pid)


def test_a_malformed_request_ends_the_launcher_with_its_reason():
    proc = subprocess.Popen(
        [str(kern_path()), "launch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(b"R" + struct.pack("=I", 8) + b"\0" * 8, timeout=10)
    assert out == b"L" + struct.pack("=I", 1)
    assert proc.returncode == 2 and b"malformed request" in err


def test_a_boardlab_kern_without_the_launcher_is_refused_with_its_reason(tmp_path):
    old = tmp_path / "old-kern"
    old.write_text("#!/bin/sh\necho \"boardlab-kern: unknown kernel '$1'\" >&2\nexit 2\n")
    old.chmod(0o755)
    with pytest.raises(LauncherUnavailable, match="unknown kernel 'launch'"):
        Launcher(old, dict(os.environb))
    with pytest.raises(LauncherUnavailable, match="cannot start"):
        Launcher(tmp_path / "missing", dict(os.environb))


def test_the_launcher_refuses_a_terminal_and_stray_arguments():
    proc = subprocess.run([str(kern_path()), "launch", "--now"], capture_output=True, timeout=10)
    assert proc.returncode == 2 and b"usage: boardlab-kern launch" in proc.stderr


def _marker(seconds: int) -> str:
    """A sleep's argument no other process has (this test's alone: the two starters' cases run in turn)."""
    return f"{seconds}.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")
