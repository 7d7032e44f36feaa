"""`boardlab restore` tries every journal entry, keeps only those it could not undo and lists them with the
fix; a condition's check() catches what its start would fail on (docs/safety.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from reliability.util import assert_one_line_error, write_plan

from boardlab.conditions.journal import RestoreJournal
from boardlab.platform.sysroot import SysRoot

from helpers import SYSFS, run_cli

POLICY = "sys/devices/system/cpu/cpufreq/policy{}/scaling_governor"


def test_restore_goes_past_an_entry_it_cannot_write_and_keeps_only_that_one(tmp_path):
    root = tmp_path / "odroid"
    shutil.copytree(SYSFS / "odroid-xu3", root, symlinks=True)
    state = tmp_path / "state"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(state)}
    os.environ["BOARDLAB_STATE_DIR"] = str(state)
    try:
        journal = RestoreJournal(SysRoot(root))
        old = {n: (root / POLICY.format(n)).read_text().strip() for n in (0, 4)}
        journal.set(POLICY.format(0), "userspace", what="policy0 governor")
        journal.set(POLICY.format(4), "userspace", what="policy4 governor")  # newest: undone first
    finally:
        del os.environ["BOARDLAB_STATE_DIR"]
    # the run that wrote them was killed (a dead owner), and policy4's file now refuses any write
    dead = subprocess.Popen(["true"])
    dead.wait()
    doc = json.loads(journal.path.read_text())
    for entry in doc["entries"]:
        entry.update(owner_pid=dead.pid, owner_start_ticks=1)
    journal.path.write_text(json.dumps(doc))
    bad = root / POLICY.format(4)
    bad.unlink()
    bad.mkdir()
    proc = run_cli("restore", "--root", str(root), env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "restored policy0 governor" in proc.stdout
    line = assert_one_line_error(proc, 1, "NOT restored policy4 governor", str(root / POLICY.format(4)))
    assert "boardlab restore" in line and f"write {old[4]!r} there by hand" in line
    assert (root / POLICY.format(0)).read_text().strip() == old[0]  # past the failure: restored
    left = json.loads(journal.path.read_text())["entries"]
    assert [e["what"] for e in left] == ["policy4 governor"]  # only the failed one stays
    # fixed by hand: the next restore finishes and empties the journal
    bad.rmdir()
    bad.write_text("userspace\n")
    again = run_cli("restore", "--root", str(root), "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["failed"] == [] and not journal.path.exists()
    assert bad.read_text().strip() == old[4]


def test_governor_daemon_without_proc_stat_fails_the_dry_run_with_the_reason(tmp_path):
    root = tmp_path / "odroid"
    shutil.copytree(SYSFS / "odroid-xu3", root, symlinks=True)
    assert not (root / "proc" / "stat").exists()
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "daemon"\n[runs]\nrepetitions = 2\niterations = 3\n[gates]\nidle = false\n'
        'temperature = false\n[[workloads]]\nname = "noop"\n[[conditions]]\nname = "od"\n'
        'kind = "governor-daemon"\nparams = { policy = "ondemand" }\n'
    )
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    proc = run_cli(
        "run", str(plan), "--root", str(root), "--dry-run", "--db", str(tmp_path / "r.db"), env=env
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "proc/stat" in proc.stderr and "internal error" not in proc.stderr, proc.stderr


def test_a_damaged_journal_is_one_line_naming_it_from_restore_and_run(tmp_path, lab):
    # before: each of these was an internal error (AttributeError, TypeError, KeyError, UnicodeDecodeError),
    # in `restore` and at the start of every `run`, which recovers first
    root = tmp_path / "odroid"
    shutil.copytree(SYSFS / "odroid-xu3", root, symlinks=True)
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    os.environ["BOARDLAB_STATE_DIR"] = env["BOARDLAB_STATE_DIR"]
    try:
        path = RestoreJournal(SysRoot(root)).path
    finally:
        del os.environ["BOARDLAB_STATE_DIR"]
    path.parent.mkdir()
    unit = {"id": "1", "kind": "unit", "owner_pid": 1, "what": "combined", "entries": [{"kind": "setting"}]}
    damaged = {
        b"[1]": "schema none (a JSON list)",
        b'{"schema": 1, "entries": [5]}': "damaged restore journal (entries[0]: expected an object)",
        json.dumps({"schema": 1, "entries": [unit]}).encode(): "entries[0].entries[0].id: expected str",
        b"\xff\xfe{": "unreadable restore journal",
    }
    plan = write_plan(lab / "plan.toml")
    for data, said in damaged.items():
        path.write_bytes(data)
        assert_one_line_error(run_cli("restore", "--root", str(root), env=env), 2, str(path), said)
        proc = run_cli("run", str(plan), "--root", str(root), "--db", str(lab / "x.db"), env=env)
        assert_one_line_error(proc, 2, str(path), said)
        assert path.read_bytes() == data  # left as it was, for the user to inspect
