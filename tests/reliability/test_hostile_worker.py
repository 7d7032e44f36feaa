"""A worker that prints a malformed result (here a stand-in for boardlab-kern) fails that run, stored with
the reason, and the campaign goes on: it never ends in "internal error"."""

from __future__ import annotations

import os
import sqlite3
import stat

from reliability.util import write_plan

from boardlab.native import kern_path

from helpers import run_cli

# one malformed result per run, in turn: each made the reader raise something other than its own error
OUTPUTS = [
    '{"schema": 2, "ok": true, "iterations_ns": [1e400]}',
    '{"schema": 2, "ok": true, "warmup": {"iterations": "twelve"}}',
    "[" * 50_000 + "]" * 50_000,
    '{"schema": 2, "ok": true, "iterations_ns": ["12"]}',
]


def test_malformed_worker_results_fail_their_runs_and_the_campaign_goes_on(lab):
    outputs = lab / "outputs"
    outputs.mkdir()
    for i, text in enumerate(OUTPUTS):
        (outputs / str(i)).write_text(text)
    fake = lab / "fake kern"
    fake.write_text(
        "#!/bin/sh\n"
        # the catalog comes from the real boardlab-kern; every run prints the next malformed result
        f'case " $* " in *" --list "*) exec "{kern_path()}" "$@";; esac\n'
        f'd="{outputs}"; n=$(cat "$d/n" 2>/dev/null || echo 0); echo $((n + 1)) > "$d/n"\n'
        f'cat "$d/$((n % {len(OUTPUTS)}))"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    db = lab / "r.db"
    plan = write_plan(lab / "plan.toml", reps=2)
    proc = run_cli(
        "run", str(plan), "--db", str(db), "--quiet", env={**os.environ, "BOARDLAB_KERN": str(fake)}
    )
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    with sqlite3.connect(db) as conn:
        runs = conn.execute("SELECT ok, valid, error FROM runs ORDER BY seq").fetchall()
        status = conn.execute("SELECT status FROM campaigns").fetchone()[0]
    conn.close()
    assert len(runs) >= 2 and status in ("complete", "failed"), (runs, status, proc.stderr)
    assert all(ok == 0 and valid == 0 and "worker" in error for ok, valid, error in runs), runs
