"""The runner's program launcher: `boardlab-kern launch`, one process per campaign, which starts each
program the runner runs itself (campaign/direct.py) and times it as hyperfine does: the clock, posix_spawn,
a wait on the program's pidfd, the clock, all in C on the program's CPU. Started from Python instead, a spawn
cost 0.4 ms of interpreter work and two migrations of the runner's thread, and the wall time of a 0.5 ms
program came out a fifth longer than hyperfine's.

One run: `spawn` writes the request; `wait` reads the pid and its clock's start (then the monitor is told
the pid), and its wall time, exit status, rusage and the end of its stderr. The launcher tells the pid only
once the program has run as long as the monitor's first interval, or with its end: the runner sleeps through
a short program and is woken once (woken at the spawn, it ran beside the program and lengthened a 0.7 ms
`/bin/true` by a third). The launcher reaps the program as it ends, and never waits for the runner. It kills
the program's group at the timeout, and at once if the runner dies (its stdin closes): it is the guard of
its programs. A stop (Ctrl-C) is asked of it, since the runner may not know the pid yet. The wire format is
launch.c's (native byte order: both ends are this machine).
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from boardlab.errors import MeasurementError
from boardlab.model.workload import DirectExecution
from boardlab.platform.spawn import DRAIN_S  # launch.c's DRAIN_NS too

PROTOCOL = 2
# the launcher's start: an exec of a small binary (seconds under qemu-user or from a slow SD card)
HELLO_TIMEOUT_S = 10.0
SPARE_S = 10.0  # beyond a run's timeout and stderr's drain, how long the launcher's reply may take
_HELLO = struct.Struct("=cI")
_STARTED = struct.Struct("=iq")  # after its kind byte 'S': the pid and the clock before the spawn
_ERROR = struct.Struct("=i")  # after 'E': the errno
_FINISHED = struct.Struct("=cqiB7qI")
RUSAGE_KEYS = ("utime_us", "stime_us", "maxrss_kib", "minflt", "majflt", "nvcsw", "nivcsw")


class LauncherUnavailable(Exception):
    """The launcher cannot serve this campaign (missing, too old, or this kernel lacks pidfd): the reason."""


@dataclass
class Launched:
    """A program asked of the launcher: its timeout and when it was asked (for the replies' deadlines); once
    `wait` has read the launcher's 'S', its pid (the leader of its own group) and the launcher's clock
    (CLOCK_MONOTONIC, Python's time.monotonic_ns) just before its spawn."""

    timeout_s: float
    asked_ns: int
    pid: int | None = None
    t0_ns: int | None = None


class Launcher:
    def __init__(self, kern: Path | str, env: Mapping[bytes, bytes]):
        """Starts `kern launch` with `env` (the programs' environment): its own process group, so that a
        Ctrl-C, which is boardlab's to handle, does not reach it, and a kill of boardlab's group leaves it
        to kill its program. LauncherUnavailable if it does not answer as this protocol's launcher."""
        try:
            self._proc = subprocess.Popen(
                [str(kern), "launch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                process_group=0,
                bufsize=0,
            )
        except OSError as exc:
            raise LauncherUnavailable(f"cannot start {kern} launch: {exc.strerror or exc}") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._ended: str | None = None  # how it ended, once it has
        self._in, self._out = self._proc.stdin.fileno(), self._proc.stdout.fileno()
        try:
            hello = self._reply(_HELLO.size, time.monotonic_ns() + int(HELLO_TIMEOUT_S * 1e9))
        except MeasurementError:  # it ended first (a boardlab-kern from before the launcher)
            hello = None
        if hello is None or _HELLO.unpack(hello) != (b"L", PROTOCOL):
            why = self._end()
            raise LauncherUnavailable(f"{kern} launch did not start as protocol {PROTOCOL}'s launcher: {why}")

    def spawn(
        self, argv: Sequence[str], cpus: set[int] | None, timeout_s: float, tell_after_s: float | None = None
    ) -> Launched:
        """Asks for `argv` (searched on PATH) pinned to `cpus` (None: the launcher's own affinity), to be
        killed with its group after `timeout_s`; its pid is told once it has run `tell_after_s` (None: with
        its end). Whether it started is `wait`'s to say."""
        words = b"".join(os.fsencode(a) + b"\0" for a in argv)
        pins = sorted(cpus) if cpus else []
        tell_ns = -1 if tell_after_s is None else int(tell_after_s * 1e9)
        body = struct.pack(f"=qqI{len(pins)}I", int(timeout_s * 1e9), tell_ns, len(pins), *pins)
        body += struct.pack("=I", len(argv)) + words
        asked = time.monotonic_ns()
        self._send(struct.pack("=cI", b"R", len(body)) + body)
        return Launched(timeout_s, asked)

    def wait(
        self,
        p: Launched,
        on_start: Callable[[int, bool], None] | None = None,
        running_after: tuple[float, Callable[[], None]] | None = None,
    ) -> DirectExecution:
        """The program's end as the launcher saw it (a start error as its `start_error`). `on_start(pid,
        ended)` once the pid is known, `ended` when the program has been reaped already (its end came with its
        start: a short program's, with spawn's `tell_after_s`); `running_after` (s, call): `call` once, if the
        program still ran `s` after its spawn (the monitor's first sample is due then)."""
        limit_ns = int((p.timeout_s + DRAIN_S + SPARE_S) * 1e9)
        kind = self._reply(1, p.asked_ns + limit_ns)
        if kind == b"E":
            (err,) = _ERROR.unpack(self._must(_ERROR.size))
            return DirectExecution.not_started(os.strerror(err))
        if kind != b"S":
            raise MeasurementError(f"boardlab-kern launch answered {kind!r} to a start: {self._end()}")
        p.pid, p.t0_ns = _STARTED.unpack(self._must(_STARTED.size))
        ended = self._reply(0, 0) is not None  # 'F' is sent after the reap: no process to follow
        if on_start is not None:
            on_start(p.pid, ended)
        if running_after is not None and not ended:
            running_after[1]()
        head = self._reply(_FINISHED.size, p.t0_ns + limit_ns)
        if head is None:
            raise MeasurementError(f"boardlab-kern launch gave no end of pid {p.pid}: {self._end()}")
        kind, wall_ns, status, timed_out, *usage, n = _FINISHED.unpack(head)
        if kind != b"F":
            raise MeasurementError(f"boardlab-kern launch answered {kind!r} at an end: {self._end()}")
        stderr = self._must(n).decode(errors="replace")
        if status < 0:  # wait4 failed in the launcher: it cannot happen to its own child
            raise MeasurementError(f"boardlab-kern launch could not reap pid {p.pid}")
        code = os.waitstatus_to_exitcode(status)
        return DirectExecution(
            wall_ns, code, dict(zip(RUSAGE_KEYS, usage, strict=True)), stderr, bool(timed_out)
        )

    def stop(self, p: Launched, grace_s: float = 2.0) -> None:
        """Ctrl-C or SIGTERM reached boardlab while `p` ran: the launcher sends SIGINT to its group and
        SIGKILL after the grace period, reaps it and ends (its replies may have been cut mid-message, so it
        is not used again). If it is not gone by then, its stdin's end makes it kill the group at once."""
        with contextlib.suppress(MeasurementError):  # gone already: _end says how
            self._send(b"I" + struct.pack("=q", int(grace_s * 1e9)))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(grace_s + SPARE_S)
        self._end()

    def close(self) -> None:
        """The campaign is over: stdin's end tells the launcher to exit."""
        self._end()

    def _send(self, data: bytes) -> None:
        try:
            os.write(self._in, data)  # a pipe's write of this size is whole (the launcher reads as it runs)
        except OSError as exc:
            raise MeasurementError(f"boardlab-kern launch is gone ({exc.strerror}): {self._end()}") from None

    def _reply(self, n: int, deadline_ns: int) -> bytes | None:
        """`n` bytes of the launcher's reply once it starts within the deadline, else None (n = 0: whether
        any has come; deadline 0: without waiting)."""
        poller = select.poll()
        poller.register(self._out, select.POLLIN)
        while not poller.poll(max(0, -((time.monotonic_ns() - deadline_ns) // 1_000_000))):
            if time.monotonic_ns() >= deadline_ns:
                return None
        return self._must(n) if n else b""

    def _must(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = os.read(self._out, n - len(data))
            if not chunk:
                raise MeasurementError(f"boardlab-kern launch ended mid-reply: {self._end()}")
            data += chunk
        return data

    def _end(self) -> str:
        """Closes the launcher's stdin, waits for it (killing it if it does not end) and says how it ended;
        once (a stop, then the campaign's close)."""
        proc = self._proc
        if self._ended is None:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            assert proc.stderr is not None
            err = proc.stderr.read().decode(errors="replace").strip()
            proc.stderr.close()
            self._ended = err or f"exit {proc.returncode}"
        return self._ended
