"""The time a user waits, explained: `run --gate-timeout` (and a dry-run estimate from the gate it will use),
a campaign waiting for the system lock told the holder's progress and ETA, and the dry-run's advice naming
what decides the runs (a plan entry's own `repetitions`, not the --repetitions the user already gave)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

from helpers import run_cli

NOOP = """
name = "noop-gate"
[runs]
repetitions = 3
iterations = 2
warmup_max_ms = 0
[gates]
idle_window_s = 0.1
temperature = false
[[workloads]]
name = "noop"
"""


def test_gate_timeout_overrides_the_plan_and_the_estimate_uses_the_gate_it_will_use(tmp_path):
    plan, db = tmp_path / "noop.toml", tmp_path / "noop.db"
    plan.write_text(NOOP)
    assert "--gate-timeout SECONDS" in run_cli("run", "--help").stdout
    # a shared machine is seldom idle: with --gate-timeout 0 each run waits one idle window at most
    p = run_cli("run", str(plan), "--db", str(db), "--gate-timeout", "0", "--json")
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(db) as conn:
        env = json.loads(conn.execute("SELECT environment_json FROM campaigns").fetchone()[0])
        assert env["gates"]["timeout_s"] == 0.0
        assert max(w for (w,) in conn.execute("SELECT gate_waited_s FROM runs")) < 5
        # as if those runs had waited 30 s each under the plan's default gate
        conn.execute("UPDATE runs SET gate_waited_s = 30.0")
    dry = ("run", str(plan), "--db", str(db), "--dry-run", "--json")
    old = json.loads(run_cli(*dry).stdout)
    new = json.loads(run_cli(*dry, "--gate-timeout", "2").stdout)
    assert old["estimated_duration_s"] >= 3 * 30  # three runs at the recorded wait, within the 30 s gate
    assert new["estimated_duration_s"] < 3 * (2 + 0.1 + 1)  # at most the new timeout and a window per run
    assert "at most 2.1 s ([gates] timeout_s 2)" in new["estimate_basis"]
    bad = run_cli(*dry, "--gate-timeout", "-1")
    assert bad.returncode == 2 and "--gate-timeout -1: expected 0 to 86400 seconds" in bad.stderr


PROGRAM = """
name = "holder"
[runs]
repetitions = {reps}
warmup_max_ms = 0
[gates]
idle = false
temperature = false
[[workloads]]
kind = "program"
name = "nap"
argv = ["sleep", "0.4"]
"""


def test_a_campaign_waiting_for_the_lock_is_told_the_holders_progress_and_eta(tmp_path):
    holder_plan, waiter_plan = tmp_path / "holder.toml", tmp_path / "waiter.toml"
    holder_plan.write_text(PROGRAM.format(reps=12))
    waiter_plan.write_text(PROGRAM.format(reps=1).replace('"holder"', '"waiter"'))
    holder_db = tmp_path / "holder.db"
    holder = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(holder_plan), "--db", str(holder_db), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _runs_stored(holder_db) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _runs_stored(holder_db), "the holder stored no run within 60 s"
        p = run_cli("run", str(waiter_plan), "--db", str(tmp_path / "waiter.db"), "--wait", "1")
        assert holder.poll() is None, "the holder ended before the waiter looked: nothing was waited for"
    finally:
        out, err = holder.communicate(timeout=120)
    assert holder.returncode == 0, err
    assert p.returncode == 2 and "gave up after" in p.stderr
    waiting = next(line for line in p.stderr.splitlines() if line.startswith("waiting for boardlab pid"))
    assert f"pid {holder.pid} (campaign holder" in waiting
    assert f"its campaign 1 in {holder_db}: " in waiting and " of 12 runs stored (" in waiting
    assert "ETA " in waiting and "at its pace so far" in waiting and "last heartbeat" in waiting


def _runs_stored(db) -> int:
    if not os.path.exists(db):
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:  # not yet made
        return 0


ENTRY = """
name = "entry-reps"
[runs]
repetitions = 3
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
repetitions = 2
[[conditions]]
name = "baseline"
kind = "baseline"
[[conditions]]
name = "hog"
kind = "stressor"
params = { stressor = "cpu" }
"""


def test_the_dry_runs_advice_names_the_plan_entry_not_the_flag_the_user_gave(tmp_path):
    plan = tmp_path / "entry.toml"
    plan.write_text(ENTRY)
    args = ("run", str(plan), "--db", str(tmp_path / "none.db"), "--dry-run")
    text = run_cli(*args, "--repetitions", "5").stdout
    assert "(--repetitions 5)" not in text  # given already: the entry's repetitions = 2 won
    assert (
        "5 repetitions per cell would suffice (repetitions = 5 in the plan's [[workloads]] entries of noop "
        "(repetitions = 2), which --repetitions does not change)" in text
    )
    power = next(line for line in text.splitlines() if line.startswith("repetitions for 80% power"))
    assert "entries of noop (repetitions = 2)" in power
    # without the entry's own count the flag decides, and the advice says the flag
    plain = plan.read_text().replace("repetitions = 2\n", "")
    plan.write_text(plain)
    text = run_cli(*args, "--repetitions", "4").stdout
    assert "(--repetitions 5 instead of the 4 given)" in text
    doc = json.loads(run_cli(*args, "--json").stdout)
    assert doc["repetitions_for_power_how"] == f"--repetitions {doc['repetitions_for_power']}"
