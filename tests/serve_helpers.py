"""`boardlab serve` started by a test: on loopback, a free port (--port 0, the bound URL read from its first
line), stopped by its PID."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request


class Served:
    def __init__(self, db, *args: str, env: dict | None = None, start_timeout_s: float = 60.0):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "boardlab", "serve", "--db", str(db), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines = []
        self.started_s = time.monotonic()
        deadline = self.started_s + start_timeout_s  # serve checks the whole store before it listens
        while not self.lines or not self.lines[0].startswith("serving "):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.stop()
                raise TimeoutError(f"boardlab serve did not start: {self.proc.stderr.read()}")
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"boardlab serve exited {self.proc.wait()}: {self.proc.stderr.read()}")
            self.lines.append(line.strip())
        self.started_s = time.monotonic() - self.started_s
        self.url = self.lines[0].split(" at ")[1].rstrip("/")

    def get(self, path: str, headers: dict | None = None, method: str = "GET"):
        """(status, headers, body text) of one request; no redirect followed."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **kw):
                return None

        opener = urllib.request.build_opener(
            NoRedirect, urllib.request.ProxyHandler({})
        )  # loopback: no proxy
        req = urllib.request.Request(self.url + path, headers=headers or {}, method=method)
        try:
            with opener.open(req, timeout=60) as r:
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
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
