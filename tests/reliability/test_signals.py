"""Case 11: SIGHUP (a closed SSH session) is handled like SIGTERM: the worker stopped, every setting
restored, the journal emptied, the finished runs kept."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from reliability.util import write_plan

from helpers import SYSFS, reaped, tagged_env, tagged_processes

GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"


def _journal(state):
    entries = []
    for f in state.glob("restore-*.json"):
        try:
            entries += json.loads(f.read_text())["entries"]
        except FileNotFoundError:
            continue
    return entries


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_hangup_restores_the_board_and_keeps_the_finished_runs(lab, sig):
    board = lab / "bbb"
    shutil.copytree(SYSFS / "bbb", board, symlinks=True)
    state = lab / "state"
    plan = write_plan(
        lab / "gov.toml",
        reps=4,
        runs_extra='order = "sequential"\nwarmup_max_iterations = 100000\nwarmup_max_ms = 400\nwarmup_cv = 0',
        conditions='[[conditions]]\nname = "ondemand"\nkind = "governor"\nparams = { governor = "ondemand" }',
    )
    db = lab / "r.db"
    tag = f"hup-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardlab",
            "run",
            str(plan),
            "--root",
            str(board),
            "--db",
            str(db),
            "--quiet",
        ],
        env=tagged_env(tag, BOARDLAB_STATE_DIR=str(state)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with reaped(proc):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if (board / GOVERNOR).read_text().strip() == "ondemand" and _journal(state):
                break
            time.sleep(0.005)
        else:
            pytest.fail(f"the governor condition was never applied: {proc.communicate()}")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "every finished run is kept" in err
    assert (board / GOVERNOR).read_text().strip() == "performance"  # restored
    assert _journal(state) == []  # before (SIGHUP): the entry stayed until `boardlab restore`
    # no worker left: one the stop caught inside its spawn dies by its parent-death signal as boardlab
    # exits, within milliseconds; a runaway would still be measuring (a run takes over 0.4 s)
    deadline = time.monotonic() + 0.3
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tagged_processes(tag) == {}
    with sqlite3.connect(db) as c:
        runs = c.execute("SELECT count(*) FROM runs").fetchone()[0]
        status = c.execute("SELECT status FROM campaigns").fetchone()[0]
    c.close()
    assert runs >= 4 and status == "interrupted"  # the four baseline runs came first (sequential)
