"""services.launch: a role whose stderr ends without its ready line did not start, whether or not its exit
has been reaped yet (no process is started here: the role is a stand-in of Popen's shape)."""

from __future__ import annotations

import io
import threading

import pytest

from boardlab.errors import BoardlabError
from boardlab.services import launch


class _EndedNotReaped:
    """A role that wrote its error and closed its pipes, not yet reaped: poll() says it runs until stopped."""

    pid = 0  # never signalled: stop_group is replaced below

    def __init__(self, stderr: bytes):
        self.stderr = io.BytesIO(stderr)
        self.stdout = io.BytesIO(b'{"errors": ["cannot listen on 127.0.0.1:18080: Address already in use"]}')
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


def _started(proc, monkeypatch) -> launch.RoleProcess:
    stopped = []

    def stop_group(p, **_kw):
        stopped.append(p)
        p.returncode = 1

    monkeypatch.setattr(launch, "stop_group", stop_group)
    rp = launch.RoleProcess("svc.mgmt", proc)
    rp._reader = threading.Thread(target=rp._drain, daemon=True)
    rp._out_reader = threading.Thread(target=rp._drain_out, daemon=True)
    rp._reader.start()
    rp._out_reader.start()
    return rp


def test_a_role_that_ended_before_ready_did_not_start_even_unreaped(monkeypatch):
    rp = _started(_EndedNotReaped(b""), monkeypatch)
    with pytest.raises(BoardlabError, match=r"^svc.mgmt did not start: cannot listen on .*in use$"):
        rp.wait_ready(5.0)
    assert rp.proc.returncode == 1  # stopped (and so reaped) before its error was read


def test_a_role_that_said_ready_started(monkeypatch):
    rp = _started(_EndedNotReaped(b"svc.mgmt: ready on 127.0.0.1:18080\n"), monkeypatch)
    assert rp.wait_ready(5.0) == "svc.mgmt: ready on 127.0.0.1:18080"
