"""The two ways the runner starts a program itself behave alike: boardlab-kern's launcher (platform.launcher,
one process per campaign that spawns, waits and times in C) and the in-process starter it falls back to
(platform.spawn.InProcessStarter). Each: wall time from the spawn to the exit, wait4's rusage, pinned to the
CPUs asked for, the end of its stderr kept, its group killed at its end and at its timeout, a start error
told by strerror, the monitor's first sample asked for only when the program outlives it, a stop's SIGINT to
its group. Then what is the launcher's alone: the program reaped as it ends with no exchange in the middle of
a run, a short program's pid told with its end (one wake-up of the runner), the runner's end kills the
program, and a boardlab-kern without the launcher is refused with its reason."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from boardlab.native import kern_path
from boardlab.platform.launcher import PROTOCOL, Launcher, LauncherUnavailable
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


def _run(starter, argv, timeout_s=60.0, cpus=None, running_after=None, on_start=None):
    p = starter.spawn(argv, cpus, timeout_s, running_after[0] if running_after else None)
    assert not isinstance(p, str), p
    return starter.wait(p, on_start=on_start, running_after=running_after)


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
    p = starter.spawn(["/nonexistent/boardlab-program"], None, 5)  # the launcher tells it in its wait
    assert (p if isinstance(p, str) else starter.wait(p).start_error) == os.strerror(2)


def test_its_pid_is_told_once_and_is_the_program_s_with_whether_it_was_reaped(starter, tmp_path):
    """The launcher tells a pid with the end unless asked sooner (then the process is gone: the monitor
    need not look for it); the in-process starter tells it before its wait, the process still there."""
    out, told = tmp_path / "pid", []

    def on_start(pid: int, ended: bool) -> None:
        told.append((pid, ended, os.path.exists(f"/proc/{pid}")))

    ex = _run(starter, ["sh", "-c", f"echo $$ > '{out}'"], on_start=on_start)
    reaped = isinstance(starter, Launcher)
    assert ex.exit_code == 0 and told == [(int(out.read_text()), reaped, not reaped)]
    told.clear()
    ex = _run(starter, ["sleep", "0.4"], running_after=(0.1, lambda: None), on_start=on_start)
    assert ex.exit_code == 0 and [t[1:] for t in told] == [(False, True)]  # told while it runs


def test_the_monitor_s_first_sample_is_asked_for_only_when_the_program_outlives_it(starter):
    calls: list[float] = []
    _run(starter, ["true"], running_after=(0.2, lambda: calls.append(time.monotonic())))
    assert calls == []
    t0 = time.monotonic()
    ex = _run(starter, ["sleep", "0.5"], running_after=(0.2, lambda: calls.append(time.monotonic() - t0)))
    assert ex.exit_code == 0 and len(calls) == 1 and 0.15 <= calls[0] < 0.45


def test_a_stop_interrupts_the_program_s_group(starter, tmp_path):
    """SIGINT reaches the program (the launcher is asked: its pid is not told yet); its group goes."""
    got, marker = tmp_path / "got", _marker(53)
    script = f"trap 'echo INT > {got}; exit 5' INT; sleep {marker} & wait"
    p = starter.spawn(["sh", "-c", script], None, 60, 10.0)
    time.sleep(0.3)  # the trap is set
    t0 = time.monotonic()
    starter.stop(p)
    assert time.monotonic() - t0 < 2 and got.read_text() == "INT\n"
    time.sleep(0.1)
    assert sleeping(marker) == []


def test_the_launcher_reaps_the_program_as_it_ends_and_its_reply_waits_for_the_runner():
    """No exchange in the middle of a run: the launcher never waits for the runner to read its replies."""
    launcher = Launcher(kern_path(), dict(os.environb))
    try:
        p = launcher.spawn(["true"], None, 5)
        time.sleep(0.2)  # `true` has ended, and been reaped, before the runner asks for its end
        t0 = time.monotonic()
        ex = launcher.wait(p)
        assert ex.exit_code == 0 and 0 < ex.wall_ns < 0.2e9 and time.monotonic() - t0 < 0.05
        assert p.pid is not None and _state(p.pid) is None
    finally:
        launcher.close()


def _launch(tell_after_ns: int, *argv: bytes) -> subprocess.Popen:
    """`boardlab-kern launch` asked, by hand, for one program; its hello read."""
    proc = subprocess.Popen([str(kern_path()), "launch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    assert os.read(proc.stdout.fileno(), 5) == b"L" + struct.pack("=I", PROTOCOL)
    body = struct.pack("=qqII", int(60e9), tell_after_ns, 0, len(argv)) + b"".join(a + b"\0" for a in argv)
    proc.stdin.write(b"R" + struct.pack("=I", len(body)) + body)
    proc.stdin.flush()
    return proc


def test_a_short_program_s_pid_comes_with_its_end_in_one_write():
    """The runner is woken once for it: 'S' and 'F' come in one read, never 'S' alone."""
    proc = _launch(int(10e9), b"true")
    try:
        assert proc.stdout is not None
        first = os.read(proc.stdout.fileno(), 4096)
        assert first[:1] == b"S" and first[13:14] == b"F" and len(first) == 13 + 74
    finally:
        proc.communicate(timeout=10)
    assert proc.returncode == 0


def test_a_running_program_s_pid_comes_when_it_is_due():
    proc = _launch(int(0.2e9), b"sleep", b"0.6")
    try:
        assert proc.stdout is not None
        t0 = time.monotonic()
        started = os.read(proc.stdout.fileno(), 4096)
        told_s = time.monotonic() - t0
        assert started[:1] == b"S" and len(started) == 13 and 0.15 <= told_s < 0.5
        assert _alive(struct.unpack("=i", started[1:5])[0])
        assert os.read(proc.stdout.fileno(), 4096)[:1] == b"F"
    finally:
        proc.communicate(timeout=10)


def test_a_stop_between_runs_ends_the_launcher_quietly():
    launcher = Launcher(kern_path(), dict(os.environb))
    p = launcher.spawn(["true"], None, 5)
    assert launcher.wait(p).exit_code == 0
    launcher.stop(p)
    assert launcher._proc.returncode == 0 and launcher._end() == "exit 0"


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
