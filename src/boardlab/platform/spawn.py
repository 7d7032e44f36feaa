"""Starting workers and loads: pinned, in their own process group, and dying with boardlab.

A worker inherits the CPU affinity of the thread that forks it, so the runner pins only itself for the
instant of the spawn; the child gets PR_SET_PDEATHSIG so that a SIGKILLed boardlab leaves no process
behind, and its own process group so that Ctrl-C reaches boardlab, which then stops it cleanly. The signal
follows the *thread* that forked the child, not the process: spawn from a thread that lives as long as the
child must (the main thread, or one that waits for it); a pool's worker thread may end first and take the
child with it (web/background.py starts its worker from a thread of its own for that reason).

A process group, not a session: the scheduler's autogroups (CONFIG_SCHED_AUTOGROUP, on in Debian's kernels)
share CPU time per session, so a worker and a stressor each in a session of its own would split a CPU 50/50
however many stressor workers there are. In boardlab's session they share it per task, as in the
interference study's script, and as on kernels without autogroups (bench/bench_stressors.py and
test_conditions_stressor.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from boardlab.errors import MeasurementError
from boardlab.model.workload import DirectExecution

PR_SET_PDEATHSIG = 1
_spawn_lock = threading.Lock()


@functools.cache  # the C library of this process: loaded once, never changes
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent(parent_pid: int, libc: ctypes.CDLL) -> None:  # in the child between fork and exec
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def pool_worker_setup(parent_pid: int) -> None:
    """The initializer of a `concurrent.futures` worker process (serve's analyses, an ingest's summaries):
    it dies with boardlab, even SIGKILLed, and sits in a process group of its own, so that Ctrl-C is
    boardlab's to handle (a worker interrupted between tasks would print a traceback). The death signal
    follows the thread that started the worker: start it from one that lives as long as the pool."""
    _die_with_parent(parent_pid, _libc())
    os.setpgid(0, 0)


def kill_pool(pool: Any, wait_s: float = 5.0) -> None:
    """Ends a `concurrent.futures` process pool now, mid-task or not (serve stopping, an ingest that failed):
    its workers killed, then its manager thread waited for, a bounded while (it takes milliseconds once the
    workers are dead). Left to end by itself, the thread closes its wake-up pipe while Python 3.11's exit
    hook writes to it, having checked it open without the pool's lock: a close between the two printed a
    traceback (EBADF) after boardlab's own last words, one exit in many."""
    manager = getattr(pool, "_executor_manager_thread", None)  # taken before shutdown, which lets go of it
    for proc in list((getattr(pool, "_processes", None) or {}).values()):  # no public handle on them
        proc.kill()
        proc.join()
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(timeout=wait_s)


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


def boardlab_child_env() -> dict[str, str]:
    """This process's environment for a Python child (`python -P ...`) that must import the boardlab this one
    runs, whatever the current directory or PYTHONPATH: the package's parent directory first on its path."""
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (home, os.environ.get("PYTHONPATH"))))}


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
    libc = None if self_reaping else _libc()  # loaded here: the child between fork and exec loads nothing
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
            preexec_fn=None if libc is None else (lambda: _die_with_parent(parent, libc)),
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
    return code, _rusage(ru)


def _rusage(ru) -> dict[str, int]:
    return {
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
    group with SIGKILL if `timeout_s` passes first: (stdout, stderr, exit code, rusage, whether it was
    killed).

    One thread waits on both pipes and the child's pidfd: no timer thread is started per run, which on a busy
    board costs a scheduler wake-up (milliseconds) before each worker. As with Deadline, the kill can only
    happen before the reap, so it never reaches a recycled PID. Without pidfd (Linux < 5.3), Deadline does
    it."""
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


@contextmanager
def owned(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`proc` for the block: its whole group stopped if the block ends in an error or a stop (Ctrl-C,
    SIGTERM), its pipes closed however it ends."""
    try:
        yield proc
    except BaseException:
        stop_group(proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


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


# ---- a program started by the runner itself (a workload's DirectLaunch): no worker process between them ----

STDERR_KEEP_BYTES = 64 << 10  # of a directly started program's stderr, the end kept for a failed run's error
# after its end, how long its stderr is read for what is left (a process outside its group may hold it)
DRAIN_S = 1.0
# what Python ignores and a program expects at their defaults (subprocess's restore_signals; SIGXFZ is not
# Linux's)
_DEFAULT_SIGNALS = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, n))


def direct_spawn_reason() -> str | None:
    """Why this system cannot start a program without a worker: a pidfd (Linux 5.3) is how its end is awaited
    beside its stderr and its timeout, in one poll, with no thread; posix_spawn (Python 3.8) how it starts."""
    if not hasattr(os, "posix_spawnp") or not hasattr(os, "pidfd_open"):
        return "this Python has no os.posix_spawnp or os.pidfd_open"
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError as exc:
        return f"pidfd_open: {exc.strerror} (Linux before 5.3)"
    return None


@dataclass(frozen=True)
class Started:
    """A program spawn_program started: its pid (the leader of its own process group), its pidfd, the read
    end of its stderr and the monotonic time just before its spawn."""

    pid: int
    pidfd: int
    stderr_fd: int
    t0_ns: int


def spawn_program(
    argv: Sequence[str], *, cpus: set[int] | None = None, env: Mapping[bytes, bytes] | None = None
) -> Started:
    """Starts `argv` (searched on PATH) with posix_spawn, which glibc makes a vfork: nothing of the runner's
    memory is copied, so the start costs what hyperfine's does. Its own process group, in boardlab's session
    (see the module's docstring); stdin and stdout /dev/null, as hyperfine -N gives them; stderr a pipe; the
    signals Python ignores back at their defaults; pinned through the calling thread (Linux affinity is
    per thread, inherited). `env`: this process's environment, as `dict(os.environb)` (the default) makes
    it; a caller that spawns often converts it once. OSError when it cannot start (glibc reports the exec's
    error)."""
    env = dict(os.environb) if env is None else env
    r, w = os.pipe()  # both close-on-exec; dup2 onto 2 gives the child its end
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, w, 2),
    ]
    try:
        with _spawn_lock, thread_affinity(cpus):
            t0 = time.monotonic_ns()
            pid = os.posix_spawnp(
                argv[0], list(argv), env, file_actions=actions, setpgroup=0, setsigdef=_DEFAULT_SIGNALS
            )
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return Started(pid, os.pidfd_open(pid), r, t0)


def wait_program(
    p: Started,
    timeout_s: float,
    *,
    before_reap: Callable[[], None] = lambda: None,
    running_after: tuple[float, Callable[[], None]] | None = None,
) -> DirectExecution:
    """Waits for the program's end in one poll on its pidfd and its stderr, killing its group with SIGKILL if
    `timeout_s` passes first. The moment it exits is its end (wall time from the spawn, as hyperfine's);
    whatever it left running in its group is killed then (its zombie keeps the group's id ours), its stderr
    read to its end for at most DRAIN_S more, `before_reap` called, and it is reaped with wait4 (its own
    rusage). `running_after` (s, call): `call` once, if the program still runs `s` after its spawn."""
    tail = bytearray()
    poller = select.poll()
    for fd in (p.pidfd, p.stderr_fd):
        poller.register(fd, select.POLLIN)
    end_ns = p.t0_ns + int(timeout_s * 1e9)
    due = (p.t0_ns + int(running_after[0] * 1e9), running_after[1]) if running_after else None
    exited_ns = drain_end_ns = None
    reading, fired = True, False
    try:
        while reading or exited_ns is None:
            now = time.monotonic_ns()
            if due is not None and exited_ns is None and now >= due[0]:
                due[1]()
                due = None
            until = drain_end_ns if exited_ns is not None else (None if fired else end_ns)
            if until is not None and now >= until:
                if exited_ns is not None:  # its stderr is held open by something outside its group
                    break
                fired = True
                _kill_group(p.pid)
                continue
            if due is not None and exited_ns is None:
                until = due[0] if until is None else min(until, due[0])
            events = poller.poll(None if until is None else (until - now) / 1e6 + 1)
            for fd, _ in events:
                if fd == p.pidfd:
                    exited_ns = time.monotonic_ns()
                    drain_end_ns = exited_ns + int(DRAIN_S * 1e9)
                    poller.unregister(fd)
                    _kill_group(p.pid)  # what it left running in its group (a daemon, a background job)
                elif not _read_tail(fd, tail):
                    reading = False
                    poller.unregister(fd)
    finally:
        os.close(p.pidfd)
        os.close(p.stderr_fd)
    before_reap()
    _, status, ru = os.wait4(p.pid, 0)
    return DirectExecution(
        wall_ns=exited_ns - p.t0_ns,
        exit_code=os.waitstatus_to_exitcode(status),
        rusage=_rusage(ru),
        stderr=tail.decode(errors="replace"),
        timed_out=fired,
    )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _read_tail(fd: int, tail: bytearray) -> bool:
    """One read of a pipe into the end of `tail` (at most STDERR_KEEP_BYTES kept); False at its end."""
    try:
        chunk = os.read(fd, 1 << 16)
    except OSError:
        return False
    tail += chunk
    del tail[: max(0, len(tail) - STDERR_KEEP_BYTES)]
    return bool(chunk)


def interrupt_group(pgid: int, grace_s: float) -> None:
    """SIGINT to the group that `pgid` leads, SIGKILL if its leader has not ended within `grace_s`."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        if _ends_within(pgid, grace_s):
            _kill_group(pgid)  # the leader is gone; no member of its group lingers
            break


def stop_program(p: Started, *, grace_s: float = 2.0) -> None:
    """stop_group for a program spawn_program started (Ctrl-C or SIGTERM reached boardlab while it ran):
    SIGINT to its group, SIGKILL after the grace period, then reaped. Its descriptors are closed already."""
    interrupt_group(p.pid, grace_s)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(p.pid, 0)


def _ends_within(pid: int, grace_s: float) -> bool:
    """Whether process `pid` has exited within `grace_s`: its pidfd, which any process may open (this one's
    child, left unreaped, or the launcher's), is readable from its exit on; a process gone already has
    ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], grace_s)[0])
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Guarded:
    """A program InProcessStarter started, with the timeout its wait applies."""

    started: Started
    timeout_s: float

    @property
    def pid(self) -> int:
        return self.started.pid

    @property
    def t0_ns(self) -> int:
        return self.started.t0_ns


class InProcessStarter:
    """Programs started from this process (spawn_program), the guard watching each: what the runner uses
    where boardlab-kern's launcher cannot serve (platform.launcher). The same calls as the launcher's."""

    def __init__(self, env: Mapping[bytes, bytes]):
        self._env = env
        self._guard = OrphanGuard()

    def spawn(
        self, argv: Sequence[str], cpus: set[int] | None, timeout_s: float, tell_after_s: float | None = None
    ) -> Guarded | str:
        """The program, or why it could not start (as strerror says it). Its pid is known at once here: so
        `tell_after_s`, the launcher's, does not apply."""
        try:
            p = spawn_program(argv, cpus=cpus, env=self._env)
        except OSError as exc:
            return exc.strerror or str(exc)
        self._guard.watch(p.pid)
        return Guarded(p, timeout_s)

    def wait(
        self,
        p: Guarded,
        on_start: Callable[[int, bool], None] | None = None,
        running_after: tuple[float, Callable[[], None]] | None = None,
    ) -> DirectExecution:
        if on_start is not None:
            on_start(p.started.pid, False)  # reaped below, by this process
        return wait_program(
            p.started, p.timeout_s, before_reap=self._guard.clear, running_after=running_after
        )

    def stop(self, p: Guarded) -> None:
        stop_program(p.started)
        self._guard.clear()

    def close(self) -> None:
        self._guard.close()


# The guard: one small process per campaign, blocked reading a pipe that only the runner can write. When the
# runner ends in any way, SIGKILL included, the kernel closes that pipe, and the guard kills the process group
# named in the page the two share (0: none), then exits.
_GUARD_SOURCE = """\
import mmap, os, signal, sys
r, m = int(sys.argv[1]), int(sys.argv[2])
page = mmap.mmap(m, 8, prot=mmap.PROT_READ)
os.write(1, b"watching\\n")
while os.read(r, 64):
    pass
pgid = int.from_bytes(page[:8], "little")
if pgid > 0:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
"""


class OrphanGuard:
    """For programs the runner starts itself, what PR_SET_PDEATHSIG is for a worker: a SIGKILLed boardlab
    leaves no program running. posix_spawn runs no code of ours in the child, so the child cannot ask for its
    parent's death signal; a guard process does it instead, started once per campaign (not per run), and the
    runner tells it which group to kill by writing 8 bytes into a shared page: no system call, no wake-up."""

    def __init__(self) -> None:
        try:
            self._fd = os.memfd_create("boardlab-guard")
        except (AttributeError, OSError):  # Linux before 3.17: an unlinked temporary file serves the same
            import tempfile

            self._fd = os.dup(tempfile.TemporaryFile().fileno())
        os.ftruncate(self._fd, 8)
        self._page = mmap.mmap(self._fd, 8)
        r, self._w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARD_SOURCE, str(r), str(self._fd)],
                pass_fds=(r, self._fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                process_group=0,  # Ctrl-C is boardlab's to handle: the guard ends when the runner closes it
            )
        finally:
            os.close(r)
        assert self._proc.stdout is not None
        # Its word that it watches, before any program starts: and its start-up (an interpreter's, some 20 ms
        # of CPU) is over before the first run, which it once slowed by 2 to 3 ms on the runner's CPU.
        ready = self._proc.stdout.readline()
        self._proc.stdout.close()
        if ready != b"watching\n":
            raise MeasurementError(f"boardlab's guard process did not start (exit {self._proc.wait()})")

    def watch(self, pgid: int) -> None:
        """The group to kill should boardlab die now (0: none)."""
        self._page[:8] = pgid.to_bytes(8, "little")

    def clear(self) -> None:
        self.watch(0)

    def close(self) -> None:
        self.clear()
        os.close(self._w)  # the guard reads its end, finds no group and exits
        self._proc.wait()
        self._page.close()
        os.close(self._fd)
