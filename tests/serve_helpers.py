"""`boardlab serve` started by a test: on loopback, a free port (--port 0, the bound URL read from its first
line), stopped by its PID."""

from __future__ import annotations

import json
import os
import resource
import select
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


class Served:
    """`stderr`: a file for the server's log (the default, a pipe, is read only when the server fails to
    start: a server that logs a lot would block on a full pipe); `nofile`: its RLIMIT_NOFILE (soft and hard),
    as `ulimit -n` sets it. `backfill`: serve's backfill of the summaries the store lacks runs (its default);
    off unless asked (`--no-backfill`), so a test's store changes only by what the test does and a page's
    first view is the one the test means (tests/e2e/test_serve_backfill.py tests the backfill)."""

    def __init__(self, db, *args: str, env: dict | None = None, start_timeout_s: float = 60.0,
                 stderr=None, nofile: int | None = None, backfill: bool = False):  # fmt: skip
        off = () if backfill else ("--no-backfill",)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "boardlab", "serve", "--db", str(db), "--port", "0", *off, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr is None else stderr,
            text=True,
            env={**os.environ, **(env or {})},
            preexec_fn=None
            if nofile is None
            else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)),
        )
        self.lines = []
        self.started_s = time.monotonic()
        deadline = self.started_s + start_timeout_s  # serve opens the store (its full check runs after)
        while not self.lines or not self.lines[0].startswith("serving "):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.stop()
                raise TimeoutError(f"boardlab serve did not start: {self._stderr()}")
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"boardlab serve exited {self.proc.wait()}: {self._stderr()}")
            self.lines.append(line.strip())
        self.started_s = time.monotonic() - self.started_s
        self.url = self.lines[0].split(" at ")[1].rstrip("/")

    def _stderr(self) -> str:
        return self.proc.stderr.read() if self.proc.stderr else "(see its log file)"

    def cpu_s(self) -> float:
        """The server's CPU time so far (user + system, /proc/PID/stat fields 14 and 15)."""
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def get(
        self,
        path: str,
        headers: dict | None = None,
        method: str = "GET",
        timeout: float = 60,
        wait_computed: bool = True,
    ):
        """(status, headers, body text) of the page; no redirect followed. A page whose analysis serve is
        computing answers 202 with a Refresh header: asked again, as a browser does, until it is ready (or
        `timeout`), unless `wait_computed` is False."""
        deadline = time.monotonic() + timeout
        while True:
            got = self._get_once(path, headers, method, timeout)
            if not wait_computed or got[0] != 202 or time.monotonic() > deadline:
                return got
            time.sleep(0.2)

    def _get_once(self, path: str, headers: dict | None, method: str, timeout: float):

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **kw):
                return None

        opener = urllib.request.build_opener(
            NoRedirect, urllib.request.ProxyHandler({})
        )  # loopback: no proxy
        req = urllib.request.Request(self.url + path, headers=headers or {}, method=method)
        try:
            with opener.open(req, timeout=timeout) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def json(self, path: str):
        status, _, body = self.get(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class SlowClients:
    """`n` slow clients (a slowloris): each connects, sends a request line and one header, then one more
    header line every `drip_s`, never the blank line that ends the headers; one that the server drops
    connects again `reconnect_s` later, so the pressure stays. Runs on a thread of its own with one selector;
    counts the connections made and dropped."""

    def __init__(self, url: str, n: int, *, drip_s: float = 1.0, reconnect_s: float = 1.0):
        import threading

        host, port = url.split("//")[1].rsplit(":", 1)
        self.addr = (host.strip("[]"), int(port))
        self.n, self.drip_s, self.reconnect_s = n, drip_s, reconnect_s
        self.connected = self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)

    def _open(self, sel) -> None:
        s = socket.socket(socket.AF_INET6 if ":" in self.addr[0] else socket.AF_INET)
        s.setblocking(False)
        s.connect_ex(self.addr)
        sel.register(s, selectors.EVENT_WRITE, "connecting")

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            self._open(sel)
        reopen: list[float] = []
        next_drip = time.monotonic() + self.drip_s
        while not self._stop.is_set():
            for key, _ in sel.select(timeout=0.05):
                self._event(sel, key, reopen)
            now = time.monotonic()
            while reopen and reopen[0] <= now:
                reopen.pop(0)
                self._open(sel)
            if now >= next_drip:
                next_drip = now + self.drip_s
                for key in list(sel.get_map().values()):
                    if key.data == "open":
                        self._send(sel, key.fileobj, b"X-Slow: 1\r\n", reopen)
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()

    def _event(self, sel, key, reopen: list[float]) -> None:
        s = key.fileobj
        if key.data == "connecting":
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                return self._drop(sel, s, reopen, was_open=False)
            self.connected += 1
            sel.modify(s, selectors.EVENT_READ, "open")
            return self._send(sel, s, b"GET /boards HTTP/1.1\r\nHost: slow\r\n", reopen)
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed by the server (anything it sent first, a 408 or 503, is read and ignored)
            self._drop(sel, s, reopen)

    def _send(self, sel, s, data: bytes, reopen: list[float]) -> None:
        try:
            s.send(data)
        except OSError:
            self._drop(sel, s, reopen)

    def _drop(self, sel, s, reopen: list[float], *, was_open: bool = True) -> None:
        self.dropped += was_open
        sel.unregister(s)
        s.close()
        reopen.append(time.monotonic() + self.reconnect_s)

    def open_now(self) -> int:
        return self.connected - self.dropped

    def __enter__(self) -> SlowClients:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
