"""Conditions end to end: campaigns on a COPY of a board tree (`--root`; the worker runs here, the writes go
to the copy), killed with SIGKILL mid-run, then restored by `boardlab restore` or by the next `boardlab run`;
and plans the board cannot honour, refused before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import SYSFS, rows, run_cli, tagged_processes

pytestmark = pytest.mark.integration

GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"

PLAN = """\
name = "{name}"
[runs]
repetitions = {reps}
iterations = 3
warmup_max_iterations = 100000
warmup_max_ms = {warmup_ms}
warmup_cv = 0
drop_caches = {drop_caches}
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
[[conditions]]
name = "{condition}"
kind = "{kind}"
params = {params}
"""


@pytest.fixture
def lab(tmp_path):
    """A copy of the BeagleBone Black tree (governor `performance`), a private state dir for the journal."""
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root, symlinks=True)
    state = tmp_path / "state"
    return root, state, {**os.environ, "BOARDLAB_STATE_DIR": str(state)}


def write_plan(
    tmp_path: Path,
    *,
    kind="governor",
    params='{ governor = "ondemand" }',
    condition="ondemand",
    reps=2,
    warmup_ms=0,
    drop_caches="false",
) -> Path:
    p = tmp_path / "plan.toml"
    p.write_text(
        PLAN.format(
            name="conditions",
            reps=reps,
            warmup_ms=warmup_ms,
            drop_caches=drop_caches,
            condition=condition,
            kind=kind,
            params=params,
        )
    )
    return p


def runs_by_condition(db: Path) -> dict[str, list[tuple[int, dict]]]:
    out: dict[str, list] = {}
    for condition, valid, state in rows(
        db,
        "SELECT c.condition, r.valid, r.condition_state_json FROM runs r JOIN cells c ON r.cell_id = c.id "
        "ORDER BY r.seq",
    ):
        out.setdefault(condition, []).append((valid, json.loads(state)))
    return out


def journal_entries(state: Path) -> list[dict]:
    entries = []
    for f in state.glob("restore-*.json"):
        try:
            entries += json.loads(f.read_text())["entries"]
        except FileNotFoundError:  # emptied and removed by the runner since the listing
            continue
    return entries


def governor(root: Path) -> str:
    return (root / GOVERNOR).read_text().strip()


# ---- a campaign that ends normally -------------------------------------------------------------------------


def test_a_governor_campaign_records_its_state_and_leaves_the_governor_as_it_was(lab, tmp_path):
    root, state, env = lab
    db = tmp_path / "r.db"
    proc = run_cli("run", str(write_plan(tmp_path)), "--root", str(root), "--db", str(db), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert governor(root) == "performance" and journal_entries(state) == []
    runs = runs_by_condition(db)
    assert len(runs["baseline"]) == 2 and len(runs["ondemand"]) == 2
    for valid, st in runs["ondemand"]:
        # the runner reads the governors after the condition applied them: its own change is no disturbance
        assert valid == 1 and st["governors_changed"] is False
        assert st["governors"] == {"policy0": "ondemand"}
        assert st["policies"]["policy0"]["was"]["governor"] == "performance"
        assert st["transitions"] == {"policy0": 0}
        assert st["time_in_state_delta_ms"] == {
            "policy0": {"300000": 0, "600000": 0, "800000": 0, "1000000": 0}
        }
        assert (
            st["cpufreq_before"]
            == st["cpufreq_after"]
            == {"policy0": {"governor": "ondemand", "cur_khz": 1000000}}
        )
        assert st["page_cache"] == "not requested"
    for valid, st in runs["baseline"]:
        assert valid == 1 and st["governors"] == {"policy0": "performance"}
        assert st["cpufreq_before"] == {"policy0": {"governor": "performance", "cur_khz": 1000000}}


def test_a_governor_changed_by_someone_else_during_a_run_still_invalidates_it(lab, tmp_path):
    """The check above must not blind the runner: a change that is not the condition's own is caught."""
    root, state, env = lab
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, reps=1, warmup_ms=300)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--root", str(root), "--db", str(db), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    changed = False
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if not changed and governor(root) == "ondemand":  # the condition is applied ...
            time.sleep(0.1)  # ... its worker is warming up for 0.3 s: someone intervenes mid-run
            (root / GOVERNOR).write_text("powersave\n")
            changed = True
        time.sleep(0.005)
    _, err = proc.communicate(timeout=60)
    assert changed and proc.returncode == 0, err
    attempts = runs_by_condition(db)["ondemand"]
    assert attempts[0][0] == 0 and attempts[0][1]["governors_changed"] is True
    assert attempts[-1][0] == 1  # re-run, valid
    assert rows(db, "SELECT invalid_reason FROM runs WHERE valid = 0") == [
        ("the cpufreq governor changed during the run",)
    ]
    assert governor(root) == "performance"  # the undo restores the journaled value


def test_page_cache_drop_is_recorded_per_run(lab, tmp_path):
    root, state, env = lab
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/sys/vm/drop_caches").write_text("0\n")
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, reps=1, drop_caches="true")
    proc = run_cli("run", str(plan), "--root", str(root), "--db", str(db), env=env)
    assert proc.returncode == 0, proc.stderr
    states = [st for runs in runs_by_condition(db).values() for _, st in runs]
    assert [st["page_cache"] for st in states] == ["dropped", "dropped"]
    assert (root / "proc/sys/vm/drop_caches").read_text() == "3"


def test_an_isolated_campaign_records_isolation_latency_and_irqs(tmp_path):
    root = tmp_path / "vm"
    shutil.copytree(SYSFS / "vm", root, symlinks=True)
    (root / "sys/devices/system/cpu/isolated").write_text("1\n")
    cmdline = root / "proc/cmdline"
    cmdline.write_text(cmdline.read_text().strip() + " isolcpus=1 nohz_full=1 rcu_nocbs=1\n")
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    plan = write_plan(
        tmp_path,
        kind="isolation",
        condition="isolated",
        params='{ mode = "isolated", cpu_dma_latency_us = 0 }',
        reps=1,
    )
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--root", str(root), "--db", str(db), env=env)
    assert proc.returncode == 0, proc.stderr
    ((valid, st),) = runs_by_condition(db)["isolated"]
    assert valid == 1 and st["worker_cpu"] == 1 and st["isolated"] and st["nohz_full"] and st["rcu_nocbs"]
    assert st["cpu_dma_latency_us"] == {"requested": 0, "before": 2000000000, "in_force": 0}
    assert st["irqs"]["default_affinity"] == "0-1"
    assert st["interrupts_on_worker_cpu"] == {"total": 0, "by_irq": []}  # a snapshot does not count on
    assert st["governors"] == {} and st["cpufreq_before"] == {}


# ---- killed mid-run ----------------------------------------------------------------------------------------


def kill_inside_the_condition(plan: Path, root: Path, db: Path, state: Path, env: dict) -> None:
    """Starts the campaign, waits until the governor condition is applied (its journal entry exists and
    the copy's governor is switched), and SIGKILLs boardlab there: no exit path runs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--root", str(root), "--db", str(db), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if governor(root) == "ondemand" and journal_entries(state):
                break
            time.sleep(0.005)
        else:
            pytest.fail("the governor condition was never applied")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.fixture
def killed(lab, tmp_path):
    root, state, env = lab
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, reps=3, warmup_ms=400)  # runs of ~0.4 s: the kill lands inside one
    kill_inside_the_condition(plan, root, db, state, env)
    return root, state, env, db, plan


def test_sigkill_leaves_the_governor_changed_and_the_journal_says_so(killed):
    root, state, _, db, _ = killed
    assert governor(root) == "ondemand"
    (entry,) = journal_entries(state)
    assert entry["kind"] == "setting" and entry["rel"] == GOVERNOR
    assert (entry["old"], entry["new"], entry["what"]) == (
        "performance",
        "ondemand",
        "policy0 cpufreq governor",
    )
    assert rows(db, "SELECT status FROM campaigns") == [("running",)]


def test_boardlab_restore_puts_it_back_and_says_what_it_restored(killed):
    root, state, env, _, _ = killed
    proc = run_cli("restore", "--root", str(root), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"restored policy0 cpufreq governor: {root}/{GOVERNOR} = 'performance' (was set to 'ondemand')\n"
    )
    assert governor(root) == "performance" and journal_entries(state) == []
    again = run_cli("restore", "--root", str(root), env=env)
    assert again.returncode == 0 and again.stdout.startswith(f"nothing to restore for {root}")


def test_the_next_run_restores_first_then_resumes(killed):
    root, state, env, db, plan = killed
    proc = run_cli("run", str(plan), "--root", str(root), "--db", str(db), env=env)
    assert proc.returncode == 0, proc.stderr
    assert (
        f"restored policy0 cpufreq governor: {root}/{GOVERNOR} = 'performance' (was set to 'ondemand')"
        in (proc.stderr)
    )
    assert "resuming" in proc.stderr
    assert governor(root) == "performance" and journal_entries(state) == []
    assert rows(db, "SELECT status FROM campaigns") == [("complete",)]


# ---- refused before anything starts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("board", "kind", "params", "message"),
    [
        (
            "bbb",
            "governor",
            '{ governor = "schedutil" }',
            "conditions[0] (c): policy0 (CPUs 0) offers no 'schedutil' governor; "
            "available: conservative, ondemand, userspace, powersave, performance",
        ),
        (
            "bbb",
            "governor",
            '{ governor = "userspace", frequency_khz = 700000 }',
            "conditions[0] (c): policy0 (CPUs 0) does not offer 700000 kHz; "
            "valid: 300000, 600000, 800000, 1000000 kHz, or 'min' / 'max'",
        ),
        (
            "vm",
            "isolation",
            '{ mode = "isolated" }',
            "boot with `isolcpus=1 nohz_full=1 rcu_nocbs=1` to isolate the worker's CPU 1",
        ),
        ("vm", "governor", '{ governor = "performance" }', "conditions[0] (c): unsupported: no "),
    ],
)
def test_a_condition_the_board_cannot_honour_is_refused_before_anything_starts(
    tmp_path, board, kind, params, message
):
    root = tmp_path / board
    shutil.copytree(SYSFS / board, root, symlinks=True)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    state = tmp_path / "state"
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, kind=kind, params=params, condition="c")
    proc = run_cli(
        "run",
        str(plan),
        "--root",
        str(root),
        "--db",
        str(db),
        env={**os.environ, "BOARDLAB_STATE_DIR": str(state)},
    )
    assert proc.returncode == 2
    assert f"{plan}: " in proc.stderr and message in proc.stderr
    if db.exists():  # the store may be opened, but nothing is written to it
        assert rows(db, "SELECT count(*) FROM campaigns") == [(0,)]
        assert rows(db, "SELECT count(*) FROM runs") == [(0,)]
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert journal_entries(state) == []


# ---- a combined condition killed mid-run: one restore unit -------------------------------------------------

DRIVERS = "sys/bus/platform/drivers"

COMBINED = """\
name = "combined"
[runs]
repetitions = 3
iterations = 3
warmup_max_iterations = 100000
warmup_max_ms = 400
warmup_cv = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
[[conditions]]
name = "engine-off+load"
parts = [
  { kind = "governor", params = { governor = "ondemand" } },
  { kind = "driver", params = { drivers = ["omap-aes", "omap-sham"] } },
  { kind = "command", params = { argv = ["sleep", "600"], placement = "all", warmup_s = 0.1 } },
]
"""


@pytest.fixture
def killed_combined(lab, tmp_path):
    """The campaign SIGKILLed once the combined condition's three parts are applied: the governor switched,
    the crypto engine's two devices unbound and the `sleep` load started, inside one journal unit."""
    root, state, env = lab
    for driver in ("omap-aes", "omap-sham"):  # the kernel's attributes read empty; the test reads the writes
        for attr in ("bind", "unbind"):
            (root / DRIVERS / driver / attr).write_text("")
    tag = f"combined-kill-{os.getpid()}-{time.time()}"
    env = {**env, "BOARDLAB_TEST_TAG": tag}
    plan = tmp_path / "plan.toml"
    plan.write_text(COMBINED)
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--root", str(root), "--db", str(db), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            units = [e for e in journal_entries(state) if e["kind"] == "unit"]
            if units and len(units[0]["entries"]) == 4 and tagged_processes(tag):
                break
            time.sleep(0.005)
        else:
            pytest.fail("the combined condition was never applied whole")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    yield root, state, env, tag
    for pid in tagged_processes(tag):  # a failed test leaves no sleep behind
        os.kill(pid, signal.SIGKILL)


def test_a_killed_combined_condition_leaves_one_unit_holding_its_parts_in_order(killed_combined):
    root, state, _, tag = killed_combined
    entries = journal_entries(state)  # one entry for the combination, beside the campaign's scratch directory
    (unit,) = [e for e in entries if e["kind"] == "unit"]
    assert [e["kind"] for e in entries if e is not unit] == ["directory"]
    assert unit["kind"] == "unit" and unit["what"] == "combined condition engine-off+load"
    assert [(e["kind"], e["what"]) for e in unit["entries"]] == [
        ("setting", "policy0 cpufreq governor"),
        ("unbound", "53500000.aes bound to omap-aes"),
        ("unbound", "53100000.sham bound to omap-sham"),
        ("process", "background command sleep"),
    ]
    assert governor(root) == "ondemand"
    # the load and the worker die with boardlab (PR_SET_PDEATHSIG, delivered as the kernel reaps it, so a
    # moment after the SIGKILL returns); the load's entry stays
    deadline = time.monotonic() + 5
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tagged_processes(tag) == {}


def test_restore_undoes_the_unit_in_reverse_and_finishes_it_past_a_part_that_fails(killed_combined):
    root, state, env, tag = killed_combined
    bind = root / DRIVERS / "omap-sham" / "bind"  # the sham's bind now refuses any write
    bind.unlink()
    bind.mkdir()
    (root / DRIVERS / "omap-sham" / "53100000.sham").unlink()  # unbound: the kernel took its link away
    proc = run_cli("restore", "--root", str(root), env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    unit = "combined condition engine-off+load"
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("restored scratch directory")]
    assert [line.split(":")[0:2] for line in lines] == [  # newest first: the load, the engine, the governor
        [f"restored {unit}", " background command sleep"],
        [f"restored {unit}", " 53500000.aes bound to omap-aes"],
        [f"restored {unit}", " policy0 cpufreq governor"],
    ]
    assert f"NOT restored {unit}: 53100000.sham bound to omap-sham" in proc.stderr
    assert tagged_processes(tag) == {} and governor(root) == "performance"
    assert (root / DRIVERS / "omap-aes" / "bind").read_text() == "53500000.aes"
    (left,) = journal_entries(state)  # the unit stays, holding only the part that failed
    assert left["kind"] == "unit" and [e["what"] for e in left["entries"]] == [
        "53100000.sham bound to omap-sham"
    ]
    bind.rmdir()  # fixed by hand: the next restore finishes the unit and empties the journal
    bind.write_text("")
    again = run_cli("restore", "--root", str(root), env=env)
    assert again.returncode == 0, again.stderr
    assert (
        again.stdout
        == f"restored {unit}: 53100000.sham bound to omap-sham: bound 53100000.sham to omap-sham again\n"
    )
    assert bind.read_text() == "53100000.sham" and journal_entries(state) == []
