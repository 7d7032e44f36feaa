"""Starting workers and loads: pinned, in their own process group, and dying with boardlab.

A worker inherits the CPU affinity of the thread that forks it, so the runner pins only itself for the
instant of the spawn; the child gets PR_SET_PDEATHSIG so that a SIGKILLed boardlab leaves no process
behind, and its own process group so that Ctrl-C reaches boardlab, which then stops it cleanly.

A process group, not a session: the scheduler's autogroups (CONFIG_SCHED_AUTOGROUP, on in Debian's kernels)
share CPU time per session, so a worker and a stressor each in a session of its own would split a CPU 50/50
however many stressor workers there are. In boardlab's session they share it per task, as in the interference study's
script, and as on kernels without autogroups (bench/bench_stressors.py and test_conditions_stressor.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1
_spawn_lock = threading.Lock()
_libc = None


def _die_with_parent(parent_pid: int) -> None:  # runs in the child between fork and exec
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


@contextmanager
def thread_affinity(cpus: set[int] | None):
    """Pins the calling thread (Linux affinity is per thread) for the duration, then restores it."""
    before = os.sched_getaffinity(0) if cpus else set()
    if not cpus or before == cpus:  # already there: nothing to move
        yield
        return
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def spawn(
    argv: Sequence[str],
    *,
    cpus: set[int] | None = None,
    env: dict | None = None,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    cwd: str | None = None,
    self_reaping: bool = False,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen:
    """`self_reaping`: the program sets its own death signal from BOARDLAB_PARENT_PID (boardlab-kern does),
    so no preexec hook is needed and Python can spawn with vfork, a few ms cheaper per run."""
    parent = os.getpid()
    if self_reaping:
        env = {**(os.environ if env is None else env), "BOARDLAB_PARENT_PID": str(parent)}
    with _spawn_lock, thread_affinity(cpus):
        return subprocess.Popen(
            list(argv),
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            pass_fds=pass_fds,
            process_group=0,  # setpgid(0, 0): its own group, in boardlab's session (see above)
            preexec_fn=None if self_reaping else (lambda: _die_with_parent(parent)),
        )


class Deadline:
    """Kills a process's whole group with SIGKILL when `timeout_s` passes before `disarm()`.

    wait_rusage disarms it only after the child has exited but before it is reaped (waitid WNOWAIT): the
    zombie keeps its PID and group ID reserved, so the kill can never reach a recycled PID."""

    def __init__(self, proc: subprocess.Popen, timeout_s: float):
        self.proc = proc
        self.timeout_s = timeout_s
        self.fired = False
        self._lock = threading.Lock()
        self._armed = True
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self.fired = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # spawn() made it the leader of its own group
            except ProcessLookupError:
                pass

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        self._timer.cancel()


def wait_rusage(proc: subprocess.Popen, deadline: Deadline | None = None) -> tuple[int, dict[str, int]]:
    """Reaps the child with wait4 for its own rusage (not RUSAGE_CHILDREN of all our children)."""
    if deadline is not None:
        while True:
            try:
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                break
            except InterruptedError:
                continue
        deadline.disarm()
    _, status, ru = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    return code, {
        "utime_us": int(ru.ru_utime * 1e6),
        "stime_us": int(ru.ru_stime * 1e6),
        "maxrss_kib": ru.ru_maxrss,
        "minflt": ru.ru_minflt,
        "majflt": ru.ru_majflt,
        "nvcsw": ru.ru_nvcsw,
        "nivcsw": ru.ru_nivcsw,
    }


def collect(proc: subprocess.Popen, timeout_s: float) -> tuple[bytes, bytes, int, dict[str, int], bool]:
    """Reads the child's stdout and stderr to their end and reaps it with wait4 (its own rusage), killing its
    group with SIGKILL if `timeout_s` passes first: (stdout, stderr, exit code, rusage, whether it was killed).

    One thread waits on both pipes and the child's pidfd: no timer thread is started per run, which on a busy
    board costs a scheduler wake-up (milliseconds) before each worker. As with Deadline, the kill can only
    happen before the reap, so it never reaches a recycled PID. Without pidfd (Linux < 5.3), Deadline does it."""
    assert proc.stdout is not None and proc.stderr is not None  # spawn pipes both
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return _collect_with_timer(proc, timeout_s)
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    open_fds = set(chunks)
    poller = select.poll()
    for fd in (*open_fds, pidfd):
        poller.register(fd, select.POLLIN)
    end = time.monotonic() + timeout_s
    exited = fired = False
    try:
        while open_fds or not exited:
            if fired and exited:  # killed: a process outside its group may hold the pipes, don't wait for it
                break
            left = end - time.monotonic()
            if left <= 0 and not fired:
                fired = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # spawn() made it the leader of its own group
            for fd, _ in poller.poll(None if fired else max(left, 0.0) * 1000 + 1):
                if fd == pidfd:
                    exited = True
                    poller.unregister(pidfd)
                    continue
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    open_fds.discard(fd)
                    poller.unregister(fd)
    finally:
        os.close(pidfd)
    code, rusage = wait_rusage(proc)
    out, err = (b"".join(chunks[f.fileno()]) for f in (proc.stdout, proc.stderr))
    return out, err, code, rusage, fired


def _collect_with_timer(proc: subprocess.Popen, timeout_s: float):
    assert proc.stdout is not None and proc.stderr is not None
    deadline = Deadline(proc, timeout_s)
    try:
        out, err = proc.stdout.read(), proc.stderr.read()
        code, rusage = wait_rusage(proc, deadline)
    finally:
        deadline.disarm()
    return out, err, code, rusage, deadline.fired


def stop_group(proc: subprocess.Popen, *, grace_s: float = 2.0, first: int = signal.SIGINT) -> None:
    """SIGINT (or `first`) to the process group, then SIGKILL after a grace period; reaps the leader."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid
    for sig in (first, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        if proc.poll() is not None:
            try:  # the leader is gone; make sure no member of its group lingers
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
    if proc.returncode is None:
        proc.wait()
