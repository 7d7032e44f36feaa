"""A load that never ran invalidates the runs beside it: a `command` failing at every start, the dd + gzip
loop on a full TMPDIR. The run records why, the report names the condition and how often, and no verdict
uses those runs (docs/method.md "Loads that did not run")."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from reliability.util import in_namespace, namespace_prefix

from boardlab.model.run import LOAD_DID_NOT_RUN

from helpers import run_cli, tagged_env

pytestmark = pytest.mark.integration

PLAN = """\
name = "health"
[runs]
repetitions = 2
iterations = 3
max_reruns = 1
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
[[conditions]]
name = "baseline"
kind = "baseline"
[[conditions]]
name = "{name}"
kind = "{kind}"
params = {params}
"""


def _env(tmp_path: Path) -> dict:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return tagged_env(
        f"health-{os.getpid()}-{time.time()}",
        BOARDLAB_STATE_DIR=str(tmp_path / "state"),
        TMPDIR=str(tmp_path / "tmp"),
    )


def _runs(db: Path, condition: str) -> list[tuple[int, int, str | None, dict]]:
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT r.ok, r.valid, r.invalid_reason, r.condition_state_json FROM runs r"
            " JOIN cells c ON c.id = r.cell_id WHERE c.condition = ? ORDER BY r.seq",
            (condition,),
        ).fetchall()
    c.close()
    return [(ok, valid, why, json.loads(s)) for ok, valid, why, s in rows]


def _check_invalid_and_reported(db: Path, name: str, needle: str) -> None:
    runs = _runs(db, name)
    assert runs, "no run under the failing load"
    for ok, valid, why, state in runs:
        assert ok == 1 and valid == 0, (ok, valid, why, state)
        assert LOAD_DID_NOT_RUN in why and needle in why, why
        assert state["load_ran"] is False and needle in state["load_failure"]
    assert all(valid == 1 for _, valid, _, _ in _runs(db, "baseline"))
    report = run_cli("report", "--db", str(db), "--format", "md")
    assert report.returncode == 0, report.stderr
    line = next(ln for ln in report.stdout.splitlines() if f"Condition '{name}'" in ln)
    assert f"{len(runs)} of {len(runs)} runs invalid" in line and needle in line, line
    # no verdict claims anything about the condition whose load never ran
    verdicts = [
        ln for ln in report.stdout.splitlines() if name in ln and ("no change" in ln or "slowdown" in ln)
    ]
    assert not verdicts, verdicts


def test_a_command_failing_at_every_start_invalidates_its_runs_and_the_report_names_it(tmp_path):
    plan = tmp_path / "plan.toml"
    params = '{ argv = ["sh", "-c", "echo no licence >&2; exit 1"], restart = true, warmup_s = 0.3 }'
    plan.write_text(PLAN.format(name="broken-cmd", kind="command", params=params))
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", env=_env(tmp_path))
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    _check_invalid_and_reported(db, "broken-cmd", "failed at every one of its")


def test_ddgzip_on_a_full_tmpdir_invalidates_its_runs(tmp_path):
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("a tiny tmpfs as TMPDIR needs a private mount namespace (root, or user namespaces)")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(name="dd-full", kind="ddgzip", params='{ size = "1M", warmup_s = 1.5 }'))
    db = tmp_path / "r.db"
    env = _env(tmp_path)
    proc = in_namespace(
        prefix,
        'mount -t tmpfs -o size=64k boardlab-full "$TMPDIR"\n'
        '"$PY" -m boardlab run "$PLAN" --db "$DB" --quiet',
        env={**env, "PLAN": str(plan), "DB": str(db)},
    )
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    _check_invalid_and_reported(db, "dd-full", "0 cycles")


def test_ddgzip_writes_its_counters_on_the_disk_it_filled(tmp_path):
    """The counters go over the room the status file reserved when the loop began: a disk filled to its
    last byte when the stop comes (a dd the stop did not reach, anything else) cannot keep them out."""
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("a tiny tmpfs as TMPDIR needs a private mount namespace (root, or user namespaces)")
    env = _env(tmp_path)
    status = Path(env["TMPDIR"]) / "status.json"
    config = {
        "dd": shutil.which("dd"), "gzip": shutil.which("gzip"), "source": "/dev/zero", "size_bytes": 1 << 20,
        "level": 1, "pause_s": 60, "dir": env["TMPDIR"], "status": str(status), "max_s": 60,
    }  # fmt: skip
    # its first cycle fails at once, then it pauses a minute: the disk is filled then, and stays full.
    # SIGTERM: a shell's background job starts with SIGINT ignored; the program takes either as its stop
    proc = in_namespace(
        prefix,
        'mount -t tmpfs -o size=64k boardlab-full "$TMPDIR"\n'
        '"$PY" -m boardlab.conditions.programs ddgzip "$CONFIG" &\n'
        "pid=$!\n"
        'while [ ! -e "$STATUS" ]; do sleep 0.01; done\n'
        "sleep 1.5\n"
        'dd if=/dev/zero of="$TMPDIR/fill" bs=4096 2>/dev/null || true\n'
        'df -k "$TMPDIR" | tail -1\n'
        'kill -TERM "$pid"\n'
        'wait "$pid"\n'
        'cat "$STATUS"\n',
        env={**env, "CONFIG": json.dumps(config), "STATUS": str(status)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    df, counters = proc.stdout.split("\n", 1)
    assert df.split()[3] == "0", f"the disk was not full at the stop: {df}"
    doc = json.loads(counters)
    assert doc["cycles"] == 0 and doc["errors"] >= 1 and "No space left" in doc["last_error"], doc
