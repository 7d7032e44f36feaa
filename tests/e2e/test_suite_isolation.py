"""The suite never waits for the machine's own campaigns (issue 39, finding 9): a campaign of the user's holds
the system lock in the default state directory, and the suite's campaigns, even those started by module
fixtures before any per-test fixture has run, use a directory of their own (conftest.py)."""

from __future__ import annotations

import os

import pytest

from boardlab.conditions.journal import SystemLock
from boardlab.platform.sysroot import SysRoot

from helpers import run_cli

PLAN = """
name = "suite-isolation"
[runs]
repetitions = 1
iterations = 2
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "mibench.crc32"
"""


@pytest.fixture(scope="module")
def host_campaign(tmp_path_factory):
    """The user's campaign on this machine: the real lock class, on `/`, at the default state path of this
    (fake) home, held as a running campaign holds it. Module scope, like the fixtures that used to wait."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
        with pytest.MonkeyPatch.context() as host:  # the path a campaign without BOARDLAB_STATE_DIR uses
            host.delenv("BOARDLAB_STATE_DIR", raising=False)
            lock = SystemLock(SysRoot("/"), "campaign host-quick")
        assert lock.path.is_relative_to(home)
        assert lock.acquire(0, print) == 0.0
        try:
            yield lock
        finally:
            lock.release()


@pytest.fixture(scope="module")
def suite_campaign(host_campaign, tmp_path_factory):
    """A campaign a module fixture starts, as the fleet verify tests' fixture does, while the user's runs."""
    d = tmp_path_factory.mktemp("suite")
    (d / "plan.toml").write_text(PLAN)
    return run_cli("run", str(d / "plan.toml"), "--db", str(d / "results.db"), "--quiet", "--no-wait")


def test_a_module_fixtures_campaign_does_not_wait_for_the_hosts_lock(host_campaign, suite_campaign):
    assert host_campaign.path.exists() and host_campaign.holder().startswith(f"boardlab pid {os.getpid()} ")
    assert suite_campaign.returncode == 0, suite_campaign.stderr
    assert "held by" not in suite_campaign.stderr and "waiting for" not in suite_campaign.stderr


def test_a_tests_campaign_does_not_wait_for_it_either(host_campaign, tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN)
    proc = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(tmp_path / "r.db"), "--quiet", "--no-wait")
    assert proc.returncode == 0, proc.stderr
