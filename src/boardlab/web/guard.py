"""What `boardlab serve` holds for its clients, bounded whatever they do (docs/lab.md "Limits").

A client that connects and never finishes its request head (a "slowloris") used to keep its connection, and
its file descriptor, for ever: 200 of them under `ulimit -n 128` exhausted the descriptors, `accept()` failed
with EMFILE on every turn of the event loop, the server spun at a full CPU writing a traceback each time, and
no legitimate client got in. Here:

- every request head must arrive whole within HEADER_DEADLINE_S of the connection (or of the end of the
  request before it on a kept-alive connection), else the connection is answered 408 and closed;
- the open connections are capped from RLIMIT_NOFILE (`limits`), below what the process may open, so accept
  never runs out of descriptors; a connection beyond the cap takes the place of the oldest one still sending
  its head (a client that sent its request is never dropped for a newcomer), or is answered 503 when every
  connection is serving a request;
- the listen backlog is small (BACKLOG): what waits there waits for a process that accepts at once;
- the listening socket (`BoundedListener`) accepts only while the client sockets the process holds stay
  within the cap plus one backlog. The cap alone did not bound them: asyncio accepts a backlog's worth per
  turn of its loop, and a connection reaches the guard two turns after its accept and frees its descriptor
  a turn after it is dropped, so on a starved loop several batches were held at once and accept failed with
  EMFILE again (the failure this module exists to prevent, seen in CI as a 503 to a legitimate client);
- the server's log says each kind of problem at most once a minute, with how many more there were, and no
  traceback unless BOARDLAB_DEBUG is set (`LogLimiter`).

The HTTP protocol itself stays uvicorn's: `Guard.factory` wraps it, watching only where each request head
ends.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import re
import resource
import socket
import time
from dataclasses import dataclass

from boardlab.errors import InputError

HEADER_DEADLINE_S = 10.0  # a browser sends its whole head in one packet; slowloris tools drip every 15 s
BACKLOG = 16  # also the most connections one turn of the event loop accepts before dropping any
# the interpreter, its standard streams and log, the listening socket, epoll, asyncio's self-pipe, the
# worker's pipes (18 measured), and the stores of the full check and the backfill (4 each)
FDS_PROCESS = 32
FDS_PER_THREAD = 4  # a request's store: SQLite's file, -wal, -shm and a journal, or one PostgreSQL socket
MAX_THREADS = 40  # anyio's default, which Starlette runs the pages' code on
MAX_CONNECTIONS = 4096
MIN_NOFILE = 64
LOG_EVERY_S = 60.0

_HEAD_END = re.compile(rb"\r?\n\r?\n")  # h11 takes bare LF line ends as well as CRLF
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n"
)


@dataclass(frozen=True)
class Limits:
    connections: int  # open client connections at most
    threads: int  # requests built at once (each opens the store)
    backlog: int
    header_deadline_s: float


def limits(nofile: int | None = None) -> Limits:
    """The caps for a process that may open `nofile` descriptors (default: its RLIMIT_NOFILE soft limit): a
    quarter of what is left after the process's own goes to request threads, the rest to connections, less
    one backlog's worth, which one turn of the event loop may accept before it closes any."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        nofile = 1 << 20
    if nofile < MIN_NOFILE:
        raise InputError(
            f"boardlab serve needs at least {MIN_NOFILE} open files, and this process may open {nofile} "
            f"(RLIMIT_NOFILE): raise it, e.g. `ulimit -n 1024`"
        )
    budget = nofile - FDS_PROCESS - BACKLOG
    threads = max(1, min(MAX_THREADS, budget // (4 * FDS_PER_THREAD)))
    connections = min(MAX_CONNECTIONS, budget - threads * FDS_PER_THREAD)
    return Limits(connections, threads, BACKLOG, HEADER_DEADLINE_S)


class Guard:
    """The connections of one server: how many are open, which are still sending their request head (oldest
    first: the ones to drop for a newcomer), and the counts the log reports."""

    def __init__(self, lim: Limits, log: logging.Logger | None = None):
        self.limits = lim
        self.log = log or logging.getLogger("uvicorn.error")
        self.open: set[GuardedProtocol] = set()
        self.waiting: dict[GuardedProtocol, None] = {}  # insertion order: the oldest head first
        # client sockets accepted by `listener`'s socket and not yet closed: the open ones, those not yet
        # handed to a protocol, those dropped and not yet closed
        self.held = 0

    def listener(self, sock: socket.socket) -> BoundedListener:
        """`sock`, listening, as the socket that accepts only while `held` is within the cap plus one
        backlog (`sock` itself is detached: use the one returned)."""
        bounded = BoundedListener(sock.family, sock.type, sock.proto, fileno=sock.detach())
        bounded.guard = self
        return bounded

    def factory(self, inner):
        """uvicorn's `http` protocol class, guarded: called as uvicorn calls it, with its keywords."""

        def make(**kw) -> GuardedProtocol:
            return GuardedProtocol(self, inner(**kw))

        return make

    def admit(self, conn: GuardedProtocol) -> bool:
        if len(self.open) >= self.limits.connections:
            if not self.waiting:
                self.log.warning(
                    "connection cap reached (%d open, all serving requests): refused a connection with 503",
                    len(self.open),
                )
                return False
            oldest = next(iter(self.waiting))
            self.log.warning(
                "connection cap reached (%d open): closed the oldest connection still sending its "
                "request head",
                len(self.open),
            )
            oldest.drop(b"")
        self.open.add(conn)
        return True

    def forget(self, conn: GuardedProtocol) -> None:
        self.open.discard(conn)
        self.waiting.pop(conn, None)

    def may_accept(self) -> bool:
        return self.held < self.limits.connections + self.limits.backlog


class BoundedListener(socket.socket):
    """The listening socket asyncio accepts on (it calls `accept` until that raises BlockingIOError): one
    past the guard's bound is left in the kernel's queue until a held socket is closed, a turn or two of the
    loop later."""

    guard: Guard

    def accept(self):
        if not self.guard.may_accept():
            raise BlockingIOError(errno.EAGAIN, "the guard's descriptors are all held")
        conn = super().accept()
        self.guard.held += 1
        return conn


class GuardedProtocol(asyncio.Protocol):
    """uvicorn's protocol for one connection, with the head deadline and the cap around it."""

    def __init__(self, guard: Guard, inner: asyncio.Protocol):
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""  # the last bytes of an unfinished head: its end may straddle two reads
        self.admitted = False  # uvicorn's protocol has the connection
        self.closed = False  # dropped or refused here: what still arrives is not read

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport
        if not self.guard.admit(self):
            self.closed = True
            transport.write(_BUSY)
            transport.close()
            return
        self.admitted = True
        self.inner.connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._watch(data)
        self.inner.data_received(data)  # type: ignore[attr-defined]

    def eof_received(self):
        return None if self.closed else self.inner.eof_received()  # type: ignore[attr-defined]

    def connection_lost(self, exc) -> None:  # the transport closes the socket right after this
        self._head_done()
        self.guard.forget(self)
        self.guard.held -= 1  # (below 0 only on a server not listening through `listener`: unbounded)
        if self.admitted:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    # ---- the request head's deadline ----

    def _watch(self, data: bytes) -> None:
        buf = self.tail + data
        end = None
        for m in _HEAD_END.finditer(buf):
            end = m.end()
        if end is None:
            self.tail = buf[-3:]
            self._await_head()
            return
        rest = buf[end:]
        self.tail = rest[-3:]
        self._head_done()
        if rest:  # the next request's head has begun (pipelined, or a body a GET should not have)
            self._await_head()

    def _await_head(self) -> None:
        if self.timer is None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(self.guard.limits.header_deadline_s, self._late)
            self.guard.waiting[self] = None

    def _head_done(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.guard.waiting.pop(self, None)

    def _late(self) -> None:
        self.timer = None
        self.guard.log.warning(
            "closed a connection that sent no complete request head within %g s (408)",
            self.guard.limits.header_deadline_s,
        )
        self.drop(_TIMEOUT)

    def drop(self, answer: bytes) -> None:
        """Closes the connection now (its place is free at once), after `answer` when there is one."""
        self._head_done()
        self.guard.forget(self)
        self.closed = True
        if self.transport is None or self.transport.is_closing():
            return
        if answer:
            self.transport.write(answer)
            self.transport.close()
        else:
            self.transport.abort()


class LogLimiter(logging.Filter):
    """At most one line per kind of message (its logger, its text before formatting, its exception's type)
    every `every_s` seconds, the next one saying how many were held back; a traceback only with `debug` (the
    exception's type and text otherwise). Kinds past `kinds` are forgotten oldest first."""

    def __init__(
        self, *, every_s: float = LOG_EVERY_S, debug: bool = False, kinds: int = 256, clock=time.monotonic
    ):
        super().__init__()
        self.every_s, self.debug, self.kinds, self.clock = every_s, debug, kinds, clock
        self.seen: dict[tuple, list] = {}  # kind -> [when last said, how many held back since]

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        kind = (record.name, str(record.msg), type(exc).__name__ if exc else "")
        now = self.clock()
        last = self.seen.get(kind)
        if last is not None and now - last[0] < self.every_s:
            last[1] += 1
            return False
        held = last[1] if last is not None else 0
        self.seen.pop(kind, None)
        self.seen[kind] = [now, 0]
        while len(self.seen) > self.kinds:
            self.seen.pop(next(iter(self.seen)))
        text = record.getMessage()
        if exc is not None and not self.debug:
            text += f": {type(exc).__name__}: {exc}"
            record.exc_info, record.exc_text = None, None
        if held:
            text += f" ({held} more like this in the last {now - last[0]:.0f} s)"  # type: ignore[index]
        record.msg, record.args = text, None
        return True


def quiet_logs(debug: bool, names=("uvicorn", "uvicorn.error", "asyncio")) -> LogLimiter:
    """One LogLimiter on each logger a server writes to (a logger's filters see only its own records)."""
    limiter = LogLimiter(debug=debug)
    for name in names:
        logging.getLogger(name).addFilter(limiter)
    return limiter
