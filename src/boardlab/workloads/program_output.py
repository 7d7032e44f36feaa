"""What a program workload keeps of its program's output: both streams read through pipes while it runs, each
into a bounded head and tail, so a program that prints a gigabyte costs a run about 24 MiB of memory and
no temporary file (a full TMPDIR once left a program without its output, reported as "(no stderr)").

A figure is searched in the whole lines kept: the first OUTPUT_HEAD_BYTES and the last OUTPUT_TAIL_BYTES of
the stream. When that is not all of it, `Kept.text` says so, and the run records it as a warning.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque

OUTPUT_HEAD_BYTES = 4 << 20  # of each stream, the start a run keeps ...
OUTPUT_TAIL_BYTES = 4 << 20  # ... and the end (where most programs print their summary)
DRAIN_S = 1.0  # after the program's end, how long its pipes are read for what is left in them
_CHUNK_BYTES = 1 << 16


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


class Kept:
    """One stream of the program's output as a run keeps it: its first and last bytes, its length, and the
    error that stopped its reading, if one did."""

    def __init__(self, name: str):
        self.name = name
        self.head = bytearray()
        self.tail: deque[bytes] = deque()  # the last chunks read, dropped from the left as more come
        self.tail_bytes = 0
        self.total = 0
        self.error: str | None = None

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_bytes += len(chunk)
            while self.tail_bytes - len(self.tail[0]) >= OUTPUT_TAIL_BYTES:  # nothing is copied to trim it
                self.tail_bytes -= len(self.tail.popleft())

    def text(self) -> tuple[str, str | None]:
        """The text kept, and None when it is the whole stream, else the sentence that says what of it was
        kept. A cut stream keeps whole lines only: no figure is read across the gap."""
        tail = b"".join(self.tail)
        if len(self.head) + len(tail) == self.total and self.error is None:
            return (self.head + tail).decode(errors="replace"), None
        if self.error is not None:
            return (self.head + tail).decode(errors="replace"), (
                f"{self.name} could not be read whole ({self.error}): {_mib(self.total)} were read"
            )
        head = self.head[: self.head.rfind(b"\n") + 1]
        tail = tail[tail.find(b"\n", max(0, len(tail) - OUTPUT_TAIL_BYTES)) + 1 :]
        note = (
            f"{self.name}: {_mib(self.total)} of output, more than a run keeps: searched in its first "
            f"{_mib(len(head))} and its last {_mib(len(tail))} ({_mib(self.total - len(head) - len(tail))} "
            "between were not read)"
        )
        return (head + tail).decode(errors="replace"), note


def exit_fd(pid: int) -> int:
    """A descriptor that becomes readable once the process `pid` has ended, before it is reaped: its pidfd,
    or (Linux before 5.3) a pipe that a thread closes when waitid (WNOWAIT) returns. The caller closes it."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    r, w = os.pipe()

    def wait() -> None:
        with contextlib.suppress(ChildProcessError):
            while True:
                try:
                    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                    break
                except InterruptedError:
                    continue
        os.close(w)

    threading.Thread(target=wait, daemon=True).start()
    return r


def read_until_exit(proc: subprocess.Popen, out: Kept, err: Kept) -> int | None:
    """Reads the program's stdout (when piped) and stderr into `out` and `err` until both are closed: the
    moment the program ends, what it left running in its process group is killed (which closes the pipes it
    held), and what is left is read for at most DRAIN_S (a process that left the group may hold them open).
    Returns monotonic_ns at the program's end, or None if both pipes closed before it ended."""
    assert proc.stderr is not None  # spawned with stderr piped (stdout too, unless it goes to /dev/null)
    kept = {pipe.fileno(): k for pipe, k in ((proc.stdout, out), (proc.stderr, err)) if pipe is not None}
    ended_fd = exit_fd(proc.pid)
    poller = select.poll()
    for fd in (*kept, ended_fd):
        poller.register(fd, select.POLLIN)
    open_fds, ended_ns, drain_end = set(kept), None, None
    try:
        while open_fds:
            wait_ms: float | None = (
                None if drain_end is None else max(0.0, drain_end - time.monotonic()) * 1000
            )
            if wait_ms == 0:
                for fd in open_fds:
                    kept[fd].error = (
                        f"still open {DRAIN_S:g} s after the program ended (a process outside its "
                        "group holds it)"
                    )
                break
            for fd, _ in poller.poll(wait_ms):
                if fd == ended_fd:
                    ended_ns, drain_end = time.monotonic_ns(), time.monotonic() + DRAIN_S
                    poller.unregister(ended_fd)
                    with contextlib.suppress(ProcessLookupError):  # the zombie keeps the group id ours
                        os.killpg(proc.pid, signal.SIGKILL)
                elif not _read_into(fd, kept[fd]):
                    open_fds.discard(fd)
                    poller.unregister(fd)
    finally:
        os.close(ended_fd)
    return ended_ns


def _read_into(fd: int, kept: Kept) -> bool:
    """One read of a pipe into `kept`; False at its end, or when it cannot be read (the error is kept)."""
    try:
        chunk = os.read(fd, _CHUNK_BYTES)
    except OSError as exc:
        kept.error = exc.strerror or str(exc)
        return False
    if chunk:
        kept.add(chunk)
    return bool(chunk)
