"""The runner's program launcher: `boardlab-kern launch`, one process per campaign, which starts each
program the runner runs itself (campaign/direct.py) and times it as hyperfine does: the clock, posix_spawn,
a wait on the program's pidfd, the clock, all in C on the program's CPU. Started from Python instead, a spawn
cost 0.4 ms of interpreter work and two migrations of the runner's thread, and the wall time of a 0.5 ms
program came out a fifth longer than hyperfine's.

One run: `spawn` (the launcher answers with the pid and its clock's start), the monitor is told the pid,
then `wait` reads its wall time, exit status, rusage and the end of its stderr. The launcher reaps the
program as it ends, and its reply waits in the pipe: the runner is woken twice a run, and the launcher
never waits for the runner. The launcher kills the program's group at the timeout, and at once if the
runner dies (its stdin closes): it is the guard of its programs. The wire format is launch.c's (native byte
order: both ends are this machine).
"""

from __future__ import annotations

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
from boardlab.platform.spawn import DRAIN_S, interrupt_group  # DRAIN_S: launch.c's DRAIN_NS too

PROTOCOL = 1
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


@dataclass(frozen=True)
class Launched:
    """A program the launcher started: its pid (the leader of its own group) and the launcher's clock
    (CLOCK_MONOTONIC, Python's time.monotonic_ns) just before its spawn; its timeout, for the reply's wait."""

    pid: int
    t0_ns: int
    timeout_s: float


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

    def spawn(self, argv: Sequence[str], cpus: set[int] | None, timeout_s: float) -> Launched | str:
        """Starts `argv` (searched on PATH) pinned to `cpus` (None: the launcher's own affinity), to be killed
        with its group after `timeout_s`: the program, or why it could not start (as strerror says it)."""
        words = b"".join(os.fsencode(a) + b"\0" for a in argv)
        pins = sorted(cpus) if cpus else []
        body = struct.pack(f"=qI{len(pins)}I", int(timeout_s * 1e9), len(pins), *pins)
        body += struct.pack("=I", len(argv)) + words
        self._send(struct.pack("=cI", b"R", len(body)) + body)
        kind = self._reply(1, time.monotonic_ns() + int(SPARE_S * 1e9))
        if kind == b"E":
            (err,) = _ERROR.unpack(self._must(_ERROR.size))
            return os.strerror(err)
        if kind != b"S":
            raise MeasurementError(f"boardlab-kern launch answered {kind!r} to a start: {self._end()}")
        pid, t0_ns = _STARTED.unpack(self._must(_STARTED.size))
        return Launched(pid, t0_ns, timeout_s)

    def wait(
        self, p: Launched, running_after: tuple[float, Callable[[], None]] | None = None
    ) -> DirectExecution:
        """The program's end as the launcher saw it. `running_after` (s, call): `call` once, if the program
        still runs `s` after its spawn (the monitor's first sample is due)."""
        deadline = p.t0_ns + int((p.timeout_s + DRAIN_S + SPARE_S) * 1e9)
        if running_after is not None:
            due = p.t0_ns + int(running_after[0] * 1e9)
            if self._reply(0, due) is None:  # still running at its first sample's time
                running_after[1]()
        head = self._reply(_FINISHED.size, deadline)
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
        """Ctrl-C or SIGTERM reached boardlab while `p` ran: SIGINT to its group, SIGKILL after the grace
        period. The launcher is ended with it (its protocol may have been cut mid-message): it kills whatever
        is left of the group as its stdin closes, and reaps the program."""
        interrupt_group(p.pid, grace_s)
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
        any has come)."""
        poller = select.poll()
        poller.register(self._out, select.POLLIN)
        while not poller.poll(max(0, (deadline_ns - time.monotonic_ns()) // 1_000_000 + 1)):
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
