"""The command load's account of itself (conditions/programs.py `command`, conditions/command.py
`command_health`): a command that fails at every start is a load that did not run, whenever the run's stop
lands. A stop that came after a start had ended but before its exit was counted left that start uncounted,
so a load that never ran read as one the stop ended, and its runs as valid (seen under load in
tests/integration/test_load_health.py)."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from boardlab.conditions import programs
from boardlab.conditions.command import command_health


class _StoppedAfterExit(subprocess.Popen):
    """A start whose wait returns its exit, then the stop (SIGINT as KeyboardInterrupt) lands at once."""

    def wait(self, timeout=None):
        super().wait(timeout)
        raise KeyboardInterrupt


def _status(tmp_path, monkeypatch, popen) -> dict:
    monkeypatch.setattr(programs, "_stopping", lambda: None)  # it would ignore SIGINT in pytest's process
    monkeypatch.setattr(programs, "_popen", popen)
    status = tmp_path / "status.json"
    argv = ["sh", "-c", "echo no licence >&2; exit 1"]
    programs.command({"argv": argv, "restart": True, "max_s": 60, "status": str(status)})
    return {"argv": argv, **json.loads(status.read_text())}


@pytest.mark.spawns
def test_a_stop_after_a_failed_start_ended_still_counts_that_failure(tmp_path, monkeypatch):
    state = _status(tmp_path, monkeypatch, lambda argv, **kw: _StoppedAfterExit(argv, **kw))
    assert state["starts"] == 1 and state["exit_codes"] == {"1": 1} and state["stopped_running_s"] is None
    assert command_health(state) == "sh failed at every one of its 1 starts (exit 1): no licence"


@pytest.mark.parametrize("codes,healthy", [({"1": 3}, False), ({"1": 2, "0": 1}, True)])
def test_health_reads_every_counted_start(codes, healthy):
    state = {"argv": ["x"], "starts": 3, "exit_codes": codes, "stopped_running_s": None}
    assert (command_health(state) is None) is healthy


class _KilledByTheStop(subprocess.Popen):
    """A start the run's stop killed (the group's SIGINT reached it first): its wait returns -SIGINT, and the
    stop reaches the load's own process only after that exit was counted."""

    def wait(self, timeout=None):
        # SIGKILL, then the status SIGINT leaves: a shell's background job (CI's, this sandbox's) starts its
        # children with SIGINT ignored, so a real SIGINT would not end `sleep` here
        self.kill()
        super().wait(timeout)
        self.returncode = -signal.SIGINT
        return self.returncode


@pytest.mark.spawns
def test_a_start_the_stop_killed_is_not_an_exit_of_the_command(tmp_path, monkeypatch):
    """Seen in `make test` (test_conditions_background): gzip's exits read {"0", "-2"}, the -2 the stop's."""
    starts = []

    def popen(argv, **kw):
        if starts:
            raise KeyboardInterrupt  # the stop lands as the load would start its next run of the command
        starts.append(_KilledByTheStop(["sleep", "5"], **kw))
        return starts[0]

    state = _status(tmp_path, monkeypatch, popen)
    assert state["starts"] == 1 and state["exit_codes"] == {} and state["stopped_running_s"] is not None
    assert state["last_exit"] == -signal.SIGINT and command_health(state) is None


class _KilledByTheStopInItsWait(_KilledByTheStop):
    """The stop's SIGINT interrupts the load's wait for a start the same signal killed: the exit is not
    counted yet when the stop is handled."""

    def wait(self, timeout=None):
        super().wait(timeout)
        raise KeyboardInterrupt


@pytest.mark.spawns
def test_a_start_the_stop_killed_before_its_exit_was_counted_is_not_an_exit_either(tmp_path, monkeypatch):
    """Seen in CI after the test above was fixed: the more common order, the stop landing in the wait."""
    state = _status(tmp_path, monkeypatch, lambda argv, **kw: _KilledByTheStopInItsWait(["sleep", "5"], **kw))
    assert state["starts"] == 1 and state["exit_codes"] == {} and state["stopped_running_s"] is not None
    assert state["last_exit"] == -signal.SIGINT and command_health(state) is None
