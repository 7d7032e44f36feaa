"""The command load's account of itself (conditions/programs.py `command`, conditions/command.py
`command_health`): a command that fails at every start is a load that did not run, whenever the run's stop
lands. A stop that came after a start had ended but before its exit was counted left that start uncounted,
so a load that never ran read as one the stop ended, and its runs as valid (seen under load in
tests/integration/test_load_health.py)."""

from __future__ import annotations

import json
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
