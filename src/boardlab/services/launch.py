"""Starting the service roles of boardlab-kern (svc.pub, svc.sub, svc.mgmt, svc.nmea, svc.load) as
processes: each in its own process group, dying with boardlab, reported ready by a line on its stderr,
and stopped by its PID. A role ends on its own after `duration_s` and prints one JSON result."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from boardlab.errors import BoardlabError
from boardlab.platform.spawn import spawn, stop_group


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class RoleProcess:
    role: str
    proc: subprocess.Popen
    stderr_lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    _reader: threading.Thread | None = None
    _out_reader: threading.Thread | None = None
    _stdout: bytes = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self.stderr_lines.append(line.rstrip("\n"))
            if ": ready" in line:
                self._ready.set()
        self._ready.set()  # ended before ready: wait_ready reports it

    def _drain_out(self) -> None:
        assert self.proc.stdout is not None
        self._stdout = self.proc.stdout.read()

    def wait_ready(self, timeout_s: float = 10.0) -> str:
        """The ready line (for svc.nmea it names the pty); raises when the role failed first. The event is set
        by the ready line or by the end of the role's stderr, so no ready line once it is set means the role
        is ending: its exit status is not asked, as it may not be reaped yet (a role that could not bind its
        port was taken as started about one time in thirteen)."""
        self._ready.wait(timeout_s)
        line = self._ready_line()
        if line is None:
            self.stop()
            raise BoardlabError(f"{self.role} did not start: {self.error_text()}")
        return line

    def _ready_line(self) -> str | None:
        return next((x for x in self.stderr_lines if ": ready" in x), None)

    def error_text(self) -> str:
        if self.proc.poll() is not None and self._out_reader:
            self._out_reader.join(2)
        out = self._stdout.decode("utf-8", "replace")
        try:
            errs = json.loads(out).get("errors") if out.strip() else None
        except json.JSONDecodeError:
            errs = None
        return "; ".join(errs or [x for x in self.stderr_lines if x] or ["no output"])

    def result(self, timeout_s: float | None = None) -> dict:
        """Waits for the role to end and returns its JSON result."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise BoardlabError(f"{self.role} did not finish within {timeout_s:.0f} s; stopped it") from None
        for t in (self._reader, self._out_reader):
            if t:
                t.join(5)
        try:
            return json.loads(self._stdout)
        except json.JSONDecodeError:
            msg = "; ".join(self.stderr_lines[-3:]) or f"exit code {self.proc.returncode}"
            raise BoardlabError(f"{self.role} printed no result: {msg}") from None

    def stop(self) -> None:
        """SIGTERM (the role prints its result and ends), SIGKILL after a grace period."""
        if self.proc.poll() is None:
            stop_group(self.proc, first=signal.SIGTERM, grace_s=3.0)


def role_argv(kern: str, role: str, params: dict) -> list[str]:
    argv = [kern, role, "--json"]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    return argv


def start_role(
    role: str,
    params: dict,
    *,
    prefix: Sequence[str] = (),
    env: dict | None = None,
    wait_ready: bool = True,
    ready_timeout_s: float = 10.0,
    cpus: set[int] | None = None,
) -> RoleProcess:
    """Starts `boardlab-kern ROLE --param k=v ...` (after `prefix`, e.g. `ip netns exec NS`)."""
    from boardlab.native import kern_path

    argv = [*prefix, *role_argv(str(kern_path()), role, params)]
    # boardlab-kern sets its own death signal from BOARDLAB_PARENT_PID (this process); `ip netns exec`
    # execs in place, so the role's parent is still this process behind a prefix too.
    proc = spawn(argv, env=env, self_reaping=True, cpus=cpus)
    # stdout is the JSON result, stderr carries the ready line: both drained by threads so neither fills
    rp = RoleProcess(role, proc)
    rp._reader = threading.Thread(target=rp._drain, daemon=True)
    rp._out_reader = threading.Thread(target=rp._drain_out, daemon=True)
    rp._reader.start()
    rp._out_reader.start()
    if wait_ready:  # a server role says when it listens; its callers start a load generator with False
        rp.wait_ready(ready_timeout_s)
    return rp


def run_role(
    role: str,
    params: dict,
    *,
    prefix: Sequence[str] = (),
    timeout_s: float | None = None,
    cpus: set[int] | None = None,
) -> dict:
    """Runs one role to its end and returns its result."""
    rp = start_role(role, params, prefix=prefix, wait_ready=False, cpus=cpus)
    try:
        return rp.result(timeout_s)
    finally:
        rp.stop()


def wait_port(host: str, port: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise BoardlabError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")
